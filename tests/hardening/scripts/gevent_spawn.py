# gevent_spawn.py: gevent's subprocess forks and runs Python in the child
# (closing descriptors, dup2) before it execs. Ten children whose stdout and
# stderr go to one pipe; prints what the first carried and how many kinds.
import gevent.subprocess as sp

outs = [sp.check_output(["sh", "-c", "printf out; printf err >&2"], stderr=sp.STDOUT)
        for _ in range(10)]
print(outs[0], len(set(outs)))
