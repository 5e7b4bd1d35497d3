# ft_stress.py T M MODE: T threads, released together, each create and call
# M new functions (names ft<T>_<I>), for free-threaded builds where they all
# run at once. MODE:
#   plain   just that
#   switch  the main thread switches the library off and on meanwhile; the
#           threads then call M more new functions (fin<T>_<I>) with it on
#   fork    the main thread forks 8 children meanwhile; each child makes
#           trampolines for 5 functions (kid<N>_<I>) by calling them first,
#           and leaves with os._exit. The functions are compiled before the
#           threads start: compiling in a child forked from running threads
#           can wait forever for a lock a parent thread held at the fork
#           (CPython 3.13t hangs so in about half of such runs without the
#           library), and that is not what this test is about.
# Prints "pid PID", then per child "child N PID", then "done COUNT errors E".
import ctypes
import os
import sys
import threading

T = int(sys.argv[1])
M = int(sys.argv[2])
MODE = sys.argv[3] if len(sys.argv) > 3 else "plain"
go = threading.Event()
errors = []
print("pid %d" % os.getpid(), flush=True)


def make_and_call(name, value):
    ns = {}
    exec(compile("def %s():\n    return %d\n" % (name, value), "<ft_stress>", "exec"), ns)
    if ns[name]() != value:
        errors.append(name)


def work(t, prefix):
    go.wait()
    for i in range(M):
        make_and_call("%s%d_%d" % (prefix, t, i), i)


def run_threads(prefix):
    go.clear()
    threads = [threading.Thread(target=work, args=(t, prefix)) for t in range(T)]
    for t in threads:
        t.start()
    go.set()
    return threads


kids = {}
if MODE == "fork":
    for n in range(8):
        for i in range(5):
            name = "kid%d_%d" % (n, i)
            ns = {}
            exec(compile("def %s():\n    return %d\n" % (name, i), "<ft_stress>", "exec"), ns)
            kids[name] = ns[name]
threads = run_threads("ft")
if MODE == "switch":
    lib = ctypes.CDLL(None)
    flips = 0
    while any(t.is_alive() for t in threads):
        (lib.pyperfinject_disable if flips % 2 == 0 else lib.pyperfinject_enable)()
        flips += 1
    lib.pyperfinject_enable()
elif MODE == "fork":
    for n in range(8):
        pid = os.fork()
        if pid == 0:
            ok = all(kids["kid%d_%d" % (n, i)]() == i for i in range(5))
            os._exit(0 if ok else 1)
        print("child %d %d" % (n, pid), flush=True)
        _, status = os.waitpid(pid, 0)
        if status != 0:
            errors.append("child %d status %d" % (n, status))
for t in threads:
    t.join()
count = T * M
if MODE == "switch":
    # Switch-on takes effect at the next pending-call check: let it.
    for _ in range(100):
        if ctypes.CDLL(None).pyperfinject_state() == 1:
            break
        threading.Event().wait(0.005)
    for t in run_threads("fin"):
        t.join()
    count += T * M
print("done %d errors %d" % (count, len(errors)), flush=True)
