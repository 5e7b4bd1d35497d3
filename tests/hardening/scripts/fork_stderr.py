# fork_stderr.py: how Twisted and gevent start a process. Fork; in the child
# put a pipe the parent reads on fds 1 and 2, close every other descriptor
# (the library's files among them), run Python code the parent never ran
# (new trampolines to announce), then either exec a program that writes
# "1234" to stderr or write it from Python and _exit. Prints what each
# child's pipe carried: b'1234' both times, with the library or without.
import os
import sys


def child_work(n):
    # New code objects: the library must make and announce trampolines.
    ns = {}
    exec(compile("".join("def child_fn_%d():\n    return %d\n" % (i, i) for i in range(n)),
                 "<child>", "exec"), ns)
    return sum(ns["child_fn_%d" % i]() for i in range(n))


def spawn(exec_it):
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:
        try:
            os.dup2(w, 1)
            os.dup2(w, 2)
            os.closerange(3, 4096)
            child_work(20)
            if exec_it:
                os.execv("/bin/sh", ["sh", "-c", "printf 1234 >&2"])
            os.write(2, b"1234")
        finally:
            os._exit(0)
    os.close(w)
    data = b""
    while True:
        chunk = os.read(r, 65536)
        if not chunk:
            break
        data += chunk
    os.close(r)
    _, status = os.waitpid(pid, 0)
    return data, status


child_work(5)
results = [spawn(True), spawn(False)]
print(" ".join("%r/%d" % r for r in results))
sys.exit(0 if all(r == (b"1234", 0) for r in results) else 1)
