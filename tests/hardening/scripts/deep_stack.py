# deep_stack.py WHERE: recurses with the recursion limit at 10**6 until
# RecursionError, on the main thread ("main") or on a threading thread with
# the default stack ("thread") or threading.stack_size(N) ("thread:N"), then
# checks the interpreter still works. Prints "WHERE RecursionError DEPTH OK".
# Without a guard a thread's C stack runs out first: SIGSEGV.
import sys
import threading

sys.setrecursionlimit(10 ** 6)
where = sys.argv[1]
depth = [0]


def down(n):
    depth[0] = n
    down(n + 1)


def after():
    # The interpreter is fine afterwards: calls, a shallow recursion (small
    # thread stacks hold few frames under a PEP 523 hook).
    def up(n):
        return up(n - 1) + 1 if n else 0
    return up(10) == 10


def run(result):
    try:
        down(1)
        result.append("no RecursionError")
    except RecursionError:
        result.append("RecursionError %d %s" % (depth[0], "OK" if after() else "BROKEN"))


result = []
if where == "main":
    run(result)
else:
    if ":" in where:
        threading.stack_size(int(where.split(":")[1]))
    t = threading.Thread(target=run, args=(result,))
    t.start()
    t.join()
print(where, result[0] if result else "thread died")
