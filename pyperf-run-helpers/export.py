"""pyperf-run's profile exports: a recording's samples as folded stacks,
speedscope JSON, pprof or an HTML flame graph, in the Python view
(pyview.py) or every frame.

    export.py PERF DATA FORMAT OUT [--native] [--template HTML]
    FORMAT: folded | speedscope | pprof | flamegraph | top (OUT: - for stdout)
    (speedscope: also OUT.js, which speedscope's offline build opens:
    index.html#localProfilePath=OUT.js; flamegraph: --template is
    d3-flame-graph's d3-flamegraph-base.html)

Python functions carry their file and first line (from the jitdumps next
to DATA); native frames their symbol and object file. Prints one line:
what was written, and the frames per stack before and after folding."""
import argparse
import base64
import gzip
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import flametree  # noqa: E402
import pyview  # noqa: E402
import samples  # noqa: E402
import toptable  # noqa: E402

TOP_LINES = 30


class Frames(object):
    """Unique frames, numbered from 0 in order of first sight."""

    def __init__(self, lines):
        self.lines = lines
        self.index = {}
        self.rows = []  # (label, name, file, line, system name)

    def of(self, sym, dso):
        key = (sym, dso if not sym.startswith(pyview.PY_PREFIX) else "")
        i = self.index.get(key)
        if i is None:
            py = pyview.split_py_name(sym)
            if py:
                row = (sym, py[0], py[1], self.lines.get(sym, 0), sym)
            else:
                label = sym if sym != "[unknown]" else "[unknown] (%s)" % os.path.basename(dso)
                row = (label, label, dso, 0, sym)
            i = self.index[key] = len(self.rows)
            self.rows.append(row)
        return i


def read(perf, data, native):
    """[(comm, pid, tid, period, frame ids root first)], Frames, and the
    median frames per stack before and after the view."""
    frames = Frames(samples.function_lines(os.path.dirname(os.path.abspath(data))))
    out, before, after = [], [], []
    for comm, pid, tid, _, period, stack in samples.perf_script(perf, data):
        kept = stack if native else pyview.python_view(stack)
        if not kept:
            continue
        before.append(len(stack))
        after.append(len(kept))
        out.append((comm, pid, tid, period, [frames.of(s, d) for s, d in reversed(kept)]))
    return out, frames, median(before), median(after)


def median(xs):
    xs = sorted(xs)
    return xs[len(xs) // 2] if xs else 0


def write_folded(stacks, frames, out):
    counts = {}
    for _, _, _, _, ids in stacks:
        key = ";".join(frames.rows[i][0].replace(";", ",") for i in ids)
        counts[key] = counts.get(key, 0) + 1
    with open(out, "w") as f:
        for key in sorted(counts):
            f.write("%s %d\n" % (key, counts[key]))


def write_speedscope(stacks, frames, out, title):
    """speedscope's file format: one sampled profile per thread."""
    threads = {}
    python = set(i for i, row in enumerate(frames.rows) if row[4].startswith(pyview.PY_PREFIX))
    for comm, pid, tid, period, ids in stacks:
        t = threads.setdefault((pid, tid), {"comm": comm, "samples": [], "weights": [], "py": 0})
        t["samples"].append(ids)
        t["weights"].append(period)
        t["py"] += any(i in python for i in ids)
    profiles = []
    # The thread with the most Python samples first: speedscope opens it.
    order = sorted(threads.items(), key=lambda kv: (-kv[1]["py"], -len(kv[1]["samples"])))
    for (pid, tid), t in order:
        total = sum(t["weights"])
        profiles.append({"type": "sampled", "name": "%s %d/%d" % (t["comm"], pid, tid),
                         "unit": "nanoseconds", "startValue": 0, "endValue": total,
                         "samples": t["samples"], "weights": t["weights"]})
    shared = []
    for label, name, path, line, _ in frames.rows:
        frame = {"name": label}
        if path:
            frame["file"] = path
        if line:
            frame["line"] = line
        shared.append(frame)
    doc = {"$schema": "https://www.speedscope.app/file-format-schema.json",
           "shared": {"frames": shared}, "profiles": profiles, "name": title,
           "exporter": "pyperf-run", "activeProfileIndex": 0}
    text = json.dumps(doc, separators=(",", ":"))
    with open(out, "w") as f:
        f.write(text)
    # What speedscope's offline build loads from its URL
    # (index.html#localProfilePath=OUT.js), as its own command line does.
    with open(out + ".js", "w") as f:
        f.write("speedscope.loadFileFromBase64(%s, %s)" % (
            json.dumps(os.path.basename(out)),
            json.dumps(base64.b64encode(text.encode("utf-8")).decode("ascii"))))


# --- pprof (profile.proto), encoded by hand: no protobuf module needed.
def varint(n):
    out = bytearray()
    n &= (1 << 64) - 1
    while True:
        b = n & 0x7F
        n >>= 7
        if n:
            out.append(b | 0x80)
        else:
            out.append(b)
            return bytes(out)


def field_varint(num, value):
    return varint(num << 3) + varint(value)


def field_bytes(num, payload):
    return varint(num << 3 | 2) + varint(len(payload)) + payload


def packed(num, values):
    return field_bytes(num, b"".join(varint(v) for v in values))


class Strings(object):
    def __init__(self):
        self.index = {"": 0}
        self.table = [""]

    def __call__(self, s):
        i = self.index.get(s)
        if i is None:
            i = self.index[s] = len(self.table)
            self.table.append(s)
        return i


def pprof_bytes(stacks, frames):
    s = Strings()
    msg = bytearray()
    value_type = lambda t, u: field_varint(1, s(t)) + field_varint(2, s(u))  # noqa: E731
    msg += field_bytes(1, value_type("samples", "count"))
    msg += field_bytes(1, value_type("cpu", "nanoseconds"))
    for comm, pid, tid, period, ids in stacks:
        body = packed(1, [i + 1 for i in reversed(ids)])  # leaf first, ids from 1
        body += packed(2, [1, period])
        body += field_bytes(3, field_varint(1, s("pid")) + field_varint(3, pid))
        body += field_bytes(3, field_varint(1, s("thread")) + field_varint(3, tid))
        body += field_bytes(3, field_varint(1, s("comm")) + field_varint(2, s(comm)))
        msg += field_bytes(2, body)
    for i, (label, name, path, line, system) in enumerate(frames.rows):
        line_msg = field_varint(1, i + 1) + (field_varint(2, line) if line else b"")
        msg += field_bytes(4, field_varint(1, i + 1) + field_bytes(4, line_msg))
    for i, (label, name, path, line, system) in enumerate(frames.rows):
        fn = field_varint(1, i + 1) + field_varint(2, s(label if not line else name)) + \
            field_varint(3, s(system)) + field_varint(4, s(path))
        if line:
            fn += field_varint(5, line)
        msg += field_bytes(5, fn)
    periods = sorted(p for _, _, _, p, _ in stacks)
    msg += field_bytes(11, value_type("cpu", "nanoseconds"))
    msg += field_varint(12, periods[len(periods) // 2] if periods else 0)
    # The string table last: every string above is in it by now.
    return bytes(msg) + b"".join(field_bytes(6, t.encode("utf-8")) for t in s.table)


def write_pprof(stacks, frames, out):
    with gzip.open(out, "wb") as f:
        f.write(pprof_bytes(stacks, frames))


def write_flamegraph(stacks, frames, out, template, title, context):
    def libtype(i):
        path = frames.rows[i][2]
        return "kernel" if path.startswith("[kernel") or path.startswith("[guest.kernel") else ""

    root = flametree.build((ids for _, _, _, _, ids in stacks), lambda i: frames.rows[i][0], libtype)
    with open(template, encoding="utf-8") as f:
        text = flametree.page(f.read(), root, title, context)
    with open(out, "w", encoding="utf-8") as f:
        f.write(text)


def write_top(stacks, frames, out):
    rows = frames.rows

    def name(i):
        return rows[i][1] if rows[i][4].startswith(pyview.PY_PREFIX) else rows[i][0]

    def where(i):
        label, _, path, line, system = rows[i]
        if system.startswith(pyview.PY_PREFIX):
            return "%s:%d" % (path, line) if line else path
        return os.path.basename(path)

    ids = [s[4] for s in stacks]
    lines = toptable.render(toptable.table(ids, name), len(ids), name, where, TOP_LINES)
    f = sys.stdout if out == "-" else open(out, "w")
    try:
        f.write("\n".join(lines) + "\n")
    finally:
        if f is not sys.stdout:
            f.close()


def arguments(argv):
    p = argparse.ArgumentParser(prog="export.py", description=__doc__.split("\n\n")[0])
    p.add_argument("perf")
    p.add_argument("data")
    p.add_argument("format", choices=("folded", "speedscope", "pprof", "flamegraph", "top"))
    p.add_argument("out")
    p.add_argument("--native", action="store_true", help="keep every frame")
    p.add_argument("--template", help="d3-flame-graph's HTML template (flamegraph)")
    a = p.parse_args(argv[1:])
    if a.format == "flamegraph" and not a.template:
        p.error("flamegraph needs --template")
    return a


def main(argv):
    a = arguments(argv)
    stacks, frames, before, after = read(a.perf, a.data, a.native)
    if not stacks:
        sys.stderr.write("no samples with a call chain in %s\n" % a.data)
        return 1
    recording = os.path.dirname(os.path.abspath(a.data))
    view = "every frame (--native)" if a.native else "the Python view"
    summary = "%d samples, %d functions, %s: median %d frames per stack (%d with every frame)" % (
        len(stacks), len(frames.rows), view, after, before)
    if a.format == "folded":
        write_folded(stacks, frames, a.out)
    elif a.format == "speedscope":
        write_speedscope(stacks, frames, a.out, os.path.basename(recording))
    elif a.format == "pprof":
        write_pprof(stacks, frames, a.out)
    elif a.format == "top":
        write_top(stacks, frames, a.out)
        sys.stderr.write("%s: %s\n" % (os.path.basename(a.data), summary))
        return 0
    else:
        write_flamegraph(stacks, frames, a.out, a.template, "pyperf-run: %s" % os.path.basename(recording),
                         "%s\n%s\n" % (a.data, summary))
    print("%s: %s" % (a.out, summary))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
