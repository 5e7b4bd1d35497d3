# exec_chain.py LEVEL LAST MODE: runs level_<LEVEL>() and reports
# "level LEVEL pid PID"; below LAST it goes on with os.execv (MODE exec: the
# same pid, the preload inherited) or a subprocess (MODE spawn: a new pid).
import os
import subprocess
import sys

LEVEL, LAST, MODE = int(sys.argv[1]), int(sys.argv[2]), sys.argv[3]
ns = {}
exec(compile("def level_%d():\n    return %d\n" % (LEVEL, LEVEL), "<chain>", "exec"), ns)
ns["level_%d" % LEVEL]()
os.write(1, ("level %d pid %d\n" % (LEVEL, os.getpid())).encode())
if LEVEL < LAST:
    argv = [sys.executable, os.path.abspath(__file__), str(LEVEL + 1), str(LAST), MODE]
    if MODE == "exec":
        os.execv(sys.executable, argv)
    sys.exit(subprocess.call(argv))
