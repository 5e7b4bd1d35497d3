"""Call-bound workload: naive recursive Fibonacci, nothing but Python calls.

Usage: fib.py [N]   (default 30). Prints the result, which is the same with
or without the library: the harness compares it with the plain run.
"""
import sys


def fib(n):
    if n < 2:
        return n
    return fib(n - 1) + fib(n - 2)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 30
    print("fib(%d) = %d" % (n, fib(n)))


if __name__ == "__main__":
    main()
