"""What the Python test runners share (tests/integration/run.py,
tests/hardening/harden.py and regrtest.py, bench/run.py): the outcomes of a
test, the interpreters of the matrix and what they say about themselves, the
environment a child runs in, the preload, and the PASS/FAIL/SKIP lines with
their summary."""
import json
import os
import subprocess

import matrix

ROOT = matrix.ROOT
LIB = os.path.join(ROOT, "build", "libpyperfinject.so")
# pyperf-run's own question to an interpreter: the harnesses ask the same one.
PROBE_PY = os.path.join(ROOT, "pyperf-run-helpers", "probe.py")
PROBE_TIMEOUT = 300  # qemu-user starts an arm64 python slowly


class Skip(Exception):
    """The test cannot run here; the message says why."""


class Fail(Exception):
    """The test ran and something was wrong."""


class NotApplicable(Exception):
    """The test has no meaning for this interpreter (not a skip: nothing is missing)."""


def attempt(test, *args):
    """(status, note) of one test: PASS with its note, SKIP or FAIL with the
    reason. A test that breaks is a FAIL, never a pass; NotApplicable is the
    caller's to handle."""
    try:
        return "PASS", test(*args) or ""
    except NotApplicable:
        raise
    except Skip as e:
        return "SKIP", str(e)
    except Fail as e:
        return "FAIL", str(e)
    except Exception as e:
        return "FAIL", "%s: %s" % (type(e).__name__, e)


# --------------------------------------------------------------- interpreters

# Run by the interpreter (2.7 included) as `python -E -s -S -B -c FACTS
# probe.py`, as pyperf-run runs probe.py (-I does not exist in 2.7): probe.py's
# own line first (so the frame-pointer and free-threading answers are
# pyperf-run's), then one JSON line of what only the tests ask.
FACTS = r"""
import json, platform, sys, sysconfig
exec(compile(open(sys.argv[1]).read(), sys.argv[1], "exec"), {"__name__": "__main__"})
get = sysconfig.get_config_var
sys.stdout.write(json.dumps({
    "release": list(sys.version_info[:3]),
    "version_text": sys.version.split()[0],
    "machine": platform.machine(),
    "prefix": sys.prefix,
    "ldlibrary": get("LDLIBRARY") or "",
    "libdir": get("LIBDIR") or "",
    "shared": bool(get("Py_ENABLE_SHARED")),
    "debug": hasattr(sys, "gettotalrefcount"),
}) + "\n")
"""


def read_probe(stdout):
    """probe.py's line and the JSON line -> the facts."""
    line, extra = stdout.split("\n")[:2]
    impl, version, fp, ft, executable = line.split("\t")
    facts = json.loads(extra)
    facts.update(implementation=impl, version=tuple(int(x) for x in version.split(".")),
                 frame_pointers=fp == "yes", free_threaded=ft == "yes", executable=executable)
    facts["release"] = tuple(facts["release"])
    return facts


def script_head(command):
    """The first bytes of the command's file if it is a #! script, else b""."""
    try:
        with open(command, "rb") as f:
            head = f.read(4096)
    except OSError:
        return b""
    return head if head.startswith(b"#!") else b""


class Interp(object):
    """One interpreter of the matrix: LABEL, COMMAND, KIND."""

    def __init__(self, label, command, kind):
        self.label = label
        self.command = command
        self.kind = kind
        self._facts = None
        self._broken = None

    def probe(self):
        """What the interpreter says about itself, asked once: implementation,
        version (X, Y), release (X, Y, Z), version_text, frame_pointers,
        free_threaded, executable, machine, prefix, ldlibrary, libdir, shared,
        debug; and of its file: script (a #! wrapper, valgrind must follow its
        exec) and wrapper (it hands PYPERFINJECT_GUEST_PRELOAD to python only).
        Skip if it does not start."""
        if self._broken:
            raise Skip(self._broken)
        if self._facts is None:
            try:
                argv = [self.command, "-E", "-s", "-S", "-B", "-c", FACTS, PROBE_PY]
                out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                     stdin=subprocess.DEVNULL, universal_newlines=True,
                                     env=clean_env(), timeout=PROBE_TIMEOUT)
                facts = read_probe(out.stdout) if out.returncode == 0 else None
                why = (out.stdout + out.stderr).strip()[-200:]
            except (OSError, subprocess.TimeoutExpired, ValueError) as e:
                facts, why = None, str(e)
            if facts is None:
                self._broken = "interpreter does not start: %s" % why
                raise Skip(self._broken)
            head = script_head(self.command)
            facts.update(script=bool(head), wrapper=b"PYPERFINJECT_GUEST_PRELOAD" in head)
            self._facts = facts
        return self._facts

    @property
    def version(self):
        return self.probe()["version"]

    @property
    def release(self):
        return self.probe()["release"]

    @property
    def emulated(self):
        """The matrix's arm64 interpreters run under qemu-user: their wrapper
        starts qemu-aarch64, and what they preload must be an arm64 build."""
        return self.kind.startswith("arm64")


def discover(listing=None, cls=Interp):
    """The matrix (tests/tools/matrix.py: the listing, or what
    tests/provision/interpreters.sh finds), in its order."""
    return [cls(*row) for row in matrix.read(listing)]


# ------------------------------------------------------------ a child's world

def clean_env(keep_python=False, **settings):
    """os.environ without the library's settings (PYPERFINJECT*), LD_PRELOAD
    and every PYTHON* variable (keep_python: only PYTHONPERFSUPPORT, which
    would turn CPython's own trampoline on), then `settings`: a child sees
    only what the test gives it."""
    env = {}
    for key, value in os.environ.items():
        if key.startswith("PYPERFINJECT") or key == "LD_PRELOAD" or \
                key == "PYTHONPERFSUPPORT" or (key.startswith("PYTHON") and not keep_python):
            continue
        env[key] = value
    env.update(settings)
    return env


def sanitizer_runtime():
    """The runtime `make check SANITIZE=...` (tests/run-all.sh) exports: an
    instrumented library loads only after it."""
    return os.environ.get("PYPERFINJECT_SANITIZER_RUNTIME", "").split()


def ld_preload(lib, prefix=None):
    """The LD_PRELOAD value that preloads lib: prefix first (paths; by
    default the sanitizer runtime, if any)."""
    return " ".join((sanitizer_runtime() if prefix is None else list(prefix)) + [lib])


def preload(env, lib, prefix=None, through_wrapper=False):
    """Sets env (a child's) to preload lib, prefix first as in ld_preload.
    through_wrapper: the command is a wrapper script
    (tests/provision/debian-python.sh) that takes PYPERFINJECT_GUEST_PRELOAD
    and hands it to python alone, not to its shell or to qemu."""
    key = "PYPERFINJECT_GUEST_PRELOAD" if through_wrapper else "LD_PRELOAD"
    env[key] = ld_preload(lib, prefix)
    return env


# -------------------------------------------------------------- result lines

class Tally(object):
    """Prints "STATUS COLUMN... DETAIL" lines and counts them. summary() is
    the last line, "SUITE: N passed, N failed, N skipped": tests/run-all.sh
    adds those numbers up (tests/hardening/run.sh counts the lines)."""

    def __init__(self, suite, widths=(), one_line=False, cut=None):
        self.suite = suite
        self.widths = widths  # of the columns between status and detail
        self.one_line = one_line  # newlines in the detail become spaces
        self.cut = cut  # the detail's length at most
        self.counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}

    def report(self, status, *fields):
        columns, detail = fields[:-1], fields[-1]
        if self.one_line:
            detail = detail.replace("\n", " ")
        if self.cut:
            detail = detail[:self.cut]
        self.counts[status] += 1
        cells = ["%-4s" % status] + ["%-*s" % (w, c) for w, c in zip(self.widths, columns)]
        print(" ".join(cells + [detail]), flush=True)

    @property
    def failed(self):
        return self.counts["FAIL"]

    def summary(self):
        """Prints the summary line; the exit status: 1 if anything failed."""
        print("%s: %d passed, %d failed, %d skipped" % (
            self.suite, self.counts["PASS"], self.counts["FAIL"], self.counts["SKIP"]), flush=True)
        return 1 if self.failed else 0

