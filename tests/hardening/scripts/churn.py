# churn.py N [THREADS]: create and call N new functions (split over THREADS
# threads), then print "done N". Used where output space runs out.
import sys
import threading

N = int(sys.argv[1])
THREADS = int(sys.argv[2]) if len(sys.argv) > 2 else 1


def work(t, count):
    for i in range(count):
        name = "churn_%d_%d" % (t, i)
        ns = {}
        exec(compile("def %s():\n    return %d\n" % (name, i), "<churn>", "exec"), ns)
        ns[name]()


threads = [threading.Thread(target=work, args=(t, N // THREADS)) for t in range(THREADS)]
for t in threads:
    t.start()
for t in threads:
    t.join()
print("done %d" % N)
