# Hostile names and odd code objects. Every case prints "mkNN ran" (or
# "mkNN unsupported ERROR" where this version refuses to build it), the same
# with and without the library; the harness then looks for mkNN in the map.
# Python 3.6+ (no newer syntax).
import marshal
import os
import sys
import types

V = sys.version_info[:2]


def rename(code, name=None, filename=None, firstlineno=None):
    """A copy of code with other names: replace() from 3.8, the constructor before."""
    if hasattr(code, "replace"):
        kw = {}
        if name is not None:
            kw["co_name"] = name
            if V >= (3, 11):
                kw["co_qualname"] = name
        if filename is not None:
            kw["co_filename"] = filename
        if firstlineno is not None:
            kw["co_firstlineno"] = firstlineno
        return code.replace(**kw)
    return types.CodeType(
        code.co_argcount, code.co_kwonlyargcount, code.co_nlocals, code.co_stacksize,
        code.co_flags, code.co_code, code.co_consts, code.co_names, code.co_varnames,
        code.co_filename if filename is None else filename,
        code.co_name if name is None else name,
        code.co_firstlineno if firstlineno is None else firstlineno,
        code.co_lnotab, code.co_freevars, code.co_cellvars)


class S(str):
    pass


CASES = [
    ("mk01", "mk01_a\nb", None, None),
    ("mk02", "mk02_\r\t\x00\x1b[31m\x7f", None, None),
    ("mk03", "mk03_\x85\u2028\u202e\ufeff", None, None),
    ("mk04", "mk04_\ud800", None, None),
    ("mk05", "mk05_\udcff\udc80", None, None),
    ("mk06", "mk06_" + "x" * 1000000, None, None),
    ("mk07", "mk07_" + "\u00e9" * 2000, None, None),
    ("mk08", "mk08_" + "\U0001F600" * 600, None, None),
    ("mk09", "mk09_ 0 0 py::fake:/etc/passwd", None, None),
    ("mk10", "mk10_%s%n%x%p%%", None, None),
    ("mk11", "mk11_../../../../etc/passwd", None, None),
    ("mk12", "", "/tmp/mk12.py", None),
    ("mk13", "mk13", "", None),
    ("mk14", "mk14", "\n", None),
    ("mk15", "mk15", "rel/dir/x.py", None),
    ("mk16", "mk16", "/tmp/a\x00b.py", None),
    ("mk17", "mk17", os.fsdecode(b"/tmp/\xff\xfe.py"), None),
    ("mk18", "mk18", "/" + "y" * 100000, None),
    ("mk19", "mk19", None, 0),
    ("mk20", "mk20", None, 2 ** 31 - 1),
    ("mk21", "mk21", "<frozen fake>", None),
    ("mk22", S("mk22_sub"), S("/tmp/mk22.py"), None),
    ("mk23", "mk23_\x00", None, None),
    ("mk24", "mk24_\u0000\u0001\u001f \u00a0", "\udcc3\udca9.py", None),
]

for marker, name, filename, line in CASES:
    def f():
        return 7
    try:
        f.__code__ = rename(f.__code__, name, filename, line)
    except Exception as e:  # a version that refuses the value
        print("%s unsupported %s" % (marker, type(e).__name__))
        continue
    print("%s ran %d" % (marker, f()))

# Code objects made in odd ways.
ns = {}
g = eval(compile("lambda: 30", "/tmp/mk30.py", "eval"))
print("mk30 ran %d" % g())
exec(compile("def mk31f():\n    return 31\n", "/tmp/mk31.py", "exec"), ns)
exec(compile("mk31f()", "/tmp/mk31.py", "single"), ns)  # prints 31 (single mode)
code = marshal.loads(marshal.dumps(compile("def mk32():\n    return 32\n", "/tmp/mk32.py",
                                           "exec")))
exec(code, ns)
print("mk32 ran %d" % ns["mk32"]())


def mk33_gen():
    yield 33


print("mk33 ran %d" % list(mk33_gen())[0])
exec(compile("async def mk34_coro():\n    return 34\n", "/tmp/mk34.py", "exec"), ns)
c = ns["mk34_coro"]()
try:
    c.send(None)
except StopIteration as e:
    print("mk34 ran %d" % e.value)
exec(compile("async def mk35_agen():\n    yield 35\n", "/tmp/mk35.py", "exec"), ns)
try:
    ns["mk35_agen"]().__anext__().send(None)
except StopIteration as e:
    print("mk35 ran %d" % e.value)
inner = compile("def mk36():\n    return 36\n", "/tmp/mk36.py", "exec").co_consts[0]
print("mk36 ran %d" % types.FunctionType(inner, {})())


class mk37_cls(object):
    x = 37


print("mk37 ran %d" % mk37_cls.x)


def mk38():
    return sum([x for x in range(3)]) + sum(x for x in range(3)) + len({x: x for x in "ab"})


print("mk38 ran %d" % mk38())
exec(compile("def mk39():\n    assert False\n    return 39\n", "/tmp/mk39.py", "exec", 0, True, 2),
     ns)
print("mk39 ran %d" % ns["mk39"]())


def mk40_outer():
    k = 40

    def mk40_inner():
        return k
    return mk40_inner()


print("mk40 ran %d" % mk40_outer())


def mk41(n):
    return n if n == 0 else mk41(n - 1)


mk41.__code__ = rename(mk41.__code__, "mk41_\u00e9\n")
print("mk41 ran %d" % mk41(50))
# The same hostile name on many code objects (distinct trampolines).
for i in range(50):
    def h():
        return i
    h.__code__ = rename(h.__code__, "mk42_dup\n")
    h()
print("mk42 ran")
sys.stdout.flush()
