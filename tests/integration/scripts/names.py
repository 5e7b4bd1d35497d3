# Hostile names: newlines, control characters, huge and non-UTF-8 names.
import sys

SOURCES = {
    "nl": ("def f():\n    pass\nf.__code__ = f.__code__.replace(co_name='a\\nb', co_qualname='a\\nb')"
           if sys.version_info >= (3, 11) else
           "def f():\n    pass\nf.__code__ = f.__code__.replace(co_name='a\\nb')"
           if sys.version_info >= (3, 8) else "def f():\n    pass\n"),
}


def call_with_filename(filename, funcname):
    ns = {}
    exec(compile("def %s():\n    return 1\n" % funcname, filename, "exec"), ns)
    return ns[funcname]()


call_with_filename("/tmp/line\nbreak.py", "newline_in_file")
call_with_filename("/tmp/ctl\x01\x1b[31m.py", "control_in_file")
call_with_filename("/tmp/" + "x" * 5000 + ".py", "huge_file")
call_with_filename("/tmp/bad-\udcff-bytes.py", "surrogate_file")
call_with_filename("/tmp/caf\u00e9-\u6f22.py", "unicode_file")
ns = {}
exec(SOURCES["nl"], ns)
ns["f"]()
g = eval("lambda: 1")
g()
print("names done")
