"""Many new functions: COUNT distinct functions, each called exactly once.

The functions are made with compile()/exec() in batches of BATCH (each batch
is one module source with BATCH `def`s), all kept alive until the end, and
then each is called once. Under the library every first call makes a
trampoline and writes its map line and jitdump records, so

    (call phase with the library - call phase plain) / COUNT

is the cost of one new function, and the growth of resident memory between
the two runs, divided by COUNT, is what the library keeps per function.

Usage: many_functions.py [COUNT [BATCH]]   (defaults 100000, 1000)

Output: a "checksum" line (the same with or without the library) and
"metric NAME VALUE" lines the harness reads (they differ between runs):
  metric create_s  seconds spent compiling and exec'ing the definitions
  metric call_s    seconds spent in the first calls
  metric rss_before_kb / rss_after_kb   VmRSS from /proc/self/status before
                   the first batch and after the last call (all alive)
"""
import gc
import sys
import time


def rss_kb():
    try:
        with open("/proc/self/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except (OSError, ValueError, IndexError):
        pass
    return -1


def batch_source(b, batch):
    lines = []
    for i in range(batch):
        lines.append("def f_%d_%d(x):\n    return x + %d\n" % (b, i, b * batch + i))
    return "".join(lines)


def main():
    count = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    batch = int(sys.argv[2]) if len(sys.argv) > 2 else 1000
    nbatches = (count + batch - 1) // batch
    clock = time.perf_counter

    gc.collect()
    rss_before = rss_kb()

    t0 = clock()
    funcs = []
    for b in range(nbatches):
        n = min(batch, count - b * batch)
        ns = {}
        exec(compile(batch_source(b, n), "<many_functions batch %d>" % b, "exec"), ns)
        funcs.extend(ns["f_%d_%d" % (b, i)] for i in range(n))
    t1 = clock()
    total = 0
    for f in funcs:
        total += f(1)
    t2 = clock()

    gc.collect()
    rss_after = rss_kb()
    print("many_functions(%d) checksum %d" % (len(funcs), total))
    print("metric create_s %.6f" % (t1 - t0))
    print("metric call_s %.6f" % (t2 - t1))
    print("metric rss_before_kb %d" % rss_before)
    print("metric rss_after_kb %d" % rss_after)


if __name__ == "__main__":
    main()
