# fork_bare.py (run with -S, so that no at-fork handler written in Python is
# registered): a forked child that runs no new function and _exits, and a
# subprocess that execs at once. Neither may leave files. Prints
# "bare FORKPID SUBPROCESSPID".
import os

pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
import subprocess  # noqa: E402  (after the fork: it imports threading)

proc = subprocess.Popen(["true"])
proc.wait()
print("bare %d %d" % (pid, proc.pid))
