# recursion.py DEPTH [LIMIT]: recurses DEPTH deep (with the recursion limit
# set to LIMIT if given); prints "ok DEPTH" or "RecursionError".
import sys

depth = int(sys.argv[1])
if len(sys.argv) > 2:
    sys.setrecursionlimit(int(sys.argv[2]))


def f(n):
    return f(n - 1) + 1 if n else 0


try:
    print("ok %d" % f(depth))
except RecursionError:
    print("RecursionError")
