"""Integration scenarios for debuggers (tests/integration/run.py runs them on
every interpreter): gdb, gcore and lldb on a program blocked inside
foo <- bar <- baz <- <module> (scripts/blocked.py), through the library's
GDB JIT interface (libpyperfinject/gdbjit.c)."""
import os
import re
import resource
import shutil
import signal
import subprocess
import time

import harness
import perfmap
from harness import Fail, NotApplicable, Skip

HERE = os.path.dirname(os.path.abspath(__file__))
BLOCKED = os.path.join(HERE, "scripts", "blocked.py")


def def_lines():
    """{function: the line of its def in blocked.py} (the module's comes from
    blocked.py itself: CPython puts it at the first statement before 3.8)."""
    with open(BLOCKED) as f:
        return dict((m.group(1), i) for i, line in enumerate(f, 1)
                    for m in [re.match(r"def (foo|bar|baz)\(", line)] if m)


LINES = def_lines()
CHAIN = ("foo", "bar", "baz", "<module>")
EXTRA = 10000  # functions registered before the chain
GDB_TIMEOUT = 300
# Options every gdb here runs with: no init files, no network, no scripts.
GDB = ["gdb", "-batch", "-nx", "-ex", "set debuginfod enabled off", "-ex", "set auto-load off",
       "-ex", "set exec-file-mismatch off", "-ex", "set pagination off"]


def chain_names(module_line):
    """{function: the name gdb must show} for blocked.py's chain."""
    lines = dict(LINES, **{"<module>": module_line})
    return dict((fn, "py::%s:%s, line %d" % (fn, BLOCKED, lines[fn])) for fn in CHAIN)


def needs_gdb(interp):
    if interp.emulated:
        raise Skip("gdb -p and gcore see qemu-user, not the arm64 guest (the guest's own "
                   "debugging goes through qemu's gdbstub)")
    if shutil.which("gdb") is None:
        raise Skip("gdb is not installed (make deps)")


def allow_cores():
    resource.setrlimit(resource.RLIMIT_CORE, (resource.RLIM_INFINITY, resource.RLIM_INFINITY))


def start(runner, interp, work, mode, extra=0, env=None, cores=False, preload=True):
    """blocked.py MODE EXTRA under the preload (or without it); returns
    (process, pid of the blocked process, the chain's names) once it says it
    is ready. cores: with no limit on core files (the kernel writes one when
    it crashes)."""
    full = harness.clean_env(keep_python=True, PYPERFINJECT_DIR=work)
    full.update(env or {})
    if preload:  # as Runner.run: a sysroot wrapper passes LD_PRELOAD on
        harness.preload(full, runner.lib)
    proc = subprocess.Popen([interp.command, BLOCKED, mode, str(extra)], stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env=full, cwd=work,
                            universal_newlines=True, preexec_fn=allow_cores if cores else None)
    line = proc.stdout.readline()
    if not line.startswith("ready "):
        proc.kill()
        out, err = proc.communicate()
        raise Fail("blocked.py %s did not get ready: %r %r" % (mode, line + out, err[-800:]))
    _, pid, module_line = line.split()
    return proc, int(pid), chain_names(int(module_line))


def stop(proc, pid=None):
    for p in (pid, proc.pid):
        if p:
            try:
                os.kill(p, signal.SIGKILL)
            except OSError:
                pass
    proc.communicate()


def program_of(pid):
    """The python binary of a process: /proc/PID/exe, or the program an
    explicit loader runs (the sysroot interpreters: ld.so ... python)."""
    exe = os.readlink("/proc/%d/exe" % pid)
    if not os.path.basename(exe).startswith("ld-"):
        return exe
    with open("/proc/%d/cmdline" % pid, "rb") as f:
        argv = f.read().decode(errors="replace").split("\0")
    i = 1
    while i < len(argv) and argv[i].startswith("--"):
        i += 1 if argv[i] == "--inhibit-cache" else 2
    return argv[i]


def gdb(target, program, *commands):
    """gdb's output for commands on a live process (int) or a core file."""
    argv = list(GDB) + ["-ex", "file " + program]
    argv += ["-ex", ("attach %d" % target) if isinstance(target, int) else ("core " + target)]
    for c in commands:
        argv += ["-ex", c]
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                         stdin=subprocess.DEVNULL, universal_newlines=True, timeout=GDB_TIMEOUT)
    return out.stdout


FRAME = re.compile(r"^#(\d+)\s+(?:0x[0-9a-f]+ in )?(.*)$")
PY_FRAME = re.compile(r"(py::.*) \(\)")


def threads_of(bt_text):
    """[[frame text, ...], ...]: one list per thread's backtrace."""
    threads, cur = [], None
    for line in bt_text.splitlines():
        m = FRAME.match(line)
        if not m:
            continue
        if m.group(1) == "0":
            cur = []
            threads.append(cur)
        if cur is not None:
            cur.append(m.group(2))
    return threads


def check_chain(bt_text, names, what, chain=CHAIN):
    """The thread with foo shows chain's names in order, each between the
    interpreter's frames. Returns a short note."""
    for frames in threads_of(bt_text):
        py = [(i, PY_FRAME.search(f).group(1)) for i, f in enumerate(frames) if PY_FRAME.search(f)]
        if not any(n == names[chain[0]] for _, n in py):
            continue
        at = []
        for fn in chain:
            hits = [i for i, n in py if n == names[fn]]
            if not hits:
                raise Fail("%s: no %r frame; Python frames seen: %s" % (
                    what, names[fn], [n for _, n in py][:8]))
            at.append(hits[0])
        if at != sorted(at):
            raise Fail("%s: %s in frames %s, not in that order" % (what, chain, at))
        gaps = [b - a - 1 for a, b in zip(at, at[1:])]
        if at[0] == 0 or min(gaps) < 1 or at[-1] == len(frames) - 1:
            raise Fail("%s: the Python frames %s are not between interpreter frames "
                       "(of %d)" % (what, at, len(frames)))
        return "%s frames %s of %d" % (what, ",".join(map(str, at)), len(frames))
    raise Fail("%s: no thread shows %r:\n%s" % (what, names[chain[0]], bt_text[-3000:]))


def map_entries(work, pid):
    """The map of a process that still runs: its end may be the newlines the
    library allocated ahead (tests/tools/perfmap.py)."""
    path = os.path.join(work, "perf-%d.map" % pid)
    entries, _ = perfmap.read(path, allow_partial_tail=True, error=Fail)
    return [(start, sym) for start, _, sym in entries]


def scenario_gdb(runner, interp, work):
    """gdb -p and a gcore core file: foo<-bar<-baz<-<module> after 10 000
    other functions, every name gdb asks for one of those right."""
    needs_gdb(interp)
    if interp.version[0] == 2:
        return scenario_gdb_inert(runner, interp, work)
    proc, pid, names = start(runner, interp, work, "sleep", EXTRA, cores=True)
    try:
        program = program_of(pid)
        extras = [(a, n) for a, n in map_entries(work, pid) if n.startswith("py::extra_")]
        if len(extras) != EXTRA:
            raise Fail("%d extra_ functions in the map, expected %d" % (len(extras), EXTRA))
        probes = [extras[0], extras[len(extras) // 2], extras[-1]]
        asks = ["info symbol 0x%x" % a for a, _ in probes]
        t0 = time.time()
        live = gdb(pid, program, "thread apply all bt", *asks)
        live_s = time.time() - t0
        note = [check_chain(live, names, "live")]
        for a, n in probes:
            if "%s, line 1 in section .text" % n not in live:
                raise Fail("gdb's info symbol 0x%x does not name %s:\n%s" % (a, n, live[-2000:]))
        if harness.sanitizer_runtime():
            # A sanitizer's shadow memory is terabytes of mappings to dump.
            return "; ".join(note) + "; cores not made under a sanitizer runtime"
        prefix = os.path.join(work, "core")
        out = subprocess.run(["gcore", "-o", prefix, str(pid)], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, universal_newlines=True,
                             timeout=GDB_TIMEOUT)
        core = "%s.%d" % (prefix, pid)
        if not os.path.exists(core):
            raise Fail("gcore wrote no core: %s" % out.stdout[-1000:])
        os.kill(pid, signal.SIGABRT)  # and the kernel's core of a crash
        proc.wait(timeout=GDB_TIMEOUT)
    finally:
        stop(proc)
    cores = [("gcore", core)]
    crashed = [os.path.join(work, f) for f in ("core", "core.%d" % pid)
               if os.path.exists(os.path.join(work, f))]
    if crashed:
        cores.append(("crash core", crashed[0]))
    else:
        with open("/proc/sys/kernel/core_pattern") as f:
            note.append("no crash core (core_pattern %r)" % f.read().strip())
    for what, path in cores:
        dumped = gdb(path, program, "thread apply all bt", *asks)
        note.append(check_chain(dumped, names, what))
        for a, n in probes:
            if "%s, line 1 in section .text" % n not in dumped:
                raise Fail("in the %s, info symbol 0x%x does not name %s" % (what, a, n))
        os.unlink(path)
    return "; ".join(note) + "; %d functions before; attach+bt %.1f s" % (EXTRA, live_s)


def scenario_gdb_inert(runner, interp, work):
    """Python 2: the library registers nothing; gdb shows no py:: frame."""
    proc, pid, _ = start(runner, interp, work, "sleep")
    try:
        out = gdb(pid, program_of(pid), "thread apply all bt", "maint info jit")
    finally:
        stop(proc)
    if "py::" in out:
        raise Fail("py:: frames in a Python 2 process:\n%s" % out[-1500:])
    if "#0" not in out:
        raise Fail("gdb showed no backtrace:\n%s" % out[-1500:])
    return "no py:: frame, no JIT entry"


def live_backtrace(runner, interp, work, mode, env=None):
    """(gdb -p's backtraces of blocked.py MODE, the chain's names), Python 3."""
    needs_gdb(interp)
    if interp.version[0] == 2:
        raise NotApplicable()
    proc, pid, names = start(runner, interp, work, mode, 0, env)
    try:
        return gdb(pid, program_of(pid), "thread apply all bt"), names
    finally:
        stop(proc, pid)


def scenario_gdb_lock(runner, interp, work):
    """Blocked on a lock: the same chain."""
    return check_chain(*live_backtrace(runner, interp, work, "lock"), what="live")


def scenario_gdb_fork(runner, interp, work):
    """A forked child: the parent's names (bar, baz, <module>) and its own (foo)."""
    return check_chain(*live_backtrace(runner, interp, work, "fork"), what="child")


def scenario_gdb_switch(runner, interp, work):
    """Switched off and on: a function made while off is unnamed, the others
    (before, and foo after) are named."""
    out, names = live_backtrace(runner, interp, work, "switch")
    note = check_chain(out, names, "live")
    if "py::unnamed:" in out:
        raise Fail("the function made while switched off is named")
    return note


def scenario_gdb_settings(runner, interp, work):
    """PYPERFINJECT_GDB=0: no names for gdb, the map as ever; MAP=0 and
    JITDUMP=0: names for gdb and no file."""
    off = os.path.join(work, "gdb-off")
    only = os.path.join(work, "gdb-only")
    os.mkdir(off)
    os.mkdir(only)
    out, _ = live_backtrace(runner, interp, off, "sleep", {"PYPERFINJECT_GDB": "0"})
    if "py::" in out:
        raise Fail("PYPERFINJECT_GDB=0, and gdb shows py:: frames")
    maps = [f for f in os.listdir(off) if f.startswith("perf-")]
    if len(maps) != 1 or "py::foo:%s\n" % BLOCKED not in open(os.path.join(off, maps[0])).read():
        raise Fail("PYPERFINJECT_GDB=0 changed the map: no py::foo in %s" % maps)
    out, names = live_backtrace(runner, interp, only, "sleep",
                                {"PYPERFINJECT_MAP": "0", "PYPERFINJECT_JITDUMP": "0"})
    if os.listdir(only):
        raise Fail("PYPERFINJECT_MAP=0 PYPERFINJECT_JITDUMP=0 wrote %s" % os.listdir(only))
    return "GDB=0: map only; MAP=0 JITDUMP=0: " + check_chain(out, names, "live")


def scenario_gdb_started(runner, interp, work):
    """Started under gdb: 3000 functions while its breakpoint is in, then an
    abort in foo after pyperfinject_flush(): gdb names the chain."""
    needs_gdb(interp)
    if interp.version[0] == 2 or interp.kind.startswith("sid"):
        # gdb runs the sysroot wrapper script: it would follow a shell.
        raise NotApplicable()
    env = harness.clean_env(keep_python=True, PYPERFINJECT_DIR=work)
    # The preload for the program only: gdb embeds a Python of its own.
    preload = harness.ld_preload(runner.lib)
    argv = list(GDB) + ["-ex", "set environment LD_PRELOAD " + preload, "-ex", "run",
                        "-ex", "thread apply all bt", "--args", interp.command, BLOCKED, "abort",
                        "3000"]
    t0 = time.time()
    out = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                         cwd=work, stdin=subprocess.DEVNULL, universal_newlines=True,
                         timeout=GDB_TIMEOUT)
    took = time.time() - t0
    if "SIGABRT" not in out.stdout:
        raise Fail("the program did not stop at its abort under gdb:\n%s" % out.stdout[-2000:])
    names = chain_names(int(re.search(r"^ready \d+ (\d+)$", out.stdout, re.M).group(1)))
    return check_chain(out.stdout, names, "started") + "; 3000 functions under gdb in %.1f s" % took


def scenario_gdb_jit(runner, interp, work):
    """CPython's JIT on (3.14+ builds that have it): its own GDB JIT entries
    stay, next to the library's names."""
    needs_gdb(interp)
    if interp.version < (3, 14) or interp.kind != "sid":
        raise NotApplicable()
    env = {"PYTHON_JIT": "1"}
    counts = []
    for preload in (False, True):
        sub = os.path.join(work, "pre" if preload else "plain")
        os.mkdir(sub)
        proc, pid, names = start(runner, interp, sub, "hot", 2000, env, preload=preload)
        try:
            out = gdb(pid, program_of(pid), "thread apply all bt", "maint info jit")
        finally:
            stop(proc)
        counts.append(len(re.findall(r"^0x[0-9a-f]+\s+0x[0-9a-f]+\s+\d+", out, re.M)))
    cpython, together = counts
    if cpython < 1:
        raise Skip("CPython %d.%d with PYTHON_JIT=1 registered no code with the GDB JIT "
                   "interface (its JIT does from 3.15)" % interp.version)
    if together < cpython + 1:
        raise Fail("with the library gdb lists %d JIT entries, CPython alone %d" % (
            together, cpython))
    return "CPython's %d entries + the library's %d; %s" % (
        cpython, together - cpython, check_chain(out, names, "live"))


def scenario_lldb(runner, interp, work):
    """lldb with its GDB JIT loader on: the chain, if this lldb names it."""
    if interp.label != "debian-3.11":
        raise NotApplicable()  # one interpreter: what is tested is lldb
    lldb = shutil.which("lldb")
    if lldb is None:
        raise Skip("lldb is not installed (make deps)")
    proc, pid, names = start(runner, interp, work, "sleep")
    try:
        out = subprocess.run([lldb, "--batch", "-o", "settings set plugin.jit-loader.gdb.enable on",
                              "-o", "log enable lldb jit", "-o", "process attach --pid %d" % pid,
                              "-o", "bt", "-o", "process detach"], stdout=subprocess.PIPE,
                             stderr=subprocess.STDOUT, universal_newlines=True,
                             stdin=subprocess.DEVNULL, timeout=GDB_TIMEOUT).stdout
    finally:
        stop(proc)
    if "registering JIT entry" not in out:
        raise Fail("lldb found no JIT entry of the library:\n%s" % out[-2000:])
    if names["foo"] not in out:
        version = subprocess.run([lldb, "--version"], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                                 universal_newlines=True).stdout.split("\n")[0]
        raise Skip("%s reads the library's JIT entry (its jit log says so) but names no frame "
                   "from it" % version)
    return "lldb names foo"


SCENARIOS = [
    ("gdb", scenario_gdb),
    ("gdb-lock", scenario_gdb_lock),
    ("gdb-fork", scenario_gdb_fork),
    ("gdb-switch", scenario_gdb_switch),
    ("gdb-settings", scenario_gdb_settings),
    ("gdb-started", scenario_gdb_started),
    ("gdb-jit", scenario_gdb_jit),
    ("lldb", scenario_lldb),
]
