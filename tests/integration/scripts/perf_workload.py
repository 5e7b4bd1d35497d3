# CPU-bound foo -> bar -> baz -> <module> for a given number of seconds, for
# the perf tests: almost every sample lands inside foo.
import sys
import time


def foo(n):
    total = 0
    for i in range(n):
        total += i * i % 7
    return total


def bar(n):
    return foo(n)


def baz(n):
    return bar(n)


deadline = time.time() + float(sys.argv[1])
while time.time() < deadline:
    baz(20000)
print("ok")
