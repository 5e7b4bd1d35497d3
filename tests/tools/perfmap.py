"""Strict reading of perf map files (/tmp/perf-PID.map), shared by the test
harnesses (tests/integration/run.py, tests/hardening/harden.py).

A line is "START SIZE SYMBOL\n": lower-case hex without 0x, one space each,
a symbol in UTF-8 without control characters. Errors raise `error` (each
harness passes its own failure class; MapError by default).
"""
import os
import re

LINE = re.compile(rb"^([0-9a-f]+) ([0-9a-f]+) (\S.*)$")
SYMBOL_MAX = 1000  # the library cuts longer names (docs/design.md)


class MapError(Exception):
    pass


def read(path, allow_partial_tail=False, prefix=b"", symbol_max=None, error=MapError):
    """Returns ([(start, size, symbol)], partial tail bytes). With
    allow_partial_tail the end a killed or running writer leaves is returned
    apart instead of failing: an unterminated last line (write(2)), or the
    library's mapped writer's newlines allocated ahead, after at most one
    unfinished line that starts with zero bytes (docs/design.md). Every
    symbol must start with prefix and be at most symbol_max bytes when those
    are given."""
    name = os.path.basename(path)
    with open(path, "rb") as f:
        data = f.read()
    tail = b""
    if allow_partial_tail:
        body = data.rstrip(b"\n")
        cut = body.rfind(b"\n") + 1
        if body[cut:cut + 1] == b"\0":  # begun, its head never stored
            data, tail = body[:cut], body[cut:]
        elif len(body) < len(data) - 1:  # the newlines allocated ahead
            data = body + b"\n" if body else b""
    if data and not data.endswith(b"\n"):
        if not allow_partial_tail:
            raise error("%s does not end with a newline: %r" % (name, data[-80:]))
        cut = data.rfind(b"\n") + 1
        data, tail = data[:cut], data[cut:]
    entries = []
    for raw in data.splitlines():
        m = LINE.match(raw)
        if not m or not m.group(3).startswith(prefix):
            raise error("malformed map line in %s: %r" % (name, raw[:160]))
        try:
            sym = m.group(3).decode("utf-8")
        except UnicodeDecodeError:
            raise error("map line is not UTF-8: %r" % raw[:160])
        if any(ord(c) < 0x20 or ord(c) == 0x7f for c in sym):
            raise error("control character in map line: %r" % raw[:160])
        if symbol_max is not None and len(m.group(3)) > symbol_max:
            raise error("symbol of %d bytes (limit %d)" % (len(m.group(3)), symbol_max))
        entries.append((int(m.group(1), 16), int(m.group(2), 16), sym))
    return entries, tail


def require_no_overlap(entries, what, error=MapError):
    """Raises `error` naming the first two entries whose ranges overlap."""
    spans = sorted((start, start + size, sym) for start, size, sym in entries)
    for a, b in zip(spans, spans[1:]):
        if b[0] < a[1]:
            raise error("%s: overlapping entries %r and %r" % (what, a[2][:60], b[2][:60]))
