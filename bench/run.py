#!/usr/bin/env python3
"""The benchmark harness (issue #7): what the library costs, on every interpreter.

For every interpreter of the matrix (tests/provision/interpreters.sh; x86_64,
non-debug, Python 3 only) each workload of bench/workloads/ runs in every
configuration, in interleaved rounds (plain, floor, map, ... then again, the
order rotated each round), and the harness reports medians and ratios
against the plain run:

  plain      no preload
  floor      PYPERFINJECT_PASSTHROUGH=1: the hook installed, calls go straight
             to the evaluator (what any PEP 523 hook costs)
  map        PYPERFINJECT_JITDUMP=0: trampolines + perf-PID.map
  jitdump    the default: trampolines + perf-PID.map + jit-PID.dump
  off        PYPERFINJECT_START=0: loaded, switched off
  xperf      CPython's own `-X perf` (3.12+), without the library
  xperf_jit  CPython's own `-X perf_jit` (3.13+), without the library

Workloads: startup (`python -c pass`), fib.py (call-bound recursion),
mixed.py (a realistic program), many_functions.py (100 000 new functions,
each called once: time and resident memory per new function).

Two metrics: wall time of the whole process (median over rounds; ratios are
medians of the per-round ratios, which pairs each run with the plain run next
to it), and instruction counts from `valgrind --tool=callgrind` for startup,
fib and mixed at small sizes (deterministic; fib and mixed are counted minus
the same configuration's start-up, so they are the workload's own
instructions). Instruction counts are user space only: the write(2)s of the
map and jitdump are not in them, which is why the per-new-function cost is
measured by wall time.

Targets are shown PASS/MISS; a miss never fails the harness.

usage: run.py [--smoke] [--quick] [--only LABEL[,LABEL...]] [--rounds N]
              [--lib PATH] [--no-callgrind] [--jobs N] [--doc PATH | --no-doc]

  --smoke   what `make check` runs: tiny sizes, one round, two interpreters,
            no callgrind; checks that every configuration runs, prints what
            plain prints, writes the files it should, and that the numbers
            parse. Never looks at timings. Last line:
            "bench: N passed, N failed, N skipped".
  --quick   smaller sizes and fewer rounds (a few minutes).
  --only    interpreters whose label contains one of the comma-separated
            substrings.
  --doc     where to write the report; a full run (no --only/--quick/--rounds)
            writes docs/benchmarks.md, any other run build/bench/benchmarks.md.
Results (every run's numbers) go to build/bench/results.json.
"""
import argparse
import datetime
import json
import os
import platform
import re
import resource
import shutil
import statistics
import struct
import subprocess
import sys
import tempfile
import threading
import time
from concurrent.futures import ThreadPoolExecutor

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(HERE)
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import harness  # noqa: E402  (shared with tests/integration, tests/hardening)
import gdb_attached  # noqa: E402
WORKLOADS = os.path.join(HERE, "workloads")
OUT_DIR = os.path.join(ROOT, "build", "bench")
RUN_TIMEOUT = 600

# ------------------------------------------------------------------ sizes
PROFILES = {
    # fib/mixed/many: wall-time sizes; cg_*: callgrind sizes (each callgrind
    # run stays well under 20 s on a 2-core machine).
    "full": dict(fib=28, mixed=15, many=(100000, 1000), rounds=5, startup_rounds=10,
                 many_rounds=3, cg_fib=22, cg_mixed=1, cg_many=(1000, 500)),
    "quick": dict(fib=27, mixed=8, many=(20000, 1000), rounds=3, startup_rounds=6,
                  many_rounds=2, cg_fib=20, cg_mixed=1, cg_many=(1000, 500)),
    "smoke": dict(fib=15, mixed=1, many=(2000, 500), rounds=1, startup_rounds=1,
                  many_rounds=1, cg_fib=None, cg_mixed=None, cg_many=None),
}


# ---------------------------------------------------------- configurations
class Config(object):
    def __init__(self, key, title, preload, env=None, xopt=None, files=()):
        self.key = key
        self.title = title
        self.preload = preload
        self.env = env or {}
        self.xopt = xopt
        self.files = files  # what the library must write: "map", "jit"


CONFIGS = [
    Config("plain", "plain (no preload)", False),
    Config("floor", "passthrough floor", True, {"PYPERFINJECT_PASSTHROUGH": "1"}),
    Config("map", "map only", True, {"PYPERFINJECT_JITDUMP": "0"}, files=("map",)),
    Config("jitdump", "jitdump + map (default)", True, {}, files=("map", "jit")),
    Config("nogdb", "jitdump + map, no GDB JIT entries", True, {"PYPERFINJECT_GDB": "0"},
           files=("map", "jit")),
    Config("off", "loaded, switched off", True, {"PYPERFINJECT_START": "0"}),
    Config("xperf", "CPython -X perf", False, xopt="perf"),
    Config("xperf_jit", "CPython -X perf_jit", False, xopt="perf_jit"),
]
CONFIG = dict((c.key, c) for c in CONFIGS)
LIB_CONFIGS = ("floor", "map", "jitdump", "nogdb", "off")
# many_functions is the expensive one: only the configurations that make
# trampolines (and plain) in a full run.
MANY_CONFIGS = ("plain", "map", "jitdump", "nogdb", "xperf", "xperf_jit")


# ------------------------------------------------------------ interpreters
class Measured(harness.Interp):
    """An interpreter of the matrix as the benchmark sees it: which of
    CPython's own perf modes it has, and why it is not measured, if so."""

    def __init__(self, label, command, kind):
        harness.Interp.__init__(self, label, command, kind)
        self.xperf = False
        self.xperf_jit = False
        self.skip_reason = None

    def configs(self):
        out = []
        for c in CONFIGS:
            if c.key == "xperf" and not self.xperf:
                continue
            if c.key == "xperf_jit" and not self.xperf_jit:
                continue
            out.append(c.key)
        return out


WARM = "import gc, json, platform, re, sys, time, zlib"
XPROBE = ("import sys\n"
          "active = getattr(sys, 'is_stack_trampoline_active', lambda: False)()\n"
          "print(int(bool(active) and '%s' in sys._xoptions))\n")


def clean_env():
    # a fixed hash seed: every run does the same work (the counts repeat)
    return harness.clean_env(PYTHONHASHSEED="0")


def discover(only):
    """The matrix's interpreters (tests/provision/interpreters.sh) this
    machine can measure, those whose label holds one of `only` if given."""
    found = []
    for it in harness.discover(cls=Measured):
        if it.emulated:
            continue  # emulated: not this machine's speed
        if it.kind.endswith("-dbg"):
            continue  # debug builds: not what anybody profiles
        if only and not any(s in it.label for s in only):
            continue
        found.append(it)
    return found


def probe(it, scratch):
    """Sets it.skip_reason if it is not measured, else which of CPython's
    perf modes it has."""
    env = clean_env()
    try:
        facts = it.probe()
    except harness.Skip as e:
        it.skip_reason = str(e)
        return
    major, minor = facts["version"]
    if major < 3:
        it.skip_reason = "Python 2 (the library stays inert there)"
    elif facts["machine"] != "x86_64":
        it.skip_reason = "not x86_64 (%s)" % facts["machine"]
    elif facts["debug"]:
        it.skip_reason = "a debug build"
    if it.skip_reason:
        return
    # Byte-compile what the workloads import, as any first run does: a cache
    # that fills up during the measurements would shift the counts.
    try:
        subprocess.run([it.command, "-c", WARM], stdout=subprocess.DEVNULL,
                       stderr=subprocess.DEVNULL, env=env, timeout=300)
    except (OSError, subprocess.TimeoutExpired):
        pass
    if (major, minor) < (3, 12):
        return
    for opt in ("perf", "perf_jit"):
        start = time.time()
        try:
            p = subprocess.Popen([it.command, "-X", opt, "-c", XPROBE % opt],
                                 stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 universal_newlines=True, env=env, cwd=scratch)
            out, _err = p.communicate(timeout=120)
        except (OSError, subprocess.TimeoutExpired):
            continue
        remove_cpython_files(p.pid, start)
        if p.returncode == 0 and out.strip() == "1":
            setattr(it, "xperf" if opt == "perf" else "xperf_jit", True)


def remove_cpython_files(pid, since):
    """CPython's -X perf / -X perf_jit always write to /tmp: remove this run's files."""
    for name in ("perf-%d.map" % pid, "jit-%d.dump" % pid):
        path = os.path.join("/tmp", name)
        try:
            st = os.lstat(path)
            if st.st_uid == os.getuid() and st.st_mtime >= since - 2:
                os.unlink(path)
        except OSError:
            pass


# --------------------------------------------------------------- workloads
def workload_argv(name, prof, callgrind=False):
    if name == "startup":
        return ["-c", "pass"]
    if name == "fib":
        return [os.path.join(WORKLOADS, "fib.py"), str(prof["cg_fib" if callgrind else "fib"])]
    if name == "mixed":
        return [os.path.join(WORKLOADS, "mixed.py"),
                str(prof["cg_mixed" if callgrind else "mixed"])]
    if name == "many":
        count, batch = prof["cg_many" if callgrind else "many"]
        return [os.path.join(WORKLOADS, "many_functions.py"), str(count), str(batch)]
    raise ValueError(name)


WORKLOAD_TITLES = {"startup": "startup (-c pass)", "fib": "fib (call-bound)",
                   "mixed": "mixed (realistic)", "many": "many_functions"}


def program_output(stdout):
    """What must be the same as plain: everything but the metric lines."""
    return "\n".join(l for l in stdout.splitlines() if not l.startswith("metric "))


def parse_metrics(stdout):
    m = {}
    for line in stdout.splitlines():
        if line.startswith("metric "):
            parts = line.split()
            if len(parts) == 3:
                m[parts[1]] = float(parts[2])
    return m


# --------------------------------------------------------------------- runs
class Runner(object):
    def __init__(self, lib, scratch):
        self.lib = lib
        self.scratch = scratch
        self.rusage_lock = threading.Lock()

    def argv(self, it, cfg, wargv, callgrind=None):
        argv = [it.command]
        if cfg.xopt:
            argv += ["-X", cfg.xopt]
        argv += wargv
        if callgrind:
            vg = ["valgrind", "--tool=callgrind", "--callgrind-out-file=" + callgrind]
            if it.probe()["script"]:
                vg.append("--trace-children=yes")  # the wrapper execs the real python
            argv = vg + argv
        return argv

    def env(self, it, cfg, outdir):
        env = clean_env()
        env["PYPERFINJECT_DIR"] = outdir
        if cfg.preload:
            env.update(cfg.env)
            # `make check SANITIZE=...`: the sanitizer runtime goes first
            # the sanitizer runtime first; a wrapper hands it to python only,
            # not to its shell
            harness.preload(env, self.lib, through_wrapper=it.probe()["wrapper"])
        return env

    def run(self, it, cfg, wargv, callgrind=False, serial=True):
        """One run. Returns a dict: rc, out, err, wall, cpu, ir, problems."""
        outdir = tempfile.mkdtemp(prefix="run-", dir=self.scratch)
        cgfile = os.path.join(outdir, "callgrind.%p.out") if callgrind else None
        argv = self.argv(it, cfg, wargv, cgfile)
        env = self.env(it, cfg, outdir)
        res = {"rc": None, "out": "", "err": "", "wall": None, "cpu": None, "ir": None,
               "problems": []}
        since = time.time()
        before = resource.getrusage(resource.RUSAGE_CHILDREN) if serial else None
        t0 = time.perf_counter()
        try:
            p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                 env=env, cwd=outdir, universal_newlines=True)
        except OSError as e:
            res["problems"].append("cannot start: %s" % e)
            shutil.rmtree(outdir, ignore_errors=True)
            return res
        try:
            out, err = p.communicate(timeout=RUN_TIMEOUT)
        except subprocess.TimeoutExpired:
            p.kill()
            out, err = p.communicate()
            res["problems"].append("timed out after %d s" % RUN_TIMEOUT)
        t1 = time.perf_counter()
        if serial:
            after = resource.getrusage(resource.RUSAGE_CHILDREN)
            res["cpu"] = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
        res.update(rc=p.returncode, out=out, err=err, wall=t1 - t0)
        if p.returncode != 0:
            res["problems"].append("exit status %s: %s" % (p.returncode, err.strip()[-300:]))
        for line in err.splitlines():
            if line.startswith("pyperfinject:"):
                res["problems"].append("library said: " + line)
        if callgrind:
            counts = re.findall(r"^==\d+== Collected : (\d+)", err, re.M)
            if counts:
                res["ir"] = int(counts[-1])
            else:
                res["problems"].append("no callgrind count: %s" % err.strip()[-300:])
        self.check_files(cfg, outdir, p.pid, res)
        if cfg.xopt:
            remove_cpython_files(p.pid, since)
        if callgrind and res["ir"] is not None:
            res["cgfile"] = cgfile.replace("%p", str(p.pid))
            res["outdir"] = outdir  # the caller keeps what it wants, then removes it
        else:
            shutil.rmtree(outdir, ignore_errors=True)
        return res

    def check_files(self, cfg, outdir, pid, res):
        """The configuration did what it says: files written, or none."""
        mp = os.path.join(outdir, "perf-%d.map" % pid)
        jp = os.path.join(outdir, "jit-%d.dump" % pid)
        msize = os.path.getsize(mp) if os.path.exists(mp) else -1
        jsize = os.path.getsize(jp) if os.path.exists(jp) else -1
        if "map" in cfg.files:
            if msize <= 0:
                res["problems"].append("no perf map written")
            else:
                with open(mp, errors="replace") as f:
                    if "py::" not in f.read(65536):
                        res["problems"].append("perf map has no py:: names")
        elif msize > 0:
            res["problems"].append("perf map written (%d bytes) but should not be" % msize)
        loads = jit_code_loads(jp) if jsize > 0 else 0
        if "jit" in cfg.files:
            if loads == 0:
                res["problems"].append("no JIT_CODE_LOAD record in the jitdump")
        elif loads:
            res["problems"].append("jitdump has JIT_CODE_LOAD records but should not")
        if cfg.xopt == "perf" and not os.path.exists("/tmp/perf-%d.map" % pid):
            res["problems"].append("-X perf wrote no /tmp/perf-%d.map" % pid)
        if cfg.xopt == "perf_jit" and not os.path.exists("/tmp/jit-%d.dump" % pid):
            res["problems"].append("-X perf_jit wrote no /tmp/jit-%d.dump" % pid)


def jit_code_loads(path):
    """1 if the jitdump file has a JIT_CODE_LOAD record (id 0), else 0. The
    header (its size at offset 8) may be followed by records of 16-byte
    headers: id, total size, timestamp (a switched-off process writes only
    JIT_CODE_CLOSE)."""
    try:
        with open(path, "rb") as f:
            head = f.read(40)
            if len(head) < 12:
                return 0
            f.seek(struct.unpack_from("<I", head, 8)[0])
            while True:
                rec = f.read(16)
                if len(rec) < 16:
                    return 0
                rid, size = struct.unpack_from("<II", rec)
                if rid == 0:
                    return 1
                if size < 16:
                    return 0
                f.seek(size - 16, os.SEEK_CUR)
    except (OSError, struct.error):
        return 0


# ---------------------------------------------------------------- statistics
def median(xs):
    xs = [x for x in xs if x is not None]
    return statistics.median(xs) if xs else None


def paired(a, b, op):
    """Median over rounds of op(a[r], b[r]) for rounds where both ran."""
    vals = []
    for x, y in zip(a, b):
        if x is not None and y is not None:
            v = op(x, y)
            if v is not None:
                vals.append(v)
    return statistics.median(vals) if vals else None


def ratio(x, y):
    return x / y if y else None


class Results(object):
    def __init__(self):
        # wall[label][workload][config] = list of per-round dicts (wall, cpu, metrics)
        self.wall = {}
        # ir[label][workload][config] = int
        self.ir = {}
        self.outputs = {}  # (label, workload) -> {config: set(outputs)}
        self.problems = {}  # (label, config) -> [messages]

    def note(self, it, cfg, workload, res, rnd=None, callgrind=False):
        key = (it.label, cfg)
        for p in res["problems"]:
            where = "%s%s" % (workload, " (callgrind)" if callgrind else "")
            self.problems.setdefault(key, []).append("%s: %s" % (where, p))
        ok = res["rc"] == 0 and not res["problems"]
        if res["rc"] == 0:
            outs = self.outputs.setdefault((it.label, workload, callgrind), {})
            outs.setdefault(cfg, set()).add(program_output(res["out"]))
        if callgrind:
            self.ir.setdefault(it.label, {}).setdefault(workload, {})[cfg] = (
                res["ir"] if ok else None)
            return
        rounds = self.wall.setdefault(it.label, {}).setdefault(workload, {}).setdefault(cfg, [])
        while len(rounds) <= rnd:
            rounds.append(None)
        rounds[rnd] = {"wall": res["wall"], "cpu": res["cpu"],
                       "metrics": parse_metrics(res["out"])} if ok else None

    def check_outputs(self):
        """Every configuration printed what plain printed."""
        for (label, workload, cg), outs in self.outputs.items():
            ref = outs.get("plain")
            if ref is None:
                continue
            if len(ref) != 1:
                self.problems.setdefault((label, "plain"), []).append(
                    "%s: plain runs printed different things" % workload)
                continue
            for cfg, got in outs.items():
                if got != ref:
                    self.problems.setdefault((label, cfg), []).append(
                        "%s%s: output differs from plain: %r vs %r" % (
                            workload, " (callgrind)" if cg else "", sorted(got)[0][:120],
                            sorted(ref)[0][:120]))

    # -- derived numbers
    def series(self, label, workload, cfg, field="wall"):
        rounds = self.wall.get(label, {}).get(workload, {}).get(cfg, [])
        out = []
        for r in rounds:
            if r is None:
                out.append(None)
            elif field in ("wall", "cpu"):
                out.append(r[field])
            else:
                out.append(r["metrics"].get(field))
        return out

    def wall_median(self, label, workload, cfg, field="wall"):
        return median(self.series(label, workload, cfg, field))

    def wall_ratio(self, label, workload, cfg, field="wall"):
        return paired(self.series(label, workload, cfg, field),
                      self.series(label, workload, "plain", field), ratio)

    def ir_total(self, label, workload, cfg):
        return self.ir.get(label, {}).get(workload, {}).get(cfg)

    def ir_own(self, label, workload, cfg):
        """Instructions of the workload itself: the run minus the same config's start-up."""
        total = self.ir_total(label, workload, cfg)
        if workload == "startup":
            return total
        start = self.ir_total(label, "startup", cfg)
        if total is None or start is None:
            return None
        return total - start

    def ir_ratio(self, label, workload, cfg):
        a, b = self.ir_own(label, workload, cfg), self.ir_own(label, workload, "plain")
        return a / b if a is not None and b else None

    def ir_per_function(self, label, cfg, count):
        a, b = self.ir_own(label, "many", cfg), self.ir_own(label, "many", "plain")
        return (a - b) / float(count) if a is not None and b is not None else None

    def per_function(self, label, cfg, count):
        """(microseconds, bytes) per new function over plain, paired medians."""
        call = paired(self.series(label, "many", cfg, "call_s"),
                      self.series(label, "many", "plain", "call_s"),
                      lambda a, b: (a - b) / count * 1e6)

        def growth(rounds):
            return [None if r is None or "rss_after_kb" not in r["metrics"] else
                    r["metrics"]["rss_after_kb"] - r["metrics"]["rss_before_kb"]
                    for r in rounds]
        rounds = self.wall.get(label, {}).get("many", {})
        mem = paired(growth(rounds.get(cfg, [])), growth(rounds.get("plain", [])),
                     lambda a, b: (a - b) * 1024.0 / count)
        return call, mem


# ------------------------------------------------------------------ running
def log(msg):
    sys.stdout.write(msg + "\n")
    sys.stdout.flush()


def wall_phase(runner, results, it, prof, workloads, smoke):
    configs = it.configs()
    for workload in workloads:
        cfgs = configs if (smoke or workload != "many") else [
            c for c in configs if c in MANY_CONFIGS]
        nrounds = prof["startup_rounds" if workload == "startup" else
                       "many_rounds" if workload == "many" else "rounds"]
        wargv = workload_argv(workload, prof)
        if workload == "startup" and not smoke:
            for c in cfgs:  # warm-up: binaries and libraries into the page cache
                runner.run(it, CONFIG[c], wargv)
        t0 = time.time()
        for rnd in range(nrounds):
            shift = rnd % len(cfgs)
            for c in cfgs[shift:] + cfgs[:shift]:
                res = runner.run(it, CONFIG[c], wargv)
                results.note(it, c, workload, res, rnd=rnd)
        if not smoke:
            log("  %-8s %-16s %d rounds x %d configs, %.0f s" % (
                it.label if workload == workloads[0] else "", workload, nrounds, len(cfgs),
                time.time() - t0))


def callgrind_phase(runner, results, interps, prof, jobs, keep_dir):
    tasks = []
    for it in interps:
        for workload in ("startup", "fib", "mixed"):
            for c in it.configs():
                tasks.append((it, c, workload))
    # user-space instructions per new function (the write(2)s are not in them)
    for it in interps:
        for c in ("plain", "map", "jitdump", "nogdb"):
            tasks.append((it, c, "many"))
    # the first start-up again at the end: the counts must not have moved
    tasks += [(it, "plain", "startup-again") for it in interps]

    def one(task):
        it, c, workload = task
        wargv = workload_argv(workload.replace("-again", ""), prof, callgrind=True)
        res = runner.run(it, CONFIG[c], wargv,
                         callgrind=True, serial=False)
        if res.get("outdir"):
            if workload == "fib" and c in ("jitdump", "plain") and keep_dir:
                try:
                    shutil.copy(res["cgfile"], os.path.join(
                        keep_dir, "callgrind.%s.%s.%s.out" % (it.label, workload, c)))
                except OSError:
                    pass
            shutil.rmtree(res["outdir"], ignore_errors=True)
        return task, res

    t0 = time.time()
    done = 0
    with ThreadPoolExecutor(max_workers=jobs) as pool:
        for (it, c, workload), res in pool.map(one, tasks):
            done += 1
            if done % 20 == 0 or done == len(tasks):
                log("  callgrind %d/%d runs, %.0f s" % (done, len(tasks), time.time() - t0))
            if workload == "startup-again":
                first = results.ir_total(it.label, "startup", "plain")
                if res["ir"] and first and abs(res["ir"] - first) > 0.005 * first:
                    results.problems.setdefault((it.label, "plain"), []).append(
                        "startup (callgrind): %s instructions at the start of the phase, %s "
                        "at its end: something changed under the interpreter (its byte-code "
                        "cache?); its instruction ratios are not comparable" % (
                            "{:,}".format(first), "{:,}".format(res["ir"])))
                continue
            results.note(it, c, workload, res, callgrind=True)


def library_symbols(keep_dir, label):
    """Where the library's instructions go in fib (jitdump config): callgrind_annotate
    lines for functions in libpyperfinject.so and in anonymous memory (the trampolines)."""
    path = os.path.join(keep_dir, "callgrind.%s.fib.jitdump.out" % label)
    if not os.path.exists(path) or not shutil.which("callgrind_annotate"):
        return []
    try:
        r = subprocess.run(["callgrind_annotate", "--threshold=100", "--inclusive=no", "--auto=no",
                            path],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                           universal_newlines=True, timeout=120)
    except (OSError, subprocess.TimeoutExpired):
        return []
    rows = {}
    for line in r.stdout.splitlines():
        m = re.match(r"^\s*([\d,]+)\s+(?:\(\s*[\d.]+%\)\s+)?(\S.*)$", line)
        if not m:
            continue
        what = m.group(2)
        if "libpyperfinject" in what:
            # "libpyperfinject/eval.c:hook_tstate_frame_throw'2 [/x/libpyperfinject.so]"
            name = what.split(" [")[0].split(":", 1)[-1].split("'")[0]
        elif what.startswith("???:0x") and what.endswith("[???]"):
            name = "(trampolines)"  # anonymous executable memory: only ours in this run
        else:
            continue
        rows[name] = rows.get(name, 0) + int(m.group(1).replace(",", ""))
    return sorted(((ir, name) for name, ir in rows.items()), reverse=True)[:6]


# -------------------------------------------------------------------- report
TARGETS = [
    # key, header, limit, description
    ("floor", "call-bound / floor", 1.05,
     "fib, jitdump+map ratio / passthrough floor ratio <= 1.05"),
    ("xperf", "call-bound / -X perf", 1.00,
     "fib, jitdump+map ratio <= CPython -X perf ratio (3.12+)"),
    ("xperf_jit", "call-bound / -X perf_jit", 1.00,
     "fib, jitdump+map ratio <= CPython -X perf_jit ratio (3.13+)"),
    ("mixed", "mixed", 1.10, "mixed, jitdump+map / plain <= 1.10 (target on 3.11-3.14)"),
    ("off", "off", 1.01, "loaded but off / plain <= 1.01 (the worse of fib and mixed)"),
    ("startup", "startup", 1.03, "`-c pass`, jitdump+map / plain <= 1.03 (whole process)"),
    ("startup_xperf", "startup / -X perf", 1.00,
     "`-c pass`, jitdump+map ratio <= CPython -X perf ratio (3.12+)"),
    ("newfn", "µs/new fn", 1.5,
     "many_functions call phase, (jitdump+map - plain) / count <= 1.5 µs (wall)"),
    ("bytes", "B/fn", 256.0,
     "many_functions VmRSS growth, (jitdump+map - plain) / count <= 256 bytes"),
]


def target_values(res, it, count):
    """{key: (value, metric, applicable)} for one interpreter."""
    L = it.label
    have_ir = res.ir_ratio(L, "fib", "jitdump") is not None

    def r(workload, cfg):
        if have_ir:
            v = res.ir_ratio(L, workload, cfg)
            if v is not None:
                return v, "instr"
        return res.wall_ratio(L, workload, cfg), "wall"

    out = {}
    jd, m = r("fib", "jitdump")
    fl, _ = r("fib", "floor")
    out["floor"] = (jd / fl if jd and fl else None, m, True)
    for key in ("xperf", "xperf_jit"):
        if key in it.configs():
            xp, _ = r("fib", key)
            out[key] = (jd / xp if jd and xp else None, m, True)
        else:
            out[key] = (None, m, False)
    mx, m2 = r("mixed", "jitdump")
    out["mixed"] = (mx, m2, (3, 11) <= it.version <= (3, 14))
    o1, m3 = r("fib", "off")
    o2, _ = r("mixed", "off")
    out["off"] = (max(o1, o2) if o1 is not None and o2 is not None else None, m3, True)
    st, m4 = r("startup", "jitdump")
    out["startup"] = (st, m4, True)
    if "xperf" in it.configs():
        xs, _ = r("startup", "xperf")
        out["startup_xperf"] = (st / xs if st and xs else None, m4, True)
    else:
        out["startup_xperf"] = (None, m4, False)
    us, b = res.per_function(L, "jitdump", count)
    out["newfn"] = (us, "wall", True)
    out["bytes"] = (b, "VmRSS", True)
    return out


def verdict(value, limit, applicable):
    if value is None:
        return "n/a"
    if not applicable:
        return "(info)"
    return "PASS" if value <= limit else "MISS"


def fmt(x, digits=3):
    if x is None:
        return "-"
    return "%.*f" % (digits, x)


def md_table(headers, rows):
    widths = [len(h) for h in headers]
    for row in rows:
        for i, cell in enumerate(row):
            widths[i] = max(widths[i], len(cell))
    def line(cells):
        return "| " + " | ".join(c.ljust(widths[i]) for i, c in enumerate(cells)) + " |"
    out = [line(headers), "|" + "|".join("-" * (w + 2) for w in widths) + "|"]
    out += [line(r) for r in rows]
    return "\n".join(out)


def machine_info(lib):
    cpu = "?"
    try:
        with open("/proc/cpuinfo") as f:
            for line in f:
                if line.startswith("model name"):
                    cpu = line.split(":", 1)[1].strip()
                    break
    except OSError:
        pass
    mem = "?"
    try:
        with open("/proc/meminfo") as f:
            mem = "%.0f GiB" % (int(f.readline().split()[1]) / 1048576.0)
    except (OSError, ValueError, IndexError):
        pass
    commit = ""
    try:
        git = ["git", "-C", ROOT]
        commit = subprocess.run(git + ["rev-parse", "--short", "HEAD"], stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, universal_newlines=True,
                                timeout=30).stdout.strip()
        dirty = subprocess.run(git + ["status", "--porcelain", "--", "libpyperfinject",
                                      "include", "Makefile"],
                               stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                               universal_newlines=True, timeout=30).stdout.strip()
        if commit and dirty:
            commit += " + uncommitted library changes"
    except (OSError, subprocess.TimeoutExpired):
        pass
    try:
        libname = os.path.relpath(lib, ROOT)
        if libname.startswith(".."):
            libname = lib
        built = datetime.datetime.fromtimestamp(os.path.getmtime(lib), datetime.timezone.utc)
        commit += " (`%s`, built %s)" % (libname, built.strftime("%Y-%m-%d %H:%M UTC"))
    except OSError:
        pass
    vg = ""
    if shutil.which("valgrind"):
        try:
            vg = subprocess.run(["valgrind", "--version"], stdout=subprocess.PIPE,
                                universal_newlines=True, timeout=30).stdout.strip()
        except (OSError, subprocess.TimeoutExpired):
            pass
    return {"nproc": os.cpu_count(), "cpu": cpu, "kernel": platform.release(), "memory": mem,
            "commit": commit, "valgrind": vg,
            "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC")}


def tables(res, interps, prof, machine, elapsed, callgrind, keep_dir):
    count = prof["many"][0]
    parts = []
    # targets
    rows, npass, nmiss = [], 0, 0
    for it in interps:
        vals = target_values(res, it, count)
        row = [it.label]
        for key, _h, limit, _d in TARGETS:
            v, metric, app = vals[key]
            ver = verdict(v, limit, app)
            npass += ver == "PASS"
            nmiss += ver == "MISS"
            digits = 2 if key in ("newfn",) else 0 if key == "bytes" else 3
            cell = "-" if v is None and not app else "%s %s" % (fmt(v, digits), ver)
            if metric == "wall" and key not in ("newfn",) and v is not None:
                cell += " (wall)"
            row.append(cell)
        rows.append(row)
    heads = ["interpreter"] + ["%s ≤ %g" % (h, lim) for _k, h, lim, _d in TARGETS]
    parts.append(("targets", md_table(heads, rows), npass, nmiss))

    # ratios to plain
    rows = []
    for it in interps:
        L = it.label
        for c in it.configs():
            us = b = ipf = None
            if c != "plain":
                us, b = res.per_function(L, c, count)
                if prof.get("cg_many"):
                    ipf = res.ir_per_function(L, c, prof["cg_many"][0])
            rows.append([L, c,
                         fmt(res.ir_ratio(L, "fib", c)), fmt(res.wall_ratio(L, "fib", c)),
                         fmt(res.ir_ratio(L, "mixed", c)), fmt(res.wall_ratio(L, "mixed", c)),
                         fmt(res.ir_ratio(L, "startup", c)),
                         fmt(res.wall_ratio(L, "startup", c)),
                         fmt(us, 2), fmt(ipf, 0), fmt(b, 0)])
    heads = ["interpreter", "config", "fib instr", "fib wall", "mixed instr", "mixed wall",
             "startup instr", "startup wall", "µs/new fn", "instr/new fn", "B/fn"]
    parts.append(("ratios", md_table(heads, rows)))

    # raw medians
    rows = []
    for it in interps:
        L = it.label
        for w in ("startup", "fib", "mixed", "many"):
            for c in it.configs():
                ser = [x for x in res.series(L, w, c) if x is not None]
                if not ser and res.ir_total(L, w, c) is None:
                    continue
                extra = ""
                if w == "many":
                    cs = res.wall_median(L, w, c, "call_s")
                    cr = res.wall_median(L, w, c, "create_s")
                    g = median([None if r is None else r["metrics"].get("rss_after_kb", 0) -
                                r["metrics"].get("rss_before_kb", 0)
                                for r in res.wall.get(L, {}).get(w, {}).get(c, [])])
                    extra = "create %s s, calls %s s, RSS +%s kB" % (
                        fmt(cr), fmt(cs), "-" if g is None else "%d" % g)
                rows.append([L, w, c, str(len(ser)),
                             fmt(median(ser)), fmt(min(ser) if ser else None),
                             fmt(max(ser) if ser else None),
                             fmt(res.wall_median(L, w, c, "cpu")),
                             "-" if res.ir_total(L, w, c) is None else
                             "{:,}".format(res.ir_total(L, w, c)),
                             "-" if res.ir_own(L, w, c) is None or w == "startup" else
                             "{:,}".format(res.ir_own(L, w, c)), extra])
    heads = ["interpreter", "workload", "config", "runs", "wall median s", "min", "max",
             "cpu median s", "instructions", "minus start-up", "many_functions"]
    parts.append(("raw", md_table(heads, rows)))

    # problems
    probs = []
    for (label, c), msgs in sorted(res.problems.items()):
        for m in msgs[:5]:
            probs.append("- %s %s: %s" % (label, c, m))
    parts.append(("problems", "\n".join(probs)))

    # library symbols under callgrind
    sym = []
    for it in interps:
        rows = library_symbols(keep_dir, it.label) if callgrind else []
        if rows:
            sym.append([it.label, ", ".join("%s %s" % (name, "{:,}".format(ir))
                                            for ir, name in rows)])
    parts.append(("symbols", md_table(["interpreter", "self instructions (fib, jitdump + map)"],
                                      sym) if sym else ""))
    return parts


def render(parts, interps, prof, machine, elapsed, callgrind, args):
    d = dict((p[0], p) for p in parts)
    _n, targets, npass, nmiss = d["targets"]
    out = []
    out.append("# Benchmarks\n")
    out.append("Produced by `make bench` (`bench/run.py%s`); regenerate it rather than edit it "
               "(issue #7).\n" % (" " + " ".join(args) if args else ""))
    out.append("## Running it\n")
    out.append("- `make bench`: every x86_64, non-debug CPython 3 of the matrix "
               "(`tests/provision/interpreters.sh`; arm64, `-dbg` and Python 2 are left out), "
               "every configuration, wall time and callgrind; about 25 minutes on 2 cores. "
               "Writes this file and `build/bench/results.json` (every run's numbers); "
               "keeps the fib callgrind profiles in `build/bench/callgrind/`.")
    out.append("- `make bench-quick`, or `make bench BENCH_ARGS='--only pyenv-3.12,sid-3.14 "
               "--rounds 3'`: a subset (the report then goes to `build/bench/benchmarks.md`); "
               "`--no-callgrind`: wall time only.")
    out.append("- `bench/run.sh --smoke` (part of `make check`): tiny sizes, one round, two "
               "interpreters, no callgrind; checks that every configuration runs and prints "
               "what plain prints, and that the harness parses its numbers. It never looks at "
               "timings.\n")
    out.append("Configurations: `plain` (no preload); `floor` (`PYPERFINJECT_PASSTHROUGH=1`: "
               "the hook alone, the cost of any PEP 523 function); `map` "
               "(`PYPERFINJECT_JITDUMP=0`); `jitdump` (the default: map + jitdump + GDB JIT "
               "entries); `nogdb` (`PYPERFINJECT_GDB=0`: what the debugger entries cost is "
               "`jitdump` - `nogdb`); `off` "
               "(`PYPERFINJECT_START=0`: loaded, switched off); `xperf` / `xperf_jit` "
               "(CPython's own `-X perf` (3.12+) / `-X perf_jit` (3.13+), without the "
               "library). Workloads (`bench/workloads/`): `startup` (`-c pass`), `fib.py` "
               "(call-bound recursion), `mixed.py` (JSON, regex, formatting, an OO simulation "
               "of small methods, generator pipelines, a template renderer; prints a checksum), "
               "`many_functions.py` (100 000 new functions, each called once).\n")
    out.append("## Machine\n")
    out.append("- %s, %d processors (`nproc`), %s memory, kernel %s" % (
        machine["cpu"], machine["nproc"] or 0, machine["memory"], machine["kernel"]))
    out.append("- date: %s; library: %s; %s" % (machine["date"], machine["commit"] or "?",
                                                  machine["valgrind"] or "no valgrind"))
    out.append("- harness wall time: %.0f s" % elapsed)
    out.append("- no hardware performance counters (a VM); wall time on this machine swings "
               "by tens of percent between runs, and other jobs were running. Ratios use "
               "instruction counts where the row says `instr`.\n")
    out.append("## Interpreters\n")
    rows = [[it.label, it.probe()["version_text"], it.kind, it.command,
             ", ".join(x for x, y in (("-X perf", it.xperf), ("-X perf_jit", it.xperf_jit))
                       if y) or "-"] for it in interps]
    out.append(md_table(["label", "version", "kind", "command", "CPython trampolines"], rows))
    out.append("")
    out.append("## Sizes and method\n")
    out.append("- wall time: startup `-c pass` x %d rounds (after one warm-up run per "
               "configuration), `fib.py %s` and `mixed.py %s` x %d rounds, "
               "`many_functions.py %d %d` x %d rounds. Configurations run interleaved "
               "(plain, floor, map, ... then again, the order rotated each round); a ratio is "
               "the median of the per-round ratios to the plain run of the same round." % (
                   prof["startup_rounds"], prof["fib"], prof["mixed"], prof["rounds"],
                   prof["many"][0], prof["many"][1], prof["many_rounds"]))
    if callgrind:
        out.append("- instructions: `valgrind --tool=callgrind` (user-space instructions, "
                   "deterministic: one run each) of `-c pass`, `fib.py %s` and `mixed.py %s`; "
                   "fib and mixed are counted minus the same configuration's `-c pass`, so "
                   "the ratio is the workload's own. Wrapper scripts (sid) run under "
                   "`--trace-children=yes`." % (prof["cg_fib"], prof["cg_mixed"]))
    else:
        out.append("- instructions: not measured in this run (no callgrind).")
    out.append("- new functions: `many_functions.py` times its call phase itself (100 000 "
               "first calls of distinct functions made with compile/exec in batches); "
               "(library - plain) / count is the cost of one new function: making its "
               "trampoline and writing its map line and jitdump records (write(2) "
               "calls, invisible to instruction counts), all before it first returns. "
               "Memory: VmRSS growth over the script (all functions kept alive), "
               "(library - plain) / count.")
    if callgrind and prof.get("cg_many"):
        out.append("- instructions per new function: callgrind of `many_functions.py %d %d` "
                   "(plain, map, jitdump), minus start-up, (library - plain) / count: the "
                   "user-space part of the new-function cost." % prof["cg_many"])
    out.append("- every run is checked: exit status 0, the same output as plain, the files "
               "the configuration must (or must not) write. `-X perf` runs do not preload "
               "the library (it stands aside there by design).\n")
    out.append("## Targets\n")
    out.append("PASS/MISS never fails the harness. %d PASS, %d MISS.\n" % (npass, nmiss))
    for key, h, lim, desc in TARGETS:
        out.append("- **%s ≤ %g**: %s." % (h, lim, desc))
    out.append("- metric: `instr` (callgrind) for the ratio targets unless a cell says "
               "`(wall)`; `(info)`: shown, but no target for that version.\n")
    out.append(targets)
    out.append("")
    out.append("## Ratios to plain\n")
    out.append("`instr`: workload instructions (callgrind) / plain; `wall`: median per-round "
               "wall-time ratio; µs, instructions and bytes per new function are over plain.\n")
    out.append(d["ratios"][1])
    out.append("")
    if d["symbols"][1]:
        out.append("## Library functions under callgrind (fib, jitdump + map)\n")
        out.append("Self instructions of the library's functions (and `???` anonymous "
                   "memory: the trampolines) in the whole `fib.py %s` run.\n" % prof["cg_fib"])
        out.append(d["symbols"][1])
        out.append("")
    out.append("## Raw numbers\n")
    out.append("Wall and cpu (user + system) in seconds, medians over the rounds; "
               "instructions from one callgrind run at the callgrind sizes.\n")
    out.append(d["raw"][1])
    out.append("")
    if d["problems"][1]:
        out.append("## Problems seen\n")
        out.append(d["problems"][1])
        out.append("")
    return "\n".join(out) + "\n"


# --------------------------------------------------------------------- main
def pick_smoke(interps):
    """Two interpreters: a Debian one (statically linked, old ABI path) and the
    newest one with CPython's trampolines."""
    chosen = []
    deb = [it for it in interps if it.kind == "debian"]
    if deb:
        chosen.append(deb[-1])
    new = [it for it in interps if it.version and it.version >= (3, 12) and it not in chosen]
    new.sort(key=lambda it: (it.version, it.kind == "pyenv"))
    if new:
        chosen.append(new[-1])
    for it in interps:
        if len(chosen) >= 2:
            break
        if it not in chosen:
            chosen.append(it)
    return chosen


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--smoke", action="store_true")
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--only", default="")
    ap.add_argument("--rounds", type=int)
    ap.add_argument("--lib", default=harness.LIB)
    ap.add_argument("--no-callgrind", action="store_true")
    ap.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1),
                    help="parallel callgrind runs (instruction counts do not mind)")
    ap.add_argument("--doc")
    ap.add_argument("--label", help="describes the library in the report (default: the "
                    "commit of this tree and the library's path)")
    ap.add_argument("--no-doc", action="store_true")
    args = ap.parse_args()

    smoke = args.smoke
    prof = dict(PROFILES["smoke" if smoke else "quick" if args.quick else "full"])
    if args.rounds:
        prof["rounds"] = args.rounds
        prof["startup_rounds"] = 3 * args.rounds
        prof["many_rounds"] = max(1, (args.rounds + 1) // 2)
    only = [s for s in args.only.split(",") if s]
    tally = harness.Tally("bench")

    def check(ok, msg):
        tally.report("PASS" if ok else "FAIL", msg)

    def skip(msg):
        tally.report("SKIP", msg)

    finish = tally.summary

    lib = os.path.abspath(args.lib)
    if not os.path.exists(lib):
        if smoke:
            skip("the library is not built (%s): run make" % lib)
            return finish()
        sys.exit("bench: %s does not exist: run make" % lib)

    os.makedirs(OUT_DIR, exist_ok=True)
    scratch = tempfile.mkdtemp(prefix="pyperfinject-bench-")
    try:
        interps = discover(only)
        usable = []
        for it in interps:
            probe(it, scratch)
            if it.skip_reason:  # excluded by design, not a skipped check
                log("not measured: %s: %s" % (it.label, it.skip_reason))
                continue
            usable.append(it)
        if smoke:
            usable = pick_smoke(usable)
        if not usable:
            if smoke:
                skip("no x86_64 CPython 3 interpreter found")
                return finish()
            sys.exit("bench: no interpreter to measure")
        callgrind = not (smoke or args.no_callgrind)
        if callgrind and not shutil.which("valgrind"):
            log("valgrind is not installed: wall time only")
            callgrind = False

        log("bench: %s; %d interpreters: %s" % (
            "smoke" if smoke else "quick" if args.quick else "full", len(usable),
            ", ".join("%s (%s)" % (it.label, " ".join(it.configs()[1:])) for it in usable)))
        # A private copy: a rebuild of build/ during the run must not mix versions.
        snap = os.path.join(scratch, "libpyperfinject.so")
        shutil.copy2(lib, snap)
        runner = Runner(snap, scratch)
        machine = machine_info(lib)  # the tree's state when the library was taken
        if args.label:
            machine["commit"] = args.label
        res = Results()
        t_start = time.time()
        workloads = ("startup", "fib", "mixed", "many")
        for it in usable:
            wall_phase(runner, res, it, prof, workloads, smoke)
        keep_dir = os.path.join(OUT_DIR, "callgrind")
        if callgrind:
            os.makedirs(keep_dir, exist_ok=True)
            log("instruction counts (callgrind, %d at a time)" % args.jobs)
            callgrind_phase(runner, res, usable, prof, max(1, args.jobs), keep_dir)
        res.check_outputs()
        gdb_it = next((it for it in usable if it.label == "debian-3.11"), usable[0])
        gdb_count = 500 if smoke else 10000
        gdb_dir = os.path.join(scratch, "gdb")
        os.makedirs(gdb_dir)
        log("new functions with gdb attached: %d on %s" % (gdb_count, gdb_it.label))
        gdb_res = gdb_attached.measure(gdb_it.command, snap, gdb_count, gdb_dir)
        elapsed = time.time() - t_start

        parts = tables(res, usable, prof, machine, elapsed, callgrind, keep_dir)
        argv = []  # the options that change what is measured
        skip_next = False
        for a in sys.argv[1:]:
            if skip_next:
                skip_next = False
            elif a in ("--lib", "--label", "--doc"):
                skip_next = True
            elif not a.startswith(("--lib=", "--label=", "--doc=", "--no-doc")):
                argv.append(a)
        doc = render(parts, usable, prof, machine, elapsed, callgrind, argv)
        doc += gdb_section(gdb_res, gdb_it.label, gdb_count)

        # results.json: every number, for whoever wants to compare runs
        dump = {"machine": machine, "profile": prof, "argv": argv,
                "interpreters": [dict(label=it.label, command=it.command, kind=it.kind,
                                      version=it.probe()["version_text"], xperf=it.xperf,
                                      xperf_jit=it.xperf_jit) for it in usable],
                "wall": res.wall, "instructions": res.ir,
                "gdb_attached": dict(gdb_res, interpreter=gdb_it.label, count=gdb_count),
                "problems": dict(("%s %s" % k, v) for k, v in res.problems.items())}
        json_path = os.path.join(OUT_DIR, "smoke.json" if smoke else "results.json")
        with open(json_path, "w") as f:
            json.dump(dump, f, indent=1, sort_keys=True)

        if smoke:
            if not gdb_res:
                skip("new functions with gdb attached: gdb is not installed")
            else:
                check(all(gdb_res.get(k) is not None for k, _t, _s in gdb_attached.WAYS),
                      "new functions with gdb attached: %s" % ", ".join(
                          "%s %s s" % (k, gdb_res.get(k)) for k, _t, _s in gdb_attached.WAYS))
            return smoke_checks(res, usable, prof, parts, doc, check, finish)

        full = not (only or args.quick or args.rounds)
        doc_path = args.doc or (os.path.join(ROOT, "docs", "benchmarks.md") if full else
                                os.path.join(OUT_DIR, "benchmarks.md"))
        print()
        print(doc)
        if not args.no_doc:
            with open(doc_path, "w") as f:
                f.write(doc)
            log("written: %s, %s" % (os.path.relpath(doc_path, ROOT),
                                     os.path.relpath(json_path, ROOT)))
        return 0
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def gdb_section(gdb_res, label, count):
    out = ["\n## With a debugger attached\n",
           "`bench/gdb_attached.py`: %d new functions (`many_functions.py`'s call phase) on %s, "
           "the program started under `gdb -batch -ex run`. Each announcement to a debugger stops "
           "the process twice while gdb re-reads the arena's symbol file; the library announces "
           "once per `PYPERFINJECT_GDB_BATCH` new functions or 200 ms (docs/debuggers.md).\n"
           % (count, label)]
    if not gdb_res:
        return "\n".join(out + ["gdb is not installed: not measured.\n"])
    rows = [[title, "-" if gdb_res.get(key) is None else "%.2f" % gdb_res[key]]
            for key, title, _s in gdb_attached.WAYS]
    out.append(md_table(["how", "seconds"], rows))
    return "\n".join(out) + "\n"


def smoke_checks(res, usable, prof, parts, doc, check, finish):
    for it in usable:
        for c in it.configs():
            msgs = res.problems.get((it.label, c), [])
            ran = all(res.wall.get(it.label, {}).get(w, {}).get(c) and
                      all(x is not None for x in res.wall[it.label][w][c])
                      for w in ("startup", "fib", "mixed", "many"))
            detail = "; ".join(msgs[:3]) if msgs else (
                "all 4 workloads ran, same output as plain, files as expected" if ran else
                "some workload did not run")
            check(ran and not msgs, "%s %s: %s" % (it.label, c, detail))
    for it in usable:
        L = it.label
        bad = []
        for c in it.configs():
            for w in ("startup", "fib", "mixed", "many"):
                v = res.wall_median(L, w, c)
                if v is None or not v > 0:
                    bad.append("%s/%s wall" % (w, c))
                if c != "plain" and res.wall_ratio(L, w, c) is None:
                    bad.append("%s/%s ratio" % (w, c))
            for f in ("call_s", "create_s", "rss_before_kb", "rss_after_kb"):
                if res.wall_median(L, "many", c, f) is None:
                    bad.append("many/%s %s" % (c, f))
            if c != "plain":
                us, b = res.per_function(L, c, prof["many"][0])
                if us is None or b is None:
                    bad.append("per-function numbers for %s" % c)
        vals = target_values(res, it, prof["many"][0])
        for key, _h, _l, _d in TARGETS:
            v, _m, app = vals[key]
            if v is None and app and key not in ("xperf", "xperf_jit"):
                bad.append("target %s" % key)
        check(not bad, "%s: the harness parses its numbers%s" % (
            L, (": missing " + ", ".join(bad[:6])) if bad else ""))
    check("## Targets" in doc and all(it.label in doc for it in usable),
          "the report renders (targets, ratios, raw numbers)")
    return finish()


if __name__ == "__main__":
    sys.exit(main())
