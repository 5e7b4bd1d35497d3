# Like tests/integration/scripts/unwind.py, but foo -> bar -> baz get their
# trampolines only after FILLER other functions have run, so (with 1024 slots
# an arena) they live in a later arena than <module>: the unwinder must find
# the unwind info of every arena, not just the first.
# Usage: unwind_late_arena.py PROBE_SO PROBE_FUNC [FILLER]
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
probe = getattr(lib, sys.argv[2])
probe.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]
filler = int(sys.argv[3]) if len(sys.argv) > 3 else 2100

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
