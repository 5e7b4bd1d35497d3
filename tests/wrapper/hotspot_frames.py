#!/usr/bin/env python3
"""Prints the call chains that hotspot's parser (hotspot-perfparser) sends to
hotspot: one sample per line, frames innermost first, "|"-separated, the same
shape as the wrapper tests' sample_chains. Reads the parser's --output file.

The stream: "QPERFSTREAM\\0", a little-endian int32 (QDataStream version),
then messages of a little-endian uint32 size and a big-endian QDataStream
body whose first byte is the event type. Only the leading fields of each
message are read, so later parsers that append fields are read too.
"""
import struct
import sys

LOCATION, SYMBOL, STRING, SAMPLE = 3, 4, 5, 13


def main(path):
    with open(path, "rb") as f:
        data = f.read()
    if data[:12] != b"QPERFSTREAM\0":
        sys.exit("%s: not hotspot-perfparser output" % path)
    pos = 16
    strings, parents, symbols, samples = {}, {}, {}, []
    while pos + 4 <= len(data):
        (size,) = struct.unpack_from("<I", data, pos)
        body = data[pos + 4:pos + 4 + size]
        pos += 4 + size
        if len(body) != size or not body:
            sys.exit("%s: truncated message" % path)
        kind = body[0]
        if kind == STRING:
            sid, n = struct.unpack_from(">iI", body, 1)
            strings[sid] = b"" if n == 0xFFFFFFFF else body[9:9 + n]
        elif kind == LOCATION:
            # id, address, file, pid, line, column, parentLocationId
            lid, _, _, _, _, _, parent = struct.unpack_from(">iQiIiii", body, 1)
            parents[lid] = parent
        elif kind == SYMBOL:
            sid, name = struct.unpack_from(">ii", body, 1)
            symbols[sid] = name
        elif kind == SAMPLE:
            # pid, tid, time, cpu, frames (QVector<qint32>)
            (n,) = struct.unpack_from(">I", body, 21)
            samples.append(struct.unpack_from(">%di" % n, body, 25))

    def name(loc):
        for _ in range(16):
            if loc in symbols:
                s = strings.get(symbols[loc], b"")
                return s.decode("utf-8", "replace") or "??"
            loc = parents.get(loc, -1)
            if loc < 0:
                break
        return "??"

    out = sys.stdout
    for frames in samples:
        out.write("|" + "|".join(name(f) for f in frames) + "\n")


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: hotspot_frames.py PARSER-OUTPUT")
    main(sys.argv[1])
