"""The container tests' program: main -> bar -> foo until SECONDS have
passed (argv[1], default 2), like a service. SIGTERM ends it with exit
status 3 after printing "terminated", so a test can see that the signal
reached the program and that its own status came back."""
import signal
import sys
import time


def foo(n):
    total = 0
    for i in range(n):
        total += i * i
    return total


def bar(n):
    return foo(n)


def on_term(signum, frame):
    print("terminated", flush=True)
    sys.exit(3)


def main():
    signal.signal(signal.SIGTERM, on_term)
    seconds = float(sys.argv[1]) if len(sys.argv) > 1 else 2.0
    end = time.monotonic() + seconds
    rounds = 0
    while time.monotonic() < end:
        bar(100000)
        rounds += 1
    print("done", rounds > 0, flush=True)


if __name__ == "__main__":
    main()
