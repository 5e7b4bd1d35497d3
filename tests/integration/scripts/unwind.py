# foo -> bar -> baz call a C function that unwinds in-process; prints the
# instruction pointers it found, innermost first, one per line.
# With FILLER, that many other functions run first, so (with 1024 slots an
# arena) foo, bar and baz get their trampolines in a later arena than
# <module>: the unwinder must find the unwind info of every arena, not just
# the first (tests/aarch64/run.sh).
# Usage: unwind.py PROBE_SO PROBE_FUNC [FILLER]   (FILLER: default 0, none)
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
probe = getattr(lib, sys.argv[2])
probe.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
filler = int(sys.argv[3]) if len(sys.argv) > 3 else 0

if filler:
    space = {}
    exec("".join("def filler_%d():\n    return %d\n" % (i, i) for i in range(filler)), space)
    total = sum(space["filler_%d" % i]() for i in range(filler))
    assert total == filler * (filler - 1) // 2


def foo():
    ips = (ctypes.c_size_t * 256)()
    n = probe(ips, 256)
    return [ips[i] for i in range(max(n, 0))]


def bar():
    return foo()


def baz():
    return bar()


for ip in baz():
    print("%x" % ip)
