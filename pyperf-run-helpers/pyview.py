"""The Python view of a native stack: the interpreter's call machinery
between Python frames folded away (interpreter_frames.py, per version),
every frame that does work kept: C functions of the interpreter and of
extension modules, kernel frames, [unknown] gaps."""
import os
import re

import interpreter_frames

PY_PREFIX = "py::"
# python3.11, python3.13t, python3.14d, libpython3.11.so.1.0, ...
INTERPRETER = re.compile(r"^(?:lib)?python3\.(\d+)[a-z]*(?:\.so[.0-9]*)?$")
LIBRARY = re.compile(r"^libpyperfinject[.-]")

_machinery = {}


def machinery(minor):
    if minor not in _machinery:
        _machinery[minor] = interpreter_frames.machinery(minor)
    return _machinery[minor]


def interpreter_minor(frames):
    """3.X's X from the sample's interpreter frames, else None."""
    for _, dso in frames:
        m = INTERPRETER.match(os.path.basename(dso))
        if m:
            return int(m.group(1))
    return None


def folded(sym, dso, names):
    base = os.path.basename(dso)
    if sym in interpreter_frames.ENTRY:
        return True
    if LIBRARY.match(base):
        return True  # the eval hook: the library's own call machinery
    return sym in names and INTERPRETER.match(base) is not None


def python_view(frames):
    """FRAMES (leaf first, (symbol, dso)) without the call machinery."""
    minor = interpreter_minor(frames)
    names = machinery(minor if minor is not None else interpreter_frames.NEWEST)
    return [f for f in frames if f[0].startswith(PY_PREFIX) or not folded(f[0], f[1], names)]


def split_py_name(sym):
    """"py::qual.name:/path/file.py" -> ("qual.name", "/path/file.py");
    None for a native symbol."""
    if not sym.startswith(PY_PREFIX):
        return None
    name, sep, path = sym[len(PY_PREFIX):].partition(":")
    return (name, path) if sep else (name, "")
