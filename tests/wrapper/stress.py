"""The attach stress target: 16 threads that allocate, import new modules,
fork and create new functions the whole time, with a fixed amount of work so
that the output is the same however often the library comes and goes.
Usage: stress.py MODULE_DIR [ROUNDS]   Prints one summary line; exit 0."""
import importlib
import os
import sys
import threading
import time

THREADS = 16


def one_thread(t, rounds, module_dir, results):
    total = 0
    for i in range(rounds):
        space = {}
        exec("def made_%d_%d(x):\n    return x * %d + %d\n" % (t, i, t + 1, i), space)
        total += space["made_%d_%d" % (t, i)](i)
        total += len([bytes(16) for _ in range(200)])
        if i % 25 == 0:
            name = "stress_mod_%d_%d" % (t, i)
            with open(os.path.join(module_dir, name + ".py"), "w") as f:
                f.write("def value():\n    return %d\n" % (t * 1000 + i))
            importlib.invalidate_caches()
            total += importlib.import_module(name).value()
        if i % 100 == 50:
            pid = os.fork()
            if pid == 0:
                os._exit((t + i) % 200)
            _, status = os.waitpid(pid, 0)
            total += os.WEXITSTATUS(status)
        time.sleep(0.001)
    results[t] = total


def main():
    module_dir = sys.argv[1]
    rounds = int(sys.argv[2]) if len(sys.argv) > 2 else 400
    sys.path.insert(0, module_dir)
    results = [0] * THREADS
    threads = [threading.Thread(target=one_thread, args=(t, rounds, module_dir, results))
               for t in range(THREADS)]
    for th in threads:
        th.start()
    # The main thread of a service keeps running Python (an event loop, a
    # supervisor), which is where CPython runs what sys.remote_exec asks.
    while any(th.is_alive() for th in threads):
        time.sleep(0.01)
    for th in threads:
        th.join()
    sys.stdout.write("stress: %d threads x %d rounds, sum %d\n" % (THREADS, rounds, sum(results)))


if __name__ == "__main__":
    import warnings
    # 3.12+ warns at fork() in a process with threads, with or without the
    # library: the same text either way, kept out of the compared output.
    warnings.simplefilter("ignore", DeprecationWarning)
    main()
