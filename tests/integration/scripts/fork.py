# Parent runs parent_func, then forks: from the main thread and from a second
# thread. Each child runs a function of its own; all of them exit 0.
import os
import sys
import threading


def parent_func():
    return 1


def child_main_thread():
    return 2


def child_other_thread():
    return 3


def fork_and_run(fn, pids):
    pid = os.fork()
    if pid == 0:
        fn()
        parent_func()
        os._exit(0)
    pids.append(pid)


parent_func()
pids = []
fork_and_run(child_main_thread, pids)
t = threading.Thread(target=fork_and_run, args=(child_other_thread, pids))
t.start()
t.join()
status = 0
for pid in pids:
    _, st = os.waitpid(pid, 0)
    status |= st
print("children %s %s" % (pids[0], pids[1]))
sys.exit(1 if status else 0)
