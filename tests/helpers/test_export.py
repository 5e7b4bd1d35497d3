"""Unit tests of pyperf-run's export helpers: samples.py (perf script and
jitdump parsing), pyview.py with interpreter_frames.py (the Python view)
and export.py (folded, speedscope, pprof encodings)."""
import base64
import gzip
import json
import os
import struct
import sys
import tempfile
import unittest

HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pyperf-run-helpers")
sys.path.insert(0, HELPERS)

import export  # noqa: E402
import interpreter_frames  # noqa: E402
import pyview  # noqa: E402
import samples  # noqa: E402

PY = "/usr/bin/python3.11"
SCRIPT = """\
Web Content 1234/1240    1001001 
\t    7f10 long_mul (/usr/bin/python3.11)
\t      85 py::foo:/app/app.py (/tmp/jitted-1234-7.so)
\t  138216 _PyEval_EvalFrameDefault (/usr/bin/python3.11)
\t  13b5fb PyObject_Vectorcall (/usr/bin/python3.11)
\t  15d603 _PyFunction_Vectorcall (/usr/bin/python3.11)
\t      95 py::bar:/app/app.py (/tmp/jitted-1234-8.so)
\t  138216 _PyEval_EvalFrameDefault (/usr/bin/python3.11)
\t  1fe000 PyEval_EvalCode (/usr/bin/python3.11)
\t  1fe100 [unknown] (/usr/bin/python3.11)
\t  29d90 __libc_start_call_main (/usr/lib/x86_64-linux-gnu/libc.so.6)

python3 77/78   1001001
\tffffffff8225f759 pvm_irq_enable ([kernel.kallsyms])
\t    5a5a [unknown] ([unknown])

"""


class ParseTest(unittest.TestCase):
    def test_headers_and_frames(self):
        got = list(samples.parse(SCRIPT.splitlines(True)))
        self.assertEqual(len(got), 2)
        comm, pid, tid, time, period, stack = got[0]
        self.assertEqual((comm, pid, tid, time, period), ("Web Content", 1234, 1240, None, 1001001))
        self.assertEqual(stack[0], ("long_mul", PY))
        self.assertEqual(stack[1], ("py::foo:/app/app.py", "/tmp/jitted-1234-7.so"))
        self.assertEqual(len(stack), 10)
        self.assertEqual(got[1][5], [("pvm_irq_enable", "[kernel.kallsyms]"), ("[unknown]", "[unknown]")])

    def test_garbage_between_samples_is_skipped(self):
        got = list(samples.parse(["not a header\n", "\t  1 x (y)\n", "\n"] + SCRIPT.splitlines(True)))
        self.assertEqual(len(got), 2)


class ViewTest(unittest.TestCase):
    def test_python_311_folds_machinery_keeps_work(self):
        stack = list(samples.parse(SCRIPT.splitlines(True)))[0][5]
        kept = [s for s, _ in pyview.python_view(stack)]
        # the unnamed interpreter frame on the way to py::bar is folded too
        self.assertEqual(kept, ["long_mul", "py::foo:/app/app.py", "py::bar:/app/app.py"])

    def test_unnamed_interpreter_frames(self):
        # Between Python frames an unnamed interpreter frame is call
        # machinery; under the innermost one it is work. Other objects'
        # unnamed frames stay everywhere; version and clone suffixes
        # (LTO builds: run_mod.lto_priv.0) do not hide names.
        stack = [("[unknown]", "/sysroot/usr/bin/python3.15"), ("py::f:/a.py", "/j.so"),
                 ("[unknown]", "/sysroot/usr/bin/python3.15"), ("[unknown]", "/x/libfoo.so"),
                 ("py::g:/a.py", "/j.so"), ("run_mod.lto_priv.0", "/sysroot/usr/bin/python3.15"),
                 ("pyrun_file.isra.0.cold", "/sysroot/usr/bin/python3.15"),
                 ("[unknown]", "/sysroot/usr/bin/python3.15"),
                 ("__libc_start_main@@GLIBC_2.34", "/lib/libc.so.6")]
        self.assertEqual(pyview.python_view(stack), [
            ("[unknown]", "/sysroot/usr/bin/python3.15"), ("py::f:/a.py", "/j.so"),
            ("[unknown]", "/x/libfoo.so"), ("py::g:/a.py", "/j.so")])

    def test_version_rows(self):
        for minor in range(interpreter_frames.OLDEST, interpreter_frames.NEWEST + 1):
            names = interpreter_frames.machinery(minor)
            self.assertIn("_PyEval_EvalFrameDefault", names, minor)
            self.assertNotIn("long_mul", names)
        self.assertIn("_PyFunction_FastCallKeywords", interpreter_frames.machinery(6))
        self.assertNotIn("_PyFunction_FastCallKeywords", interpreter_frames.machinery(11))
        self.assertIn("_PyEval_Vector", interpreter_frames.machinery(10))
        self.assertEqual(interpreter_frames.machinery(99), interpreter_frames.machinery(15))

    def test_only_interpreter_frames_fold(self):
        # An extension module's function named like the interpreter's stays;
        # the library's eval hook goes.
        stack = [("py::f:/a.py", "/j.so"), ("PyObject_Call", "/site/numpy/core/_multiarray.so"),
                 ("hook_tstate_frame_throw", "/opt/lib/libpyperfinject.so"),
                 ("_PyEval_EvalFrameDefault", "/usr/lib/libpython3.8.so.1.0"),
                 ("call_function", "/usr/lib/libpython3.8.so.1.0")]
        self.assertEqual([s for s, _ in pyview.python_view(stack)], ["py::f:/a.py", "PyObject_Call"])

    def test_interpreter_names(self):
        for dso, minor in (("/usr/bin/python3.11", 11), ("/x/libpython3.13t.so.1.0", 13),
                           ("/x/python3.15d", 15), ("/x/libpython3.6m.so.1.0", 6)):
            self.assertEqual(pyview.interpreter_minor([("x", dso)]), minor, dso)
        self.assertIsNone(pyview.interpreter_minor([("x", "/usr/bin/python3-config")]))

    def test_split_py_name(self):
        self.assertEqual(pyview.split_py_name("py::A.b:/x/y.py"), ("A.b", "/x/y.py"))
        self.assertEqual(pyview.split_py_name("py::<lambda>:C:/y.py"), ("<lambda>", "C:/y.py"))
        self.assertIsNone(pyview.split_py_name("long_mul"))
        # CPython's JIT code (3.15): the function's, or several that came and went
        self.assertEqual(pyview.split_py_name("py::jit:A.b:/x/y.py"), ("A.b [jit]", "/x/y.py"))
        self.assertEqual(pyview.split_py_name("py::jit:f:/x/y.py|g:/x/y.py"),
                         ("f|g [jit]", "/x/y.py"))
        self.assertEqual(pyview.split_py_name("py::jit:f:/a.py|g:/b.py|..."), ("f|g|... [jit]", ""))
        self.assertEqual(pyview.split_py_name("py::jit:executor"), ("executor [jit]", ""))


def jitdump(records):
    out = struct.pack("<IIIIIIQQ", samples.JITDUMP_MAGIC, 1, 40, 62, 0, 7, 0, 0)
    for r in records:
        out += r
    return out


def debug_info(addr, line, name):
    body = struct.pack("<QQ", addr, 1) + struct.pack("<QiI", addr, line, 0) + name + b"\0"
    return struct.pack("<IIQ", samples.DEBUG_INFO, 16 + len(body), 0) + body


def code_load(addr, name):
    body = struct.pack("<IIQQQQ", 7, 7, addr, addr, 16, 1) + name + b"\0" + b"\x90" * 16
    return struct.pack("<IIQ", samples.CODE_LOAD, 16 + len(body), 0) + body


class JitdumpTest(unittest.TestCase):
    def test_first_lines_and_a_cut_record(self):
        with tempfile.TemporaryDirectory() as d:
            data = jitdump([debug_info(0x1000, 8, b"/app/app.py"), code_load(0x1000, b"py::foo:/app/app.py"),
                            debug_info(0x2000, 15, b"/app/app.py"), code_load(0x2000, b"py::bar:/app/app.py"),
                            code_load(0x3000, b"py::nodebug:/app/app.py")])
            data += code_load(0x4000, b"py::cut:/app/app.py")[:30]  # killed mid-record
            os.mkdir(os.path.join(d, "sub"))
            with open(os.path.join(d, "sub", "jit-7.dump"), "wb") as f:
                f.write(data)
            self.assertEqual(samples.function_lines(d),
                             {"py::foo:/app/app.py": 8, "py::bar:/app/app.py": 15})


def decode(buf):
    """profile.proto as {field: [values]} (varints as ints, the rest bytes)."""
    out, pos = {}, 0

    def varint():
        nonlocal pos
        n = shift = 0
        while True:
            b = buf[pos]
            pos += 1
            n |= (b & 0x7F) << shift
            shift += 7
            if b < 0x80:
                return n
    while pos < len(buf):
        key = varint()
        if key & 7 == 0:
            out.setdefault(key >> 3, []).append(varint())
        else:
            n = varint()
            out.setdefault(key >> 3, []).append(buf[pos:pos + n])
            pos += n
    return out


def packed_varints(buf):
    out, n, shift = [], 0, 0
    for b in bytearray(buf):
        n |= (b & 0x7F) << shift
        shift += 7
        if b < 0x80:
            out.append(n)
            n = shift = 0
    return out


class ExportTest(unittest.TestCase):
    def setUp(self):
        self.stacks = []
        self.frames = export.Frames({"py::foo:/app/app.py": 8})
        for comm, pid, tid, _, period, stack in samples.parse(SCRIPT.splitlines(True)):
            kept = pyview.python_view(stack)
            self.stacks.append((comm, pid, tid, period, [self.frames.of(s, d) for s, d in reversed(kept)]))

    def test_folded(self):
        with tempfile.NamedTemporaryFile("r") as f:
            export.write_folded(self.stacks, self.frames, f.name)
            lines = sorted(f.read().splitlines())
        self.assertEqual(lines, [
            "py::bar:/app/app.py;py::foo:/app/app.py;long_mul 1",
            "[unknown] ([unknown]);pvm_irq_enable 1"][::-1])

    def test_speedscope(self):
        with tempfile.NamedTemporaryFile("r") as f:
            export.write_speedscope(self.stacks, self.frames, f.name, "t")
            doc = json.load(f)
            with open(f.name + ".js") as js:
                loader = js.read()
            os.unlink(f.name + ".js")
        # what speedscope's offline build loads: the same document, base64
        prefix = "speedscope.loadFileFromBase64(%s, \"" % json.dumps(os.path.basename(f.name))
        self.assertTrue(loader.startswith(prefix), loader[:80])
        self.assertEqual(json.loads(base64.b64decode(loader[len(prefix):-2])), doc)
        self.assertEqual(doc["profiles"][0]["name"], "Web Content 1234/1240")  # Python's first
        names = [fr["name"] for fr in doc["shared"]["frames"]]
        foo = doc["shared"]["frames"][names.index("py::foo:/app/app.py")]
        self.assertEqual((foo["file"], foo["line"]), ("/app/app.py", 8))
        self.assertEqual(len(doc["profiles"]), 2)
        p = doc["profiles"][0]
        self.assertEqual(p["type"], "sampled")
        self.assertEqual(len(p["samples"]), len(p["weights"]))
        self.assertEqual(p["endValue"], sum(p["weights"]))

    def test_pprof(self):
        with tempfile.NamedTemporaryFile() as f:
            export.write_pprof(self.stacks, self.frames, f.name)
            with gzip.open(f.name) as g:
                prof = decode(g.read())
        strings = [s.decode() for s in prof[6]]
        self.assertEqual(strings[0], "")
        self.assertEqual(len(prof[2]), 2)  # samples
        functions = [decode(b) for b in prof[5]]
        foo = [fn for fn in functions if strings[fn[2][0]] == "foo"][0]
        self.assertEqual(strings[foo[4][0]], "/app/app.py")
        self.assertEqual(foo[5][0], 8)
        self.assertEqual(strings[foo[3][0]], "py::foo:/app/app.py")
        sample = decode(prof[2][0])
        ids = packed_varints(sample[1][0])  # location ids, the leaf first
        self.assertEqual(packed_varints(sample[2][0]), [1, 1001001])
        location = decode(prof[4][ids[0] - 1])
        function_id = decode(location[4][0])[1][0]
        self.assertEqual(strings[decode(prof[5][function_id - 1])[2][0]], "long_mul")
        self.assertEqual(len(ids), 3)  # long_mul, foo, bar
        self.assertEqual(export.varint(300), b"\xac\x02")
        self.assertEqual(export.varint(-1)[-1], 1)  # negative: ten bytes, as protobuf's int64


if __name__ == "__main__":
    unittest.main()
