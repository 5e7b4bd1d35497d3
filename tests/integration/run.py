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
import contextlib
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
SCRIPTS = os.path.join(ROOT, "tests", "integration", "scripts")
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import harness  # noqa: E402  (shared with tests/hardening, bench)
import debuggers  # noqa: E402  (gdb, gcore, lldb)
import perfmap  # noqa: E402
import perftool  # noqa: E402
from harness import Fail, NotApplicable, Skip  # noqa: E402
TIMEOUT = 300


class Runner(object):
    def __init__(self, lib):
        self.host_lib = self.lib = lib
        self.guest = False

    def serve(self, interp, aarch64_lib):
        """Points the runner at the library build for this interpreter's architecture."""
        self.guest = interp.emulated
        self.lib = aarch64_lib if self.guest else self.host_lib

    def run(self, argv, preload, outdir, env=None, cwd=None):
        # PYTHON* from the caller stays (only PYTHONPERFSUPPORT goes).
        full = harness.clean_env(keep_python=True, PYPERFINJECT_DIR=outdir)
        full.update(env or {})
        if preload and self.guest:
            # The wrapper hands it to the emulated python only (not to qemu);
            # the host's sanitizer runtime has no place in an arm64 guest.
            harness.preload(full, self.lib, prefix=[], through_wrapper=True)
        elif preload:
            harness.preload(full, self.lib)
        try:
            return subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                  env=full, cwd=cwd or outdir, timeout=TIMEOUT)
        except subprocess.TimeoutExpired:
            raise Fail("timed out after %ds: %s" % (TIMEOUT, " ".join(argv)))


def read_map(path):
    """A perf map's entries, strictly parsed (tests/tools/perfmap.py). The
    newlines the library allocated ahead may end it (a process that left
    with os._exit, as forked children do, was never trimmed), but no line
    may be unfinished."""
    entries, tail = perfmap.read(path, allow_partial_tail=True, error=Fail)
    if tail:
        raise Fail("%s ends with an unfinished line: %r" % (os.path.basename(path), tail[-80:]))
    return entries


def check_no_overlap(entries, what):
    """Trampolines never overlap anything. CPython's JIT code (py::jit:) may
    come where other JIT code was: a later line may then cover earlier ones,
    but only under a name that lists every function they named."""
    perfmap.require_no_overlap([e for e in entries if not e[2].startswith("py::jit:")], what, Fail)
    jit = [e for e in entries if e[2].startswith("py::jit:")]
    tramps = sorted((start, start + size) for start, size, name in entries
                    if not name.startswith("py::jit:"))
    for start, size, name in jit:
        for t0, t1 in tramps:
            if t0 < start + size and start < t1:
                raise Fail("%s: JIT line %r overlaps a trampoline" % (what, name[:60]))
    for i, (a_start, a_size, a_name) in enumerate(jit):
        for b_start, b_size, b_name in jit[i + 1:]:
            if a_start < b_start + b_size and b_start < a_start + a_size and \
                    not jit_names_cover(b_name, a_name):
                raise Fail("%s: JIT line %r overlaps %r without naming it"
                           % (what, b_name[:60], a_name[:60]))


def jit_names_cover(later, earlier):
    """Whether a JIT map name lists every function an earlier one lists (or
    was cut off with "|...")."""
    def parts(name):
        return name[len("py::jit:"):].split("|")
    later_parts = parts(later)
    return later_parts[-1] == "..." or all(p in later_parts for p in parts(earlier))


def maps_of(pid_files, outdir):
    return sorted(f for f in os.listdir(outdir) if f.startswith("perf-") and f.endswith(".map"))


def only_map(outdir):
    maps = maps_of(None, outdir)
    if len(maps) != 1:
        raise Fail("expected one perf map in %s, found %s" % (outdir, maps))
    return os.path.join(outdir, maps[0]), int(maps[0][5:-4])


def executable_ranges(maps_text, emulated=False):
    """Mappings that may hold trampolines: executable ones. qemu-user reports
    guest execute permission unreliably; there, readable and not writable."""
    ranges = []
    for line in maps_text.splitlines():
        fields = line.split()
        if len(fields) < 2:
            continue
        perms = fields[1]
        if ("x" in perms) if not emulated else (perms[0] == "r" and perms[1] == "-"):
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
    with open(path, "rb") as f:
        if f.read().endswith(b"\n\n"):  # the process exited normally
            raise Fail("the newlines allocated ahead were not cut off from the map")
    check_no_overlap(entries, "map")
    names = names_in(entries)
    for fn in ("foo", "bar", "baz", "<module>"):
        want = "py::%s:%s" % (fn, script)
        if want not in names:
            raise Fail("%s missing from the map (%d entries)" % (want, len(entries)))
    dumps = [f for f in os.listdir(os.path.join(work, "pre")) if f.startswith("jit-")]
    if len(dumps) != 1:
        raise Fail("expected one jit dump, found %s" % dumps)
    check_jitdump(os.path.join(work, "pre", dumps[0]),
                  ["py::%s:%s" % (fn, script) for fn in ("foo", "bar", "baz", "<module>")],
                  trimmed=True)
    with open(os.path.join(work, "maps-1.txt")) as f:
        ranges = executable_ranges(f.read(), interp.emulated)
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


FORK_OWN = {"short-main": "child_main_thread", "short-thread": "child_other_thread",
            "settled": "child_settled", "normal-exit": "child_normal_exit",
            "nest": "child_nest"}


def arenas_at_fork(snapshot, parent_entries, emulated):
    """The executable mappings of the parent's /proc/self/maps snapshot that
    hold its trampolines: its arenas at that fork."""
    with open(snapshot) as f:
        ranges = executable_ranges(f.read(), emulated)
    return [(lo, hi) for lo, hi in ranges
            if any(lo <= start < hi for start, _, _ in parent_entries)]


def scenario_fork(runner, interp, work):
    """Forked children: files at first need, own functions from a fresh arena; the
    parent's map lines only in children that keep running; no files without a new function."""
    needs_python3(interp)
    script = os.path.join(SCRIPTS, "fork.py")
    snap, outdir = os.path.join(work, "snap"), os.path.join(work, "out")
    os.mkdir(snap)
    os.mkdir(outdir)
    out = runner.run([interp.command, script, snap], True, outdir)
    if out.returncode != 0 or b"fork done 0" not in out.stdout:
        raise Fail("fork.py exited %d: %r %r" % (out.returncode, out.stdout[-200:],
                                                 out.stderr[-300:]))
    children = dict((k.decode(), (int(p), float(t))) for k, p, t in
                    re.findall(rb"^child (\S+) (\d+) ([0-9.]+)$", out.stdout, re.M))
    if sorted(children) != sorted(FORK_OWN):
        raise Fail("children reported %s" % sorted(children))
    maps = dict((int(name[5:-4]), read_map(os.path.join(outdir, name)))
                for name in maps_of(None, outdir))
    grand = re.findall(rb"^grandchild (\d+)$", out.stdout, re.M)
    pids = set(p for p, _ in children.values()) | set(int(g) for g in grand)
    parents = [p for p in maps if p not in pids]
    if len(maps) != 7 or len(parents) != 1 or len(grand) != 1:
        raise Fail("expected 7 maps (parent, 5 children, a grandchild), found %d" % len(maps))
    parent = maps[parents[0]]
    if any("child_" in name for name in names_in(parent)):
        raise Fail("the parent's map names a child-only function")
    inherited_names = ["py::parent_func:%s" % script, "py::<module>:%s" % script]
    notes = []
    for kind, (pid, took) in sorted(children.items()):
        entries = maps[pid]
        check_no_overlap(entries, "%s child map" % kind)
        own_name = "py::%s:%s" % (FORK_OWN[kind], script)
        loads = check_jitdump(os.path.join(outdir, "jit-%d.dump" % pid), [own_name],
                              pid=str(pid), listing=True)
        # The dump: the child's own trampolines only, all in arenas it mapped
        # after the fork, all in its map too.
        arenas = arenas_at_fork(os.path.join(snap, "maps-%s.txt" % kind), parent,
                                interp.emulated)
        if not arenas:
            raise Fail("%s: no parent arena found in the snapshot" % kind)
        own = set((addr, size, name) for addr, size, name in loads)
        for addr, size, name in own:
            if name in inherited_names:
                raise Fail("%s: the child's dump holds the inherited %s" % (kind, name))
            if any(lo <= addr < hi for lo, hi in arenas):
                raise Fail("%s: %s at %x lies in an arena the parent had at the fork" %
                           (kind, name, addr))
        if not own <= set(entries):
            raise Fail("%s: the dump names what the map does not: %s" %
                       (kind, sorted(own - set(entries))[:2]))
        # The map: the same, plus possibly the parent's lines up to the fork,
        # as one block.
        inherited = [e for e in entries if e not in own]
        if inherited and inherited != parent[:len(inherited)]:
            raise Fail("%s: the map holds lines that are neither its own nor the parent's "
                       "first %d" % (kind, len(inherited)))
        names = names_in(inherited)
        if kind in ("settled", "normal-exit"):
            missing = [n for n in inherited_names if n not in names]
            if missing:
                raise Fail("%s: the map lacks the inherited %s" % (kind, missing[0]))
        elif inherited and took < 0.1:
            raise Fail("%s: %.3fs old, it copied the parent's %d lines" %
                       (kind, took, len(inherited)))
        elif inherited:
            notes.append("%s slow (%.2fs): copied" % (kind, took))
    # The grandchild, forked before its parent copied anything, ran 150 ms:
    # the grandparent's lines and its parent's own, its dump its own only.
    gpid = int(grand[0])
    gnames = names_in(maps[gpid])
    own = "py::grand_func:%s" % script
    for want in inherited_names + ["py::child_nest:%s" % script, own]:
        if want not in gnames:
            raise Fail("grandchild: the map lacks %s" % want)
    loads = check_jitdump(os.path.join(outdir, "jit-%d.dump" % gpid), [own], pid=str(gpid),
                          listing=True)
    if set(l[2] for l in loads) & set(inherited_names + ["py::child_nest:%s" % script]):
        raise Fail("grandchild: the dump holds inherited records")
    # A child that makes no trampoline, and a subprocess: no files at all.
    bare_dir = os.path.join(work, "bare")
    os.mkdir(bare_dir)
    bare = runner.run([interp.command, "-S", os.path.join(SCRIPTS, "fork_bare.py")], True,
                      bare_dir)
    got = re.findall(rb"^bare (\d+) (\d+)$", bare.stdout, re.M)
    if bare.returncode != 0 or not got:
        raise Fail("fork_bare.py exited %d: %r" % (bare.returncode, bare.stderr[-300:]))
    left = [f for f in os.listdir(bare_dir)
            if any(f.endswith("-%s.map" % p.decode()) or f.endswith("-%s.dump" % p.decode())
                   for p in got[0])]
    if left or len(os.listdir(bare_dir)) != 2:
        raise Fail("files of children without new functions: %s" % sorted(os.listdir(bare_dir)))
    return "; ".join(["5 children and a grandchild, 3 inherited"] + notes)


FORK_PERF_SECONDS = "0.15"


def fork_perf_counts(text, pid):
    """Samples of pid by innermost Python function name (qualname only)."""
    counts = {}
    for header, frames in perf_samples(text):
        if header.split()[0] != str(pid):
            continue
        py = [f.replace("py::jit:", "py::", 1) for f in frames if f.startswith("py::")]
        key = py[0].split(":")[2] if py else None  # CPython's JIT code counts as its function
        counts[key] = counts.get(key, 0) + 1
    return counts


def skip_unfollowed_jit(interp):
    """In the JIT pass (PYTHON_JIT=1) of a CPython whose JIT code nothing
    describes, perf's samples in it name nothing and lead nowhere."""
    if os.environ.get("PYTHON_JIT") == "1" and tuple(interp.version) < (3, 15):
        raise Skip("CPython %d.%d's JIT code has no names and no unwind rules for anyone to "
                   "follow (docs/jit.md); samples in it stop there" % tuple(interp.version))


def scenario_fork_perf(runner, interp, work):
    """perf names a forked child's samples in an inherited function and in one
    new to the child: through the maps, and through perf inject --jit."""
    needs_python3(interp)
    if interp.emulated:
        raise NotApplicable()
    skip_unfollowed_jit(interp)
    why = perftool.why_unusable()
    if why:
        raise Skip(why)
    script = os.path.join(SCRIPTS, "fork_perf.py")
    argv = ["perf", "record", "-q", "-e", "cpu-clock", "-F", "999", "-k", "1",
            "--call-graph", "dwarf,8192", "-o", os.path.join(work, "perf.data"), "--",
            "env", "PYPERFINJECT_DIR=" + work, "LD_PRELOAD=" + harness.ld_preload(runner.lib),
            interp.command, script, FORK_PERF_SECONDS]
    out = runner.run(argv, False, work)
    got = re.findall(rb"^child (\d+)$", out.stdout, re.M)
    if out.returncode != 0 or not got:
        raise Fail("perf record failed (%d): %r" % (out.returncode, out.stderr[-300:]))
    child = int(got[0])
    notes = []

    def require(counts, how):
        hot, new = counts.get("inherited_hot", 0), counts.get("child_new", 0)
        if hot < 20 or new < 20:
            raise Fail("%s: the child's samples name inherited_hot %d, child_new %d times "
                       "(of %d)" % (how, hot, new, sum(counts.values())))
        notes.append("%s %d/%d" % (how, hot, new))

    # Map mode: perf reads /tmp/perf-PID.map only, at report time.
    placed = []
    try:
        for name in maps_of(None, work):
            shutil.copyfile(os.path.join(work, name), os.path.join("/tmp", name))
            placed.append(os.path.join("/tmp", name))
        text = runner.run(["perf", "script", "-i", "perf.data", "-F", "pid,ip,sym",
                           "--no-inline"], False, work).stdout.decode(errors="replace")
    finally:
        for path in placed:
            os.unlink(path)
    require(fork_perf_counts(text, child), "map")
    inject = runner.run(["perf", "inject", "-i", "perf.data", "--jit", "-o", "perf.jit.data"],
                        False, work)
    if inject.returncode != 0:
        raise Fail("perf inject failed: %r" % inject.stderr[-300:])
    text = runner.run(["perf", "script", "-i", "perf.jit.data", "-F", "pid,ip,sym",
                       "--no-inline"], False, work).stdout.decode(errors="replace")
    require(fork_perf_counts(text, child), "jitdump")
    return "child samples inherited_hot/child_new: " + ", ".join(notes)


def check_jitdump(path, expected, pid=None, allow_truncated=False, listing=False, trimmed=False):
    """Runs the format checker (tests/tools) on a dump; fails with its findings.
    listing: returns its loads as (address, size, name). trimmed: the process
    exited normally, so the zeros after the records must have been cut off."""
    tool = os.path.join(ROOT, "build", "jitdump-check")
    if not os.path.exists(tool):
        raise Fail("build/jitdump-check is not built")
    argv = [tool] + (["--allow-truncated"] if allow_truncated else [])
    argv += ["--trimmed"] if trimmed else []
    argv += ["--list"] if listing else []
    argv += ["--pid", pid] if pid else []
    for name in expected:
        argv += ["--expect", name.replace("[", "[[]").replace("*", "[*]").replace("?", "[?]")]
    out = subprocess.run(argv + [path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         universal_newlines=True)
    if out.returncode != 0:
        raise Fail("jitdump-check %s: %s" % (os.path.basename(path), out.stdout.strip()[-400:]))
    loads = []
    for line in out.stdout.splitlines():
        parts = line.split(" ", 4)
        if len(parts) == 5 and parts[0] == "load":
            loads.append((int(parts[2], 16), int(parts[3]), parts[4]))
    return loads


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
    if not any(n.startswith("py::in_subinterp:<") for n in names_in(read_map(path))):
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
        raise NotApplicable()  # the host program runs on this machine's own loader and libc
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


def perf_samples(text):
    """perf script output -> list of frame-symbol lists, innermost first."""
    samples = []
    for block in text.split("\n\n"):
        lines = block.strip("\n").splitlines()
        if not lines:
            continue
        frames = []
        for line in lines[1:]:
            parts = line.strip().split(None, 1)
            if len(parts) == 2:
                frames.append(parts[1])
        samples.append((lines[0], frames))
    return samples


def python_chain_ratio(samples, script):
    """Among samples whose innermost Python frame is foo, the share that show
    foo -> bar -> baz -> <module> in order. CPython's JIT code of a function
    (py::jit:...) runs inside that function's own frame: it is not a call."""
    want = ["py::%s:%s" % (fn, script) for fn in ("foo", "bar", "baz", "<module>")]
    with_foo = full = 0
    for _, frames in samples:
        py = [f.split("+0x")[0].rsplit(" (", 1)[0] for f in frames
              if f.startswith("py::") and not f.startswith("py::jit:")]
        if not py or py[0] != want[0]:
            continue
        with_foo += 1
        if py[:4] == want:
            full += 1
    return with_foo, full


def require_full_chains(runner, work, data, script):
    """perf script over `data`: at least 90% of the samples whose innermost Python
    frame is foo must show foo -> bar -> baz -> <module>."""
    text = runner.run(["perf", "script", "-i", data, "-F", "comm,tid,ip,sym", "--no-inline"],
                      False, work).stdout.decode(errors="replace")
    with_foo, full = python_chain_ratio(perf_samples(text), script)
    if with_foo < 20:
        raise Fail("only %d samples have py::foo innermost" % with_foo)
    pct = 100.0 * full / with_foo
    if pct < 90:
        raise Fail("%.1f%% of %d py::foo samples show the full chain (need 90%%)" % (pct, with_foo))
    return "%.1f%% of %d foo samples" % (pct, with_foo)


def record_workload(runner, interp, work, perf_args, env, seconds="2"):
    script = os.path.join(SCRIPTS, "perf_workload.py")
    argv = ["perf", "record", "-q", "-e", "cpu-clock", "-o", os.path.join(work, "perf.data")]
    argv += perf_args + ["--", "env"] + ["%s=%s" % kv for kv in sorted(env.items())]
    argv += ["LD_PRELOAD=" + harness.ld_preload(runner.lib), interp.command, script, seconds]
    out = runner.run(argv, False, work)
    if out.returncode != 0 or b"ok" not in out.stdout:
        raise Fail("perf record failed (%d): %r" % (out.returncode, out.stderr[-300:]))
    return script


def scenario_perf_dwarf(runner, interp, work):
    """perf --call-graph dwarf + perf inject --jit: >= 90% of foo samples show the whole chain."""
    needs_python3(interp)
    if interp.emulated:
        raise NotApplicable()  # perf sees qemu's translated code, not the guest's
    skip_unfollowed_jit(interp)
    why = perftool.why_unusable()
    if why:
        raise Skip(why)
    script = record_workload(runner, interp, work,
                             ["-F", "299", "-k", "1", "--call-graph", "dwarf,65528"],
                             {"PYPERFINJECT_DIR": work})
    inject = runner.run(["perf", "inject", "-i", "perf.data", "--jit", "-o", "perf.jit.data"],
                        False, work)
    if inject.returncode != 0:
        raise Fail("perf inject failed: %r" % inject.stderr[-300:])
    result = require_full_chains(runner, work, "perf.jit.data", script)
    # Source lines: the trampoline of foo maps to the line of `def foo`.
    # SIGPIPE ignored: perf 6.1 runs addr2line on "//anon" for a chain that
    # ends in an anonymous mapping; addr2line exits, and perf, writing to it,
    # would die of SIGPIPE with its output cut (docs/reliability.md, 5).
    want = "perf_workload.py:7"
    lines = runner.run(["sh", "-c", "trap '' PIPE; exec perf script -i perf.jit.data "
                        "-F ip,sym,srcline"], False, work).stdout.decode(errors="replace")
    after_foo = re.findall(r"py::foo:\S+\n\s+(\S+)", lines)
    if not any(s.endswith(want) for s in after_foo):
        raise Fail("srcline for py::foo is not %s: %r" % (want, sorted(set(after_foo))[:3]))
    return result + ", srcline " + want


def jit_available(runner, interp, work):
    """Whether this build has CPython's JIT to switch on (sys._jit, 3.14+)."""
    code = "import sys; j = getattr(sys, '_jit', None); print(bool(j and j.is_available()))"
    out = runner.run([interp.command, "-c", code], False, work, env={"PYTHON_JIT": "1"})
    return out.returncode == 0 and out.stdout.strip() == b"True"


def anonymous_leaf_share(runner, work, data):
    """perf script over `data`: (samples whose innermost frame is in unnamed
    anonymous memory, samples, samples in py::jit:foo)."""
    text = runner.run(["perf", "script", "-i", data, "-F", "comm,ip,sym,dso", "--no-inline"],
                      False, work).stdout.decode(errors="replace")
    leaves = [frames[0] for _, frames in perf_samples(text) if frames]
    unnamed = sum(1 for f in leaves if f.startswith("[unknown]") and
                  (f.endswith("([unknown])") or "//anon" in f or "[anon" in f))
    in_foo = sum(1 for f in leaves if f.startswith("py::jit:foo:"))
    return unnamed, len(leaves), in_foo


def scenario_perf_dwarf_jit(runner, interp, work):
    """PYTHON_JIT=1: the hot loop runs in CPython's JIT code. Followed (the
    default), >= 90% of foo samples show the whole chain, the JIT code is
    named py::jit:foo, and no sample is left in unnamed anonymous memory;
    not followed (PYPERFINJECT_JIT=0), the same run for comparison."""
    needs_python3(interp)
    if interp.emulated:
        raise NotApplicable()
    if os.environ.get("PYTHON_JIT") == "1" or not jit_available(runner, interp, work):
        raise NotApplicable()  # no JIT in this build, or the JIT pass (which runs perf-dwarf)
    if tuple(interp.version) < (3, 15):
        raise Skip("CPython %d.%d describes its JIT code to no one (no __jit_debug_descriptor, "
                   "no perf records, no unwind rules): perf cannot unwind out of it "
                   "(docs/jit.md)" % tuple(interp.version))
    why = perftool.why_unusable()
    if why:
        raise Skip(why)
    counts = {}
    for follow in ("0", "1"):
        sub = os.path.join(work, "follow-" + follow)
        os.mkdir(sub)
        script = record_workload(runner, interp, sub,
                                 ["-F", "299", "-k", "1", "--call-graph", "dwarf,65528"],
                                 {"PYPERFINJECT_DIR": sub, "PYTHON_JIT": "1",
                                  "PYPERFINJECT_JIT": follow})
        inject = runner.run(["perf", "inject", "-i", "perf.data", "--jit", "-o",
                             "perf.jit.data"], False, sub)
        if inject.returncode != 0:
            raise Fail("perf inject failed: %r" % inject.stderr[-300:])
        counts[follow] = anonymous_leaf_share(runner, sub, "perf.jit.data")
    unnamed_before, total_before, _ = counts["0"]
    if unnamed_before < total_before // 10:
        raise Fail("not followed, only %d of %d samples are in anonymous memory: the JIT did "
                   "not run the hot loop" % (unnamed_before, total_before))
    result = require_full_chains(runner, os.path.join(work, "follow-1"), "perf.jit.data", script)
    unnamed, total, in_foo = counts["1"]
    if in_foo < total // 10:
        raise Fail("only %d of %d samples are in py::jit:foo" % (in_foo, total))
    if unnamed > total // 100:
        raise Fail("%d of %d samples are still in unnamed anonymous memory" % (unnamed, total))
    wanted = "py::jit:foo:%s" % script
    with open(only_map(os.path.join(work, "follow-1"))[0]) as f:
        if not any(line.split(" ", 2)[-1].startswith(wanted) for line in f.read().splitlines()):
            raise Fail("the perf map has no line for %s" % wanted)
    return "%s; in py::jit:foo %d of %d; unnamed anonymous %d of %d (not followed: %d of %d)" % (
        result, in_foo, total, unnamed, total, unnamed_before, total_before)


def scenario_perf_fp(runner, interp, work):
    """Frame-pointer builds: perf -g with the map alone shows the whole chain."""
    needs_python3(interp)
    if interp.emulated:
        raise NotApplicable()
    if not interp.probe()["frame_pointers"]:
        raise NotApplicable()  # fp unwinding cannot cross an evaluator without frame pointers
    why = perftool.why_unusable()
    if why:
        raise Skip(why)
    script = record_workload(runner, interp, work, ["-F", "499", "-g"],
                             {"PYPERFINJECT_DIR": "/tmp", "PYPERFINJECT_JITDUMP": "0"})
    # perf reads /tmp/perf-PID.map only when it reports. Other programs'
    # clean-ups (CPython's own test_perf_profiler globs /tmp/perf-*.map) may
    # remove it in between: keep a copy and put it back if it went.
    maps = cleanup_cpython_maps()
    for pid, text in maps.items():
        with open("/tmp/perf-%d.map" % pid, "w") as f:
            f.write(text)
    try:
        return require_full_chains(runner, work, "perf.data", script)
    finally:
        cleanup_cpython_maps()  # the map had to be in /tmp for perf


_PROBE = {}


def unwind_probe(work):
    """Builds tests/integration/unwind_probe.c once (needs libunwind-dev)."""
    if "path" not in _PROBE:
        out = os.path.join(os.path.dirname(work), "unwind_probe.so")
        cc = subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", out,
                             os.path.join(ROOT, "tests", "integration", "unwind_probe.c"),
                             "-Wl,-rpath,/usr/lib/%s" % sysconfig_multiarch(), "-lunwind"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _PROBE["path"] = out if cc.returncode == 0 else None
        _PROBE["why"] = cc.stderr.decode(errors="replace").strip()[-200:]
    if _PROBE["path"] is None:
        raise Skip("cannot build the libunwind probe (libunwind-dev missing?): %s" % _PROBE["why"])
    return _PROBE["path"]


def sysconfig_multiarch():
    out = subprocess.run(["cc", "-dumpmachine"], stdout=subprocess.PIPE, universal_newlines=True)
    return out.stdout.strip() or "x86_64-linux-gnu"


def scenario_inprocess_unwind(runner, interp, work):
    """A C function called at foo->bar->baz unwinds in-process (libunwind and
    glibc backtrace) through the three trampolines, in order."""
    needs_python3(interp)
    if interp.emulated:
        raise NotApplicable()  # arm64: tests/aarch64/run.sh runs the arm64 libunwind/libgcc probe
    probe = unwind_probe(work)
    results = []
    for fn in ("probe_libunwind", "probe_backtrace"):
        out = runner.run([interp.command, os.path.join(SCRIPTS, "unwind.py"), probe, fn], True,
                         work)
        if out.returncode != 0:
            raise Fail("%s: unwind.py exited %d: %r" % (fn, out.returncode, out.stderr[-300:]))
        path, _ = only_map(work)
        entries = read_map(path)
        names = []
        for word in out.stdout.split():
            ip = int(word, 16)
            names += [n for start, size, n in entries if start <= ip < start + size]
        script = os.path.join(SCRIPTS, "unwind.py")
        want = ["py::%s:%s" % (f, script) for f in ("foo", "bar", "baz", "<module>")]
        if names[:4] != want:
            raise Fail("%s found trampolines %r, wanted foo, bar, baz, <module>" %
                       (fn, [n.split(":")[2] for n in names[:6]]))
        results.append("%s %d frames" % (fn, len(out.stdout.split())))
        os.unlink(path)
        for name in os.listdir(work):
            if name.startswith("jit-"):
                os.unlink(os.path.join(work, name))
    return ", ".join(results)


def scenario_noexec_dir(runner, interp, work):
    """A noexec output directory: one warning, the map still written, program unchanged."""
    needs_python3(interp)
    if interp.emulated:
        raise Skip("qemu-user maps guest code without host PROT_EXEC: noexec cannot be observed")
    if shutil.which("unshare") is None or os.geteuid() != 0:
        raise Skip("needs root and unshare(1) to mount a private noexec tmpfs")
    script = os.path.join(SCRIPTS, "foo_bar_baz.py")
    mnt = os.path.join(work, "noexec")
    got = os.path.join(work, "got")
    os.mkdir(mnt)
    os.mkdir(got)
    shell = ('mount -t tmpfs -o noexec,size=8m none "$1" || exit 99; shift; '
             '"$@"; rc=$?; cp -a "%s"/. "%s"/; exit $rc' % (mnt, got))
    argv = ["unshare", "-m", "--propagation", "private", "sh", "-c", shell, "sh", mnt,
            interp.command, script, "1000"]
    plain = runner.run([interp.command, script, "1000"], False, work)
    pre = runner.run(argv, True, work, {"PYPERFINJECT_DIR": mnt})
    if pre.returncode == 99:
        raise Skip("cannot mount a tmpfs here: %r" % pre.stderr[-200:])
    extra = pre.stderr[:len(pre.stderr) - len(plain.stderr)]
    if pre.stdout != plain.stdout or pre.returncode != plain.returncode or \
            len(extra.splitlines()) != 1 or b"noexec" not in extra:
        raise Fail("expected unchanged output and one noexec warning, got %r" % extra)
    files = sorted(os.listdir(got))
    if len(files) != 1 or not files[0].startswith("perf-"):
        raise Fail("expected only the perf map in the noexec directory, found %s" % files)
    names = names_in(read_map(os.path.join(got, files[0])))
    if "py::foo:%s" % script not in names:
        raise Fail("the map lacks py::foo")


def scenario_switching(runner, interp, work):
    """On/off by API and signal: only functions first run while on are named;
    100 toggles under 4 churning threads: no crash, no duplicate lines."""
    needs_python3(interp)
    out = runner.run([interp.command, os.path.join(SCRIPTS, "switching.py")], True, work,
                     {"PYPERFINJECT_SIGNAL": "USR2"})
    if out.returncode != 0 or b"done 1" not in out.stdout:
        raise Fail("switching.py exited %d: %r %r" % (out.returncode, out.stdout[-200:],
                                                      out.stderr[-300:]))
    path, _ = only_map(work)
    entries = read_map(path)
    check_no_overlap(entries, "map")
    starts = [e[0] for e in entries if not e[2].startswith("py::jit:")]
    if len(starts) != len(set(starts)):
        raise Fail("the same address is named twice")
    names = set(n.split(":")[2] for n in names_in(entries) if n.endswith(":<switching>"))
    for want in ("first_on", "after_api_on", "after_signal_on", "at_the_end"):
        if want not in names:
            raise Fail("%s (run while on) is not named" % want)
    for unwanted in ("while_off_api", "while_off_signal"):
        if unwanted in names:
            raise Fail("%s ran while off but is named" % unwanted)
    churned = sum(1 for n in names if n.startswith("churn_"))
    return "%d functions made during 100 toggles" % churned


def counter_library(work):
    if "counter" not in _PROBE:
        out = os.path.join(os.path.dirname(work), "pep523_counter.so")
        cc = subprocess.run(["cc", "-shared", "-fPIC", "-O2", "-o", out,
                             os.path.join(ROOT, "tests", "integration", "pep523_counter.c"),
                             "-ldl"], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        _PROBE["counter"] = out if cc.returncode == 0 else None
        if cc.returncode != 0:
            raise Fail("cannot build pep523_counter.c: %r" % cc.stderr[-300:])
    return _PROBE["counter"]


def scenario_pep523_chain(runner, interp, work):
    """Another PEP 523 function installed before and after the library: both see
    every call, results unchanged, functions still named."""
    needs_python3(interp)
    if interp.version < (3, 9) or interp.emulated or interp.kind not in ("pyenv", "debian",
                                                                           "debian-dbg"):
        raise NotApplicable()  # the test's counter uses the 3.9+ setter and this machine's libc
    counter = counter_library(work)
    script = os.path.join(SCRIPTS, "chain.py")
    notes = []
    for order in ("before", "after"):
        env = {"PEP523_COUNTER_EARLY": "1"} if order == "before" else {}
        plain = runner.run([interp.command, script, counter, order], False, work,
                           dict(env, LD_PRELOAD=counter if order == "before" else ""))
        lib = runner.lib
        runner.lib = lib + (" " + counter if order == "before" else "")
        try:
            pre = runner.run([interp.command, script, counter, order], True, work, env)
        finally:
            runner.lib = lib
        if pre.returncode != 0 or b"total 999000" not in pre.stdout or \
                b"counted True" not in pre.stdout:
            raise Fail("%s: %r %r" % (order, pre.stdout, pre.stderr[-300:]))
        if plain.stdout.split(b"\n")[:2] != pre.stdout.split(b"\n")[:2]:
            raise Fail("%s: results differ: %r vs %r" % (order, pre.stdout, plain.stdout))
        path, _ = only_map(work)
        if "py::f:%s" % script not in names_in(read_map(path)):
            raise Fail("%s: f is not named while chained" % order)
        for name in os.listdir(work):
            os.unlink(os.path.join(work, name))
        notes.append(order)
    return "counter installed " + " and ".join(notes) + " the library"


def scenario_cpython_perf(runner, interp, work):
    """3.12+: with -X perf, PYTHONPERFSUPPORT=1 and sys.activate_stack_trampoline the
    program runs as without the library, and CPython's trampoline wins."""
    needs_python3(interp)
    if interp.version < (3, 12):
        raise NotApplicable()
    script = os.path.join(SCRIPTS, "foo_bar_baz.py")
    notes = []
    for label, args, env in (("-X perf", ["-X", "perf"], {}),
                             ("PYTHONPERFSUPPORT=1", [], {"PYTHONPERFSUPPORT": "1"})):
        plain = runner.run([interp.command] + args + [script, "1000"], False, work, env)
        pre = runner.run([interp.command] + args + [script, "1000"], True, work, env)
        cleanup_cpython_maps(plain, pre)
        same_behaviour(plain, pre, label)
        if maps_of(None, work):
            raise Fail("%s: the library wrote files although CPython's perf support is on"
                       % label)
        notes.append(label)
    activate = os.path.join(SCRIPTS, "activate.py")
    plain = runner.run([interp.command, activate], False, work)
    pre = runner.run([interp.command, activate], True, work)
    cpython_maps = cleanup_cpython_maps(plain, pre)
    same_behaviour(plain, pre, "sys.activate_stack_trampoline")
    if b"Cannot activate the perf trampoline if the JIT is active" in plain.stderr:
        # CPython's own refusal, the same under the library: its trampoline
        # never runs, so there is nothing of CPython's to name.
        return ", ".join(notes + ["activate_stack_trampoline refused by CPython with the JIT on"])
    path, pid = only_map(work)
    ours = names_in(read_map(path))
    if "py::before:%s" % activate not in ours:
        raise Fail("the library did not name a function run before activation")
    if any(n.startswith("py::during:") for n in ours):
        raise Fail("the library named a function run under CPython's trampoline")
    theirs = cpython_maps.get(pid, "")
    if "py::during:%s" % activate not in theirs:
        raise Fail("CPython's trampoline did not name py::during")
    notes.append("activate_stack_trampoline")
    return ", ".join(notes)


def cleanup_cpython_maps(*runs):
    """CPython writes /tmp/perf-PID.map itself: read and remove those of our runs
    (recent maps that name our test scripts)."""
    del runs
    found = {}
    for name in os.listdir("/tmp"):
        if name.startswith("perf-") and name.endswith(".map"):
            path = os.path.join("/tmp", name)
            try:
                if os.stat(path).st_mtime > time.time() - 120:
                    with open(path, errors="replace") as f:
                        text = f.read()
                    if SCRIPTS in text:
                        found[int(name[5:-4])] = text
                        os.unlink(path)
            except (OSError, ValueError):
                pass
    return found


def scenario_cpython_regrtest(runner, interp, work):
    """CPython's own test_perf_profiler passes under the preload as it does without."""
    needs_python3(interp)
    if interp.version < (3, 12):
        raise NotApplicable()
    check = runner.run([interp.command, "-c", "import test.test_perf_profiler"], False, work)
    if check.returncode != 0:
        raise Skip("this interpreter does not ship test.test_perf_profiler")
    argv = [interp.command, "-m", "test", "-v", "test_perf_profiler"]

    def verdict(out):
        text = out.stdout.decode(errors="replace")
        ok = len(re.findall(r" \.\.\. ok$", text, re.M))
        skipped = len(re.findall(r" \.\.\. skipped", text, re.M))
        return out.returncode, ok, skipped

    def failed(out):
        text = out.stdout.decode(errors="replace")
        return "; ".join(re.findall(r"^(\S+ \(.*\)) \.\.\. (?:FAIL|ERROR)$", text, re.M)) or "-"

    # CPython's perf tests sample with perf and count what they see: on a
    # loaded machine one of them fails now and then, with or without the
    # library. A difference counts when a second pair of runs repeats it.
    notes = []
    for attempt in (1, 2):
        plain = runner.run(argv, False, work)
        pre = runner.run(argv, True, work)
        a, b = verdict(plain), verdict(pre)
        if a == b:
            break
        notes.append("run %d: without: rc %d, %d ok, %d skipped (failed: %s); with: rc %d, %d ok, "
                     "%d skipped (failed: %s)" % (attempt, a[0], a[1], a[2], failed(plain),
                                                  b[0], b[1], b[2], failed(pre)))
    else:
        raise Fail("\n".join(notes) + "\n" + pre.stdout.decode(errors="replace")[-1500:])
    return "rc %d, %d ok, %d skipped, same as without%s" % (
        a + ("; differed once: " + notes[0] if notes else "",))


SCENARIOS = [
    ("names", scenario_names),
    ("inert", scenario_inert),
    ("threads", scenario_threads),
    ("fork", scenario_fork),
    ("fork-perf", scenario_fork_perf),
    ("subinterpreter", scenario_subinterp),
    ("dlopen-host", scenario_dlopen_host),
    ("hostile-names", scenario_hostile_names),
    ("bad-env", scenario_bad_env),
    ("unwritable-dir", scenario_unwritable_dir),
    ("noexec-dir", scenario_noexec_dir),
    ("perf-dwarf", scenario_perf_dwarf),
    ("perf-dwarf-jit", scenario_perf_dwarf_jit),
    ("perf-fp", scenario_perf_fp),
    ("unwind-inprocess", scenario_inprocess_unwind),
    ("switching", scenario_switching),
    ("pep523-chain", scenario_pep523_chain),
    ("cpython-perf", scenario_cpython_perf),
    ("test_perf_profiler", scenario_cpython_regrtest),
] + debuggers.SCENARIOS

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


def notes_status(matrix, label, name):
    for lab, _, _, row in matrix:
        if lab == label:
            return row.get(name)
    return None


def run_pid_switch(runner, interps, work):
    """pyperf-run --pid PID off/on switches a running process from outside."""
    name = "pyperf-run --pid"
    candidates = [i for i in interps if i.kind in ("pyenv", "debian") and not i.emulated]
    candidates = [i for i in candidates if i.probe()["version"] >= (3, 8)]
    if not candidates:
        return [("SKIP", name, "no local CPython 3.8+ to run")]
    interp = candidates[-1]
    env = dict(os.environ, PYPERFINJECT_DIR=work, PYPERFINJECT_SIGNAL="USR2",
               LD_PRELOAD=harness.ld_preload(runner.host_lib))
    proc = subprocess.Popen([interp.command, os.path.join(SCRIPTS, "longrun.py"), "3"],
                            stdout=subprocess.PIPE, env=env, universal_newlines=True)
    tool = os.path.join(ROOT, "pyperf-run.sh")
    try:
        proc.stdout.readline()

        def switch(action):
            time.sleep(0.4)
            out = subprocess.run(["bash", tool, "--pid", str(proc.pid), action],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE)
            if out.returncode != 0:
                raise Fail("pyperf-run --pid %s: %r" % (action, out.stderr[-200:]))
            time.sleep(0.4)

        switch("off")
        switch("on")
        rest = proc.communicate(timeout=60)[0]
    except Fail as e:
        proc.kill()
        return [("FAIL", name, str(e))]
    made = len(rest.split())
    path, _ = only_map(work)
    named = sorted(int(n.split(":")[2][4:]) for n in names_in(read_map(path))
                   if n.startswith("py::gen_"))
    gaps = [(a, b) for a, b in zip(named, named[1:]) if b != a + 1]
    if len(gaps) != 1:
        return [("FAIL", name, "expected one gap (the time it was off) in %d named of %d made, "
                               "found %d" % (len(named), made, len(gaps)))]
    return [("PASS", name, "functions %d-%d made while off are unnamed" %
             (gaps[0][0] + 1, gaps[0][1] - 1))]


def passes_of(runner, interp, base):
    """Every interpreter runs the scenarios once as it starts; one whose build
    has CPython's JIT runs them again with PYTHON_JIT=1 (label "+jit")."""
    passes = [(interp.label, False)]
    if not interp.emulated:
        try:
            if interp.version >= (3, 14) and jit_available(runner, interp,
                                                           tempfile.mkdtemp(dir=base)):
                passes.append((interp.label + "+jit", True))
        except Skip:
            pass
    return passes


@contextlib.contextmanager
def python_jit(on):
    """PYTHON_JIT=1 for every child of the scenarios (Runner.run and the
    debugger tests keep PYTHON* variables), or as the caller had it."""
    before = os.environ.get("PYTHON_JIT")
    if on:
        os.environ["PYTHON_JIT"] = "1"
    try:
        yield
    finally:
        if on and before is None:
            del os.environ["PYTHON_JIT"]
        elif on:
            os.environ["PYTHON_JIT"] = before


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--lib", default=harness.LIB)
    parser.add_argument("--aarch64-lib",
                        default=os.path.join(ROOT, "build-aarch64", "libpyperfinject.so"))
    parser.add_argument("--only", default="")
    parser.add_argument("--scenario", default="", help="comma-separated scenario names")
    parser.add_argument("--interpreters", help="file of LABEL<TAB>COMMAND<TAB>KIND lines")
    parser.add_argument("--keep-failed", metavar="DIR",
                        help="copy the work directory of every failed scenario into DIR")
    parser.add_argument("--matrix-out", default=os.path.join(ROOT, "build", "support-matrix.md"))
    args = parser.parse_args()
    runner = Runner(os.path.abspath(args.lib))
    if not os.path.exists(runner.lib):
        print("integration: %s not built" % runner.lib)
        return 1

    tally = harness.Tally("integration", widths=(24, 16))
    report = tally.report
    matrix = []
    notes = {}

    base = tempfile.mkdtemp(prefix="pyperfinject-it-")
    try:
        interps = harness.discover(args.interpreters)
        if not interps:
            report("SKIP", "-", "matrix", "no interpreter found (tests/provision/interpreters.sh)")
        for interp in interps:
            if args.only and args.only not in interp.label:
                continue
            runner.serve(interp, os.path.abspath(args.aarch64_lib))
            if runner.guest and not os.path.exists(runner.lib):
                report("SKIP", interp.label, "all", "%s is not built (make CC=aarch64-linux-gnu-gcc)"
                       % runner.lib)
                continue
            version = "?"
            try:
                version = "%d.%d" % interp.version
            except Skip:
                pass
            for label, jit in passes_of(runner, interp, base):
                row = {}
                with python_jit(jit):
                    for name, fn in SCENARIOS:
                        if args.scenario and name not in args.scenario.split(","):
                            continue
                        work = tempfile.mkdtemp(prefix=name + "-", dir=base)
                        try:
                            status, note = harness.attempt(fn, runner, interp, work)
                        except NotApplicable:
                            row[name] = "n/a"
                            continue
                        if status == "FAIL" and args.keep_failed:
                            kept = os.path.join(args.keep_failed, "%s-%s" % (label, name))
                            shutil.rmtree(kept, ignore_errors=True)
                            shutil.copytree(work, kept, symlinks=True)
                            note += " (work directory kept in %s)" % kept
                        report(status, label, name, note)
                        row[name] = status
                        notes[(label, name)] = note
                matrix.append((label, interp.kind, version, row))
        runner.guest, runner.lib = False, runner.host_lib
        if not args.only:
            for status, name, detail in run_non_python(runner, tempfile.mkdtemp(dir=base)):
                report(status, "-", name, detail)
            for status, name, detail in run_pid_switch(runner, interps,
                                                       tempfile.mkdtemp(dir=base)):
                report(status, "-", name, detail)
    finally:
        shutil.rmtree(base, ignore_errors=True)

    if args.matrix_out and matrix and not args.only:
        os.makedirs(os.path.dirname(args.matrix_out), exist_ok=True)
        with open(args.matrix_out, "w") as f:
            names = [n for n, _ in SCENARIOS]
            f.write("| interpreter | kind | version | %s |\n" % " | ".join(names))
            f.write("|---|---|---|%s\n" % ("---|" * len(names)))
            for label, kind, version, row in matrix:
                f.write("| %s | %s | %s | %s |\n" % (
                    label, kind, version, " | ".join(row.get(n, "-") for n in names)))
            f.write("\nDetails (PASS notes and SKIP reasons):\n\n")
            for (label, name), note in sorted(notes.items()):
                if note and name in ("perf-dwarf", "perf-fp", "unwind-inprocess",
                                     "test_perf_profiler", "subinterpreter") or \
                        (note and notes_status(matrix, label, name) != "PASS"):
                    f.write("- %s, %s: %s\n" % (label, name, note.replace("\n", " ")[:300]))
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
