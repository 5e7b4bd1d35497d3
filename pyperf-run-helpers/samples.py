"""Reading a recording's samples (perf script) and the first lines of its
Python functions (the jitdumps the library wrote).

A sample is (comm, pid, tid, time, period, frames): time in seconds (None
where perf printed none), frames from the leaf out, each (symbol, dso
path)."""
import os
import re
import struct
import subprocess

import progress

FIELDS = "comm,pid,tid,time,period,ip,sym,dso"
HEADER = re.compile(r"^(?P<comm>.*?)\s+(?P<pid>-?\d+)/(?P<tid>-?\d+)"
                    r"(?:\s+(?P<time>\d+\.\d+):)?\s+(?P<period>\d+)\s*$")
FRAME = re.compile(r"^\s+[0-9a-f]+\s+(?P<sym>.*?)\s+\((?P<dso>[^()]*)\)\s*$")


def parse(lines):
    """Samples from perf script -F FIELDS output lines."""
    head, frames = None, []
    for line in lines:
        if not line.strip():
            if head is not None:
                yield head + (frames,)
            head, frames = None, []
            continue
        if line[0] in " \t":
            m = FRAME.match(line)
            if head is not None and m:
                frames.append((m.group("sym"), m.group("dso")))
            continue
        m = HEADER.match(line.rstrip("\n"))
        if head is not None:
            yield head + (frames,)
        head = (m.group("comm"), int(m.group("pid")), int(m.group("tid")),
                float(m.group("time")) if m.group("time") else None,
                int(m.group("period"))) if m else None
        frames = []
    if head is not None:
        yield head + (frames,)


def perf_script(perf, data, max_stack="8192", show_progress=True):
    """perf script's samples of DATA (a generator; perf runs meanwhile), read
    with the recording's own build-id cache when it has one (pyperf-run
    keeps it next to DATA, with the binaries of processes from containers).
    A long read shows its progress on stderr (progress.py)."""
    data = os.path.abspath(data)
    cache = os.path.join(os.path.dirname(data), ".debug")
    cache_args = ["--buildid-dir", cache] if os.path.isdir(cache) else []
    cmd = [perf] + cache_args + [
        "script", "-i", data, "--no-inline", "--max-stack", max_stack, "-F", FIELDS]
    shown = None
    if show_progress:
        shown = progress.Progress(os.path.basename(data), progress.recording_times(perf, data, cache_args))
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                            cwd=os.path.dirname(data))
    n = 0
    try:
        for s in parse(raw.decode("utf-8", "replace") for raw in proc.stdout):
            n += 1
            if shown and n & 63 == 0:
                shown.update(n, s[3])
            yield s
    finally:
        proc.stdout.close()
        proc.wait()
        if shown:
            shown.finish(n)


JITDUMP_MAGIC = 0x4A695444
CODE_LOAD, DEBUG_INFO = 0, 2


def jitdump_lines(path):
    """{name: first line} of the functions a jitdump announces (the line of
    the debug record written just before each code load)."""
    out = {}
    with open(path, "rb") as f:
        data = f.read()
    if len(data) < 40 or struct.unpack_from("<I", data, 0)[0] != JITDUMP_MAGIC:
        return out
    pos = struct.unpack_from("<I", data, 8)[0]
    line = None
    while pos + 16 <= len(data):
        rid, size = struct.unpack_from("<II", data, pos)
        if size < 16 or pos + size > len(data):
            break  # a record cut short: the writer was killed there
        if rid == DEBUG_INFO and size >= 48:
            line = struct.unpack_from("<I", data, pos + 40)[0]  # first entry's lineno
        elif rid == CODE_LOAD and size > 56:
            end = data.find(b"\0", pos + 56, pos + size)
            if end > 0 and line is not None:
                name = data[pos + 56:end].decode("utf-8", "replace")
                out[name] = min(line, out.get(name, line))
            line = None
        pos += size
    return out


def function_lines(directory):
    """{py:: name: first line} over every jitdump under DIRECTORY."""
    out = {}
    for root, dirs, files in os.walk(directory):
        dirs[:] = [d for d in dirs if d not in (".debug", "binaries")]
        for f in files:
            if f.startswith("jit-") and f.endswith(".dump"):
                try:
                    for name, line in jitdump_lines(os.path.join(root, f)).items():
                        out[name] = min(line, out.get(name, line))
                except OSError:
                    pass
    return out
