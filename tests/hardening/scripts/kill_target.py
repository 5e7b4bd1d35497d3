# kill_target.py: prints "pid N", then creates functions forever from two
# threads. Each function, once running, writes "started NAME" to fd 1 (one
# unbuffered write) before doing anything else. The harness SIGKILLs it.
import os
import threading

os.write(1, ("pid %d\n" % os.getpid()).encode())
TEMPLATE = ("def {n}():\n"
            "    _w(1, b'started {n}\\n')\n"
            "    return len('{n}')\n")


def work(t):
    i = 0
    while True:
        name = "k%d_%d" % (t, i)
        ns = {"_w": os.write}
        exec(compile(TEMPLATE.format(n=name), "/hardening/kill_target/%d.py" % t, "exec"), ns)
        ns[name]()
        i += 1


threading.Thread(target=work, args=(1,), daemon=True).start()
work(0)
