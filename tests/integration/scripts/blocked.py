"""A program a debugger looks at: blocked inside foo <- bar <- baz <- <module>.

Usage: blocked.py MODE [EXTRA]
  MODE  sleep   block in time.sleep (the debugger attaches, or dumps a core)
        lock    block in a lock held by another thread
        fork    fork inside bar; the child blocks in a foo of its own, the
                parent waits for it (the debugger attaches to the child)
        switch  in bar: the library off (pyperfinject_disable), a new function
                `unnamed` runs, the library on again, then foo blocks
        abort   foo calls pyperfinject_flush() and then os.abort() (a program
                started under the debugger stops there)
        hot     a hot loop first (what CPython's JIT compiles), then as sleep
  EXTRA  functions made and called once before (default 0)

Prints "ready PID LINE" on stdout once blocked (the child's pid in fork
mode; LINE: the module code's first line, which CPython before 3.8 puts at
the first statement).
"""
import os
import sys
import threading
import time

MODULE_LINE = sys._getframe().f_code.co_firstlineno
MODE = sys.argv[1]
EXTRA = int(sys.argv[2]) if len(sys.argv) > 2 else 0


def library(name):
    import ctypes
    return getattr(ctypes.CDLL(None), name)


def ready():
    sys.stdout.write("ready %d %d\n" % (os.getpid(), MODULE_LINE))
    sys.stdout.flush()


def foo():
    if MODE == "lock":
        held = threading.Lock()
        held.acquire()
        ready()
        held.acquire()
    elif MODE == "abort":
        ready()
        library("pyperfinject_flush")()
        os.abort()
    else:
        ready()
        time.sleep(600)


def bar():
    if MODE == "fork":
        pid = os.fork()
        if pid:
            os.waitpid(pid, 0)
            return
    if MODE == "switch":
        library("pyperfinject_disable")()
        exec("def unnamed():\n    return 1\n", globals())
        unnamed()  # noqa: F821 (made by exec)
        library("pyperfinject_enable")()
    foo()


def baz():
    bar()


def hot(n):
    total = 0
    for i in range(n):
        total += i * 2 % 7
    return total


if MODE == "hot":
    for _ in range(200):
        hot(20000)
namespace = {}
for i in range(EXTRA):
    exec("def extra_%d():\n    return %d\n" % (i, i), namespace)
    namespace["extra_%d" % i]()
baz()
