"""The Python view of a native stack: the interpreter's call machinery
between Python frames folded away (interpreter_frames.py, per version),
every frame that does work kept: C functions of the interpreter and of
extension modules, kernel frames, [unknown] gaps."""
import os
import re

import interpreter_frames

PY_PREFIX = "py::"
# CPython's JIT code of a function (3.15, PYTHON_JIT=1): "py::jit:qual:file",
# or several functions whose code came and went at one address, '|' between.
JIT_PREFIX = "py::jit:"
# python3.11, python3.13t, python3.14d, libpython3.11.so.1.0, ...
INTERPRETER = re.compile(r"^(?:lib)?python3\.(\d+)[a-z]*(?:\.so[.0-9]*)?$")
LIBRARY = re.compile(r"^libpyperfinject[.-]")
# GCC's clones and LTO's local copies: run_mod.lto_priv.0, x_add.isra.0, ...
CLONE_SUFFIX = re.compile(r"(\.(lto_priv|isra|constprop|part|cold|localalias)(\.\d+)?)+$")

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


def folded(sym, dso, names, callers_side):
    """True for a frame of the call machinery. callers_side: the frame is
    outside the innermost Python frame (between Python frames, or on the way
    from main to the first)."""
    base = os.path.basename(dso)
    sym = CLONE_SUFFIX.sub("", sym.split("@", 1)[0])  # __libc_start_main@@GLIBC_2.34
    if sym in interpreter_frames.ENTRY:
        return True
    if LIBRARY.match(base):
        return True  # the eval hook: the library's own call machinery
    if INTERPRETER.match(base) is None:
        return False
    # An interpreter frame perf could not name is its call path there (perf
    # 6.1 names no static function of a stripped build, nor some of an LTO
    # build's): between Python frames it says nothing; under the innermost
    # Python frame it is work, kept.
    return sym in names or (callers_side and sym == "[unknown]")


def python_view(frames):
    """FRAMES (leaf first, (symbol, dso)) without the call machinery."""
    minor = interpreter_minor(frames)
    names = machinery(minor if minor is not None else interpreter_frames.NEWEST)
    innermost = next((i for i, f in enumerate(frames) if f[0].startswith(PY_PREFIX)), len(frames))
    return [f for i, f in enumerate(frames)
            if f[0].startswith(PY_PREFIX) or not folded(f[0], f[1], names, i > innermost)]


def split_py_name(sym):
    """"py::qual.name:/path/file.py" -> ("qual.name", "/path/file.py");
    CPython's JIT code of it, "py::jit:qual.name:/path/file.py" ->
    ("qual.name [jit]", "/path/file.py"); None for a native symbol."""
    if sym.startswith(JIT_PREFIX):
        parts = [p.partition(":") for p in sym[len(JIT_PREFIX):].split("|")]
        paths = set(path for _, _, path in parts)
        name = "|".join(n for n, _, _ in parts) + " [jit]"
        return (name, paths.pop() if len(paths) == 1 else "")
    if not sym.startswith(PY_PREFIX):
        return None
    name, sep, path = sym[len(PY_PREFIX):].partition(":")
    return (name, path) if sep else (name, "")
