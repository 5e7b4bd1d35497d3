"""A service that already runs when pyperf-run attaches to it: prints its
pid, then calls handle() (which calls work()) in a loop, sleeping between
rounds as a server waits for requests. Usage: service.py [SECONDS]"""
import os
import sys
import time


def work(n):
    return sum(i * i for i in range(n))


def handle():
    return work(3000)


def main():
    end = time.time() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60)
    sys.stdout.write("%d\n" % os.getpid())  # Python 2 too: it must be refused
    sys.stdout.flush()
    while time.time() < end:
        handle()
        time.sleep(0.005)


main()
