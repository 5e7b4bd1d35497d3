# N threads each create and call M new functions at once.
import sys
import threading

THREADS = int(sys.argv[1])
PER_THREAD = int(sys.argv[2])


def make_and_call(t):
    for i in range(PER_THREAD):
        name = "thr%d_fn%d" % (t, i)
        ns = {}
        exec(compile("def %s():\n    return %d\n" % (name, i), "<threads>", "exec"), ns)
        if ns[name]() != i:
            raise SystemExit("wrong result")


threads = [threading.Thread(target=make_and_call, args=(t,)) for t in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("threads done")
