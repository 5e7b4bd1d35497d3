# Switches profiling off and on by API and by signal; 4 threads keep making
# new functions while the main thread toggles 100 times.
import ctypes
import os
import signal
import sys
import threading
import time

lib = ctypes.CDLL(None)


def settle():
    # Switch-on takes effect at CPython's next pending-call check, switch-off
    # at the next call: give both a moment.
    for _ in range(20):
        time.sleep(0.002)


def run_new(name):
    ns = {}
    exec(compile("def %s():\n    return 1\n" % name, "<switching>", "exec"), ns)
    return ns[name]()


run_new("first_on")
lib.pyperfinject_disable()
settle()
run_new("while_off_api")
lib.pyperfinject_enable()
settle()
run_new("after_api_on")
os.kill(os.getpid(), signal.SIGUSR2)       # toggle: off
settle()
run_new("while_off_signal")
os.kill(os.getpid(), signal.SIGUSR2)       # toggle: on
settle()
run_new("after_signal_on")
print("state", lib.pyperfinject_state())

stop = []


def churn(t):
    i = 0
    while not stop:
        run_new("churn_%d_%d" % (t, i))
        i += 1


threads = [threading.Thread(target=churn, args=(t,)) for t in range(4)]
for t in threads:
    t.start()
for i in range(100):
    (lib.pyperfinject_disable if i % 2 == 0 else lib.pyperfinject_enable)()
    time.sleep(0.001)
stop.append(1)
for t in threads:
    t.join()
lib.pyperfinject_enable()
settle()
run_new("at_the_end")
print("done", lib.pyperfinject_state())
