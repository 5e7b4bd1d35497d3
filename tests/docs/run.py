#!/usr/bin/env python3
"""Every command README.md and docs/*.md show, run as a reader would run it.

The commands are taken from the files themselves: every line of a ```sh
(bash, shell) block, and the `$ ` lines of a plain block (a transcript);
backslash-continued lines are joined and trailing comments dropped. Each
command needs a check in CHECKS: how it runs here and what the text around
it promises. A documented command without a check FAILs (the docs got ahead
of the tests), and so does a check whose command no document shows any more.
A command this machine cannot run is a SKIP with the reason.

Commands run in bash in a scratch directory holding examples/app.py as
app.py, with `python`/`python3` (the interpreter under test: Debian's
/usr/bin/python3, else the python3 on PATH, resolved) and `pyperf-run` (this
tree's) first on PATH. Placeholders are filled in: /path/to/libpyperfinject.so
(this tree's build), DIR (a recording made once with pyperf-run record),
pyperf-DATE-TIME (what the documented record command made); `sudo ` is
dropped when running as root.

usage: run.py [--only SUBSTRING] [--list]
The last line is "docs: N passed, N failed, N skipped".
"""
import argparse
import glob
import gzip
import os
import re
import shlex
import shutil
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
LIB = os.path.join(ROOT, "build", "libpyperfinject.so")
DOCS = ["README.md"] + sorted(os.path.relpath(p, ROOT) for p in
                              glob.glob(os.path.join(ROOT, "docs", "*.md")))
SHELL_BLOCKS = ("sh", "bash", "shell")
# The example's own functions, as py::qualname:file symbols name them.
APP_FUNCTIONS = ("checksum", "render_page", "handle_requests", "main")


class Skip(Exception):
    pass


class Fail(Exception):
    pass


# ------------------------------------------------------------- extraction

def strip_comment(line):
    """The line without a trailing `# comment` (a # that starts a word
    outside quotes)."""
    quote = None
    for i, ch in enumerate(line):
        if quote:
            if ch == quote:
                quote = None
            elif ch == "\\" and quote == '"':
                continue
        elif ch in "'\"":
            quote = ch
        elif ch == "#" and (i == 0 or line[i - 1] in " \t"):
            return line[:i].rstrip()
    return line.rstrip()


def documented_commands():
    """[(file, line number, command)] in document order."""
    found = []
    for doc in DOCS:
        with open(os.path.join(ROOT, doc)) as f:
            lines = f.read().split("\n")
        info, pending, start = None, "", 0
        for n, line in enumerate(lines, 1):
            fence = re.match(r"^```\s*(\S*)", line)
            if fence:
                info = None if info is not None else fence.group(1)
                continue
            if info is None:
                continue
            if info in SHELL_BLOCKS:
                text = line
            elif info == "" and line.startswith("$ "):
                text = line[2:]
            else:
                continue
            if not pending:
                start = n
            if text.rstrip().endswith("\\"):
                pending += text.rstrip()[:-1].rstrip() + " "
                continue
            command = " ".join(strip_comment(pending + text).split())
            pending = ""
            if command:
                found.append((doc, start, command))
    return found


# ---------------------------------------------------------------- running

class Ctx(object):
    def __init__(self):
        self.work = tempfile.mkdtemp(prefix="pyperfinject-docs-")
        self.bin = os.path.join(self.work, "bin")
        os.mkdir(self.bin)
        self.python = interpreter()
        for name in ("python", "python3"):
            os.symlink(self.python, os.path.join(self.bin, name))
        os.symlink(os.path.join(ROOT, "pyperf-run.sh"), os.path.join(self.bin, "pyperf-run"))
        shutil.copy(os.path.join(ROOT, "examples", "app.py"), os.path.join(self.work, "app.py"))
        self.dir = None  # the shared recording (DIR)
        self.readme_recording = None  # what README's record command made
        self.start = time.time()

    def env(self, extra=None):
        env = dict(os.environ)
        for key in list(env):
            if key.startswith("PYPERFINJECT") or key == "LD_PRELOAD":
                del env[key]
        env["PATH"] = self.bin + os.pathsep + env.get("PATH", "")
        env["PYPERFINJECT_LIB"] = LIB
        env.update(extra or {})
        return env

    def fill(self, command):
        if re.search(r"(^|[;&|] *)sudo ", command):
            if os.geteuid() != 0:
                raise Skip("needs root (sudo), this runs as uid %d" % os.geteuid())
            command = re.sub(r"(^|[;&|] *)sudo ", r"\1", command)
        command = command.replace("/path/to/libpyperfinject.so", LIB)
        if re.search(r"\bDIR\b", command):
            command = re.sub(r"\bDIR\b", shlex.quote(self.recording()), command)
        if "pyperf-DATE-TIME" in command:
            if not self.readme_recording:
                raise Fail("no recording from the documented `pyperf-run record` to use")
            command = command.replace("pyperf-DATE-TIME", shlex.quote(self.readme_recording))
        return command

    def sh(self, command, extra=None, timeout=600, cwd=None):
        p = subprocess.run(["bash", "-c", command], cwd=cwd or self.work, env=self.env(extra),
                           stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, errors="replace", timeout=timeout)
        return p.returncode, p.stdout

    def recording(self):
        """DIR: one recording of app.py, made the documented way."""
        if self.dir is None:
            need_perf()
            self.dir = os.path.join(self.work, "rec")
            rc, out = self.sh("pyperf-run record -o rec -- python app.py")
            if rc != 0:
                raise Fail("making DIR: pyperf-run record exited %d: %s" % (rc, out[-400:]))
        return self.dir


def interpreter():
    for cand in ("/usr/bin/python3", shutil.which("python3")):
        if cand and os.path.exists(cand):
            out = subprocess.run([cand, "-c", "import sys; print(sys.executable)"],
                                 stdout=subprocess.PIPE, universal_newlines=True)
            return out.stdout.strip() or cand
    raise SystemExit("docs: no python3 to run the documented commands with")


def need_perf():
    ok = shutil.which("perf") and subprocess.run(
        ["perf", "record", "-q", "-e", "cpu-clock", "-o", "/dev/null", "true"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL).returncode == 0
    if not ok:
        raise Skip("perf is missing or may not record here")


def expect(rc, out, want_rc=0, patterns=(), what=""):
    if rc != want_rc:
        raise Fail("%sexit status %d, expected %d: %s" % (what, rc, want_rc, out[-600:]))
    for p in patterns:
        if not re.search(p, out, re.M):
            raise Fail("%soutput lacks /%s/: %s" % (what, p, out[-600:]))


def app_names_in(text, least=3):
    named = [f for f in APP_FUNCTIONS if re.search(r"py::%s:\S*app\.py" % f, text)]
    if len(named) < least:
        raise Fail("only %s of the example's functions named: %s" % (named, text[-400:]))
    return named


def report_text(ctx, data):
    rc, out = ctx.sh("perf report -i %s --stdio --children --sort sym -g none --no-inline "
                     "2>/dev/null" % shlex.quote(data))
    return out


def chain_share(ctx, data):
    """Samples whose chain runs py::checksum ... py::<module>, of those with
    Python frames (examples/python_chains.awk)."""
    rc, out = ctx.sh("perf script -i %s -F ip,sym --no-inline 2>/dev/null | awk -f %s" %
                     (shlex.quote(data), shlex.quote(os.path.join(ROOT, "examples",
                                                                  "python_chains.awk"))))
    total = int(re.search(r"^TOTAL\t(\d+)", out, re.M).group(1))
    whole = sum(int(m.group(1)) for m in
                re.finditer(r"^(\d+)\tpy::checksum → .*py::<module>$", out, re.M))
    return whole, total


# ----------------------------------------------------------------- checks
# One function per documented command (or family): run it, check what the
# text says it does. Each returns a note.

def c_make_demo(ctx, cmd):
    need_perf()
    rc, out = ctx.sh("make -s -C %s demo" % shlex.quote(ROOT))  # python3: first on PATH
    expect(rc, out, 0, [r"^   py::checksum → py::render_page → py::handle_requests → py::main "
                        r"→ py::<module>$"])
    return "the example's whole Python chain"


def c_make_check(ctx, cmd):
    raise Skip("this test is a stage of `make check`: it cannot run the suite it is part of")


def tmp_maps():
    """Every /tmp/perf-*.map with what tells a rewritten one apart: a path
    can be there already, left by a dead process whose PID the run gets."""
    seen = {}
    for p in glob.glob("/tmp/perf-*.map"):
        try:
            st = os.stat(p)
        except FileNotFoundError:
            continue
        seen[p] = (st.st_ino, st.st_mtime_ns, st.st_size)
    return seen


def take_tmp_map(ctx, before):
    """The /tmp/perf-PID.map naming app.py that appeared or changed since
    `before` (tmp_maps()); removes it and its jitdump (ours, in the shared
    default directory)."""
    made = [p for p, st in tmp_maps().items() if before.get(p) != st
            and os.path.join(ctx.work, "app.py") in open(p, errors="replace").read()]
    if not made:
        raise Fail("no /tmp/perf-PID.map names app.py")
    with open(made[0], errors="replace") as f:
        text = f.read()
    for p in made:
        os.unlink(p)
        dump = p.replace("/perf-", "/jit-").replace(".map", ".dump")
        if os.path.exists(dump):
            os.unlink(dump)
    return made[0], text


def c_preload(ctx, cmd):
    """LD_PRELOAD=... python app.py: the program's output as without, and
    the names in /tmp/perf-PID.map (the default directory)."""
    before = tmp_maps()
    rc, out = ctx.sh(ctx.fill(cmd))
    rc0, out0 = ctx.sh("python app.py")
    expect(rc, out, 0, [re.escape(out0.strip())] if out0.strip() else [])
    path, text = take_tmp_map(ctx, before)
    return "output unchanged; %s named in %s" % (", ".join(app_names_in(text, 4)), path)


def c_readme_record(ctx, cmd):
    need_perf()
    before = set(glob.glob(os.path.join(ctx.work, "pyperf-*")))
    rc, out = ctx.sh(ctx.fill(cmd))
    expect(rc, out, 0, [r"^pyperf-run: wrote "])
    made = sorted(set(glob.glob(os.path.join(ctx.work, "pyperf-*"))) - before)
    if len(made) != 1 or not re.match(r"pyperf-\d{8}-\d{6}$", os.path.basename(made[0])):
        raise Fail("expected one ./pyperf-DATE-TIME directory, found %s" % made)
    ctx.readme_recording = os.path.basename(made[0])
    data = os.path.join(made[0], "perf.jit.data")
    whole, total = chain_share(ctx, data)
    if whole == 0:
        raise Fail("no sample of %s shows py::checksum ... py::<module>" % data)
    return "%s: py::checksum ... py::<module> in %d of %d samples" % (
        ctx.readme_recording, whole, total)


def c_report(ctx, cmd):
    """pyperf-run report: perf report with py:: frames. The TUI form runs
    with its output to a pipe (perf falls back to --stdio)."""
    need_perf()
    rc, out = ctx.sh(ctx.fill(cmd) + " </dev/null | head -c 2000000")
    expect(rc, out, 0)
    return "%s named" % ", ".join(app_names_in(out))


def c_flamegraph(ctx, cmd):
    """The flame graph is written, names the example's functions and is the
    Python view unless --native: no eval-loop frame drawn."""
    need_perf()
    filled = ctx.fill(cmd)
    words = shlex.split(filled)
    target = os.path.join(ctx.work, words[words.index("--flamegraph") + 1])
    if os.path.exists(target):
        os.unlink(target)
    rc, out = ctx.sh(filled)
    if rc != 0 and re.search(r"(missing|not on PATH|neither on PATH|install)", out, re.I) and \
            not os.path.exists(target):
        raise Skip("no renderer here, as pyperf-run says: %s" % out.strip().splitlines()[-1][:200])
    expect(rc, out, 0)
    if not os.path.exists(target):
        raise Fail("%s was not written" % target)
    with open(target, errors="replace") as f:
        text = f.read()
    names = app_names_in(text)
    eval_loop = text.count("_PyEval_EvalFrameDefault")
    if "--native" not in words and eval_loop:
        raise Fail("%s is not the Python view: it draws _PyEval_EvalFrameDefault %d times" % (target, eval_loop))
    return "%s holds %s; _PyEval_EvalFrameDefault %d times" % (os.path.basename(target), ", ".join(names), eval_loop)


def c_export(ctx, cmd):
    """An export of the shared recording: the example's functions in it
    (pprof: through gzip and its string table)."""
    need_perf()
    filled = ctx.fill(cmd)
    target = os.path.join(ctx.work, shlex.split(filled)[4])
    if os.path.exists(target):
        os.unlink(target)
    rc, out = ctx.sh(filled)
    expect(rc, out, 0, [r"\d+ samples, \d+ functions, (the Python view|every frame)"])
    if target.endswith(".gz"):
        with gzip.open(target) as f:
            text = f.read().decode("utf-8", "replace")
    else:
        with open(target, errors="replace") as f:
            text = f.read()
    if "--native" not in filled and re.search(r"_PyEval_EvalFrameDefault|_PyFunction_Vectorcall", text):
        raise Fail("the Python view still has the interpreter's call machinery")
    return "%s: %s" % (os.path.basename(target), ", ".join(app_names_in(text)))


def c_top(ctx, cmd):
    """The text report lists the example's functions at their file:line,
    in the Python view."""
    need_perf()
    rc, out = ctx.sh(ctx.fill(cmd))
    expect(rc, out, 0, [r"^ +self +total  function"])
    # checksum is the example's only function with time of its own.
    row = re.search(r"^ +([\d.]+)% +([\d.]+)%  checksum  \S*app\.py:\d+$", out, re.M)
    if not row or float(row.group(2)) < float(row.group(1)):
        raise Fail("--top lists no checksum at app.py:LINE with total >= self: %s" % out[-600:])
    if "_PyEval_EvalFrameDefault" in out:
        raise Fail("--top is not the Python view: it lists _PyEval_EvalFrameDefault")
    return "checksum at app.py:LINE, self %s%%, total %s%%" % (row.group(1), row.group(2))


def jit_python():
    """A CPython with a JIT whose code the library follows (3.15+ of the
    matrix, tests/provision/interpreters.sh), or Skip."""
    listing = subprocess.run(["bash", os.path.join(ROOT, "tests", "provision", "interpreters.sh")],
                             stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
                             universal_newlines=True).stdout
    for line in listing.splitlines():
        label, _, rest = line.partition("\t")
        command, _, kind = rest.partition("\t")
        if kind == "sid" and re.fullmatch(r"sid-3\.(1[5-9]|[2-9]\d)", label):
            return command
    raise Skip("no CPython 3.15+ with a JIT in the matrix (make deps provisions Debian sid's)")


def c_jit_record(ctx, cmd):
    """docs/jit.md: with PYTHON_JIT=1 on 3.15, the recording's --top lists the
    example's hot function's JIT code as 'checksum [jit]' at app.py."""
    need_perf()
    python = jit_python()
    link = os.path.join(ctx.bin, "python3.15")
    if not os.path.exists(link):
        os.symlink(python, link)
    before = set(glob.glob(os.path.join(ctx.work, "pyperf-*")))
    rc, out = ctx.sh(ctx.fill(cmd))
    expect(rc, out, 0, [r"^pyperf-run: wrote "])
    made = sorted(set(glob.glob(os.path.join(ctx.work, "pyperf-*"))) - before)
    if len(made) != 1:
        raise Fail("expected one ./pyperf-DATE-TIME directory, found %s" % made)
    rc, top = ctx.sh("pyperf-run report %s --top" % made[0])
    expect(rc, top, 0, [r"^ +self +total  function"])
    row = re.search(r"^ +([\d.]+)% +([\d.]+)%  checksum \[jit\]  \S*app\.py:\d+$", top, re.M)
    if not row:
        raise Fail("--top lists no 'checksum [jit]' at app.py: %s" % top[-800:])
    return "checksum [jit] at app.py, self %s%%, total %s%%" % (row.group(1), row.group(2))


def c_go_pprof(ctx, cmd):
    """pprof itself lists the example's functions at their file:line."""
    if not shutil.which("go"):
        raise Skip("go (golang-go) is not installed")
    if not os.path.exists(os.path.join(ctx.work, "profile.pb.gz")):
        raise Fail("no profile.pb.gz from the documented export above")
    rc, out = ctx.sh(cmd, {"HOME": ctx.work})
    expect(rc, out, 0)
    listed = [f for f in APP_FUNCTIONS if re.search(r" %s \S*app\.py:\d+$" % f, out, re.M)]
    if len(listed) < 3:
        raise Fail("pprof lists %s: %s" % (listed, out[-400:]))
    return "pprof lists %s with app.py:LINE" % ", ".join(listed)


def c_upload(ctx, cmd):
    """An upload of the documented pprof export to a profiling service: run
    where the uploader is installed and its server answers on the address
    the command names, a skip saying which is missing otherwise."""
    tool = shlex.split(cmd)[0]
    address = re.search(r"(?:--url=http://|--remote-store-address=)([\w.-]+):(\d+)", cmd)
    if not shutil.which(tool):
        raise Skip("%s is not installed (a binary from its project's releases)" % tool)
    try:
        socket.create_connection((address.group(1), int(address.group(2))), timeout=2).close()
    except OSError as e:
        raise Skip("no server answers at %s:%s for %s (%s)" % (address.group(1), address.group(2), tool, e))
    if not os.path.exists(os.path.join(ctx.work, "profile.pb.gz")):
        raise Fail("no profile.pb.gz from the documented export above")
    rc, out = ctx.sh(cmd)
    expect(rc, out, 0)
    return "%s uploaded profile.pb.gz" % tool


def c_perf_script(ctx, cmd):
    need_perf()
    rc, out = ctx.sh(ctx.fill(cmd))
    expect(rc, out, 0)
    with open(os.path.join(ctx.work, "app.perf"), errors="replace") as f:
        text = f.read()
    return "app.perf: %s" % ", ".join(app_names_in(text))


def c_check(ctx, cmd):
    rc, out = ctx.sh(ctx.fill(cmd))
    expect(rc, out, 0, [r"^library: ", r"^perf: ", r"^interpreter: .*CPython 3\.\d+ .*-> record uses "
                        r"--call-graph (fp|dwarf,65528)"])
    return out.strip().splitlines()[-1][:120]


def c_exec_only(ctx, cmd):
    """pyperf-run -- python app.py: only the files, in /tmp."""
    before = tmp_maps()
    rc, out = ctx.sh(ctx.fill(cmd))
    expect(rc, out, 0, [r"^checksum "])
    path, _ = take_tmp_map(ctx, before)
    return "the program ran; its names in " + path


def c_samply(ctx, cmd):
    if not shutil.which("samply"):
        raise Skip("samply is not installed (neither Debian nor the npm registry ships it)")
    rc, out = ctx.sh(ctx.fill(cmd) + " --no-open --save-only -o samply.json.gz")
    expect(rc, out, 0)
    return "samply recorded"


def c_perf_record_g(ctx, cmd):
    """The frame-pointer form: the text says it is for interpreters built
    with frame pointers, so it runs with one of those when there is one."""
    need_perf()
    fp = frame_pointer_python(ctx)
    if not fp:
        raise Skip("no interpreter built with frame pointers here (pyperf-run check says which "
                   "are)")
    filled = ctx.fill(cmd).replace("-- python ", "-- %s " % fp).replace(
        "perf record ", "perf record -o fp.data ", 1)
    rc, out = ctx.sh(filled)
    expect(rc, out, 0)
    rc, out = ctx.sh("perf report -i fp.data --stdio --children --sort sym -g none 2>/dev/null")
    return "with %s: %s" % (fp, ", ".join(app_names_in(out)))


def frame_pointer_python(ctx):
    path = os.path.join(ROOT, "build", "interpreters.txt")
    if not os.path.exists(path):
        return None
    for row in open(path):
        label, command, kind = (row.rstrip("\n").split("\t") + ["", "", ""])[:3]
        if kind not in ("sid", "pyenv", "debian"):
            continue
        rc, out = ctx.sh("pyperf-run check -- %s 2>&1" % shlex.quote(command))
        if "with frame pointers" in out:
            return command
    return None


def c_by_hand_dwarf(ctx, cmd):
    """perf record (DWARF) / perf inject / perf report, by hand, in order."""
    need_perf()
    filled = ctx.fill(cmd)
    if filled.startswith("pyperf-run perf record"):
        rc, out = ctx.sh(filled)
        expect(rc, out, 0, [r"^checksum "])
        return "recorded perf.data"
    rc, out = ctx.sh(filled + (" --stdio --children --sort sym -g none --no-inline </dev/null"
                               if filled.startswith("perf report") else ""))
    expect(rc, out, 0)
    if filled.startswith("perf inject"):
        return "perf.jit.data written"
    # The jitted-*.so of this recording were made in /tmp (the default
    # directory); the names are in the report.
    names = app_names_in(out)
    for p in glob.glob("/tmp/jitted-*.so") + glob.glob("/tmp/jit-*.dump") + \
            glob.glob("/tmp/perf-*.map"):
        try:
            if os.path.getmtime(p) >= ctx.start and os.stat(p).st_uid == os.geteuid():
                os.unlink(p)
        except OSError:
            pass
    return ", ".join(names)


def hotspot_parser():
    if not shutil.which("hotspot"):
        return None
    listing = subprocess.run(["dpkg", "-L", "hotspot"], stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, universal_newlines=True).stdout
    for line in listing.splitlines():
        if line.endswith("/hotspot-perfparser") and os.access(line, os.X_OK):
            return line
    return shutil.which("hotspot-perfparser")


def c_hotspot(ctx, cmd):
    """pyperf-run hotspot DIR: hotspot is a window, so a stand-in runs
    hotspot's own parser as hotspot does (tests/docs/hotspot_standin.sh), in
    the environment pyperf-run gives it; its output must name the example's
    functions. (tests/wrapper's hotspot_gui opens the real window.)"""
    need_perf()
    parser = hotspot_parser()
    if not parser:
        raise Skip("hotspot is not installed (apt-get install hotspot)")
    filled = ctx.fill(cmd)
    if "/path/to/root" in filled:
        # A sysroot for recordings of another machine's binaries: this one's.
        filled = filled.replace("/path/to/root", "/")
    out_file = os.path.join(ctx.work, "hotspot.out")
    rc, out = ctx.sh(filled, {"HOTSPOT": os.path.join(HERE, "hotspot_standin.sh"),
                              "STANDIN_OUT": out_file, "STANDIN_PARSER": parser})
    expect(rc, out, 0)
    with open(out_file, "rb") as f:
        names = app_names_in(f.read().decode("latin-1"))
    args = open(out_file + ".args").read().split()
    return "hotspot's parser names %s (hotspot got: %s)" % (", ".join(names), " ".join(args)[:80])


def c_cleanup(ctx, cmd):
    d = os.path.join(ctx.work, "files")
    os.mkdir(d)
    dead = subprocess.Popen(["true"])
    dead.wait()
    old = time.time() - 2 * 86400
    for name in ("perf-%d.map" % dead.pid, "jit-%d.dump" % dead.pid, "perf-%d.map" % os.getpid()):
        with open(os.path.join(d, name), "w") as f:
            f.write("x")
        os.utime(os.path.join(d, name), (old, old))
    rc, out = ctx.sh(ctx.fill(cmd), {"PYPERFINJECT_DIR": d})
    expect(rc, out, 0)
    left = sorted(os.listdir(d))
    if left != ["perf-%d.map" % os.getpid()]:
        raise Fail("left %s (want only the running pid's file)" % left)
    return "removed the exited pid's files, kept the running one's"


def c_install(ctx, cmd):
    filled = ctx.fill(cmd)
    rc, out = ctx.sh(filled, cwd=ROOT)
    expect(rc, out, 0)
    if "uninstall" in filled:
        left = [p for p in ("/usr/local/lib/libpyperfinject.so", "/usr/local/bin/pyperf-run")
                if os.path.exists(p)]
        if left:
            raise Fail("uninstall left %s" % left)
        return "removed again"
    if "DESTDIR=" in filled:
        stage = re.search(r"DESTDIR=(\S+)", filled).group(1)
        prefix = re.search(r"PREFIX=(\S+)", filled).group(1)
        want = [stage + prefix + "/bin/pyperf-run", stage + prefix + "/lib/libpyperfinject.so"]
        missing = [p for p in want if not os.path.exists(p)]
        shutil.rmtree(stage, ignore_errors=True)
        if missing:
            raise Fail("not staged: %s" % missing)
        return "staged under " + stage
    if not os.path.exists("/usr/local/bin/pyperf-run"):
        raise Fail("/usr/local/bin/pyperf-run is not installed")
    return "installed in /usr/local"


def c_aarch64(ctx, cmd):
    if cmd.startswith("make aarch64-check"):
        raise Skip("the whole arm64 suite takes many minutes under qemu; make check runs its "
                   "smoke subset (tests/aarch64 --smoke), which `make aarch64-smoke` runs")
    rc, out = ctx.sh(cmd, cwd=ROOT, timeout=900)
    expect(rc, out, 0)
    return out.strip().splitlines()[-1][:120] if out.strip() else "built"


def c_container(ctx, cmd):
    """The container step as written; on podman when no Docker daemon runs
    (docs/containers.md: "the same with podman run"). myimage is the page's
    Dockerfile built with examples/app.py as the application
    (tests/containers/build-app-image.sh). The next commands (report, the
    flame graph) then read this recording."""
    need_perf()
    engine, extra = "docker", {}
    if not shutil.which("docker") or subprocess.run(["docker", "info"], stdout=subprocess.DEVNULL,
                                                     stderr=subprocess.DEVNULL).returncode:
        if not shutil.which("podman"):
            raise Skip("no container engine: no Docker daemon, and podman is not installed")
        engine = "podman"
        extra = {"CONTAINERS_CONF": os.path.join(ROOT, "tests", "containers", "containers.conf")}
        p = subprocess.run(["bash", os.path.join(ROOT, "tests", "containers", "build-app-image.sh"),
                            os.path.join(ctx.work, "app.py"), "localhost/myimage"],
                           env=ctx.env(extra), stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                           universal_newlines=True, errors="replace")
        if p.returncode == 77:
            raise Skip(p.stdout.strip())
        if p.returncode != 0:
            raise Fail("the page's Dockerfile does not build: %s" % p.stdout[-600:])
    rc, out = ctx.sh(ctx.fill(cmd).replace("docker run", engine + " run"), extra)
    expect(rc, out, 0, [r"^pyperf-run: wrote ", r"-> host pid [0-9]+",
                        r"added [0-9]+ binaries the profiled processes kept"])
    rc, report = ctx.sh("pyperf-run report profile -- --stdio --children --sort sym -g none "
                        "</dev/null")
    expect(rc, report, 0)
    return "with %s: %s" % (engine, ", ".join(app_names_in(report)))


def c_mkdir(ctx, cmd):
    rc, out = ctx.sh(cmd)
    expect(rc, out, 0)
    return "made"


def c_host_step(ctx, cmd):
    """The container doc's host step, without a container: a preloaded
    Python writes its files into profile/ while perf records the system.
    Reports of profile/ before that step read the container recording."""
    need_perf()
    filled = ctx.fill(cmd)
    recorded = os.path.exists(os.path.join(ctx.work, "profile", "perf.data"))
    if filled.startswith("pyperf-run report profile") and not recorded:
        raise Skip("it reads the recording of the container step above, which cannot run here")
    if filled.startswith("pyperf-run report profile --flamegraph"):
        return c_flamegraph(ctx, cmd)
    if filled.startswith("perf record"):
        os.makedirs(os.path.join(ctx.work, "profile"), exist_ok=True)
        filled = filled.replace("sleep 30", "sleep 3")
        app = subprocess.Popen(
            ["bash", "-c", "sleep 0.5; LD_PRELOAD=%s PYPERFINJECT_DIR=%s python app.py" %
             (shlex.quote(LIB), shlex.quote(os.path.join(ctx.work, "profile")))],
            cwd=ctx.work, env=ctx.env(), stdout=subprocess.DEVNULL)
        rc, out = ctx.sh(filled)
        app.wait()
        expect(rc, out, 0)
        return "3 s of the whole system (the text's 30 s, shortened), app.py inside"
    rc, out = ctx.sh(filled + (" -- --stdio --children --sort sym -g none --no-inline </dev/null"
                               if re.match(r"pyperf-run report profile$", filled) else ""))
    expect(rc, out, 0)
    if "import" in filled:
        if not os.path.exists(os.path.join(ctx.work, "profile", "perf.jit.data")):
            raise Fail("profile/perf.jit.data was not written")
        return "profile/perf.jit.data written"
    return ", ".join(app_names_in(out))


def c_record_perf_options(ctx, cmd):
    """perf's options after the first --: on perf's command line, in place
    of pyperf-run's -F; the names as in any recording."""
    need_perf()
    before = set(glob.glob(os.path.join(ctx.work, "pyperf-*")))
    rc, out = ctx.sh(ctx.fill(cmd))
    expect(rc, out, 0, [r"^pyperf-run: wrote ", r"sampled as perf's options say"])
    made = sorted(set(glob.glob(os.path.join(ctx.work, "pyperf-*"))) - before)
    if len(made) != 1:
        raise Fail("expected one new ./pyperf-DATE-TIME directory, found %s" % made)
    with open(os.path.join(made[0], "pyperf-run.txt")) as f:
        how = f.read()
    line = re.search(r"^perf record .*$", how, re.M).group(0)
    if not line.endswith(" -c 250000") or " -F " in line:
        raise Fail("perf record line: %s" % line)
    names = app_names_in(report_text(ctx, os.path.join(made[0], "perf.jit.data")))
    shutil.rmtree(made[0])
    return "%s; %s named" % (line[line.index("--call-graph"):], ", ".join(names))


def c_record_pid(ctx, cmd):
    """record --pid: a service started with the library (pyperf-run --,
    app.py in a loop) recorded for a while; the names, and the jitted code
    in the recording rather than next to the service's files."""
    need_perf()
    live = os.path.join(ctx.work, "live")
    os.mkdir(live)
    service = subprocess.Popen(
        ["pyperf-run", "--", "python", "-c",
         "import runpy\nwhile True: runpy.run_path('app.py', run_name='__main__')"],
        cwd=ctx.work, env=ctx.env({"PYPERFINJECT_DIR": live}),
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        mapfile = os.path.join(live, "perf-%d.map" % service.pid)
        for _ in range(100):
            if os.path.exists(mapfile) and "py::checksum" in open(mapfile, errors="replace").read():
                break
            time.sleep(0.1)
        else:
            raise Fail("the service wrote no py::checksum to %s" % mapfile)
        filled = ctx.fill(cmd).replace("PID", str(service.pid)).replace("--seconds 30", "--seconds 3")
        rc, out = ctx.sh(filled + " -o pidrec")
        expect(rc, out, 0, [r"^pyperf-run: recording process %d " % service.pid])
        if service.poll() is not None:
            raise Fail("the recorded service is gone (exit status %s)" % service.returncode)
    finally:
        service.kill()
        service.wait()
    rec = os.path.join(ctx.work, "pidrec")
    jitted = glob.glob(os.path.join(rec, "jitted-%d-*.so" % service.pid))
    if not jitted or glob.glob(os.path.join(live, "jitted-*")):
        raise Fail("jitted code: %d files in the recording, %d next to the service's files" %
                   (len(jitted), len(glob.glob(os.path.join(live, "jitted-*")))))
    names = app_names_in(report_text(ctx, os.path.join(rec, "perf.jit.data")))
    return "3 s of pid %d: %s named; %d jitted-*.so in the recording" % (
        service.pid, ", ".join(names), len(jitted))


def c_attach(ctx, cmd):
    """attach / detach: a service started without the library (app.py in a
    loop); after attach its functions are named in the map, after detach
    the status line says off, and the service runs on."""
    service = subprocess.Popen(
        ["python", "-c", "import runpy, sys\nprint('up', flush=True)\n"
         "while True: runpy.run_path('app.py', run_name='__main__')"],
        cwd=ctx.work, env=ctx.env({}), stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
        universal_newlines=True)
    try:
        service.stdout.readline()
        filled = ctx.fill(cmd).replace("PID", str(service.pid))
        if filled.startswith("pyperf-run detach"):
            rc, out = ctx.sh("pyperf-run attach %d" % service.pid)
            expect(rc, out, 0, [r"attached to process %d" % service.pid])
        rc, out = ctx.sh(filled)
        if filled.startswith("pyperf-run attach"):
            expect(rc, out, 0, [r"attached to process %d" % service.pid])
            mapfile = "/tmp/perf-%d.map" % service.pid
            for _ in range(100):
                if os.path.exists(mapfile) and "py::checksum" in open(mapfile, errors="replace").read():
                    break
                time.sleep(0.1)
            else:
                raise Fail("no py::checksum in %s after attach" % mapfile)
            done = "py::checksum named in %s" % mapfile
        else:
            expect(rc, out, 0, [r"profiling switched off"])
            rc, out = ctx.sh("pyperf-run --pid %d status" % service.pid)
            expect(rc, out, 0, [r"profiling off"])
            done = "status after detach: profiling off"
        if service.poll() is not None:
            raise Fail("the service is gone (exit status %s)" % service.returncode)
    finally:
        service.kill()
        service.wait()
        service.stdout.close()
        for leftover in glob.glob("/tmp/*-%d.map" % service.pid) + glob.glob("/tmp/jit-%d.dump" % service.pid):
            os.unlink(leftover)
    return done


def c_gdb(ctx, cmd):
    """gdb -p, gcore, gdb on the core: a service started with the library
    (app.py in a loop); gdb's backtrace names the example's functions, live
    and from the core file."""
    if shutil.which("gdb") is None:
        raise Skip("gdb is not installed (make deps)")
    service = subprocess.Popen(
        ["python", "-c", "import runpy, sys\nprint('up', flush=True)\n"
         "while True: runpy.run_path('app.py', run_name='__main__')"],
        cwd=ctx.work, env=ctx.env({"LD_PRELOAD": LIB, "PYPERFINJECT_DIR": ctx.work}),
        stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, universal_newlines=True)
    core = os.path.join(ctx.work, "core.%d" % service.pid)
    try:
        service.stdout.readline()
        time.sleep(0.5)  # into the example's functions
        filled = ctx.fill(cmd).replace("PID", str(service.pid))
        if filled.startswith("gdb -batch -ex bt"):
            rc, out = ctx.sh("gcore -o core %d" % service.pid)
            expect(rc, out, 0, what="making the core: ")
        rc, out = ctx.sh(filled, timeout=300)
        if filled.startswith("gcore"):
            expect(rc, out, 0)
            if not os.path.exists(core):
                raise Fail("no %s after gcore: %s" % (core, out[-400:]))
            return "core.PID written (%d MB)" % (os.path.getsize(core) >> 20)
        expect(rc, out, 0)
        named = [f for f in APP_FUNCTIONS if re.search(r"in py::%s:\S*app\.py, line \d+ \(\)" % f,
                                                         out)]
        if len(named) < 2:
            raise Fail("gdb's backtrace names %s of the example's functions: %s" % (
                named, out[-1200:]))
        return "gdb names %s%s" % (", ".join(named), " from the core" if "core" in filled else "")
    finally:
        service.kill()
        service.wait()
        service.stdout.close()
        for leftover in [core] + glob.glob(os.path.join(ctx.work, "*-%d.*" % service.pid)):
            if os.path.exists(leftover):
                os.unlink(leftover)


CHECKS = [
    # (regular expression a documented command matches in full, check)
    (r"make demo", c_make_demo),
    (r"make check", c_make_check),
    (r"LD_PRELOAD=/path/to/libpyperfinject\.so python app\.py", c_preload),
    (r"pyperf-run record -- python app\.py", c_readme_record),
    (r"pyperf-run report (pyperf-DATE-TIME|DIR)( -- .*)?", c_report),
    (r"pyperf-run report (pyperf-DATE-TIME|DIR) --flamegraph \S+( --native)?", c_flamegraph),
    (r"perf script -i DIR/perf\.jit\.data > app\.perf", c_perf_script),
    (r"pyperf-run report DIR --(pprof|speedscope|folded) \S+( --native)?", c_export),
    (r"go tool pprof -top -lines profile\.pb\.gz", c_go_pprof),
    (r"pyperf-run report DIR --top", c_top),
    (r"(profilecli upload --url=http://localhost:4040|parca-push --remote-store-address=localhost:7070 "
     r"--remote-store-insecure) --\S+=\S+=myapp profile\.pb\.gz", c_upload),
    (r"pyperf-run check -- python3", c_check),
    (r"PYTHON_JIT=1 pyperf-run record -- python3\.15 app\.py", c_jit_record),
    (r"pyperf-run -- python app\.py", c_exec_only),
    (r"pyperf-run record -- -c 250000 -- python app\.py", c_record_perf_options),
    (r"pyperf-run record --pid PID --seconds 30", c_record_pid),
    (r"pyperf-run (attach|detach) PID", c_attach),
    (r"gdb -p PID -batch -ex 'thread apply all bt'", c_gdb),
    (r"gcore -o core PID", c_gdb),
    (r"gdb -batch -ex bt \"\$\(readlink /proc/PID/exe\)\" core\.PID", c_gdb),
    (r"pyperf-run samply record python app\.py", c_samply),
    (r"pyperf-run perf record -g -- python app\.py", c_perf_record_g),
    (r"pyperf-run perf record .*--call-graph dwarf,65528 .* -o perf\.data -- python app\.py",
     c_by_hand_dwarf),
    (r"perf inject --jit -i perf\.data -o perf\.jit\.data", c_by_hand_dwarf),
    (r"perf report -i perf\.jit\.data", c_by_hand_dwarf),
    (r"pyperf-run hotspot (DIR|pyperf-DATE-TIME)( -- --sysroot /path/to/root)?", c_hotspot),
    (r"find \"\$\{PYPERFINJECT_DIR:-/tmp\}\" .*", c_cleanup),
    (r"make && sudo make install|make install DESTDIR=\S+ PREFIX=\S+|sudo make uninstall",
     c_install),
    (r"make aarch64-(check|smoke|unit-tests)", c_aarch64),
    (r"mkdir -p profile", c_mkdir),
    (r"sudo pyperf-run record -a -o profile -- docker run .*", c_container),
    (r"sudo perf record .* -a -o profile/perf\.data -- sleep 30", c_host_step),
    (r"sudo pyperf-run (import|report) profile( --flamegraph profile/flame\.html)?", c_host_step),
]


def check_for(command):
    for pattern, fn in CHECKS:
        if re.fullmatch(pattern, command):
            return pattern, fn
    return None, None


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--only", default="")
    parser.add_argument("--list", action="store_true")
    args = parser.parse_args()
    commands = documented_commands()
    if args.list:
        for doc, line, command in commands:
            print("%s:%d: %s" % (doc, line, command))
        return 0
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0}

    def report(status, where, command, note):
        counts[status] += 1
        print("%-4s %-26s %s  [%s]" % (status, where, command[:90], note.replace("\n", " ")[:300]),
              flush=True)
    ctx = Ctx()
    used = set()
    try:
        for doc, line, command in commands:
            where = "%s:%d" % (doc, line)
            pattern, fn = check_for(command)
            if fn is None:
                report("FAIL", where, command, "a documented command without a check "
                       "(tests/docs/run.py CHECKS)")
                continue
            used.add(pattern)
            if args.only and args.only not in command:
                continue
            t0 = time.time()
            try:
                note = fn(ctx, command)
                status = "PASS"
            except Skip as e:
                status, note = "SKIP", str(e)
            except Fail as e:
                status, note = "FAIL", str(e)
            except subprocess.TimeoutExpired as e:
                status, note = "FAIL", "timed out: %s" % e
            report(status, where, command, "%s; %.1f s" % (note, time.time() - t0))
        for pattern, fn in CHECKS:
            if pattern not in used:
                report("FAIL", "tests/docs/run.py", pattern, "a check for a command no document "
                       "shows any more")
    finally:
        shutil.rmtree(ctx.work, ignore_errors=True)
    print("docs: %d passed, %d failed, %d skipped" % (counts["PASS"], counts["FAIL"],
                                                      counts["SKIP"]))
    return 1 if counts["FAIL"] else 0


if __name__ == "__main__":
    sys.exit(main())
