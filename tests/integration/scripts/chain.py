# Runs f() many times with another PEP 523 user installed before the library
# (preloaded, PEP523_COUNTER_EARLY=1) or after it (installed here).
import ctypes
import sys

counter = ctypes.PyDLL(sys.argv[1])
if sys.argv[2] == "after":
    if counter.install_counter() != 0:
        raise SystemExit("could not install the counter")


def f(i):
    return i * 2


total = sum(f(i) for i in range(1000))
print("total", total)
print("counted", counter.counted_calls() >= 1000)
print("installed", counter.counter_is_installed())
