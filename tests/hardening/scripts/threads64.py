# threads64.py T M: T threads, released together, each create and call M new
# functions (names thr<T>_<I>); prints "done T*M".
import sys
import threading

T = int(sys.argv[1])
M = int(sys.argv[2])
go = threading.Event()
errors = []


def work(t):
    go.wait()
    for i in range(M):
        name = "thr%d_%d" % (t, i)
        ns = {}
        exec(compile("def %s():\n    return %d\n" % (name, i), "<threads64>", "exec"), ns)
        if ns[name]() != i:
            errors.append(name)


threads = [threading.Thread(target=work, args=(t,)) for t in range(T)]
for t in threads:
    t.start()
go.set()
for t in threads:
    t.join()
print("done %d errors %d" % (T * M, len(errors)))
