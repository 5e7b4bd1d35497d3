# forkwarn.py: a single-threaded program that forks (3.12+ warns about
# fork() only when the process has other threads).
import os

pid = os.fork()
if pid == 0:
    os._exit(0)
os.waitpid(pid, 0)
print("forked")
