"""What libpyperfinject is doing in a running process, read from outside.

    libstate.py PID

Finds the library among the process's mappings, the address of its exported
`pyperfinject_remote` block (struct pyperfinject_remote in
libpyperfinject/inject.c, layout 1) in the file's dynamic symbol table, and
reads the state it points to through /proc/PID/mem, which takes the same
permission as ptrace (the same user and Yama ptrace_scope 0, or root).
Prints one line and exits 0:
    on | off | waiting | inactive | stood-aside
    unknown: REASON          (no library, an older one, or no permission)
"""
import os, struct, sys

MAGIC = b"pyperfinject"
STATUS = {0: "inactive", 1: "waiting", 3: "stood-aside"}
ACTIVE = 2


def library_mapping(pid):
    """(path, load base) of the mapped libpyperfinject, or None."""
    with open("/proc/%d/maps" % pid) as maps:
        for line in maps:
            fields = line.split(None, 5)
            if len(fields) < 6 or "libpyperfinject" not in os.path.basename(fields[5].strip()):
                continue
            start, offset = int(fields[0].split("-")[0], 16), int(fields[2], 16)
            if offset == 0:
                return fields[5].strip(), start
    return None


def dynamic_symbol(path, name):
    """st_value of a defined symbol in an ELF64 little-endian file's .dynsym."""
    with open(path, "rb") as f:
        data = f.read()
    if data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise ValueError("%s is not a 64-bit little-endian ELF file" % path)
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum = struct.unpack_from("<HH", data, 0x3A)
    sections = [struct.unpack_from("<IIQQQQIIQQ", data, shoff + i * shentsize) for i in range(shnum)]
    for sh_name, sh_type, _, _, offset, size, link, _, _, entsize in sections:
        if sh_type != 11:  # SHT_DYNSYM
            continue
        strtab = sections[link]
        for at in range(offset, offset + size, entsize or 24):
            st_name, _, _, shndx, value, _ = struct.unpack_from("<IBBHQQ", data, at)
            start = strtab[4] + st_name
            if shndx != 0 and data[start:data.index(b"\0", start)] == name:
                return value
    raise ValueError("%s exports no %s" % (path, name.decode()))


def state_of(pid):
    found = library_mapping(pid)
    if found is None:
        return "unknown: no libpyperfinject in process %d" % pid
    path, base = found
    try:
        block = base + dynamic_symbol("/proc/%d/root%s" % (pid, path), b"pyperfinject_remote")
    except (OSError, ValueError) as e:
        return "unknown: %s (a library older than this pyperf-run?)" % e
    try:
        with open("/proc/%d/mem" % pid, "rb", buffering=0) as mem:
            mem.seek(block)
            magic, layout, off_bit, status_at, attention_at = struct.unpack("<16sIIQQ", mem.read(40))
            if not magic.startswith(MAGIC) or layout != 1:
                return "unknown: the library's state block has layout %d, not 1" % layout
            mem.seek(status_at)
            status, = struct.unpack("<i", mem.read(4))
            mem.seek(attention_at)
            attention, = struct.unpack("<i", mem.read(4))
    except OSError as e:
        return ("unknown: cannot read process %d's memory (%s): it needs ptrace permission "
                "(the same user with kernel.yama.ptrace_scope=0, or root)" % (pid, e.strerror))
    if status != ACTIVE:
        return STATUS.get(status, "unknown: status %d" % status)
    return "off" if attention & off_bit else "on"


if __name__ == "__main__":
    if len(sys.argv) != 2 or not sys.argv[1].isdigit():
        sys.exit("usage: libstate.py PID")
    print(state_of(int(sys.argv[1])))
