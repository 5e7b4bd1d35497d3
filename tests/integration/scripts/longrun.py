# Keeps making and calling new functions for a few seconds, for switching
# profiling from outside (pyperf-run --pid PID on|off).
import sys
import time

print("ready", flush=True)
deadline = time.time() + float(sys.argv[1])
n = 0
while time.time() < deadline:
    exec(compile("def gen_%d():\n    pass\ngen_%d()\n" % (n, n), "<longrun>", "exec"))
    sys.stdout.write("%d\n" % n)
    sys.stdout.flush()
    n += 1
    time.sleep(0.005)
