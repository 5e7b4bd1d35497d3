# fork.py SNAPDIR: forked children, as run.py's fork scenario checks them.
# The parent runs parent_func, then forks four children; just before each
# fork it writes its /proc/self/maps to SNAPDIR/maps-KIND.txt (its arenas at
# that fork). Children:
#   short-main    from the main thread: child_main_thread, parent_func; _exit
#   short-thread  from another thread: child_other_thread; _exit
#   settled       a new function at once, then after 150 ms child_settled and
#                 parent_func; _exit
#   normal-exit   child_normal_exit, then the interpreter's normal exit
#   nest          child_nest, then forks a grandchild at once (before the
#                 nest child copied anything), which after 150 ms runs
#                 grand_func and writes "grandchild PID"
# Each child writes "child KIND PID SECONDS", SECONDS from just before the
# fork to after its last new function. The parent ends with "fork done N".
import os
import sys
import threading
import time

SNAPDIR = sys.argv[1]


def parent_func():
    return 1


def child_main_thread():
    return 2


def child_other_thread():
    return 3


def child_settled():
    return 4


def child_normal_exit():
    return 5


def child_nest():
    return 6


def grand_func():
    return 7


def short_main():
    child_main_thread()
    parent_func()


def short_thread():
    child_other_thread()


def settled():
    time.sleep(0.15)
    child_settled()
    parent_func()


def normal_exit():
    child_normal_exit()


def nest():
    child_nest()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            time.sleep(0.15)
            grand_func()
            os.write(1, ("grandchild %d\n" % os.getpid()).encode())
            status = 0
        finally:
            os._exit(status)
    _, st = os.waitpid(pid, 0)
    if st != 0:
        raise RuntimeError("grandchild failed")


def fork_child(kind, body, pids, normal=False):
    with open(os.path.join(SNAPDIR, "maps-%s.txt" % kind), "w") as out:
        with open("/proc/self/maps") as maps:
            out.write(maps.read())
    t0 = time.monotonic()
    pid = os.fork()
    if pid == 0:
        status = 1
        try:
            body()
            took = time.monotonic() - t0
            os.write(1, ("child %s %d %.3f\n" % (kind, os.getpid(), took)).encode())
            status = 0
        finally:
            if not normal or status != 0:
                os._exit(status)
        sys.exit(0)
    pids.append(pid)


parent_func()
sys.stdout.flush()
pids = []
fork_child("short-main", short_main, pids)
t = threading.Thread(target=fork_child, args=("short-thread", short_thread, pids))
t.start()
t.join()
fork_child("settled", settled, pids)
fork_child("nest", nest, pids)
fork_child("normal-exit", normal_exit, pids, normal=True)
bad = 0
for pid in pids:
    _, st = os.waitpid(pid, 0)
    bad += st != 0
print("fork done %d" % bad)
sys.exit(1 if bad else 0)
