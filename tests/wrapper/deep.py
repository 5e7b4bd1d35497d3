"""pyperf-run's deep-chain test program: recurse DEPTH Python calls deep,
then stay busy there for SECONDS (default 1.5).

argv: DEPTH [SECONDS]. Runs on Python 3.6+.
"""
import sys
import time


def rec(n, end):
    if n <= 1:
        x = 0
        while time.time() < end:
            for i in range(1000):
                x += i * i
        return x
    return rec(n - 1, end) + 1


def main():
    depth = int(sys.argv[1])
    seconds = float(sys.argv[2]) if len(sys.argv) > 2 else 1.5
    sys.setrecursionlimit(depth + 100)
    rec(depth, time.time() + seconds)


if __name__ == "__main__":
    main()
