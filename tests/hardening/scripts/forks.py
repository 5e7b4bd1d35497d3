# forks.py RAW NESTED THREADFORKERS PER_THREAD MP_WORKERS MP_TASKS
# Processes every which way; each child runs a function of its own
# (child_<tag>) and reports "child PID TAG" on fd 1, pool tasks report
# "mp PID TAG". Raw os.fork from the main thread, nested forks (depth 3),
# os.fork from non-main threads while two threads keep creating functions,
# and a multiprocessing pool with the fork start method. Ends "forks done
# BAD parent PID".
#
# A child forked from a thread calls a function compiled before the threads
# started: compiling in a child forked while other threads run can wait
# forever on a lock a parent thread held at the fork. On CPython 3.13t a
# contended lock (the interned-string dict's) is handed to a waiting thread,
# which then waits for the world stopped for the fork, so the child inherits
# it locked; that hang shows without the library, and it is not what this
# test is about (tests/hardening/scripts/ft_stress.py avoids it the same way).
import multiprocessing
import os
import sys
import threading

RAW, NESTED, FORKERS, PER, MP_WORKERS, MP_TASKS = (int(a) for a in sys.argv[1:7])


def make(name):
    ns = {}
    exec(compile("def %s():\n    return 1\n" % name, "<forks>", "exec"), ns)
    return ns[name]


def parent_before_fork():
    return 1


def child(tag, fn=None):
    (fn or make("child_" + tag))()
    os.write(1, ("child %d %s\n" % (os.getpid(), tag)).encode())


def reap(pids):
    bad = 0
    for pid in pids:
        _, status = os.waitpid(pid, 0)
        bad += status != 0
    return bad


parent_before_fork()
pids = []
for i in range(RAW):
    pid = os.fork()
    if pid == 0:
        child("raw%d" % i)
        os._exit(0)
    pids.append(pid)


def nested(tag, depth):
    child(tag)
    if depth > 0:
        pid = os.fork()
        if pid == 0:
            nested(tag + "n", depth - 1)
            os._exit(0)
        os._exit(reap([pid]))


for i in range(NESTED):
    pid = os.fork()
    if pid == 0:
        nested("nest%d" % i, 2)
        os._exit(0)
    pids.append(pid)

stop = threading.Event()


def churner(t):
    i = 0
    while not stop.is_set():
        make("churn_%d_%d" % (t, i))()
        i += 1


made_before_threads = {(t, i): make("child_thr%d_%d" % (t, i))
                       for t in range(FORKERS) for i in range(PER)}


def forker(t):
    for i in range(PER):
        fn = made_before_threads[t, i]
        pid = os.fork()
        if pid == 0:
            child("thr%d_%d" % (t, i), fn)
            os._exit(0)
        pids.append(pid)


churners = [threading.Thread(target=churner, args=(t,)) for t in range(2)]
forkers = [threading.Thread(target=forker, args=(t,)) for t in range(FORKERS)]
for t in churners + forkers:
    t.start()
for t in forkers:
    t.join()
stop.set()
for t in churners:
    t.join()
bad = reap(pids)


def mp_task(i):
    make("mp_task_%d" % i)()
    os.write(1, ("mp %d task%d\n" % (os.getpid(), i)).encode())
    return i


if MP_TASKS:
    ctx = multiprocessing.get_context("fork")
    pool = ctx.Pool(MP_WORKERS)
    results = pool.map(mp_task, range(MP_TASKS), chunksize=1)
    pool.close()
    pool.join()
    bad += results != list(range(MP_TASKS))
os.write(1, ("forks done %d parent %d\n" % (bad, os.getpid())).encode())
sys.exit(1 if bad else 0)
