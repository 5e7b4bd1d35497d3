"""Checks the instruction pointers an in-process unwinder returned against a perf map.

Usage: check_unwind.py [--apart BYTES] MAP IPS SCRIPT [FUNC...]
  MAP     perf-PID.map written by the library (START SIZE NAME, hex)
  IPS     the unwinder's output: one hex address a line, innermost first
  SCRIPT  the script's path as it appears in the map names
  FUNC    the trampolines wanted first, innermost first (default foo bar baz <module>)
  --apart the first and the last of them must lie at least BYTES apart (in
          different arenas, for a test that fills arenas in between)

Exit 0 if the first trampoline hits are exactly py::FUNC:SCRIPT in order, 1 with
a diagnosis otherwise, 2 on unreadable input. Prints one line either way.
"""
import sys


def read_map(path):
    entries = []
    with open(path) as f:
        for n, line in enumerate(f, 1):
            parts = line.rstrip("\n").split(" ", 2)
            if len(parts) != 3:
                raise ValueError("%s:%d: malformed line %r" % (path, n, line))
            entries.append((int(parts[0], 16), int(parts[1], 16), parts[2]))
    return entries


def short(name):
    # py::qualname:filename -> qualname
    return name[4:].rsplit(":", 1)[0] if name.startswith("py::") else name


def diagnose(ips, hits, entries):
    """Why the walk stopped, for the report."""
    if not ips:
        return "the unwinder returned no frames"
    last = ips[-1]
    tramp = [i for i, (_, name) in enumerate(hits) if name]
    if last >> 48:
        after = hits[-2][1] if len(hits) > 1 else ""
        if after:
            return ("the frame after %s has the address %x, pointer-authentication bits still "
                    "set: no unwind info was found for the trampoline and the unwinder fell back "
                    "to the link register value the (PAC-built) evaluator saved signed"
                    % (short(after), last))
        return ("the walk ended on %x, a return address with pointer-authentication bits "
                "set (an unstripped PAC signature)" % last)
    for i in range(1, len(ips)):
        if ips[i] == ips[i - 1] and hits[i][1]:
            return ("the frame after %s repeats its address %x: no unwind info was found for "
                    "the trampoline and the unwinder fell back to the link register (x30), "
                    "which still holds the return address into the trampoline itself"
                    % (short(hits[i][1]), ips[i]))
    if not tramp:
        return ("the walk (%d frames) stopped at %x before reaching any trampoline"
                % (len(ips), last))
    return "the walk (%d frames) stopped at %x" % (len(ips), last)


def main(argv):
    apart = 0
    if len(argv) > 2 and argv[1] == "--apart":
        apart = int(argv[2], 0)
        argv = argv[:1] + argv[3:]
    if len(argv) < 4:
        sys.stderr.write(__doc__)
        return 2
    map_path, ips_path, script = argv[1:4]
    want = argv[4:] or ["foo", "bar", "baz", "<module>"]
    try:
        entries = read_map(map_path)
        with open(ips_path) as f:
            ips = [int(w, 16) for w in f.read().split()]
    except (OSError, ValueError) as e:
        print("unreadable input: %s" % e)
        return 2
    hits = []
    for ip in ips:
        name = ""
        for start, size, n in entries:
            if start <= ip < start + size:
                name = n
                break
        hits.append((ip, name))
    names = [n for _, n in hits if n]
    expected = ["py::%s:%s" % (fn, script) for fn in want]
    seen = ", ".join(short(n) for n in names[:len(want) + 2]) or "none"
    if names[:len(want)] == expected:
        starts = dict((n, start) for start, _, n in entries)
        gap = abs(starts[expected[0]] - starts[expected[-1]])
        if gap < apart:
            print("%d frames; trampolines %s, but %s and %s are only %d bytes apart (wanted %d)"
                  % (len(ips), seen, want[0], want[-1], gap, apart))
            return 1
        print("%d frames; trampolines %s%s" % (len(ips), seen,
                                             " (%d KiB apart)" % (gap // 1024) if apart else ""))
        return 0
    print("%d frames; trampolines found: %s; wanted %s; %s" %
          (len(ips), seen, ", ".join(want), diagnose(ips, hits, entries)))
    return 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
