# deleted_dir.py OUTDIR: runs functions, deletes OUTDIR (the output
# directory), runs more, then forks a child that runs functions too.
import os
import shutil
import sys


def make(name):
    ns = {}
    exec(compile("def %s():\n    return 1\n" % name, "<deleted>", "exec"), ns)
    return ns[name]


for i in range(50):
    make("before_%d" % i)()
shutil.rmtree(sys.argv[1])
for i in range(50):
    make("after_%d" % i)()
pid = os.fork()
if pid == 0:
    for i in range(10):
        make("child_%d" % i)()
    os._exit(0)
_, status = os.waitpid(pid, 0)
print("deleted done %d" % status)
