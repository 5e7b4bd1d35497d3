# fork_thread_exit.py FORKS CHILD_FUNCS PARENT_FUNCS: threads start and exit
# all the time (on 3.6-3.8 a Python thread ends in pthread_exit, which
# unwinds through libgcc), while the main thread forks; each child starts
# and joins a thread and creates CHILD_FUNCS functions (a new arena).
# Prints "forks done N" (N children that failed).
import os
import sys
import threading

FORKS, CHILD, PARENT = (int(a) for a in sys.argv[1:4])
for k in range(PARENT):
    ns = {}
    exec("def p%d():\n    return 1\n" % k, ns)
    ns["p%d" % k]()
stop = threading.Event()


def churn():
    while not stop.is_set():
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()


churners = [threading.Thread(target=churn) for _ in range(3)]
for c in churners:
    c.start()
bad = 0
for i in range(FORKS):
    pid = os.fork()
    if pid == 0:
        t = threading.Thread(target=lambda: None)
        t.start()
        t.join()
        for k in range(CHILD):
            ns = {}
            exec("def f%d_%d():\n    return 1\n" % (i, k), ns)
            ns["f%d_%d" % (i, k)]()
        os._exit(0)
    _, status = os.waitpid(pid, 0)
    bad += status != 0
stop.set()
for c in churners:
    c.join()
print("forks done %d" % bad)
