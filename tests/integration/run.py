#!/usr/bin/env python3
"""Integration tests: real interpreters, run the way a user runs them.

For every interpreter of the matrix (tests/provision/interpreters.sh) each
scenario runs the interpreter twice, with and without LD_PRELOAD, and checks
what the library wrote and that the program did not notice it. Scenarios
that cannot run report SKIP with the reason; nothing is counted as passed
without having run.

usage: run.py [--lib PATH] [--only SUBSTRING] [--matrix-out FILE]
"""
import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "tests", "integration", "scripts")
MAP_LINE = re.compile(r"^([0-9a-f]+) ([0-9a-f]+) (\S.*)$")
TIMEOUT = 300


class Skip(Exception):
    """The scenario cannot run here; the message says why."""


class Fail(Exception):
    """The scenario ran and something was wrong."""


class NotApplicable(Exception):
    """The scenario has no meaning for this interpreter (not a skip: nothing is missing)."""


class Interp(object):
    def __init__(self, label, command, kind):
        self.label = label
        self.command = command
        self.kind = kind
        self.info = None

    def probe(self):
        """Version, prefix and shared-library facts, from the interpreter itself."""
        if self.info is None:
            code = ("import sys, sysconfig\n"
                    "v = sys.version_info\n"
                    "print('%d.%d' % (v[0], v[1]))\n"
                    "print(sysconfig.get_config_var('LDLIBRARY') or '')\n"
                    "print(sysconfig.get_config_var('LIBDIR') or '')\n"
                    "print(sys.prefix)\n"
                    "print(int(bool(sysconfig.get_config_var('Py_ENABLE_SHARED'))))\n"
                    "print(int(hasattr(sys, 'gettotalrefcount')))\n")
            out = subprocess.run([self.command, "-c", code], stdout=subprocess.PIPE,
                                 stderr=subprocess.PIPE, universal_newlines=True,
                                 timeout=TIMEOUT)
            if out.returncode != 0:
                raise Skip("interpreter does not start: %s" % out.stderr.strip()[-200:])
            lines = out.stdout.splitlines()
            major, minor = (int(x) for x in lines[0].split("."))
            self.info = {
                "version": (major, minor),
                "ldlibrary": lines[1],
                "libdir": lines[2],
                "prefix": lines[3],
                "shared": lines[4] == "1",
                "debug": lines[5] == "1",
            }
        return self.info

    @property
    def version(self):
        return self.probe()["version"]


def discover(listing=None):
    """The matrix: LABEL<TAB>COMMAND<TAB>KIND lines from interpreters.sh (or a file)."""
    if listing:
        with open(listing) as f:
            text = f.read()
    else:
        script = os.path.join(ROOT, "tests", "provision", "interpreters.sh")
        text = subprocess.run(["bash", script], stdout=subprocess.PIPE,
                              universal_newlines=True).stdout
    found = []
    for line in text.splitlines():
        parts = line.split("\t")
        if len(parts) == 3 and parts[0] and not parts[0].startswith("#"):
            found.append(Interp(*parts))
    return found


class Runner(object):
    def __init__(self, lib):
        self.lib = lib

    def run(self, argv, preload, outdir, env=None, cwd=None):
        full = dict(os.environ)
        for key in list(full):
            if key.startswith("PYPERFINJECT") or key in ("LD_PRELOAD", "PYTHONPERFSUPPORT"):
                del full[key]
        full["PYPERFINJECT_DIR"] = outdir
        full.update(env or {})
        if preload:
            full["LD_PRELOAD"] = self.lib
        try:
            return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=full, cwd=cwd or outdir, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Fail("timed out after %ds: %s" % (TIMEOUT, " ".join(argv)))


def read_map(path):
    """Parses a perf map; fails on any malformed line."""
    entries = []
    with open(path, "rb") as f:
        data = f.read()
    if data and not data.endswith(b"\n"):
        raise Fail("%s does not end with a newline" % path)
    for raw in data.splitlines():
        try:
            line = raw.decode("utf-8")
        except UnicodeDecodeError:
            raise Fail("map line is not UTF-8: %r" % raw[:120])
        m = MAP_LINE.match(line)
        if not m or line.startswith("0x") or " 0x" in line[:40]:
            raise Fail("malformed map line: %r" % line[:120])
        if any(ord(c) < 0x20 or ord(c) == 0x7f for c in line):
            raise Fail("control character in map line: %r" % line[:120])
        entries.append((int(m.group(1), 16), int(m.group(2), 16), m.group(3)))
    return entries


def check_no_overlap(entries, what):
    spans = sorted((start, start + size, name) for start, size, name in entries)
    for a, b in zip(spans, spans[1:]):
        if b[0] < a[1]:
            raise Fail("%s: overlapping entries %r and %r" % (what, a[2][:60], b[2][:60]))


def maps_of(pid_files, outdir):
    return sorted(f for f in os.listdir(outdir) if f.startswith("perf-") and f.endswith(".map"))


def only_map(outdir):
    maps = maps_of(None, outdir)
    if len(maps) != 1:
        raise Fail("expected one perf map in %s, found %s" % (outdir, maps))
    return os.path.join(outdir, maps[0]), int(maps[0][5:-4])


def executable_ranges(maps_text):
    ranges = []
    for line in maps_text.splitlines():
        fields = line.split()
        if len(fields) >= 2 and "x" in fields[1]:
            lo, hi = fields[0].split("-")
            ranges.append((int(lo, 16), int(hi, 16)))
    return ranges


def names_in(entries):
    return set(name for _, _, name in entries)


def same_behaviour(plain, pre, what):
    if plain.returncode != pre.returncode:
        raise Fail("%s: exit status %d with the library, %d without" %
                   (what, pre.returncode, plain.returncode))
    if plain.stdout != pre.stdout:
        raise Fail("%s: stdout differs: %r vs %r" % (what, pre.stdout[-200:], plain.stdout[-200:]))
    if plain.stderr != pre.stderr:
        raise Fail("%s: stderr differs: %r vs %r" % (what, pre.stderr[-300:], plain.stderr[-300:]))


# --- scenarios -------------------------------------------------------------
# Each takes (runner, interp, workdir) and raises Skip/Fail or returns a note.

def needs_python3(interp):
    if interp.version[0] != 3:
        raise NotApplicable()


def scenario_names(runner, interp, work):
    """foo->bar->baz names with absolute paths, in executable memory; output unchanged."""
    needs_python3(interp)
    script = os.path.join(SCRIPTS, "foo_bar_baz.py")
    results = []
    for preload in (False, True):
        out = os.path.join(work, "pre" if preload else "plain")
        os.mkdir(out)
        env = {"PYPERFINJECT_TEST_MAPS": os.path.join(work, "maps-%d.txt" % preload),
               "PYPERFINJECT_TEST_EXIT": "3"}
        results.append(runner.run([interp.command, script, "20000"], preload, out, env))
    plain, pre = results
    same_behaviour(plain, pre, "foo_bar_baz.py")
    if maps_of(None, os.path.join(work, "plain")):
        raise Fail("a map appeared without the library")
    path, _ = only_map(os.path.join(work, "pre"))
    entries = read_map(path)
    check_no_overlap(entries, "map")
    names = names_in(entries)
    for fn in ("foo", "bar", "baz", "<module>"):
        want = "py::%s:%s" % (fn, script)
        if want not in names:
            raise Fail("%s missing from the map (%d entries)" % (want, len(entries)))
    with open(os.path.join(work, "maps-1.txt")) as f:
        ranges = executable_ranges(f.read())
    for start, size, name in entries:
        if not any(lo <= start and start + size <= hi for lo, hi in ranges):
            raise Fail("%s at %x is not inside an executable mapping" % (name, start))
    return "%d entries" % len(entries)


def scenario_inert(runner, interp, work):
    """Python 2: no files, no output, nothing changed."""
    if interp.version[0] != 2:
        raise NotApplicable()
    script = os.path.join(SCRIPTS, "foo_bar_baz.py")
    env = {"PYPERFINJECT_VERBOSE": "3"}
    plain = runner.run([interp.command, script, "1000"], False, work, env)
    pre = runner.run([interp.command, script, "1000"], True, work, env)
    same_behaviour(plain, pre, "python2")
    if os.listdir(work):
        raise Fail("files were written: %s" % os.listdir(work))


def scenario_threads(runner, interp, work):
    """8 threads creating 50 functions each: every name, well-formed, no overlap."""
    needs_python3(interp)
    out = runner.run([interp.command, os.path.join(SCRIPTS, "threads.py"), "8", "50"], True, work)
    if out.returncode != 0 or out.stdout.strip() != b"threads done":
        raise Fail("threads.py failed: %r" % out.stderr[-300:])
    path, _ = only_map(work)
    entries = read_map(path)
    check_no_overlap(entries, "map")
    names = names_in(entries)
    missing = [(t, i) for t in range(8) for i in range(50)
               if "py::thr%d_fn%d:<threads>" % (t, i) not in names]
    if missing:
        raise Fail("%d of 400 thread functions missing, e.g. thr%d_fn%d" %
                   ((len(missing),) + missing[0]))
    return "%d entries" % len(entries)


def scenario_fork(runner, interp, work):
    """Children forked from the main and another thread get complete maps of their own."""
    needs_python3(interp)
    script = os.path.join(SCRIPTS, "fork.py")
    out = runner.run([interp.command, script], True, work)
    if out.returncode != 0:
        raise Fail("fork.py exited %d: %r" % (out.returncode, out.stderr[-300:]))
    pids = out.stdout.split()[1:3]
    maps = {}
    for name in maps_of(None, work):
        maps[int(name[5:-4])] = read_map(os.path.join(work, name))
    if len(maps) != 3:
        raise Fail("expected 3 maps (parent, 2 children), found %d" % len(maps))
    for pid, fn in zip(pids, ("child_main_thread", "child_other_thread")):
        entries = maps.get(int(pid))
        if entries is None:
            raise Fail("child %s wrote no map" % pid.decode())
        check_no_overlap(entries, "child map")
        names = names_in(entries)
        for want in ("py::%s:%s" % (fn, script), "py::parent_func:%s" % script,
                     "py::<module>:%s" % script):
            if want not in names:
                raise Fail("child %s map lacks %s" % (pid.decode(), want))
    parent = [e for pid, e in maps.items() if str(pid).encode() not in pids][0]
    if any("child_" in name for name in names_in(parent)):
        raise Fail("the parent's map names a child-only function")


def scenario_subinterp(runner, interp, work):
    """A function run in a subinterpreter is named."""
    needs_python3(interp)
    if interp.version < (3, 8):
        raise Skip("3.6/3.7 have no audit hooks; subinterpreters are not hooked (docs/support.md)")
    out = runner.run([interp.command, os.path.join(SCRIPTS, "subinterp.py")], True, work)
    if out.returncode != 0:
        raise Fail("subinterp.py exited %d: %r" % (out.returncode, out.stderr[-300:]))
    if b"no subinterpreter API" in out.stdout:
        raise Skip("this build has no subinterpreter module (_interpreters, "
                   "_xxsubinterpreters or _testcapi)")
    path, _ = only_map(work)
    if "py::in_subinterp:<string>" not in names_in(read_map(path)):
        raise Fail("py::in_subinterp missing (%s)" % out.stdout.strip().decode())
    return out.stdout.strip().decode()


def scenario_dlopen_host(runner, interp, work):
    """A host dlopens libpython (RTLD_LOCAL), runs, finalises and re-initialises it."""
    needs_python3(interp)
    info = interp.probe()
    lib = os.path.join(info["libdir"], info["ldlibrary"])
    if not info["shared"] or not os.path.exists(lib):
        raise NotApplicable()  # statically linked: there is no libpython to dlopen
    if interp.kind not in ("pyenv",):
        raise Skip("host test runs only for interpreters on this machine's own loader")
    host = os.path.join(work, "dlopen_host")
    cc = subprocess.run(["cc", "-o", host, os.path.join(ROOT, "tests", "integration",
                                                         "dlopen_host.c"), "-ldl"])
    if cc.returncode != 0:
        raise Fail("cannot build dlopen_host")
    code1 = "def hosted_first():\n    return 1\nhosted_first()\n"
    code2 = "def hosted_second():\n    return 2\nhosted_second()\n"
    env = {"PYTHONHOME": info["prefix"]}
    plain = runner.run([host, lib, code1, code2], False, work, env)
    pre = runner.run([host, lib, code1, code2], True, work, env)
    same_behaviour(plain, pre, "dlopen_host")
    path, _ = only_map(work)
    names = names_in(read_map(path))
    if "py::hosted_first:<string>" not in names:
        raise Fail("function run after dlopen is not named")
    if interp.version < (3, 8):
        return "re-initialisation not covered on 3.6/3.7 (no audit hooks)"
    if "py::hosted_second:<string>" not in names:
        raise Fail("function run after Py_Finalize + Py_Initialize is not named")


def scenario_hostile_names(runner, interp, work):
    """Newlines, control characters, surrogates and 5000-byte names give valid lines."""
    needs_python3(interp)
    script = os.path.join(SCRIPTS, "names.py")
    plain = runner.run([interp.command, script], False, work)
    pre = runner.run([interp.command, script], True, work)
    same_behaviour(plain, pre, "names.py")
    path, _ = only_map(work)
    entries = read_map(path)
    names = names_in(entries)
    for fn in ("newline_in_file", "control_in_file", "huge_file", "surrogate_file",
               "unicode_file"):
        if not any(n.startswith("py::%s:" % fn) for n in names):
            raise Fail("py::%s missing" % fn)
    longest = max(len(n.encode()) for n in names)
    if longest > 1000:
        raise Fail("a name of %d bytes was written (limit 1000)" % longest)
    if "py::unicode_file:/tmp/caf\u00e9-\u6f22.py" not in names:
        raise Fail("UTF-8 file name not preserved")


def scenario_bad_env(runner, interp, work):
    """A bad variable: one 'pyperfinject:' line, no files, program unchanged."""
    needs_python3(interp)
    script = os.path.join(SCRIPTS, "foo_bar_baz.py")
    plain = runner.run([interp.command, script, "100"], False, work)
    pre = runner.run([interp.command, script, "100"], True, work,
                     {"PYPERFINJECT_VERBOSE": "banana"})
    if pre.stdout != plain.stdout or pre.returncode != plain.returncode:
        raise Fail("program output or status changed")
    extra = pre.stderr[:len(pre.stderr) - len(plain.stderr)]
    lines = extra.splitlines()
    if not pre.stderr.endswith(plain.stderr) or len(lines) != 1 or \
            not lines[0].startswith(b"pyperfinject: ") or b"PYPERFINJECT_VERBOSE" not in lines[0]:
        raise Fail("expected one pyperfinject: line naming the variable, got %r" % extra)
    if os.listdir(work):
        raise Fail("files written despite the bad value: %s" % os.listdir(work))


def scenario_unwritable_dir(runner, interp, work):
    """An output directory that does not exist: one warning, program unchanged."""
    needs_python3(interp)
    script = os.path.join(SCRIPTS, "foo_bar_baz.py")
    env = {"PYPERFINJECT_DIR": os.path.join(work, "does-not-exist")}
    plain = runner.run([interp.command, script, "100"], False, work, env)
    pre = runner.run([interp.command, script, "100"], True, work, env)
    extra = pre.stderr[:len(pre.stderr) - len(plain.stderr)]
    if pre.stdout != plain.stdout or pre.returncode != plain.returncode or \
            len(extra.splitlines()) != 1 or not extra.startswith(b"pyperfinject: "):
        raise Fail("expected unchanged output and one warning, got %r" % extra)


SCENARIOS = [
    ("names", scenario_names),
    ("inert", scenario_inert),
    ("threads", scenario_threads),
    ("fork", scenario_fork),
    ("subinterpreter", scenario_subinterp),
    ("dlopen-host", scenario_dlopen_host),
    ("hostile-names", scenario_hostile_names),
    ("bad-env", scenario_bad_env),
    ("unwritable-dir", scenario_unwritable_dir),
]

# Programs that must not notice the library at all.
NON_PYTHON = [
    ["sh", "-c", "echo hello; exit 3"],
    ["make", "--version"],
    ["gcc", "--version"],
    ["git", "--version"],
    ["perl", "-e", "print qq(perl\\n)"],
    ["perf", "--version"],
    ["ls", "/"],
]


def run_non_python(runner, work):
    results = []
    for argv in NON_PYTHON:
        name = "non-python %s" % argv[0]
        if shutil.which(argv[0]) is None:
            results.append(("SKIP", name, "%s is not installed" % argv[0]))
            continue
        out = os.path.join(work, argv[0])
        os.mkdir(out)
        env = {"PYPERFINJECT_VERBOSE": "garbage"}  # must not even be read
        plain = runner.run(argv, False, out, env)
        pre = runner.run(argv, True, out, env)
        try:
            same_behaviour(plain, pre, name)
            if os.listdir(out):
                raise Fail("files written: %s" % os.listdir(out))
            results.append(("PASS", name, ""))
        except Fail as e:
            results.append(("FAIL", name, str(e)))
    return results


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", default=os.path.join(ROOT, "build", "libpyperfinject.so"))
    parser.add_argument("--only", default="")
    parser.add_argument("--interpreters", help="file of LABEL<TAB>COMMAND<TAB>KIND lines")
    parser.add_argument("--matrix-out", default=os.path.join(ROOT, "build", "support-matrix.md"))
    args = parser.parse_args()
    runner = Runner(os.path.abspath(args.lib))
    if not os.path.exists(runner.lib):
        print("integration: %s not built" % runner.lib)
        return 1

    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}
    matrix = []

    def report(status, label, scenario, detail):
        counts[status] += 1
        print("%-4s %-24s %-16s %s" % (status, label, scenario, detail), flush=True)

    base = tempfile.mkdtemp(prefix="pyperfinject-it-")
    try:
        interps = discover(args.interpreters)
        if not interps:
            report("SKIP", "-", "matrix", "no interpreter found (tests/provision/interpreters.sh)")
        for interp in interps:
            if args.only and args.only not in interp.label:
                continue
            row = {}
            for name, fn in SCENARIOS:
                work = tempfile.mkdtemp(prefix=name + "-", dir=base)
                try:
                    note = fn(runner, interp, work) or ""
                    status = "PASS"
                except NotApplicable:
                    row[name] = "n/a"
                    continue
                except Skip as e:
                    status, note = "SKIP", str(e)
                except Fail as e:
                    status, note = "FAIL", str(e)
                except Exception as e:  # a broken test is a failure, not a pass
                    status, note = "FAIL", "%s: %s" % (type(e).__name__, e)
                report(status, interp.label, name, note)
                row[name] = status
            version = "?"
            try:
                version = "%d.%d" % interp.version
            except Skip:
                pass
            matrix.append((interp.label, interp.kind, version, row))
        if not args.only:
            for status, name, detail in run_non_python(runner, tempfile.mkdtemp(dir=base)):
                report(status, "-", name, detail)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    if args.matrix_out and matrix:
        os.makedirs(os.path.dirname(args.matrix_out), exist_ok=True)
        with open(args.matrix_out, "w") as f:
            names = [n for n, _ in SCENARIOS]
            f.write("| interpreter | kind | version | %s |\n" % " | ".join(names))
            f.write("|---|---|---|%s\n" % ("---|" * len(names)))
            for label, kind, version, row in matrix:
                f.write("| %s | %s | %s | %s |\n" % (
                    label, kind, version, " | ".join(row.get(n, "-") for n in names)))
    print("integration: %d passed, %d failed, %d skipped" %
          (counts["PASS"], counts["FAIL"], counts["SKIP"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
