# paths.py ELSEWHERE: a program trying to influence where the files go: it
# changes directory, rewrites PYPERFINJECT_DIR and TMPDIR in its environment,
# runs functions whose names and file names are paths, then forks a child
# that runs more. Prints "child PID" and "paths done".
import os
import sys

elsewhere = sys.argv[1]
os.chdir(elsewhere)
os.environ["PYPERFINJECT_DIR"] = elsewhere
os.environ["TMPDIR"] = elsewhere
ns = {}
for i, (name, filename) in enumerate([("a", "../../../../tmp/evil.py"),
                                      ("b", "/etc/passwd"),
                                      ("c", elsewhere + "/perf-1.map"),
                                      ("d", "relative/evil.py")]):
    exec(compile("def p%s():\n    return %d\n" % (name, i), filename, "exec"), ns)
    ns["p" + name]()
pid = os.fork()
if pid == 0:
    exec(compile("def in_child():\n    return 1\n", "../child.py", "exec"), ns)
    ns["in_child"]()
    os._exit(0)
os.waitpid(pid, 0)
print("child %d" % pid)
print("paths done")
