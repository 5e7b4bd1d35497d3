# foo -> bar -> baz call a C function that unwinds in-process; prints the
# instruction pointers it found, innermost first, one per line.
import ctypes
import sys

lib = ctypes.CDLL(sys.argv[1])
probe = getattr(lib, sys.argv[2])
probe.argtypes = [ctypes.POINTER(ctypes.c_size_t), ctypes.c_int]


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
