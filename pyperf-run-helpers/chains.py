"""pyperf-run's check for call chains cut short.

    chains.py PERF DATA MAX_STACK KERNEL_MAX_STACK SAMPLES PID...

Reads the samples' user stack copies (size, filled size) and callchain
lengths from DATA, unwinds up to SAMPLES samples of the PIDs with perf
script (time slices spread over the recording) and prints the verdict
lines."""
import mmap, os, re, struct, subprocess, sys

SAMPLE, LOST, LOST_SAMPLES = 9, 2, 13
S_IP, S_TID, S_TIME, S_ADDR, S_READ, S_CALLCHAIN, S_ID, S_CPU = 1, 2, 4, 8, 16, 32, 64, 128
S_PERIOD, S_STREAM_ID, S_RAW, S_BRANCH, S_REGS_USER, S_STACK_USER = 256, 512, 1024, 2048, 4096, 8192
S_IDENTIFIER = 1 << 16
CONTEXT_MIN = 0xFFFFFFFFFFFFF001  # callchain context markers
KERNEL_MIN = 0xFFFF800000000000
# The outermost frames of a process (_start, the loader, libc) or a thread.
ENTRY = re.compile(r"^(_start|_dl_start|_dl_start_user|__libc_start_main\S*|__libc_start_call_main|"
                   r"start_thread|thread_start|clone3?|__clone3?|__GI___clone3?|libc_start_main_stage2)$")


def samples(path, pids):
    """Per sample of PIDS, keyed (tid, time): ("stack", copy full, size) or
    ("frames", frame limit reached, limit); their count, the first and last
    sample time, and the samples perf lost."""
    with open(path, "rb") as f:
        m = mmap.mmap(f.fileno(), 0, access=mmap.ACCESS_READ)
    if len(m) < 104 or m[:8] != b"PERFILE2":
        raise ValueError("not a perf.data file")
    # Each entry of the attrs section: perf_event_attr, then its ids section.
    entry, a_off, a_size, d_off, d_size = struct.unpack_from("<QQQQQ", m, 16)
    attrs, by_id, pos = [], {}, a_off
    while entry > 16 and pos + entry <= a_off + a_size:
        stype = struct.unpack_from("<Q", m, pos + 24)[0]
        bst, regs = struct.unpack_from("<QQ", m, pos + 72)
        maxst = struct.unpack_from("<H", m, pos + 108)[0] if entry - 16 >= 110 else 0
        a = (stype, bst, bin(regs).count("1"), maxst)
        attrs.append(a)
        ids_off, ids_size = struct.unpack_from("<QQ", m, pos + entry - 16)
        for i in range(ids_size // 8):
            by_id[struct.unpack_from("<Q", m, ids_off + 8 * i)[0]] = a
        pos += entry
    if not attrs or any(a[0] & S_READ for a in attrs):
        raise ValueError("unexpected sample format")
    mixed = len(set(a[0] for a in attrs)) > 1
    if mixed and not all(a[0] & S_IDENTIFIER for a in attrs):
        raise ValueError("several sample formats")
    out, n, lost, first, last = {}, 0, 0, None, 0
    pos, end = d_off, d_off + d_size
    while pos + 8 <= end:
        rtype, _, rsize = struct.unpack_from("<IHH", m, pos)
        if rsize < 8:
            break
        if rtype == LOST:
            lost += struct.unpack_from("<Q", m, pos + 16)[0]
        elif rtype == LOST_SAMPLES:
            lost += struct.unpack_from("<Q", m, pos + 8)[0]
        elif rtype == SAMPLE:
            p = pos + 8
            a = by_id.get(struct.unpack_from("<Q", m, p)[0]) if mixed else attrs[0]
            if a is None or not a[0] & S_TID:
                pos += rsize
                continue
            stype, bst, nregs, maxst = a
            p += 8 * bool(stype & S_IDENTIFIER) + 8 * bool(stype & S_IP)
            pid, tid = struct.unpack_from("<II", m, p)
            p += 8
            t = 0
            if stype & S_TIME:
                t = struct.unpack_from("<Q", m, p)[0]
                p += 8
            first = t if first is None else min(first, t)
            last = max(last, t)
            if pid not in pids:
                pos += rsize
                continue
            n += 1
            for bit in (S_ADDR, S_ID, S_STREAM_ID, S_CPU, S_PERIOD):
                p += 8 * bool(stype & bit)
            nframes = 0
            if stype & S_CALLCHAIN:
                nr = struct.unpack_from("<Q", m, p)[0]
                nframes = sum(1 for ip in struct.unpack_from("<%dQ" % nr, m, p + 8) if ip < CONTEXT_MIN)
                p += 8 + 8 * nr
            if stype & S_RAW:
                p += 4 + struct.unpack_from("<I", m, p)[0]
            if stype & S_BRANCH:
                nr = struct.unpack_from("<Q", m, p)[0]
                p += 8 + 8 * bool(bst & (1 << 17)) + 24 * nr
            if stype & S_REGS_USER:
                abi = struct.unpack_from("<Q", m, p)[0]
                p += 8 + (8 * nregs if abi else 0)
            if stype & S_STACK_USER:
                size = struct.unpack_from("<Q", m, p)[0]
                full = size > 0 and struct.unpack_from("<Q", m, p + 8 + size)[0] >= size
                out[(tid, t)] = ("stack", full, size)
            elif stype & S_CALLCHAIN:
                limit = maxst or KMAX
                out[(tid, t)] = ("frames", nframes >= limit, limit)
        pos += rsize
    return out, n, first or 0, last, lost


def chains(data, pids, slices):
    # The recording's own build-id cache holds the binaries of processes
    # from containers (pyperf-run record and import keep it next to DATA).
    cache = os.path.join(os.path.dirname(data), ".debug")
    cmd = [PERF] + (["--buildid-dir", cache] if os.path.isdir(cache) else []) + ["script", "-i", data, "--max-stack", MAX_STACK, "--no-inline", "--ns",
           "-F", "tid,time,ip,sym,dso", "--pid", ",".join(str(p) for p in pids)]
    if slices:
        cmd += ["--time", slices]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=os.path.dirname(data))
    key, frames = None, []
    for raw in proc.stdout:
        line = raw.decode("utf-8", "replace").rstrip("\n")
        if not line.strip():
            if key is not None:
                yield key, frames
            key, frames = None, []
        elif line[0] == "\t":
            if key is None:
                continue
            addr, _, rest = line.strip().partition(" ")
            sym, _, dso = rest.rpartition(" (")
            try:
                frames.append((int(addr, 16), sym.strip(), dso[:-1]))
            except ValueError:
                pass
        else:
            try:
                tid, when = line.split()[:2]
                sec, _, ns = when.rstrip(":").partition(".")
                key, frames = (int(tid), int(sec) * 1000000000 + int(ns.ljust(9, "0"))), []
            except ValueError:
                key = None
    if key is not None:
        yield key, frames
    proc.wait()


def whole(frames):
    """True if the chain reaches an entry frame, None without user frames."""
    user = [f for f in frames if f[0] < KERNEL_MIN]
    if not user:
        return None
    if any(ENTRY.match(f[1]) for f in user):
        return True
    # A libc without symbols: its entry functions show as [unknown], and a
    # frame-pointer walk may go on into the stack above them.
    known = [f for f in user if f[2] != "[unknown]"]
    return bool(known) and known[-1][1] == "[unknown]" and \
        re.match(r"libc[.-]", os.path.basename(known[-1][2])) is not None


def pct(a, b):
    return "%.1f%%" % (100.0 * a / b)


def main(data, pids):
    data = os.path.abspath(data)
    info, n, first, last, lost = samples(data, pids)
    slices = ""
    if n > CAP:
        # CAP samples in ten time slices spread over the recording
        w = 10.0 * CAP / n
        slices = ",".join("%.3f%%-%.3f%%" % (10 * i, 10 * i + w) for i in range(10))
    total = cut = 0
    causes = {"stack": [], "frames": [], "other": 0}
    size = 0
    for key, frames in chains(data, pids, slices):
        w = whole(frames)
        if w is None:
            continue
        total += 1
        if w:
            continue
        cut += 1
        kind, full, val = info.get(key, ("", False, 0))
        if full:
            size = val
            causes[kind].append(sum(1 for f in frames if f[1].startswith("py::")))
        else:
            causes["other"] += 1
    if total:
        seen = "%d samples" % total if not slices else "%d checked samples (of %d)" % (total, n)
        if not cut:
            print("whole chains: all %s of the Python processes reach the first frame of their process or thread" % seen)
        else:
            parts = []
            for kind, what in (("stack", "stack copy of %d KiB full" % ((size + 1023) // 1024)),
                               ("frames", "frame limit of %d native frames reached" % size)):
                depths = sorted(causes[kind])
                if depths:
                    share = "" if len(depths) == cut else " in " + pct(len(depths), total)
                    parts.append("%s%s: deeper than ~%d Python frames" % (what, share, depths[len(depths) // 2]))
            if causes["other"]:
                share = "" if causes["other"] == cut else " in " + pct(causes["other"], total)
                parts.append("unwinding stopped early%s: code without unwind information or frame pointer" % share)
            print("%s of %s have a cut chain (%s); see docs/usage.md" % (pct(cut, total), seen, "; ".join(parts)))
    if lost:
        print("perf lost %d samples (its ring buffer was full); see docs/usage.md" % lost)


if __name__ == "__main__":
    PERF, MAX_STACK, KMAX, CAP = sys.argv[1], sys.argv[3], int(sys.argv[4]), int(sys.argv[5])
    main(sys.argv[2], set(int(p) for p in sys.argv[6:]))
