"""pyperf-run's host-side fix for processes of other PID namespaces.

    nsfix.py PERF_DATA SEARCH_DIR HOST_DIR OUT_DATA [ADOPT_PIDS]

For every mmap of a jit-N.dump by host process P != N (a process in another
PID namespace) that is no longer running there, finds the dump under
SEARCH_DIR (the longest matching path suffix), writes HOST_DIR/jit-P.dump
with P in its header and records, copies perf-N.map to HOST_DIR/perf-P.map
and /tmp/perf-P.map, and writes OUT_DATA: PERF_DATA with those mmaps
renamed (perf 6.1 inject only accepts jit-PID.dump of the recorded pid).
ADOPT_PIDS (optional, comma-separated): running processes of this namespace
(record --pid) whose jitdumps are copied next to OUT_DATA, their mmaps
renamed to the copies.
Mmaps of dumps that cannot be used (deleted, no copy found, ambiguous) are
renamed so that perf inject passes over them and names the rest.
Exit status: 0 OUT_DATA written, 3 nothing to change, 1 error."""
import os, re, shutil, struct, sys, tempfile

PERF_RECORD_MMAP, PERF_RECORD_MMAP2, PERF_RECORD_COMPRESSED = 1, 10, 81
HEADER_AUXTRACE = 18
JIT_MAGIC = 0x4A695444
DUMP_RE = re.compile(r"jit-(\d+)\.dump$")

def say(msg):
    sys.stderr.write("pyperf-run: %s\n" % msg)

def fail(msg):
    say("error: " + msg)
    sys.exit(1)

def records(f, off, size):
    pos, end = off, off + size
    while pos + 8 <= end:
        f.seek(pos)
        hdr = f.read(8)
        rtype, misc, rsize = struct.unpack("<IHH", hdr)
        if rsize < 8:
            fail("corrupt perf.data record at offset %d" % pos)
        yield pos, rtype, rsize
        pos += rsize

def mmap_name(rtype, body):
    off = 32 if rtype == PERF_RECORD_MMAP else 64
    end = body.find(b"\0", off)
    if end < 0:
        return None, off
    return body[off:end], off

def live_nspid(pid):
    try:
        with open("/proc/%d/status" % pid) as st:
            for line in st:
                if line.startswith("NStgid:"):
                    return int(line.split()[-1])
    except OSError:
        return None
    return None

def best_match(cands, container_path):
    want = container_path.strip("/").split("/")
    scored = []
    for c in cands:
        have = os.path.realpath(c).strip("/").split("/")
        n = 0
        while n < min(len(want), len(have)) and want[-1 - n] == have[-1 - n]:
            n += 1
        scored.append((n, c))
    scored.sort(reverse=True)
    if len(scored) > 1 and scored[0][0] == scored[1][0]:
        return None, [c for n, c in scored if n == scored[0][0]]
    return scored[0][1], None

def rewrite_dump(src, dst, pid):
    with open(src, "rb") as f:
        data = bytearray(f.read())
    if len(data) < 40 or struct.unpack_from("<I", data, 0)[0] != JIT_MAGIC:
        fail("%s is not a little-endian jitdump file" % src)
    hsize = struct.unpack_from("<I", data, 8)[0]
    struct.pack_into("<I", data, 20, pid)
    pos = hsize
    while pos + 16 <= len(data):
        rid, rsize = struct.unpack_from("<II", data, pos)
        if rsize < 16 or pos + rsize > len(data):
            break
        if rid in (0, 1):  # JIT_CODE_LOAD, JIT_CODE_MOVE: pid, tid
            struct.pack_into("<II", data, pos + 16, pid, pid)
        pos += rsize
    write_file(dst, bytes(data[:pos]), os.stat(src).st_mode & 0o777)

def write_file(dst, data, mode):
    d = os.path.dirname(dst)
    fd, tmp = tempfile.mkstemp(dir=d, prefix=".pyperf-run.")
    try:
        os.fchmod(fd, mode)
        os.write(fd, data)
    finally:
        os.close(fd)
    os.rename(tmp, dst)

def adopt_dump(path, pid, into):
    """A copy of a running process's jitdump (whole records) in the
    recording: perf inject writes its jitted-*.so next to the dump it
    reads, so they land in the recording, not in the process's directory."""
    if not os.path.isfile(path):
        say("warning: %s (pid %d) is gone: its Python names stay missing" % (path, pid))
        return None
    dst = os.path.join(into, "jit-%d.dump" % pid)
    rewrite_dump(path, dst, pid)
    return dst


def readable_by_perf(path, pid):
    """perf inject opens a dump at its recorded path, or inside the
    process's mount namespace while the process runs."""
    return os.path.isfile(path) or os.path.isfile("/proc/%d/root%s" % (pid, path))


def set_aside(path):
    """A name perf inject does not take for a jitdump (it wants
    jit-PID.dump): a dump it cannot read would stop it (perf 6.1 exits 255,
    without a message) and cost every other process its names."""
    return path[:-len(".dump")] + ".gone"


def main(data_in, search, host_dir, data_out, adopt=""):
    adopt = set(int(p) for p in adopt.split(",") if p)
    if os.path.isdir(data_in):
        fail("%s is a directory (perf record --threads); record without it" % data_in)
    host_dir = os.path.abspath(host_dir)
    dumps = {}
    for root, dirs, files in os.walk(search):
        if os.path.abspath(root) == host_dir:
            dirs[:] = []
            continue
        for name in files:
            if DUMP_RE.match(name):
                dumps.setdefault(name, []).append(os.path.join(root, name))
    with open(data_in, "rb") as f:
        head = f.read(104)
        if len(head) < 104 or head[:8] != b"PERFILE2":
            fail("%s is not a perf.data file (or was written to a pipe)" % data_in)
        hsize = struct.unpack_from("<Q", head, 8)[0]
        f.seek(0)
        head = f.read(hsize)
        data_off, data_size = struct.unpack_from("<QQ", head, 40)
        if data_size == 0:
            fail("%s has no data section (perf record did not finish?)" % data_in)
        bitmap = int.from_bytes(head[72:hsize], "little")
        changes = {}
        done = {}
        gone = set()
        for pos, rtype, rsize in records(f, data_off, data_size):
            if rtype == PERF_RECORD_COMPRESSED:
                fail("%s is compressed (perf record -z); record without -z" % data_in)
            if rtype not in (PERF_RECORD_MMAP, PERF_RECORD_MMAP2):
                continue
            f.seek(pos + 8)
            body = f.read(rsize - 8)
            name, off = mmap_name(rtype, body)
            if not name:
                continue
            path = name.decode("utf-8", "surrogateescape")
            m = DUMP_RE.search(os.path.basename(path))
            if not m or not os.path.basename(path) == m.group(0):
                continue
            pid = struct.unpack_from("<I", body, 0)[0]
            nspid = int(m.group(1))
            if pid == 0:
                continue
            key = (pid, path)
            if pid == nspid:
                if key not in done:
                    if pid in adopt:
                        done[key] = adopt_dump(path, pid, os.path.dirname(os.path.abspath(data_out)))
                    elif not readable_by_perf(path, pid):
                        # Another process's dump, deleted since: perf
                        # inject would stop at it and name nothing.
                        gone.add(path)
                        done[key] = set_aside(path)
                    else:
                        done[key] = None
                if done.get(key):
                    changes[pos] = (rsize, off, body, done[key].encode("utf-8", "surrogateescape"))
                continue
            if live_nspid(pid) == nspid:
                say("host pid %d (pid %d in its namespace) is still running: perf finds its files itself" % (pid, nspid))
                continue
            if key not in done:
                cands = dumps.get(os.path.basename(path), [])
                if not cands:
                    say("warning: no copy of %s (host pid %d) under %s: its Python names stay missing" % (path, pid, search))
                    done[key] = set_aside(path)
                    changes[pos] = (rsize, off, body, done[key].encode("utf-8", "surrogateescape"))
                    continue
                src, tie = best_match(cands, path)
                if src is None:
                    say("warning: %s (host pid %d) matches several files: %s; give each container its own directory" % (path, pid, ", ".join(tie)))
                    done[key] = set_aside(path)
                    changes[pos] = (rsize, off, body, done[key].encode("utf-8", "surrogateescape"))
                    continue
                os.makedirs(host_dir, exist_ok=True)
                dst = os.path.join(host_dir, "jit-%d.dump" % pid)
                rewrite_dump(src, dst, pid)
                srcmap = os.path.join(os.path.dirname(src), "perf-%d.map" % nspid)
                if os.path.isfile(srcmap):
                    with open(srcmap, "rb") as mf:
                        mapdata = mf.read()
                    mode = os.stat(srcmap).st_mode & 0o777
                    write_file(os.path.join(host_dir, "perf-%d.map" % pid), mapdata, mode)
                    if os.path.exists("/proc/%d" % pid):
                        say("host pid %d is in use again: /tmp/perf-%d.map left alone" % (pid, pid))
                    else:
                        write_file("/tmp/perf-%d.map" % pid, mapdata, mode)
                say("namespace pid %d (%s) -> host pid %d" % (nspid, src, pid))
                done[key] = dst
            if done[key]:
                changes[pos] = (rsize, off, body, done[key].encode("utf-8", "surrogateescape"))
        if gone:
            say("%d jitdump(s) named in the recording are gone (other processes', deleted since): "
                "perf inject skips them" % len(gone))
        if not changes:
            return 3
        if bitmap >> HEADER_AUXTRACE & 1:
            fail("%s has AUX area data, whose index cannot be moved" % data_in)
        nfeat = bin(bitmap).count("1")
        out = open(data_out + ".tmp", "wb")
        with out:
            f.seek(0)
            out.write(f.read(data_off))
            delta = 0
            for pos, rtype, rsize in records(f, data_off, data_size):
                if pos in changes:
                    _, off, body, newname = changes[pos]
                    oldname_len = body.find(b"\0", off) - off
                    tail = body[off + ((oldname_len + 1 + 7) & ~7):]
                    padded = newname + b"\0" * (((len(newname) + 1 + 7) & ~7) - len(newname))
                    newbody = body[:off] + padded + tail
                    if len(newbody) + 8 > 0xFFFF:
                        fail("path too long: %s" % newname)
                    f.seek(pos)
                    rt, misc, _ = struct.unpack("<IHH", f.read(8))
                    out.write(struct.pack("<IHH", rt, misc, len(newbody) + 8))
                    out.write(newbody)
                    delta += len(newbody) + 8 - rsize
                else:
                    f.seek(pos)
                    out.write(f.read(rsize))
            f.seek(data_off + data_size)
            table = f.read(16 * nfeat)
            for i in range(nfeat):
                foff, fsize = struct.unpack_from("<QQ", table, 16 * i)
                if foff < data_off + data_size:
                    fail("unexpected perf.data layout (feature section before the data)")
                out.write(struct.pack("<QQ", foff + delta, fsize))
            shutil.copyfileobj(f, out)
            out.seek(48)
            out.write(struct.pack("<Q", data_size + delta))
    os.rename(data_out + ".tmp", data_out)
    return 0

if __name__ == "__main__":
    sys.exit(main(*sys.argv[1:6]))
