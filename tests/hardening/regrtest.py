#!/usr/bin/env python3
"""CPython's own regression tests under the preload (issue #8, item 7).

For each interpreter that ships its test package, a chosen set of
`python -m test` modules runs twice, without and with LD_PRELOAD (the
preload reaches every worker and every subprocess the tests start). The
verdict of each module and the outcome of each individual test (ok, FAIL,
ERROR, skipped, expected failure) must be the same. A module whose results
differ is run again both ways once; a difference that does not repeat is
reported as flaky in the note, one that repeats is a FAIL unless it is a
documented, version-specific exception (KNOWN, docs/reliability.md).

usage: regrtest.py [--smoke | --full] [--lib PATH] [--preload-prefix PATHS]
                   [--interpreters FILE] [--interp SUBSTRING] [--jobs N]
--smoke runs the short module set, --full the long one, on every x86-64
CPython 3 of the matrix that has its test package (with a sanitizer runtime
in --preload-prefix, --smoke runs on Debian's python and the newest pyenv
build only).
Prints "PASS|FAIL|SKIP  regrtest/SET  INTERPRETER  detail" lines and
"regrtest: N passed, N failed, N skipped".
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import harden  # noqa: E402  (roles, common arguments)
import harness  # noqa: E402  (interpreters, environment, result lines)

# The areas of issue #8: threading; fork and multiprocessing; generators,
# coroutines, asyncio; sys and audit hooks; subinterpreters; recursion
# limits; tracing and profiling; gc; signals. Modules a version lacks are
# left out for that version.
SMOKE = ["test_generators", "test_coroutines", "test_asyncgen", "test_contextlib",
         "test_sys", "test_audit", "test_sys_settrace", "test_sys_setprofile",
         "test_cprofile", "test_gc", "test_fork1", "test_thread", "test_threading_local",
         "test_exceptions", "test_frame", "test_scope", "test_atexit",
         "test__xxsubinterpreters"]
FULL = SMOKE + ["test_interpreters", "test_threading", "test_signal", "test_subprocess", "test_asyncio.test_tasks",
                "test_asyncio.test_events", "test_multiprocessing_fork", "test_traceback",
                "test_trace", "test_bdb", "test_pdb", "test_profile", "test_faulthandler",
                "test_weakref", "test_descr", "test_import", "test_tracemalloc",
                "test_finalization", "test_capi", "test_embed", "test_concurrent_futures",
                "test_call", "test_class", "test_inspect", "test_dis", "test_opcache",
                "test_monitoring", "test_code", "test_funcattrs", "test_runpy",
                "test_threadsignals", "test_os"]

# Version-specific differences that are understood: (min version, max
# version, test id regex, root cause). A repeated difference matching one
# is reported in the note, not as a failure.
# (On 3.12+ a difference that CPython's own -X perf reproduces is accepted
# without an entry here.)
KNOWN = [
    ((3, 8), (3, 11), r"^test_code$",
     "crash in the final garbage collection: CPython calls every registered co_extra free "
     "function for every slot of a code object's co_extra, set or not; once the library has "
     "tagged every code object, the test's ctypes (Python) free callback runs for all of them "
     "during finalisation (3.12's -X perf, also a co_extra user, crashes the same way)"),
    ((3, 6), (3, 99), r"^test_pass_fds_redirected \(",
     "the library's two output descriptors (perf-PID.map, jit-PID.dump) are open in the test's "
     "child python, which lists its own descriptors and expects exactly the ones passed "
     "(docs/reliability.md, L3)"),
    ((3, 11), (3, 11), r"^test_loop_quicken \(",
     "3.11 does not specialise Python-to-Python calls while a PEP 523 eval-frame function is "
     "installed; the test expects the specialised disassembly (3.12's -X perf: same)"),
]

# Modules that hang on a given release without the library (CPython's own
# bugs): left out of both runs on exactly those releases, and named in the
# note. (first release, last release, module, root cause)
HANGS_WITHOUT_LIBRARY = [
    ((3, 11, 7), (3, 11, 7), "test__xxsubinterpreters",
     "CPython 3.11.7 deadlocks when threads and subinterpreters meet: CreateTests.test_in_thread, "
     "test_in_threaded_subinterpreter and DestroyTests.test_from_other_thread never finish, "
     "with no preload at all (Debian's 3.11.2 passes the module)"),
]

ID_ONLY = re.compile(r"^(\w+) \(([\w.]+)\)\s*$")
WITH_RESULT = re.compile(r"^\s*(?:(\w+) \(([\w.]+)\))?.*? \.\.\. (ok|FAIL|ERROR|skipped|expected "
                         r"failure|unexpected success)\b")


def outcomes(text):
    """{test id: outcome} from unittest's verbose output."""
    found = {}
    pending = None
    for line in text.splitlines():
        m = WITH_RESULT.match(line)
        if m:
            tid = "%s (%s)" % (m.group(1), m.group(2)) if m.group(1) else pending
            if tid:
                # a subTest can report several times: keep the worst
                prev = found.get(tid)
                if prev is None or prev == "ok":
                    found[tid] = m.group(3)
            pending = None
            continue
        m = ID_ONLY.match(line)
        if m:
            pending = "%s (%s)" % (m.group(1), m.group(2))
    return found


def verdicts(text, modules):
    """{module: passed|failed|skipped|...} from regrtest's summary."""
    result = dict((m, "passed") for m in modules)
    section = None
    for line in text.splitlines():
        head = re.match(r"^\d+ tests? (failed|skipped|altered the execution environment|"
                        r"failed again|crashed|omitted|run no tests|did not run)", line) or \
            re.match(r"^(\d+) (re-run tests?)", line)
        if head:
            section = head.group(1)
            continue
        if section and line.startswith("    "):
            for name in line.split():
                # a package's tests are listed as package.module (3.13 test_inspect)
                mod = name if name in result else next(
                    (m for m in result if name.startswith(m + ".")), None)
                if mod:
                    result[mod] = section if section != "altered the execution environment" \
                        else "env changed"
            continue
        if not line.strip():
            continue
        section = None
    return result


class Runner(object):
    def __init__(self, args):
        self.lib = os.path.abspath(args.lib)
        self.prefix = args.preload_prefix.split() if args.preload_prefix else []
        self.jobs = args.jobs
        # per test file; the smoke modules take seconds, so a hang costs
        # minutes, not a quarter of an hour
        self.timeout = 900 if args.full else 300

    def run(self, interp, modules, preload, work, xperf=False):
        out = tempfile.mkdtemp(dir=work)
        before = set(os.listdir("/tmp")) if xperf else set()
        env = harness.clean_env(PYPERFINJECT_DIR=out)
        if xperf:
            # the environment form reaches the pythons the tests start too
            env["PYTHONPERFSUPPORT"] = "1"
        if preload:
            harness.preload(env, self.lib, self.prefix)
        argv = [interp.command] + (["-X", "perf"] if xperf else []) + \
            ["-m", "test", "-v", "--timeout", str(self.timeout)]
        argv += ["-j%d" % self.jobs] if self.jobs > 1 and len(modules) > 1 else []
        start = time.time()
        try:
            p = subprocess.run(argv + modules, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                               env=env, cwd=out, timeout=3600)
            text = p.stdout.decode("utf-8", "replace")
            rc = p.returncode
        except subprocess.TimeoutExpired as e:
            text = (e.stdout or b"").decode("utf-8", "replace")
            rc = "timeout"
        took = time.time() - start
        nfiles = len(os.listdir(out))
        shutil.rmtree(out, ignore_errors=True)
        # CPython's own -X perf maps of this run: new, of a process that has
        # ended, naming the test runner or a module run (never another
        # program's, such as a test_perf_profiler running meanwhile).
        marks = ["/test/libregrtest/"] + ["/test/%s" % m.split(".")[0] for m in modules]
        for name in (set(os.listdir("/tmp")) - before) if xperf else ():
            m = re.match(r"^perf-(\d+)\.map$", name)
            if not m or os.path.exists("/proc/%s" % m.group(1)):
                continue
            path = os.path.join("/tmp", name)
            try:
                with open(path, errors="replace") as f:
                    cpython_map = f.read()
                if any(mark in cpython_map for mark in marks):
                    os.unlink(path)
            except OSError:
                pass
        return {"rc": rc, "text": text, "took": took, "files": nfiles,
                "verdicts": verdicts(text, modules), "tests": outcomes(text)}


def available(interp, candidates):
    code = ("import importlib.util, sys\n"
            "for m in sys.argv[1:]:\n"
            "    try:\n"
            "        ok = importlib.util.find_spec('test.' + m) is not None\n"
            "    except Exception:\n"
            "        ok = False\n"
            "    print(m if ok else '')\n")
    p = subprocess.run([interp.command, "-c", code] + candidates, stdout=subprocess.PIPE,
                       stderr=subprocess.PIPE, universal_newlines=True, timeout=120)
    return [m for m in p.stdout.split() if m]


def left_out(interp, modules):
    """The modules of HANGS_WITHOUT_LIBRARY for this release, with their causes."""
    rel = interp.release
    return [(mod, why) for first, last, mod, why in HANGS_WITHOUT_LIBRARY
            if first <= rel <= last and mod in modules]


def has_test_package(interp):
    p = subprocess.run([interp.command, "-c", "import test.support, test.libregrtest"],
                       stdout=subprocess.PIPE, stderr=subprocess.PIPE, timeout=120)
    return p.returncode == 0


def known(interp, mod, diffs):
    """The documented reason for a repeated difference, or None: a KNOWN
    entry for the module itself, or entries covering every differing test."""
    def reason(name):
        for lo, hi, pattern, why in KNOWN:
            if lo <= interp.version[:2] <= hi and re.search(pattern, name):
                return why
        return None
    whole = reason(mod)
    if whole:
        return whole
    tests = [d for d in diffs if d[0] == "test"]
    reasons = set(reason(d[1]) for d in tests)
    if tests and None not in reasons:
        return "; ".join(sorted(reasons))
    return None


def compare(a, b):
    """Differences between two runs: modules and individual tests."""
    diffs = []
    for m in sorted(set(a["verdicts"]) | set(b["verdicts"])):
        if a["verdicts"].get(m) != b["verdicts"].get(m):
            diffs.append(("module", m, a["verdicts"].get(m), b["verdicts"].get(m)))
    for t in sorted(set(a["tests"]) & set(b["tests"])):
        # (a test found in one output only is a parsing artefact: children
        # of multiprocessing tests print into the verbose output; a test that
        # really did not run shows in the module's verdict)
        x, y = a["tests"].get(t), b["tests"].get(t)
        if x != y:
            diffs.append(("test", t, x, y))
    return diffs


def same_results(a, b, mod):
    """The module's verdict and every test's outcome agree."""
    return not compare(dict(a, verdicts={mod: a["verdicts"].get(mod)}),
                       dict(b, verdicts={mod: b["verdicts"].get(mod)}))


def explained_by(other, plain, pre, mod):
    """Every difference the library makes (plain -> pre) is made the same way
    by `other` (CPython's own perf support); `other` may differ in more."""
    diffs = compare(dict(plain, verdicts={mod: plain["verdicts"].get(mod)}),
                    dict(pre, verdicts={mod: pre["verdicts"].get(mod)}))
    for kind, what, _, with_library in diffs:
        seen = other["verdicts"].get(what) if kind == "module" else other["tests"].get(what)
        if seen != with_library:
            return False
    return True


def describe(ds):
    parts = []
    for kind, what, x, y in ds[:4]:
        name = what if kind == "module" else what.split(" ")[0]
        parts.append("%s %s without, %s with" % (name, x, y))
    return "; ".join(parts) + (" (+%d)" % (len(ds) - 4) if len(ds) > 4 else "")


def module_of(tid, modules):
    m = re.search(r"\(([\w.]+)\)", tid)
    dotted = m.group(1) if m else tid
    for mod in sorted(modules, key=len, reverse=True):
        if ("test." + mod) in dotted or dotted.startswith(mod):
            return mod
    return None


def main():
    parser = harden.common_arguments()
    parser.add_argument("--jobs", type=int, default=2)
    args = parser.parse_args()
    runner = Runner(args)
    tally = harness.Tally("regrtest", widths=(30, 16), one_line=True, cut=600)
    report = tally.report

    interps, pick = harden.roles(harness.discover(args.interpreters))
    if args.preload_prefix and not args.full:
        # Under a sanitizer runtime every module runs several times slower:
        # the two representative interpreters (the plain run covers the rest).
        chosen = [pick[r] for r in ("debian", "newest-pyenv") if r in pick]
    else:
        chosen = interps  # every CPython 3 of the matrix that has its test package
    if args.interp:
        chosen = [i for i in interps if i.label == args.interp] or \
            [i for i in interps if args.interp in i.label]
    set_name = "regrtest/" + ("full" if args.full else "smoke")
    base = tempfile.mkdtemp(prefix="pyperfinject-regrtest-")
    try:
        for interp in chosen:
            try:
                interp.version
            except harness.Skip as e:
                report("SKIP", set_name, interp.label, str(e))
                continue
            if not has_test_package(interp):
                why = ("Debian ships it as libpython%d.%d-testsuite (tests/hardening/run.sh "
                       "installs it as root)" % interp.version if interp.kind == "debian"
                       else "the provisioned sysroot has no testsuite package"
                       if interp.kind.startswith("sid") else "built without it")
                report("SKIP", set_name, interp.label, "no test package: " + why)
                continue
            modules = available(interp, FULL if args.full else SMOKE)
            hangs = left_out(interp, modules)
            modules = [m for m in modules if m not in dict(hangs)]
            if not modules:
                report("SKIP", set_name, interp.label, "no test modules: %s" % (
                    "the provisioned sysroot has only test.support (Debian's testsuite "
                    "package is not unpacked)" if interp.kind.startswith("sid") else
                    "the test package is incomplete"))
                continue
            work = tempfile.mkdtemp(dir=base)
            plain = runner.run(interp, modules, False, work)
            pre = runner.run(interp, modules, True, work)
            diffs = compare(plain, pre)
            notes, hard = [], []
            by_module = {}
            for d in diffs:
                mod = d[1] if d[0] == "module" else module_of(d[1], modules)
                by_module.setdefault(mod or "?", []).append(d)
            # Each module that differs runs again alone, both ways, and on
            # 3.12+ under CPython's own -X perf (also a PEP 523 eval-frame
            # function): a difference -X perf shows too is not the library's.
            for mod, ds in sorted(by_module.items()):
                if mod == "?":
                    hard.extend("%s %s: %s without, %s with" % d for d in ds)
                    continue
                plain2 = runner.run(interp, [mod], False, work)
                pre2 = runner.run(interp, [mod], True, work)
                if same_results(plain2, pre2, mod):
                    notes.append("flaky: %s differed once (%s)" % (mod, describe(ds)))
                    continue
                if interp.version >= (3, 12):
                    xperf = runner.run(interp, [mod], False, work, xperf=True)
                    if explained_by(xperf, plain2, pre2, mod):
                        notes.append("known: %s: %s, the same under CPython's own -X perf (any "
                                     "PEP 523 eval-frame function)" % (mod, describe(ds)))
                        continue
                why = known(interp, mod, compare(plain2, pre2))
                if why:
                    notes.append("known: %s: %s: %s" % (mod, describe(ds), why))
                else:
                    hard.append("%s: %s" % (mod, describe(compare(plain2, pre2))))
            notes += ["left out: %s: %s" % h for h in hangs]
            ran = len(plain["tests"])
            summary = "%d modules, %d tests, %s (%.0fs without, %.0fs with; %d files " \
                      "written by the profiled processes)" % (
                          len(modules), ran, "same results" if not notes else
                          "same results apart from these", plain["took"], pre["took"],
                          pre["files"])
            if ran == 0:
                report("FAIL", set_name, interp.label, "no test results parsed: %s" %
                       plain["text"][-400:])
            elif hard:
                report("FAIL", set_name, interp.label, "; ".join(hard[:8]))
            else:
                report("PASS", set_name, interp.label, summary + ("; " + "; ".join(notes)
                                                                  if notes else ""))
    finally:
        shutil.rmtree(base, ignore_errors=True)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
