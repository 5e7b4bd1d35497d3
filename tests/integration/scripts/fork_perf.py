# fork_perf.py SECONDS: the parent spins in inherited_hot and forks; the
# child spins SECONDS in inherited_hot (its trampoline made by the parent),
# then SECONDS in child_new (made by the child), and _exits. Prints
# "child PID".
import os
import sys
import time

SECONDS = float(sys.argv[1])


def inherited_hot():
    s = 0
    for i in range(20000):
        s += i
    return s


def spin(fn, seconds):
    end = time.time() + seconds
    while time.time() < end:
        fn()


spin(inherited_hot, 0.05)
sys.stdout.flush()
pid = os.fork()
if pid == 0:
    spin(inherited_hot, SECONDS)
    ns = {}
    exec(compile("def child_new():\n"
                 "    s = 0\n"
                 "    for i in range(20000):\n"
                 "        s += i\n"
                 "    return s\n", "<child>", "exec"), ns)
    spin(ns["child_new"], SECONDS)
    os._exit(0)
os.waitpid(pid, 0)
print("child %d" % pid)
