"""Unit tests of nsfix.py (pyperf-run's host-side fix for processes of
other PID namespaces): the perf.data record walk, mmap names, the jitdump
pid rewrite, the path-suffix match of dumps under SEARCH_DIR, and the
script's rewrite of perf.data with its exit statuses (0 written, 3 nothing
to change, 1 error), on small perf.data and jitdump files built here."""
import contextlib
import io
import os
import shutil
import struct
import subprocess
import sys
import tempfile
import unittest
from unittest import mock

HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pyperf-run-helpers")
NSFIX = os.path.join(HELPERS, "nsfix.py")
sys.path.insert(0, HELPERS)


import nsfix  # noqa: E402


JIT_MAGIC = 0x4A695444
# Host pids no process can have (pid_max is at most 2^22): the one path
# that writes /tmp/perf-P.map does so only for pids without /proc/P.
HOST_PID = 4000000001
HOST_PID2 = 4000000002
HEADER_SIZE = 104
ATTR_ENTRY = 136  # perf_event_attr (120) + its ids section
TRAILER = struct.pack("<IIQQ", 1, 1, 123456789, 42)  # sample_id_all: pid, tid, time, id


def pad8(name):
    return name + b"\0" * (((len(name) + 1 + 7) & ~7) - len(name))


def mmap2(pid, name, tid=None, misc=2, trailer=TRAILER):
    if isinstance(name, str):
        name = name.encode()
    body = struct.pack("<IIQQQIIQQII", pid, pid if tid is None else tid, 0x7f0000001000, 0x2000, 0,
                       8, 1, 987654, 0, 5, 2) + pad8(name) + trailer
    return struct.pack("<IHH", 10, misc, 8 + len(body)) + body


def mmap1(pid, name, misc=2, trailer=TRAILER):
    body = struct.pack("<IIQQQ", pid, pid, 0x7f0000001000, 0x2000, 0) + pad8(name.encode()) + trailer
    return struct.pack("<IHH", 1, misc, 8 + len(body)) + body


def record(rtype, payload, misc=0):
    return struct.pack("<IHH", rtype, misc, 8 + len(payload)) + payload


COMM = record(3, struct.pack("<II", 77, 77) + b"python3\0" + TRAILER)


def perf_data(records, features=None, data_size=None):
    """A perf.data file: header, one attr, the data section (RECORDS),
    then the feature table and sections of FEATURES {bit: bytes}."""
    features = features or {}
    data = b"".join(records)
    attr_off = HEADER_SIZE
    data_off = attr_off + ATTR_ENTRY
    bitmap = 0
    for bit in features:
        bitmap |= 1 << bit
    head = b"PERFILE2" + struct.pack("<QQQQQQQQ", HEADER_SIZE, ATTR_ENTRY, attr_off, ATTR_ENTRY,
                                     data_off, len(data) if data_size is None else data_size, 0, 0)
    head += bitmap.to_bytes(32, "little")
    attr = struct.pack("<IIQ", 1, 120, 0) + b"\0" * 104 + struct.pack("<QQ", 0, 0)
    table_off = data_off + len(data)
    pos = table_off + 16 * len(features)
    table, sections = b"", b""
    for bit in sorted(features):
        table += struct.pack("<QQ", pos + len(sections), len(features[bit]))
        sections += features[bit]
    return head + attr + data + table + sections


def read_perf_data(path):
    """(records of the data section as bytes, {feature bit: bytes}) of PATH."""
    with open(path, "rb") as f:
        buf = f.read()
    assert buf[:8] == b"PERFILE2"
    data_off, data_size = struct.unpack_from("<QQ", buf, 40)
    bitmap = int.from_bytes(buf[72:104], "little")
    recs, pos = [], data_off
    while pos < data_off + data_size:
        rsize = struct.unpack_from("<H", buf, pos + 6)[0]
        if rsize < 8:
            raise AssertionError("record of %d bytes at offset %d" % (rsize, pos))
        recs.append(buf[pos:pos + rsize])
        pos += rsize
    assert pos == data_off + data_size
    feats, i = {}, 0
    for bit in range(256):
        if bitmap >> bit & 1:
            off, size = struct.unpack_from("<QQ", buf, data_off + data_size + 16 * i)
            feats[bit] = buf[off:off + size]
            i += 1
    return recs, feats


def mmap_filename(rec):
    rtype = struct.unpack_from("<I", rec, 0)[0]
    start = 8 + (64 if rtype == 10 else 32)
    return rec[start:rec.index(b"\0", start)].decode()


def jitdump(pid, records, hsize=40, magic=JIT_MAGIC):
    """A jitdump: header with PID, then RECORDS [(id, payload)]."""
    head = struct.pack("<IIIIIIQQ", magic, 1, hsize, 62, 0, pid, 111, 0)
    head += b"\xee" * (hsize - 40)
    body = b""
    for i, (rid, payload) in enumerate(records):
        body += struct.pack("<IIQ", rid, 16 + len(payload), 1000 + i) + payload
    return head + body


def code_load(pid, name=b"py::f:/app/a.py", code=b"\x90" * 8):
    return (0, struct.pack("<IIQQQQ", pid, pid + 1, 0x1000, 0x1000, len(code), 3) + name + b"\0" + code)


def relabel(rec, pid):
    """A CODE_LOAD or CODE_MOVE record with PID as its pid and tid."""
    return (rec[0], struct.pack("<II", pid, pid) + rec[1][8:])


def code_move(pid):
    return (1, struct.pack("<IIQQQQQ", pid, pid + 1, 0x1000, 0x1000, 0x2000, 8, 3))


def debug_info():
    return (2, struct.pack("<QQ", 0x1000, 1) + struct.pack("<QII", 0x1000, 7, 0) + b"/app/a.py\0")


def write(path, data, mode=0o644):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "wb") as f:
        f.write(data)
    os.chmod(path, mode)
    return path


class Scratch(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.mkdtemp(prefix="test_nsfix.")
        self.addCleanup(shutil.rmtree, self.dir)

    def p(self, *parts):
        return os.path.join(self.dir, *parts)

    def quiet(self):
        """Captures the helper's messages (stderr) in self.err."""
        self.err = io.StringIO()
        return contextlib.redirect_stderr(self.err)


class RecordsTest(Scratch):
    def walk(self, data, off=0, size=None):
        path = write(self.p("d"), data)
        with open(path, "rb") as f:
            return list(nsfix.records(f, off, len(data) - off if size is None else size))

    def test_walks_records_by_their_sizes(self):
        a, b = mmap2(5, "/usr/bin/python3"), COMM
        got = self.walk(b"\xff" * 16 + a + b, off=16)
        self.assertEqual(got, [(16, 10, len(a)), (16 + len(a), 3, len(b))])

    def test_stops_at_the_section_end_and_a_short_tail(self):
        a = mmap2(5, "/usr/bin/python3")
        # the section ends after A: what follows is not walked, nor a
        # tail shorter than a record header
        self.assertEqual(self.walk(a + COMM, size=len(a)), [(0, 10, len(a))])
        self.assertEqual(self.walk(a + b"\0" * 7), [(0, 10, len(a))])

    def test_a_record_smaller_than_its_header_is_an_error(self):
        data = COMM + struct.pack("<IHH", 3, 0, 4) + b"\0" * 8
        with self.quiet(), self.assertRaises(SystemExit) as e:
            self.walk(data)
        self.assertEqual(e.exception.code, 1)
        self.assertIn("error: corrupt perf.data record at offset %d" % len(COMM), self.err.getvalue())


class MmapNameTest(unittest.TestCase):
    def test_mmap2_and_mmap_names(self):
        rec = mmap2(5, "/app/jit-5.dump")
        self.assertEqual(nsfix.mmap_name(10, rec[8:]), (b"/app/jit-5.dump", 64))
        rec = mmap1(5, "/app/jit-5.dump")
        self.assertEqual(nsfix.mmap_name(1, rec[8:]), (b"/app/jit-5.dump", 32))

    def test_a_name_without_its_nul_is_none(self):
        body = mmap2(5, "/app/x")[8:8 + 64] + b"/app/x"
        self.assertEqual(nsfix.mmap_name(10, body), (None, 64))


class RewriteDumpTest(Scratch):
    def test_header_and_load_move_records_get_the_pid(self):
        recs = [code_load(7), debug_info(), code_move(7), (3, b""), code_load(7, b"py::g:/app/b.py")]
        src = write(self.p("c", "jit-7.dump"), jitdump(7, recs), 0o640)
        os.makedirs(self.p("h"))
        dst = self.p("h", "jit-%d.dump" % HOST_PID)
        nsfix.rewrite_dump(src, dst, HOST_PID)
        with open(dst, "rb") as f:
            out = f.read()
        # CODE_LOAD and CODE_MOVE: pid and tid; the debug info (whose first
        # bytes are an address) and CLOSE as they were
        self.assertEqual(out, jitdump(HOST_PID, [relabel(recs[0], HOST_PID), recs[1], relabel(recs[2], HOST_PID),
                                                 recs[3], relabel(recs[4], HOST_PID)]))
        self.assertEqual(out[:20], jitdump(7, recs)[:20])
        self.assertEqual(struct.unpack_from("<I", out, 20)[0], HOST_PID)
        self.assertEqual(os.stat(dst).st_mode & 0o777, 0o640)
        with open(src, "rb") as f:
            self.assertEqual(f.read(), jitdump(7, recs))
        self.assertEqual(os.listdir(self.p("h")), ["jit-%d.dump" % HOST_PID])

    def test_records_start_after_a_longer_header(self):
        src = write(self.p("jit-7.dump"), jitdump(7, [code_load(7)], hsize=48))
        nsfix.rewrite_dump(src, self.p("jit-9.dump"), 9)
        with open(self.p("jit-9.dump"), "rb") as f:
            self.assertEqual(f.read(), jitdump(9, [relabel(code_load(7), 9)], hsize=48))

    def test_a_record_cut_short_is_left_out(self):
        # a process still writing its dump: the last record is incomplete
        whole = jitdump(7, [code_load(7), code_load(7, b"py::g:/a.py")])
        cut = len(jitdump(7, [code_load(7)]))
        src = write(self.p("jit-7.dump"), whole[:-5])
        nsfix.rewrite_dump(src, self.p("jit-9.dump"), 9)
        with open(self.p("jit-9.dump"), "rb") as f:
            out = f.read()
        self.assertEqual(len(out), cut)
        self.assertEqual(struct.unpack_from("<I", out, 20)[0], 9)

    def test_a_record_with_a_bad_size_ends_the_dump(self):
        data = jitdump(7, [code_load(7)]) + struct.pack("<IIQ", 0, 8, 0) + b"\0" * 32
        src = write(self.p("jit-7.dump"), data)
        nsfix.rewrite_dump(src, self.p("jit-9.dump"), 9)
        self.assertEqual(os.path.getsize(self.p("jit-9.dump")), len(jitdump(7, [code_load(7)])))

    def test_not_a_jitdump_is_an_error(self):
        for name, data in (("short", jitdump(7, [])[:39]),
                           ("big-endian", struct.pack(">I", JIT_MAGIC) + jitdump(7, [])[4:]),
                           ("text", b"x" * 64)):
            with self.subTest(name):
                src = write(self.p("jit-7.dump"), data)
                with self.quiet(), self.assertRaises(SystemExit) as e:
                    nsfix.rewrite_dump(src, self.p("jit-9.dump"), 9)
                self.assertEqual(e.exception.code, 1)
                self.assertIn("is not a little-endian jitdump file", self.err.getvalue())
                self.assertFalse(os.path.exists(self.p("jit-9.dump")))


class BestMatchTest(Scratch):
    def test_the_longest_path_suffix_wins(self):
        a = "/s/c1/srv/app/jit-7.dump"
        b = "/s/c2/home/app/jit-7.dump"
        c = "/s/c3/jit-7.dump"
        self.assertEqual(nsfix.best_match([c, a, b], "/srv/app/jit-7.dump"), (a, None))
        self.assertEqual(nsfix.best_match([a, b, c], "/home/app/jit-7.dump"), (b, None))

    def test_a_single_candidate_needs_only_its_name(self):
        self.assertEqual(nsfix.best_match(["/s/x/jit-7.dump"], "/tmp/jit-7.dump"), ("/s/x/jit-7.dump", None))

    def test_equal_suffixes_are_ambiguous(self):
        a, b, c = "/s/c1/app/jit-7.dump", "/s/c2/app/jit-7.dump", "/s/c3/jit-7.dump"
        src, tie = nsfix.best_match([a, c, b], "/app/jit-7.dump")
        self.assertIsNone(src)
        self.assertEqual(sorted(tie), [a, b])

    def test_candidates_count_by_their_real_path(self):
        write(self.p("real", "app", "jit-7.dump"), b"")
        os.makedirs(self.p("l"))
        os.symlink(self.p("real", "app", "jit-7.dump"), self.p("l", "jit-7.dump"))
        other = write(self.p("other", "jit-7.dump"), b"")
        # l/jit-7.dump is real/app/jit-7.dump: its "app" counts
        self.assertEqual(nsfix.best_match([other, self.p("l", "jit-7.dump")], "/app/jit-7.dump"),
                         (self.p("l", "jit-7.dump"), None))


class SmallFunctionsTest(Scratch):
    def test_set_aside_name(self):
        self.assertEqual(nsfix.set_aside("/app/jit-7.dump"), "/app/jit-7.gone")
        self.assertIsNone(nsfix.DUMP_RE.search(os.path.basename(nsfix.set_aside("/app/jit-7.dump"))))

    def test_dump_name_pattern(self):
        self.assertEqual(nsfix.DUMP_RE.match("jit-123.dump").group(1), "123")
        for name in ("jit-.dump", "jit-12.dump.gz", "jit-x.dump", "perf-12.map"):
            with self.subTest(name):
                self.assertIsNone(nsfix.DUMP_RE.match(name))

    def test_live_nspid(self):
        with open("/proc/self/status") as f:
            want = [int(line.split()[-1]) for line in f if line.startswith("NStgid:")][0]
        self.assertEqual(nsfix.live_nspid(os.getpid()), want)
        self.assertIsNone(nsfix.live_nspid(HOST_PID))

    def test_readable_by_perf(self):
        path = write(self.p("jit-7.dump"), b"x")
        self.assertTrue(nsfix.readable_by_perf(path, HOST_PID))
        self.assertFalse(nsfix.readable_by_perf(self.p("gone", "jit-7.dump"), HOST_PID))
        self.assertFalse(nsfix.readable_by_perf(self.p("gone", "jit-7.dump"), os.getpid()))

    def test_adopt_dump_copies_next_to_the_recording(self):
        src = write(self.p("proc", "jit-%d.dump" % HOST_PID), jitdump(HOST_PID, [code_load(HOST_PID)]))
        os.makedirs(self.p("rec"))
        dst = nsfix.adopt_dump(src, HOST_PID, self.p("rec"))
        self.assertEqual(dst, self.p("rec", "jit-%d.dump" % HOST_PID))
        with open(dst, "rb") as f:
            self.assertEqual(f.read(), jitdump(HOST_PID, [relabel(code_load(HOST_PID), HOST_PID)]))
        with self.quiet():
            self.assertIsNone(nsfix.adopt_dump(self.p("proc", "jit-1.dump"), 1, self.p("rec")))
        self.assertIn("warning: %s (pid 1) is gone" % self.p("proc", "jit-1.dump"), self.err.getvalue())


class Run(Scratch):
    """nsfix.py run as pyperf-run runs it."""

    def setUp(self):
        super().setUp()
        self.data = self.p("perf.data")
        self.search = self.p("search")
        self.host = self.p("out", "host-pids")
        self.out = self.p("out", ".perf.host.data")
        os.makedirs(self.p("out"))
        os.makedirs(self.search)

    def run_nsfix(self, records=None, features=None, adopt="", raw=None):
        if raw is not None:
            write(self.data, raw)
        elif records is not None:
            write(self.data, perf_data(records, features))
        proc = subprocess.run([sys.executable, "-I", NSFIX, self.data, self.search, self.host, self.out, adopt],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30)
        self.stderr = proc.stderr
        self.assertEqual(proc.stdout, "")
        return proc.returncode

    def tmp_map(self, pid):
        """/tmp/perf-PID.map, which the run may write: removed after the test."""
        path = "/tmp/perf-%d.map" % pid
        if os.path.exists(path):
            self.skipTest("%s exists already" % path)
        self.addCleanup(lambda: os.path.exists(path) and os.remove(path))
        return path


class RunTest(Run):
    def test_dump_of_another_namespace_renamed_rewritten_and_its_map_copied(self):
        tmp_map = self.tmp_map(HOST_PID)
        dump = jitdump(7, [code_load(7), code_move(7)])
        write(self.p("search", "c1", "app", "jit-7.dump"), dump, 0o600)
        write(self.p("search", "c1", "app", "perf-7.map"), b"1000 8 py::f:/app/a.py\n", 0o604)
        features = {2: b"build-ids" * 3, 7: b"x86_64\0\0", 30: b"\1" * 24}
        recs = [COMM, mmap2(HOST_PID, "/usr/bin/python3.11"), mmap2(HOST_PID, "/app/jit-7.dump", misc=0x2002),
                COMM, mmap2(HOST_PID, "/app/jit-7.dump", tid=HOST_PID + 5), mmap1(HOST_PID, "/app/jit-7.dump")]
        self.assertEqual(self.run_nsfix(recs, features), 0)
        new = os.path.join(self.host, "jit-%d.dump" % HOST_PID)
        self.assertIn("namespace pid 7 (%s) -> host pid %d" % (self.p("search", "c1", "app", "jit-7.dump"), HOST_PID),
                      self.stderr)
        got, feats = read_perf_data(self.out)
        self.assertEqual(feats, features)
        self.assertEqual(len(got), len(recs))
        for i in (0, 1, 3):
            self.assertEqual(got[i], recs[i])
        for i in (2, 4, 5):
            with self.subTest(record=i):
                self.assertEqual(mmap_filename(got[i]), new)
                rtype = struct.unpack_from("<I", recs[i])[0]
                fixed = 8 + (64 if rtype == 10 else 32)
                # header (type, misc), fields and sample_id_all trailer kept
                self.assertEqual(got[i][:6], recs[i][:6])
                self.assertEqual(got[i][8:fixed], recs[i][8:fixed])
                self.assertEqual(got[i][fixed:], pad8(new.encode()) + TRAILER)
                self.assertEqual(struct.unpack_from("<H", got[i], 6)[0], len(got[i]))
        with open(new, "rb") as f:
            self.assertEqual(struct.unpack_from("<I", f.read(), 20)[0], HOST_PID)
        self.assertEqual(os.stat(new).st_mode & 0o777, 0o600)
        for m in (os.path.join(self.host, "perf-%d.map" % HOST_PID), tmp_map):
            with self.subTest(map=m):
                with open(m, "rb") as f:
                    self.assertEqual(f.read(), b"1000 8 py::f:/app/a.py\n")
                self.assertEqual(os.stat(m).st_mode & 0o777, 0o604)
        # the input stays as it was; no temporary file is left
        with open(self.data, "rb") as f:
            self.assertEqual(f.read(), perf_data(recs, features))
        self.assertEqual(sorted(os.listdir(self.p("out"))), [".perf.host.data", "host-pids"])
        self.assertEqual(sorted(os.listdir(self.host)), ["jit-%d.dump" % HOST_PID, "perf-%d.map" % HOST_PID])

    def test_the_copy_with_the_longest_matching_path_is_taken(self):
        write(self.p("search", "c1", "srv", "app", "jit-7.dump"), jitdump(7, [code_load(7, b"py::one")]))
        write(self.p("search", "c2", "home", "app", "jit-7.dump"), jitdump(7, [code_load(7, b"py::two")]))
        write(self.p("search", "c3", "jit-7.dump"), jitdump(7, [code_load(7, b"py::three")]))
        self.assertEqual(self.run_nsfix([mmap2(HOST_PID, "/home/app/jit-7.dump")]), 0)
        with open(os.path.join(self.host, "jit-%d.dump" % HOST_PID), "rb") as f:
            self.assertIn(b"py::two\0", f.read())
        self.assertIn("(%s)" % self.p("search", "c2", "home", "app", "jit-7.dump"), self.stderr)

    def test_two_processes_with_the_same_namespace_pid(self):
        # two containers, each with its pid 7: each host pid gets its copy
        write(self.p("search", "a", "app", "jit-7.dump"), jitdump(7, [code_load(7, b"py::a")]))
        write(self.p("search", "b", "srv", "jit-7.dump"), jitdump(7, [code_load(7, b"py::b")]))
        recs = [mmap2(HOST_PID, "/app/jit-7.dump"), mmap2(HOST_PID2, "/srv/jit-7.dump")]
        self.assertEqual(self.run_nsfix(recs), 0)
        got, _ = read_perf_data(self.out)
        self.assertEqual([mmap_filename(r) for r in got],
                         [os.path.join(self.host, "jit-%d.dump" % p) for p in (HOST_PID, HOST_PID2)])
        for pid, name in ((HOST_PID, b"py::a"), (HOST_PID2, b"py::b")):
            with open(os.path.join(self.host, "jit-%d.dump" % pid), "rb") as f:
                self.assertIn(name + b"\0", f.read())

    def test_equally_good_copies_set_the_mmap_aside(self):
        write(self.p("search", "c1", "app", "jit-7.dump"), jitdump(7, []))
        write(self.p("search", "c2", "app", "jit-7.dump"), jitdump(7, []))
        self.assertEqual(self.run_nsfix([mmap2(HOST_PID, "/app/jit-7.dump"), COMM]), 0)
        self.assertIn("warning: /app/jit-7.dump (host pid %d) matches several files: " % HOST_PID, self.stderr)
        self.assertIn(self.p("search", "c1", "app", "jit-7.dump"), self.stderr)
        self.assertIn(self.p("search", "c2", "app", "jit-7.dump"), self.stderr)
        got, _ = read_perf_data(self.out)
        self.assertEqual(mmap_filename(got[0]), "/app/jit-7.gone")
        self.assertEqual(got[1], COMM)
        self.assertFalse(os.path.exists(self.host))

    def test_no_copy_sets_the_mmap_aside(self):
        self.assertEqual(self.run_nsfix([mmap2(HOST_PID, "/app/jit-7.dump"), mmap2(HOST_PID, "/app/jit-7.dump")]), 0)
        self.assertIn("warning: no copy of /app/jit-7.dump (host pid %d) under %s" % (HOST_PID, self.search),
                      self.stderr)
        self.assertEqual(self.stderr.count("no copy"), 1)
        got, _ = read_perf_data(self.out)
        self.assertEqual([mmap_filename(r) for r in got], ["/app/jit-7.gone"] * 2)
        self.assertEqual(len(got[0]), len(mmap2(HOST_PID, "/app/jit-7.dump")))

    def test_host_dir_inside_search_dir_is_not_searched(self):
        self.host = self.p("search", "host-pids")
        write(os.path.join(self.host, "jit-7.dump"), jitdump(7, []))
        write(self.p("search", "c1", "jit-7.dump"), jitdump(7, [code_load(7)]))
        self.assertEqual(self.run_nsfix([mmap2(HOST_PID, "/app/jit-7.dump")]), 0)
        self.assertNotIn("several", self.stderr)
        self.assertIn("(%s)" % self.p("search", "c1", "jit-7.dump"), self.stderr)

    def test_a_reused_host_pid_keeps_its_tmp_map(self):
        # the recorded host pid now belongs to another process (this one,
        # whose namespace pid is not 7): the copy is made, /tmp is left alone
        me = os.getpid()
        write(self.p("search", "c", "jit-7.dump"), jitdump(7, []))
        write(self.p("search", "c", "perf-7.map"), b"1 1 x\n")
        self.assertEqual(self.run_nsfix([mmap2(me, "/app/jit-7.dump")]), 0)
        self.assertIn("host pid %d is in use again: /tmp/perf-%d.map left alone" % (me, me), self.stderr)
        self.assertTrue(os.path.isfile(os.path.join(self.host, "perf-%d.map" % me)))

    def test_nothing_to_change_exits_3(self):
        mine = write(self.p("rec", "jit-%d.dump" % os.getpid()), jitdump(os.getpid(), []))
        recs = [COMM, mmap2(HOST_PID, "/usr/lib/libc.so.6"), mmap2(HOST_PID, "/app/xjit-7.dump"),
                mmap2(HOST_PID, "/app/jit-7.dump.old"), mmap2(0, "/app/jit-7.dump"),
                mmap2(os.getpid(), mine)]  # a dump of this namespace, still there
        self.assertEqual(self.run_nsfix(recs), 3)
        self.assertEqual(self.stderr, "")
        self.assertFalse(os.path.exists(self.out))
        self.assertFalse(os.path.exists(self.out + ".tmp"))

    def test_an_empty_data_section_is_an_error(self):
        self.assertEqual(self.run_nsfix([]), 1)
        self.assertIn("has no data section", self.stderr)

    def test_a_deleted_dump_of_this_namespace_is_set_aside(self):
        recs = [mmap2(HOST_PID, "/gone/jit-%d.dump" % HOST_PID), mmap2(HOST_PID2, "/gone/jit-%d.dump" % HOST_PID2),
                mmap2(HOST_PID, "/gone/jit-%d.dump" % HOST_PID)]
        self.assertEqual(self.run_nsfix(recs), 0)
        self.assertIn("2 jitdump(s) named in the recording are gone", self.stderr)
        got, _ = read_perf_data(self.out)
        self.assertEqual([mmap_filename(r) for r in got],
                         ["/gone/jit-%d.gone" % p for p in (HOST_PID, HOST_PID2, HOST_PID)])

    def test_adopted_pid_dump_copied_next_to_the_output(self):
        src = write(self.p("proc", "jit-%d.dump" % HOST_PID), jitdump(HOST_PID, [code_load(HOST_PID)]))
        recs = [mmap2(HOST_PID, src), mmap2(HOST_PID, src)]
        self.assertEqual(self.run_nsfix(recs, adopt="%d,%d" % (HOST_PID2, HOST_PID)), 0)
        got, _ = read_perf_data(self.out)
        copy = self.p("out", "jit-%d.dump" % HOST_PID)
        self.assertEqual([mmap_filename(r) for r in got], [copy, copy])
        with open(copy, "rb") as f, open(src, "rb") as g:
            self.assertEqual(f.read(), jitdump(HOST_PID, [relabel(code_load(HOST_PID), HOST_PID)]))
            self.assertEqual(g.read(), jitdump(HOST_PID, [code_load(HOST_PID)]))
        # not adopted: the dump is where perf inject finds it
        self.assertEqual(self.run_nsfix(recs, adopt=""), 3)

    def test_a_name_grown_past_the_record_size_limit_is_an_error(self):
        write(self.p("search", "c", "jit-7.dump"), jitdump(7, []))
        self.host = self.p("h" * 200, "i" * 200, "j" * 200)
        os.makedirs(self.p("h" * 200, "i" * 200))
        rec = mmap2(HOST_PID, "/app/jit-7.dump", trailer=b"\0" * (0xFFFF - 8 - 64 - 16 - 200))
        self.assertEqual(self.run_nsfix([rec]), 1)
        self.assertIn("error: path too long: ", self.stderr)


class RunErrorTest(Run):
    def test_not_a_perf_data_file(self):
        for name, raw in (("empty", b""), ("pipe", b"PERFILE2" + struct.pack("<Q", 16) + b"\0" * 8),
                          ("other", b"\x7fELF" + b"\0" * 200)):
            with self.subTest(name):
                self.assertEqual(self.run_nsfix(raw=raw), 1)
                self.assertIn("is not a perf.data file (or was written to a pipe)", self.stderr)

    def test_a_directory(self):
        os.makedirs(self.data)
        self.assertEqual(self.run_nsfix(), 1)
        self.assertIn("is a directory (perf record --threads)", self.stderr)

    def test_compressed(self):
        self.assertEqual(self.run_nsfix([COMM, record(81, b"\0" * 16)]), 1)
        self.assertIn("is compressed (perf record -z)", self.stderr)

    def test_aux_area_data_cannot_be_moved(self):
        write(self.p("search", "c", "jit-7.dump"), jitdump(7, []))
        self.assertEqual(self.run_nsfix([mmap2(HOST_PID, "/app/jit-7.dump")], {18: b"\0" * 8}), 1)
        self.assertIn("has AUX area data", self.stderr)
        self.assertFalse(os.path.exists(self.out))
        # without a change, the AUX area is no matter
        self.assertEqual(self.run_nsfix([COMM], {18: b"\0" * 8}), 3)

    def test_a_record_smaller_than_its_header(self):
        self.assertEqual(self.run_nsfix([COMM, struct.pack("<IHH", 10, 0, 0)]), 1)
        self.assertIn("error: corrupt perf.data record at offset %d" % (HEADER_SIZE + ATTR_ENTRY + len(COMM)),
                      self.stderr)
        self.assertFalse(os.path.exists(self.out))

    def test_a_file_cut_inside_its_data_section(self):
        write(self.p("search", "c", "jit-7.dump"), jitdump(7, []))
        whole = perf_data([COMM, mmap2(HOST_PID, "/app/jit-7.dump"), COMM])
        self.assertEqual(self.run_nsfix(raw=whole[:HEADER_SIZE + ATTR_ENTRY + len(COMM) + 4]), 1)
        self.assertFalse(os.path.exists(self.out))

    def test_feature_section_before_the_data(self):
        write(self.p("search", "c", "jit-7.dump"), jitdump(7, []))
        raw = bytearray(perf_data([mmap2(HOST_PID, "/app/jit-7.dump")], {3: b"host\0\0\0\0"}))
        data_off, data_size = struct.unpack_from("<QQ", raw, 40)
        struct.pack_into("<Q", raw, data_off + data_size, 8)
        self.assertEqual(self.run_nsfix(raw=bytes(raw)), 1)
        self.assertIn("unexpected perf.data layout", self.stderr)
        self.assertFalse(os.path.exists(self.out))


class InProcessTest(Run):
    """main() itself, for what a separate run cannot arrange."""

    def test_a_process_still_running_in_its_namespace_is_left_to_perf(self):
        write(self.p("search", "c", "jit-7.dump"), jitdump(7, []))
        write(self.data, perf_data([mmap2(HOST_PID, "/app/jit-7.dump")]))
        with self.quiet(), mock.patch.object(nsfix, "live_nspid", lambda pid: 7 if pid == HOST_PID else None):
            rc = nsfix.main(self.data, self.search, self.host, self.out, "")
        self.assertEqual(rc, 3)
        self.assertIn("host pid %d (pid 7 in its namespace) is still running" % HOST_PID, self.err.getvalue())
        self.assertFalse(os.path.exists(self.host))

    def test_main_returns_0_and_writes_the_output(self):
        write(self.p("search", "c", "jit-7.dump"), jitdump(7, []))
        write(self.data, perf_data([mmap2(HOST_PID, "/app/jit-7.dump")]))
        with self.quiet():
            self.assertEqual(nsfix.main(self.data, self.search, self.host, self.out), 0)
        got, _ = read_perf_data(self.out)
        self.assertEqual(mmap_filename(got[0]), os.path.join(self.host, "jit-%d.dump" % HOST_PID))


PERF = shutil.which("perf") or ("/usr/bin/perf" if os.access("/usr/bin/perf", os.X_OK) else None)
MAP_DUMP = """\
import mmap
f = open("c/app/jit-7.dump", "rb")
m = mmap.mmap(f.fileno(), 0, prot=mmap.PROT_READ | mmap.PROT_EXEC)
"""


@unittest.skipUnless(PERF, "no perf")
class RealRecordingTest(Scratch):
    """perf reads the rewritten file of a short real recording of a
    process that maps a jit-7.dump (as if pid 7 of a container)."""

    def perf(self, *args):
        proc = subprocess.run([PERF] + list(args), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                              universal_newlines=True, timeout=60, cwd=self.dir)
        return proc.returncode, proc.stdout, proc.stderr

    def test_perf_reads_the_renamed_mmap(self):
        write(self.p("c", "app", "jit-7.dump"), jitdump(7, []))
        rc, _, err = self.perf("record", "-q", "-e", "cpu-clock", "-o", "perf.data", "--", sys.executable, "-c",
                               MAP_DUMP)
        if rc != 0:
            self.skipTest("perf record failed here: %s" % err.strip()[-200:])
        rc, before, _ = self.perf("script", "-i", "perf.data", "--show-mmap-events", "-F", "comm,pid")
        dump = self.p("c", "app", "jit-7.dump")
        pids = {line.split()[1] for line in before.splitlines() if line.endswith(" " + dump)}
        self.assertEqual(len(pids), 1, before)
        pid = int(pids.pop())
        if pid == 7:
            self.skipTest("the recorded process was pid 7")
        proc = subprocess.run([sys.executable, "-I", NSFIX, "perf.data", "c", "out/host-pids", "out/fixed.data", ""],
                              stdout=subprocess.PIPE, stderr=subprocess.PIPE, universal_newlines=True, timeout=30,
                              cwd=self.dir)
        self.assertEqual(proc.returncode, 0, proc.stderr)
        self.assertEqual(proc.stderr, "pyperf-run: namespace pid 7 (c/app/jit-7.dump) -> host pid %d\n" % pid)
        rc, after, err = self.perf("script", "-i", "out/fixed.data", "--show-mmap-events", "-F", "comm,pid")
        self.assertEqual(rc, 0, err)
        new = self.p("out", "host-pids", "jit-%d.dump" % pid)
        self.assertEqual(after.replace(new, dump), before)
        self.assertIn(new, after)
        # the header: the same but for the data size and what follows it
        heads = [self.perf("report", "-i", f, "--header-only")[1].splitlines() for f in ("perf.data", "out/fixed.data")]
        skip = ("# captured on", "# data size", "# feat offset")
        self.assertEqual([x for x in heads[1] if not x.startswith(skip)],
                         [x for x in heads[0] if not x.startswith(skip)])
        self.assertGreater(len(heads[1]), 10)
        with open(new, "rb") as f:
            self.assertEqual(f.read(), jitdump(pid, []))


if __name__ == "__main__":
    unittest.main()
