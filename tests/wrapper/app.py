"""pyperf-run's test program: main -> bar -> foo, busy for about a second.

Runs on Python 2.7 and 3.6+. argv[1]: loop count (default 2500000).
"""
import sys


def foo(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def bar(n):
    return foo(n)


def main():
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 2500000
    result = 0
    for _ in range(2):
        result += bar(n)
    print(result % 1000003)


if __name__ == "__main__":
    main()
