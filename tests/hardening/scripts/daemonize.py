# daemonize.py LOGFILE: what daemonising code does (python-daemon's
# DaemonContext, many servers): close every descriptor above 2, open its own
# log, then go on running (new) functions. The log must hold only its line.
import os
import sys

os.closerange(3, 4096)
fd = os.open(sys.argv[1], os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
os.write(fd, b"log line\n")
for i in range(5):
    ns = {}
    exec(compile("def after_close_%d():\n    return 1\n" % i, "<daemon>", "exec"), ns)
    ns["after_close_%d" % i]()
os.close(fd)
print("daemonized")
