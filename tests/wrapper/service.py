"""A service that already runs when pyperf-run attaches to it: prints its
pid, then calls handle() (which calls work()) in a loop, sleeping between
rounds as a server waits for requests, until SECONDS have passed or the
file STOP exists; then it says so and exits 0.
Usage: service.py [SECONDS [STOP]]"""
import os
import sys
import time


def work(n):
    # A loop in work's own frame, not a generator: the time is work's own
    # (self), so it leads pyperf-run report --top however many native rows
    # a sanitizer's runtime adds below it.
    total = 0
    for i in range(n):
        total += i * i
    return total


def handle():
    return work(3000)


def main():
    end = time.time() + (float(sys.argv[1]) if len(sys.argv) > 1 else 60)
    stop = sys.argv[2] if len(sys.argv) > 2 else None
    sys.stdout.write("%d\n" % os.getpid())  # Python 2 too: it must be refused
    sys.stdout.flush()
    while time.time() < end and not (stop and os.path.exists(stop)):
        handle()
        time.sleep(0.005)
    sys.stdout.write("stopped cleanly\n")


main()
