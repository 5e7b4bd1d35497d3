# The seed documents' example: foo -> bar -> baz -> <module>.
# Runs unchanged on Python 2.7 (which must stay untouched by the library).
import os
import sys


def foo(n):
    result = 0
    for _ in range(n):
        result += 1
    return result


def bar(n):
    return foo(n)


def baz(n):
    return bar(n)


def dump_mappings():
    # Lets the test check that every map address lies in executable memory of
    # this very process. Done in both runs, so output stays comparable.
    target = os.environ.get("PYPERFINJECT_TEST_MAPS")
    if target:
        with open("/proc/self/maps") as src, open(target, "w") as dst:
            dst.write(src.read())


if __name__ == "__main__":
    n = int(sys.argv[1]) if len(sys.argv) > 1 else 100000
    print("result", baz(n))
    sys.stderr.write("stderr line\n")
    dump_mappings()
    sys.exit(int(os.environ.get("PYPERFINJECT_TEST_EXIT", "0")))
