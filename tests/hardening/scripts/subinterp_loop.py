# subinterp_loop.py N THREADS: THREADS threads each create, run and destroy
# N subinterpreters; each runs a function sub_<T>_<I>. Prints "subinterp
# done N*THREADS via API" or "no subinterpreter API".
import sys
import threading

N = int(sys.argv[1])
THREADS = int(sys.argv[2])
try:
    import _interpreters as mod  # 3.13+
    API = "_interpreters"
except ImportError:
    try:
        import _xxsubinterpreters as mod  # 3.8-3.12
        API = "_xxsubinterpreters"
    except ImportError:
        mod = None
if mod is None:
    print("no subinterpreter API")
    sys.exit(0)
run = getattr(mod, "exec", None) or mod.run_string
errors = []


def loop(t):
    for i in range(N):
        iid = mod.create()
        try:
            r = run(iid, "def sub_%d_%d():\n    return 1\nsub_%d_%d()\n" % (t, i, t, i))
            if r is not None:
                errors.append(r)
        finally:
            mod.destroy(iid)


threads = [threading.Thread(target=loop, args=(t,)) for t in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("subinterp done %d via %s errors %d" % (N * THREADS, API, len(errors)))
