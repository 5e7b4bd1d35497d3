"""Unit tests of chains.py (pyperf-run's check for call chains cut short):
samples() on perf.data files built here (fp and DWARF sample formats,
several events, lost samples), the entry-frame pattern and whole(), the
parse of perf script's output and the verdict lines of main() with a
stand-in perf, and, when perf is here, both on a short real recording."""
import contextlib
import io
import json
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
import warnings

HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pyperf-run-helpers")
CHAINS = os.path.join(HELPERS, "chains.py")
sys.path.insert(0, HELPERS)


import chains  # noqa: E402

# What the command line sets: PERF MAX_STACK KERNEL_MAX_STACK SAMPLES
chains.PERF, chains.MAX_STACK, chains.KMAX, chains.CAP = "perf", "127", 127, 1000

@contextlib.contextmanager
def command_line(perf, max_stack="127", cap=1000):
    """chains.py's PERF, MAX_STACK and SAMPLES; its perf script pipe is
    left to the garbage collector (a ResourceWarning) and ignored here."""
    saved = chains.PERF, chains.MAX_STACK, chains.CAP
    chains.PERF, chains.MAX_STACK, chains.CAP = perf, max_stack, cap
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ResourceWarning)
            yield
    finally:
        chains.PERF, chains.MAX_STACK, chains.CAP = saved


IP, TID, TIME, ADDR, READ, CALLCHAIN, ID, CPU = 1, 2, 4, 8, 16, 32, 64, 128
PERIOD, STREAM_ID, RAW, BRANCH, REGS_USER, STACK_USER = 256, 512, 1024, 2048, 4096, 8192
DATA_SRC, IDENTIFIER = 1 << 15, 1 << 16
FP = IP | TID | TIME | CALLCHAIN | PERIOD  # perf record -g
DWARF = IP | TID | TIME | ADDR | CALLCHAIN | PERIOD | REGS_USER | STACK_USER | DATA_SRC  # --call-graph dwarf
REGS = 0xff0fff  # x86-64's user registers for DWARF unwinding: 20
CTX_KERNEL, CTX_USER = 2 ** 64 - 128, 2 ** 64 - 512
KERNEL_IP, USER_IP = 0xffffffff81000130, 0x7f0000001000


def attr(stype, bst=0, regs=0, max_stack=0, size=128):
    a = bytearray(size)
    struct.pack_into("<IIQQQ", a, 0, 1, size, 0, 4000, stype)
    struct.pack_into("<QQI", a, 72, bst, regs, 8192 if stype & STACK_USER else 0)
    if size >= 110:
        struct.pack_into("<H", a, 108, max_stack)
    return bytes(a)


def perf_data(attrs, records):
    """A perf.data file: header, ATTRS [(attr bytes, [id...])] with their
    ids sections, the data section (RECORDS)."""
    entry = len(attrs[0][0]) + 16 if attrs else 136
    a_off = 104
    ids_off = a_off + entry * len(attrs)
    section, ids = b"", b""
    for a, idl in attrs:
        # None: no ids, at an offset whose high bytes are not 0
        section += a + (struct.pack("<QQ", 0x1234500000000, 0) if idl is None else
                        struct.pack("<QQ", ids_off + len(ids), 8 * len(idl)))
        idl = idl or []
        ids += b"".join(struct.pack("<Q", i) for i in idl)
    data = b"".join(records)
    d_off = ids_off + len(ids)
    head = b"PERFILE2" + struct.pack("<QQQQQQQQ", 104, entry, a_off, len(section), d_off, len(data), 0, 0)
    return head + b"\0" * 32 + section + ids + data


def sample(stype, pid, tid, time=0, callchain=None, stack=None, regs_abi=2, nregs=20, raw=None,
           branches=None, hw_index=False, ident=0):
    """A PERF_RECORD_SAMPLE of STYPE; STACK: (size, dyn_size)."""
    b = b""
    if stype & IDENTIFIER:
        b += struct.pack("<Q", ident)
    if stype & IP:
        b += struct.pack("<Q", USER_IP)
    if stype & TID:
        b += struct.pack("<II", pid, tid)
    if stype & TIME:
        b += struct.pack("<Q", time)
    for bit, val in ((ADDR, 0xdead), (ID, ident), (STREAM_ID, ident), (CPU, 3), (PERIOD, 250000)):
        if stype & bit:
            b += struct.pack("<Q", val)
    if stype & CALLCHAIN:
        cc = callchain or []
        b += struct.pack("<Q", len(cc)) + b"".join(struct.pack("<Q", ip) for ip in cc)
    if stype & RAW:
        b += struct.pack("<I", len(raw)) + raw
    if stype & BRANCH:
        b += struct.pack("<Q", len(branches)) + (struct.pack("<Q", 5) if hw_index else b"")
        b += b"".join(struct.pack("<QQQ", *br) for br in branches)
    if stype & REGS_USER:
        b += struct.pack("<Q", regs_abi) + (struct.pack("<Q", 0x55) * nregs if regs_abi else b"")
    if stype & STACK_USER:
        size, dyn = stack
        b += struct.pack("<Q", size) + b"\xab" * size + (struct.pack("<Q", dyn) if size else b"")
    if stype & DATA_SRC:
        b += struct.pack("<Q", 0x42)
    return struct.pack("<IHH", 9, 2, 8 + len(b)) + b


def chain(nkernel, nuser):
    return [CTX_KERNEL] + [KERNEL_IP] * nkernel + [CTX_USER] + [USER_IP] * nuser


def lost(n):
    return struct.pack("<IHH", 2, 0, 24 + 24) + struct.pack("<QQ", 1, n) + b"\0" * 24


def lost_samples(n):
    return struct.pack("<IHH", 13, 0, 16 + 24) + struct.pack("<Q", n) + b"\0" * 24


COMM = struct.pack("<IHH", 3, 0, 24) + struct.pack("<II", 100, 100) + b"python3\0"


class Scratch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="test_chains.")
        self.addCleanup(shutil.rmtree, self.dir)

    def data(self, attrs, records, name="perf.data"):
        path = os.path.join(self.dir, name)
        with open(path, "wb") as f:
            f.write(perf_data(attrs, records))
        return path


class SamplesTest(Scratch):
    def test_frame_pointer_chains(self):
        path = self.data([(attr(FP, max_stack=6), [])], [
            COMM,
            sample(FP, 100, 101, 1000, chain(2, 4)),    # 6 frames: the limit
            sample(FP, 300, 300, 900, chain(3, 2)),     # another process: its time counts
            sample(FP, 100, 102, 1500, chain(1, 2)),
            sample(FP, 200, 200, 2000, chain(0, 9)),
            sample(FP, 100, 101, 3000, chain(5, 0)),
            lost(7), lost_samples(5)])
        info, n, first, last, nlost = chains.samples(path, {100, 200})
        self.assertEqual(info, {(101, 1000): ("frames", True, 6), (102, 1500): ("frames", False, 6),
                                (200, 2000): ("frames", True, 6), (101, 3000): ("frames", False, 6)})
        self.assertEqual((n, first, last, nlost), (4, 900, 3000, 12))

    def test_frame_limit_of_the_kernel_without_one_of_the_event(self):
        path = self.data([(attr(FP), [])], [sample(FP, 100, 100, 10, chain(27, 100)),
                                            sample(FP, 100, 100, 20, chain(26, 100))])
        info = chains.samples(path, {100})[0]
        self.assertEqual(info, {(100, 10): ("frames", True, 127), (100, 20): ("frames", False, 127)})

    def test_an_older_attr_without_sample_max_stack(self):
        # perf_event_attr of 104 bytes (ABI 4): the kernel's limit (where
        # sample_max_stack would be, its ids section's offset is not read)
        path = self.data([(attr(FP, size=104), None)], [sample(FP, 100, 100, 10, chain(0, 130))])
        self.assertEqual(chains.samples(path, {100})[0], {(100, 10): ("frames", True, 127)})

    def test_dwarf_stack_copies(self):
        path = self.data([(attr(DWARF, regs=REGS), [])], [
            sample(DWARF, 100, 100, 10, chain(0, 1), stack=(8192, 8192)),
            sample(DWARF, 100, 101, 20, chain(0, 1), stack=(8192, 4000)),
            sample(DWARF, 100, 102, 30, chain(0, 1), stack=(0, 0), regs_abi=0),  # a kernel thread's
            sample(DWARF, 100, 103, 40, chain(0, 1), stack=(64, 64), regs_abi=0),
            sample(DWARF, 100, 104, 50, chain(0, 1), stack=(16, 9000))])
        info, n, first, last, nlost = chains.samples(path, {100})
        self.assertEqual(info, {(100, 10): ("stack", True, 8192), (101, 20): ("stack", False, 8192),
                                (102, 30): ("stack", False, 0), (103, 40): ("stack", True, 64),
                                (104, 50): ("stack", True, 16)})
        self.assertEqual((n, first, last, nlost), (5, 10, 50, 0))

    def test_fields_passed_over(self):
        st = IDENTIFIER | IP | TID | TIME | ADDR | ID | STREAM_ID | CPU | PERIOD | CALLCHAIN | RAW | BRANCH | \
            REGS_USER | STACK_USER
        brs = [(1, 2, 3), (4, 5, 6)]
        for hw in (False, True):
            with self.subTest(hw_index=hw):
                path = self.data([(attr(st, bst=(1 << 17) * hw, regs=0x7), [])], [
                    sample(st, 100, 100, 10, chain(1, 1), stack=(32, 32), raw=b"r" * 12, branches=brs,
                           hw_index=hw, nregs=3),
                    sample(st, 100, 101, 20, chain(1, 1), stack=(32, 8), raw=b"s" * 4, branches=[],
                           hw_index=hw, nregs=3)])
                self.assertEqual(chains.samples(path, {100})[0], {(100, 10): ("stack", True, 32),
                                                                  (101, 20): ("stack", False, 32)})

    def test_without_time(self):
        st = IP | TID | CALLCHAIN
        path = self.data([(attr(st), [])], [sample(st, 100, 100, callchain=chain(0, 3))])
        self.assertEqual(chains.samples(path, {100}), ({(100, 0): ("frames", False, 127)}, 1, 0, 0, 0))

    def test_without_tid_samples_are_passed_over(self):
        st = IP | TIME | CALLCHAIN
        path = self.data([(attr(st), [])], [sample(st, 100, 100, 10, chain(0, 3))])
        self.assertEqual(chains.samples(path, {100}), ({}, 0, 0, 0, 0))

    def test_events_of_several_formats_told_apart_by_identifier(self):
        fp, dw = FP | IDENTIFIER, DWARF | IDENTIFIER
        path = self.data([(attr(fp, max_stack=3), [11, 12]), (attr(dw, regs=REGS), [21])], [
            sample(fp, 100, 100, 10, chain(0, 3), ident=12),
            sample(dw, 100, 100, 20, chain(0, 1), stack=(128, 128), ident=21),
            sample(dw, 100, 100, 30, chain(0, 1), stack=(128, 128), ident=99),  # no such event
            sample(fp, 100, 101, 40, chain(0, 2), ident=11)])
        info, n, first, last, _ = chains.samples(path, {100})
        self.assertEqual(info, {(100, 10): ("frames", True, 3), (100, 20): ("stack", True, 128),
                                (101, 40): ("frames", False, 3)})
        self.assertEqual((n, first, last), (3, 10, 40))

    def test_events_of_one_format_without_identifier(self):
        path = self.data([(attr(FP), [1]), (attr(FP), [2])], [sample(FP, 100, 100, 10, chain(0, 3))])
        self.assertEqual(chains.samples(path, {100})[0], {(100, 10): ("frames", False, 127)})

    def test_a_record_smaller_than_its_header_ends_the_walk(self):
        path = self.data([(attr(FP), [])], [sample(FP, 100, 100, 10, chain(0, 3)), struct.pack("<IHH", 9, 0, 0),
                                            sample(FP, 100, 100, 20, chain(0, 3))])
        self.assertEqual(chains.samples(path, {100})[:4], ({(100, 10): ("frames", False, 127)}, 1, 10, 10))

    def test_formats_it_does_not_read(self):
        for why, attrs, msg in (("read values", [(attr(FP | READ), [])], "unexpected sample format"),
                                ("no event", [], "unexpected sample format"),
                                ("mixed without identifier", [(attr(FP), [1]), (attr(DWARF), [2])],
                                 "several sample formats")):
            with self.subTest(why):
                path = self.data(attrs, [sample(FP, 100, 100, 10, chain(0, 3))])
                with self.assertRaisesRegex(ValueError, msg):
                    chains.samples(path, {100})

    def test_not_a_perf_data_file(self):
        path = os.path.join(self.dir, "x")
        with open(path, "wb") as f:
            f.write(b"PERFILE2\x68" + b"\0" * 94)  # too short for a header
        with self.assertRaisesRegex(ValueError, "not a perf.data file"):
            chains.samples(path, {1})
        with open(path, "wb") as f:
            f.write(b"PERFFILE" + b"\0" * 200)
        with self.assertRaisesRegex(ValueError, "not a perf.data file"):
            chains.samples(path, {1})


class EntryTest(unittest.TestCase):
    def test_entry_frames(self):
        for sym in ("_start", "_dl_start", "_dl_start_user", "__libc_start_main", "__libc_start_main@@GLIBC_2.34",
                    "__libc_start_main_impl", "__libc_start_call_main", "start_thread", "thread_start", "clone",
                    "clone3", "__clone", "__clone3", "__GI___clone3", "libc_start_main_stage2"):
            with self.subTest(sym):
                self.assertTrue(chains.ENTRY.match(sym))

    def test_other_frames(self):
        for sym in ("main", "_start_x", "x_start", "start_thread2", "clone4", "__GI___clone4", "Py_RunMain",
                    "[unknown]", "py::<module>:/a.py", " _start", "_start "):
            with self.subTest(sym):
                self.assertIsNone(chains.ENTRY.match(sym))


LIBC = "/usr/lib/x86_64-linux-gnu/libc.so.6"
PY = "/usr/bin/python3.11"


class WholeTest(unittest.TestCase):
    def test_reaches_an_entry_frame(self):
        self.assertIs(chains.whole([(0x10, "long_mul", PY), (0x20, "py::f:/a.py", "/tmp/jitted-1-1.so"),
                                    (0x29d90, "__libc_start_call_main", LIBC), (0x30, "_start", PY)]), True)
        self.assertIs(chains.whole([(0xffffffff81000130, "entry_SYSCALL_64", "[kernel.kallsyms]"),
                                    (0x40, "start_thread", LIBC), (0x50, "__GI___clone3", LIBC)]), True)

    def test_cut_short(self):
        self.assertIs(chains.whole([(0x10, "long_mul", PY), (0x20, "py::f:/a.py", "/tmp/jitted-1-1.so")]), False)
        self.assertIs(chains.whole([(0x10, "long_mul", PY), (0x5a5a, "[unknown]", "[unknown]")]), False)
        # an entry frame's name in the kernel does not count
        self.assertIs(chains.whole([(0xffffffff81000000, "_start", "[kernel.kallsyms]"), (0x10, "f", PY)]), False)

    def test_no_user_frames(self):
        self.assertIsNone(chains.whole([]))
        self.assertIsNone(chains.whole([(0xffffffff8225f759, "pvm_irq_enable", "[kernel.kallsyms]")]))

    def test_libc_without_symbols(self):
        for libc in (LIBC, "/lib/libc-2.31.so", "/usr/lib/libc.musl-x86_64.so.1"):
            with self.subTest(libc):
                # the walk may go on into the stack above libc's entry
                self.assertIs(chains.whole([(0x10, "f", PY), (0x29d90, "[unknown]", libc),
                                            (0x5a5a, "[unknown]", "[unknown]")]), True)
        self.assertIs(chains.whole([(0x10, "f", PY), (0x20, "[unknown]", "/usr/lib/libcrypto.so.3")]), False)
        self.assertIs(chains.whole([(0x10, "f", PY), (0x20, "[unknown]", "/usr/lib/glibc.so")]), False)
        self.assertIs(chains.whole([(0x29d90, "[unknown]", LIBC), (0x10, "f", PY)]), False)
        self.assertIs(chains.whole([(0x5a5a, "[unknown]", "[unknown]")]), False)

    def test_pct(self):
        self.assertEqual(chains.pct(1, 3), "33.3%")
        self.assertEqual(chains.pct(2, 2), "100.0%")
        self.assertEqual(chains.pct(0, 7), "0.0%")


FAKE_PERF = """\
import json, os, sys
here = os.path.dirname(os.path.abspath(__file__))
with open(os.path.join(here, "perf-args.json"), "w") as f:
    json.dump({"argv": sys.argv[1:], "cwd": os.getcwd()}, f)
with open(os.path.join(here, "script.txt")) as f:
    sys.stdout.write(f.read())
"""


def script_sample(tid, ns, frames):
    """perf script -F tid,time,ip,sym,dso --ns output of one sample."""
    out = " %6d %d.%09d: \n" % (tid, ns // 1000000000, ns % 1000000000)
    for addr, sym, dso in frames:
        out += "\t%16x %s (%s)\n" % (addr, sym, dso)
    return out + "\n"


def stack(npy, outer="_start", dso=PY):
    frames = [(0x10, "long_mul", PY)]
    for i in range(npy):
        frames += [(0x20 + i, "py::f%d:/a.py" % i, "/tmp/jitted-100-%d.so" % i),
                   (0x138216, "_PyEval_EvalFrameDefault", PY)]
    return frames + [(0x29d90, outer, dso)] if outer else frames


class FakePerf(Scratch):
    """perf script played by a script printing DIR/script.txt."""

    def setUp(self):
        super().setUp()
        self.perf = os.path.join(self.dir, "bin", "perf")
        os.makedirs(os.path.dirname(self.perf))
        with open(self.perf, "w") as f:
            f.write("#!%s\n%s" % (sys.executable, FAKE_PERF))
        os.chmod(self.perf, 0o755)
        self.rec = os.path.join(self.dir, "rec")
        os.makedirs(self.rec)

    def script(self, text):
        with open(os.path.join(self.dir, "bin", "script.txt"), "w") as f:
            f.write(text)

    def perf_args(self):
        with open(os.path.join(self.dir, "bin", "perf-args.json")) as f:
            return json.load(f)

    def verdict(self, attrs, records, text, pids=(100,), cap=1000):
        data = self.data(attrs, records, name="rec/perf.data")
        self.script(text)
        out = io.StringIO()
        with command_line(self.perf, cap=cap), contextlib.redirect_stdout(out):
            chains.main(data, set(pids))
        return out.getvalue().splitlines()


class ChainsTest(FakePerf):
    def test_parse_of_perf_script(self):
        self.script("garbage before the first sample\n\tffff x (y)\n\n"
                    + script_sample(101, 5000000123, stack(1))
                    + " 102 7.5: \n\t     abc sym with spaces (/a b/lib.so)\n\t  notahex f (x)\n\n"
                    + " 103 8.000000001: \n\t      10 f (/x)")  # no blank line at the end
        self.chains_data = self.data([(attr(FP), [])], [COMM], name="rec/perf.data")
        with command_line(self.perf):
            got = list(chains.chains(self.chains_data, [100, 7], ""))
        self.assertEqual(got, [((101, 5000000123), stack(1)),
                               ((102, 7500000000), [(0xabc, "sym with spaces", "/a b/lib.so")]),
                               ((103, 8000000001), [(0x10, "f", "/x")])])
        args = self.perf_args()
        self.assertEqual(args["argv"], ["script", "-i", self.chains_data, "--max-stack", "127", "--no-inline", "--ns",
                                        "-F", "tid,time,ip,sym,dso", "--pid", "100,7"])
        self.assertEqual(os.path.realpath(args["cwd"]), os.path.realpath(self.rec))

    def test_build_id_cache_of_the_recording_and_time_slices(self):
        os.makedirs(os.path.join(self.rec, ".debug"))
        data = self.data([(attr(FP), [])], [COMM], name="rec/perf.data")
        self.script("")
        with command_line(self.perf, max_stack="64"):
            self.assertEqual(list(chains.chains(data, [100], "0%-5%")), [])
        self.assertEqual(self.perf_args()["argv"], [
            "--buildid-dir", os.path.join(self.rec, ".debug"), "script", "-i", data, "--max-stack", "64",
            "--no-inline", "--ns", "-F", "tid,time,ip,sym,dso", "--pid", "100", "--time", "0%-5%"])


class VerdictTest(FakePerf):
    def test_all_chains_whole(self):
        recs = [sample(FP, 100, 100, t, chain(0, 5)) for t in (10, 20, 30)]
        text = "".join(script_sample(100, t, stack(2, outer=o, dso=LIBC))
                       for t, o in ((10, "_start"), (20, "start_thread"), (30, "__libc_start_main")))
        # a sample without user frames is not counted
        text += script_sample(100, 40, [(0xffffffff81000130, "entry_SYSCALL_64", "[kernel.kallsyms]")])
        self.assertEqual(self.verdict([(attr(FP), [])], recs, text), [
            "whole chains: all 3 samples of the Python processes reach the first frame of their process or thread"])
        self.assertNotIn("--time", self.perf_args()["argv"])

    def test_stack_copies_full_and_unwinding_stopped(self):
        recs = [sample(DWARF, 100, 100, 10, chain(0, 1), stack=(8192, 8192)),
                sample(DWARF, 100, 100, 20, chain(0, 1), stack=(8192, 8192)),
                sample(DWARF, 100, 100, 30, chain(0, 1), stack=(8192, 500)),
                sample(DWARF, 100, 100, 40, chain(0, 1), stack=(8192, 8192))]
        text = (script_sample(100, 10, stack(3, outer=None)) + script_sample(100, 20, stack(5, outer=None))
                + script_sample(100, 30, stack(1, outer=None)) + script_sample(100, 40, stack(9)))
        self.assertEqual(self.verdict([(attr(DWARF, regs=REGS), [])], recs, text), [
            "75.0% of 4 samples have a cut chain (stack copy of 8 KiB full in 50.0%: deeper than ~5 Python frames; "
            "unwinding stopped early in 25.0%: code without unwind information or frame pointer); see docs/usage.md"])

    def test_stack_copy_size_in_kib_rounded_up(self):
        recs = [sample(DWARF, 100, 100, 10, chain(0, 1), stack=(8200, 8200))]
        self.assertEqual(self.verdict([(attr(DWARF, regs=REGS), [])], recs, script_sample(100, 10, stack(4, None))), [
            "100.0% of 1 samples have a cut chain (stack copy of 9 KiB full: deeper than ~4 Python frames); "
            "see docs/usage.md"])

    def test_frame_limit_reached(self):
        recs = [sample(FP, 100, 100, 10, chain(0, 127)), sample(FP, 100, 101, 20, chain(0, 127)),
                sample(FP, 100, 100, 30, chain(0, 10)), sample(FP, 100, 100, 40, chain(0, 10))]
        text = (script_sample(100, 10, stack(40, None)) + script_sample(101, 20, stack(60, None))
                + script_sample(100, 30, stack(1)) + script_sample(100, 40, stack(1)))
        self.assertEqual(self.verdict([(attr(FP), [])], recs, text), [
            "50.0% of 4 samples have a cut chain (frame limit of 127 native frames reached: deeper than ~60 Python "
            "frames); see docs/usage.md"])

    def test_unwinding_stopped_only(self):
        # a sample perf script shows but samples() did not read counts as other
        text = script_sample(100, 10, stack(1, None)) + script_sample(100, 99, stack(1, None))
        self.assertEqual(self.verdict([(attr(FP), [])], [sample(FP, 100, 100, 10, chain(0, 3))], text), [
            "100.0% of 2 samples have a cut chain (unwinding stopped early: code without unwind information or "
            "frame pointer); see docs/usage.md"])

    def test_lost_samples_and_nothing_to_check(self):
        self.assertEqual(self.verdict([(attr(FP), [])], [lost(3), lost_samples(4)], ""),
                         ["perf lost 7 samples (its ring buffer was full); see docs/usage.md"])
        self.assertEqual(self.verdict([(attr(FP), [])], [sample(FP, 100, 100, 10, chain(0, 3))], ""), [])

    def test_many_samples_checked_in_ten_slices(self):
        recs = [sample(FP, 100, 100, t, chain(0, 3)) for t in range(1, 9)] + [sample(FP, 200, 200, 99, chain(0, 3))]
        text = script_sample(100, 1, stack(1)) + script_sample(100, 2, stack(1))
        self.assertEqual(self.verdict([(attr(FP), [])], recs, text, cap=2), [
            "whole chains: all 2 checked samples (of 8) of the Python processes reach the first frame of their "
            "process or thread"])
        argv = self.perf_args()["argv"]
        self.assertEqual(argv[argv.index("--time") + 1],
                         "0.000%-2.500%,10.000%-12.500%,20.000%-22.500%,30.000%-32.500%,40.000%-42.500%,"
                         "50.000%-52.500%,60.000%-62.500%,70.000%-72.500%,80.000%-82.500%,90.000%-92.500%")
        self.assertEqual(argv[argv.index("--pid") + 1], "100")

    def test_command_line(self):
        data = self.data([(attr(FP), [])], [sample(FP, 100, 100, 10, chain(0, 50)),
                                            sample(FP, 200, 200, 20, chain(0, 3))], name="rec/perf.data")
        self.script(script_sample(100, 10, stack(2, None)) + script_sample(200, 20, stack(1)))
        proc = subprocess.run([sys.executable, "-I", CHAINS, self.perf, data, "99", "50", "1000", "100", "200"],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
        self.assertEqual((proc.returncode, proc.stderr), (0, ""))
        # KERNEL_MAX_STACK (50) is the frame limit of an event without its own
        self.assertEqual(proc.stdout, "50.0% of 2 samples have a cut chain (frame limit of 50 native frames "
                                      "reached: deeper than ~2 Python frames); see docs/usage.md\n")
        argv = self.perf_args()["argv"]
        self.assertEqual(argv[argv.index("--max-stack") + 1], "99")
        self.assertEqual(sorted(argv[argv.index("--pid") + 1].split(",")), ["100", "200"])


PERF = shutil.which("perf") or ("/usr/bin/perf" if os.access("/usr/bin/perf", os.X_OK) else None)
BUSY = "import time\nt = time.time()\nwhile time.time() - t < 0.15: pass\n"


@unittest.skipUnless(PERF, "no perf")
class RealRecordingTest(unittest.TestCase):
    """samples() and chains() agree with perf on a short real recording."""

    @classmethod
    def setUpClass(cls):
        cls.dir = tempfile.mkdtemp(prefix="test_chains.")
        cls.recs = {}
        for mode, opts in (("fp", ["-g"]), ("dwarf", ["--call-graph", "dwarf,4096"])):
            path = os.path.join(cls.dir, mode + ".data")
            proc = subprocess.run([PERF, "record", "-q", "-e", "cpu-clock", "-F", "2000"] + opts
                                  + ["-o", path, "--", sys.executable, "-c", BUSY],
                                  stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, universal_newlines=True,
                                  timeout=60)
            if proc.returncode == 0 and os.path.getsize(path) > 0:
                cls.recs[mode] = path
            else:
                cls.why = proc.stderr.strip()[-200:]

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.dir)

    def recording(self, mode):
        if mode not in self.recs:
            self.skipTest("perf record failed here: %s" % self.why)
        path = self.recs[mode]
        out = subprocess.run([PERF, "script", "-i", path, "-F", "pid,tid,time", "--ns"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True, timeout=60).stdout
        rows = [line.split() for line in out.splitlines() if line.strip()]
        pids = {int(r[0].split("/")[0]) for r in rows}
        return path, rows, pids

    def check(self, mode, kind, limit):
        path, rows, pids = self.recording(mode)
        self.assertEqual(len(pids), 1)
        pid = pids.pop()
        info, n, first, last, nlost = chains.samples(path, {pid})
        times = [int(r[-1].rstrip(":").replace(".", "")) for r in rows]
        self.assertEqual(n, len(rows))
        self.assertGreater(n, 10)
        self.assertEqual((first, last, nlost), (min(times), max(times), 0))
        self.assertEqual({v[0] for v in info.values()}, {kind})
        self.assertEqual({v[2] for v in info.values()}, {limit})
        self.assertEqual(chains.samples(path, {pid + 1})[:2], ({}, 0))
        with command_line(PERF):
            got = list(chains.chains(path, [pid], ""))
        # every sample perf script shows is one samples() read
        self.assertEqual(len(got), n)
        self.assertEqual({k for k, _ in got}, set(info))
        self.assertTrue(any(f for _, f in got))
        return info

    def test_frame_pointer_recording(self):
        self.check("fp", "frames", 127)

    def test_dwarf_recording(self):
        info = self.check("dwarf", "stack", 4096)
        self.assertTrue(any(full for _, full, _ in info.values()))


if __name__ == "__main__":
    unittest.main()
