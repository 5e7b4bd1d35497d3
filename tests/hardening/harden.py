#!/usr/bin/env python3
"""Hardening tests: hostile file systems, bad input, SIGKILL, concurrency,
processes, security (issue #8; docs/reliability.md).

Each test runs real interpreters with the library preloaded (and, where
the program's behaviour is compared, without it) and prints one line:

    PASS|FAIL|SKIP  GROUP/TEST  INTERPRETER  detail

A test that needs something absent (root, unshare, perf, an API of this
interpreter) is a SKIP with the reason, never a PASS. The last line is
"harden: N passed, N failed, N skipped".

usage: harden.py [--smoke | --full] [--lib PATH] [--preload-prefix PATHS]
                 [--checker PATH] [--interpreters FILE] [--only SUBSTRING]
                 [--interp SUBSTRING] [--keep]
  --smoke            representative interpreters per test (what `make check` runs)
  --full             every CPython 3 interpreter of the matrix, more seeds
  --lib              the library to preload (default build/libpyperfinject.so)
  --preload-prefix   put these paths first in LD_PRELOAD (a sanitizer runtime)
  --checker          the jitdump checker (default build/jitdump-check)
  --only A,B         tests named A or B exactly, or whose name contains A or B
  --interp S         the interpreter labelled S, or those whose label contains S
                     (every selected test runs on it, whatever its smoke roles)
"""
import argparse
import collections
import os
import random
import re
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
SCRIPTS = os.path.join(HERE, "scripts")
sys.path.insert(0, os.path.join(ROOT, "tests", "tools"))
import harness  # noqa: E402  (shared with tests/integration/run.py, bench)
import perfmap  # noqa: E402
import perftool  # noqa: E402
from harness import Fail, Skip  # noqa: E402

TIMEOUT = 240
NOBODY = 65534


# --------------------------------------------------------------- interpreters

def roles(interps):
    """Representative interpreters for --smoke: the Debian system python
    (static libpython), the oldest and the newest pyenv build (3.6: watcher
    thread and side table), the newest sid build (tagged frames), the newest
    free-threaded build (no GIL: many threads in the library at once)."""
    usable = [i for i in interps if not i.emulated and "2.7" not in i.label]
    by_kind = {}
    for i in usable:
        by_kind.setdefault(i.kind, []).append(i)

    def key(i):
        try:
            return i.version
        except Skip:
            return (0, 0)
    pick = {}
    if by_kind.get("debian"):
        pick["debian"] = by_kind["debian"][0]
    if by_kind.get("debian-dbg"):
        pick["debian-dbg"] = by_kind["debian-dbg"][0]
    pyenv = sorted(by_kind.get("pyenv", []), key=key)
    pyenv = [i for i in pyenv if key(i) >= (3, 6)]
    if pyenv:
        pick["oldest"] = pyenv[0]
        pick["newest-pyenv"] = pyenv[-1]
    sid = sorted(by_kind.get("sid", []), key=key)
    if sid:
        pick["newest-sid"] = sid[-1]
    ft = sorted(by_kind.get("ft", []), key=key)
    if ft:
        pick["newest-ft"] = ft[-1]
    return usable, pick


# -------------------------------------------------------------------- running

class Result(object):
    def __init__(self, rc, stdout, stderr):
        self.returncode, self.stdout, self.stderr = rc, stdout, stderr


class Ctx(object):
    def __init__(self, args):
        self.lib = os.path.abspath(args.lib)
        self.prefix = args.preload_prefix.split() if args.preload_prefix else []
        self.checker = os.path.abspath(args.checker)
        self.full = args.full
        self.base = tempfile.mkdtemp(prefix="pyperfinject-hard-")
        os.chmod(self.base, 0o755)

    def env(self, preload, extra=None):
        env = harness.clean_env(PYTHONDONTWRITEBYTECODE="1")
        if preload:
            harness.preload(env, self.lib, self.prefix)
        env.update(extra or {})
        return env

    def run(self, argv, preload, outdir, extra=None, cwd=None, timeout=TIMEOUT, preexec=None):
        env = self.env(preload, dict({"PYPERFINJECT_DIR": outdir}, **(extra or {})))
        # A session of its own: on a timeout the whole tree goes, hung
        # children included.
        p = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                             cwd=cwd or outdir, preexec_fn=preexec, start_new_session=True)
        try:
            out, err = p.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            try:
                os.killpg(p.pid, signal.SIGKILL)
            except OSError:
                pass
            p.communicate()
            raise Fail("timed out after %ds (deadlock?): %s" % (timeout, " ".join(argv)[:200]))
        return Result(p.returncode, out, err)

    def planted(self, argv, outdir, plant, extra=None, cwd=None, timeout=TIMEOUT):
        """Runs argv (preloaded) in a child whose pid is known before it
        execs: plant(pid) prepares the output directory first."""
        env = self.env(True, dict({"PYPERFINJECT_DIR": outdir}, **(extra or {})))
        io = tempfile.mkdtemp(dir=self.base)
        out_path, err_path = os.path.join(io, "out"), os.path.join(io, "err")
        r, w = os.pipe()
        pid = os.fork()
        if pid == 0:
            try:
                os.setsid()
                os.close(w)
                os.read(r, 1)
                fd = os.open(out_path, os.O_WRONLY | os.O_CREAT, 0o600)
                os.dup2(fd, 1)
                fd = os.open(err_path, os.O_WRONLY | os.O_CREAT, 0o600)
                os.dup2(fd, 2)
                os.chdir(cwd or outdir)
                os.execvpe(argv[0], argv, env)
            finally:
                os._exit(127)
        os.close(r)
        try:
            plant(pid)
        finally:
            os.write(w, b"x")
            os.close(w)
        deadline = time.time() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.time() > deadline:
                os.killpg(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise Fail("timed out after %ds (deadlock?)" % timeout)
            time.sleep(0.01)
        rc = os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)
        with open(out_path, "rb") as f:
            out = f.read()
        with open(err_path, "rb") as f:
            err = f.read()
        shutil.rmtree(io, ignore_errors=True)
        return Result(rc, out, err), pid


def ours(stderr):
    """The library's lines in stderr, and stderr without them."""
    mine, rest = [], []
    for line in stderr.splitlines(True):
        (mine if line.startswith(b"pyperfinject: ") else rest).append(line)
    return [l.rstrip(b"\n").decode("utf-8", "replace") for l in mine], b"".join(rest)


def same_program(plain, pre, what, max_lines=1, must=None):
    """The program did not notice the library: same status, stdout and
    stderr apart from at most max_lines 'pyperfinject:' lines (each
    containing `must`, if given). Returns the library's lines."""
    mine, rest = ours(pre.stderr)
    if pre.returncode != plain.returncode:
        raise Fail("%s: exit status %d with the library, %d without; stderr %r" %
                   (what, pre.returncode, plain.returncode, pre.stderr[-300:]))
    if pre.stdout != plain.stdout:
        raise Fail("%s: stdout differs: %r vs %r" % (what, pre.stdout[-200:], plain.stdout[-200:]))
    if rest != plain.stderr:
        raise Fail("%s: stderr differs beyond pyperfinject lines: %r vs %r" %
                   (what, rest[-300:], plain.stderr[-300:]))
    if len(mine) > max_lines:
        raise Fail("%s: %d pyperfinject lines (at most %d): %s" % (what, len(mine), max_lines,
                                                                   " | ".join(mine)[:400]))
    for line in mine:
        if must and not re.search(must, line):
            raise Fail("%s: warning %r does not match /%s/" % (what, line, must))
    return mine


def read_map(path, allow_partial_tail=False):
    """Strictly parsed map (tests/tools/perfmap.py), every symbol 'py::...' of
    at most perfmap.SYMBOL_MAX bytes: (entries, partial tail bytes). The
    newlines the library allocated ahead may end it (a process that left with
    os._exit, as forked children do); an unfinished line only with
    allow_partial_tail (a killed writer)."""
    entries, tail = perfmap.read(path, True, b"py::", perfmap.SYMBOL_MAX, Fail)
    if tail and not allow_partial_tail:
        raise Fail("%s ends with an unfinished line: %r" % (os.path.basename(path), tail[-80:]))
    return entries, tail


def no_overlap(entries, what):
    perfmap.require_no_overlap(entries, what, Fail)


def check_dump(ctx, path, pid=None, allow_truncated=False, expect=()):
    """Runs the dump checker; returns the loads [(index, addr, size, name)]."""
    if not os.path.exists(ctx.checker):
        raise Fail("%s is not built" % ctx.checker)
    argv = [ctx.checker, "--list"] + (["--allow-truncated"] if allow_truncated else [])
    argv += ["--pid", str(pid)] if pid else []
    for pattern in expect:
        argv += ["--expect", pattern]
    out = subprocess.run(argv + [path], stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    if out.returncode != 0:
        raise Fail("jitdump-check %s: %s" % (os.path.basename(path),
                                             out.stdout.decode("utf-8", "replace")[-600:]))
    loads = []
    for line in out.stdout.split(b"\n"):
        if line.startswith(b"load "):
            parts = line.split(b" ", 4)
            loads.append((int(parts[1]), int(parts[2], 16), int(parts[3]),
                          parts[4].decode("utf-8", "replace") if len(parts) > 4 else ""))
    return loads


def files_of(outdir, pid):
    return (os.path.join(outdir, "perf-%d.map" % pid), os.path.join(outdir, "jit-%d.dump" % pid))


def only_pid(outdir):
    maps = [f for f in os.listdir(outdir) if f.startswith("perf-") and f.endswith(".map")]
    if len(maps) != 1:
        raise Fail("expected one perf map in the output directory, found %s" % sorted(maps))
    return int(maps[0][5:-4])


def check_process_files(ctx, outdir, pid, expect_names=(), allow_partial=False, inherited=None):
    """The map and the dump of one process: valid, consistent, no overlap;
    every expected name (substring) in both. A forked child's map may also
    hold lines it inherited (names in `inherited`) that its dump does not.
    Returns the map names."""
    mpath, dpath = files_of(outdir, pid)
    if not os.path.exists(mpath):
        raise Fail("no perf map for pid %d" % pid)
    entries, _ = read_map(mpath, allow_partial)
    no_overlap(entries, "perf-%d.map" % pid)
    if len(set(e[0] for e in entries)) != len(entries):
        raise Fail("perf-%d.map names an address twice" % pid)
    if not os.path.exists(dpath):
        raise Fail("no jitdump for pid %d" % pid)
    loads = check_dump(ctx, dpath, pid=pid, allow_truncated=allow_partial)
    map_names = sorted(e[2] for e in entries)
    dump_names = sorted(l[3] for l in loads)
    if inherited is not None:
        extra = set(dump_names) - set(map_names)
        foreign = set(map_names) - set(dump_names) - inherited
        if extra or foreign:
            raise Fail("pid %d: names in the dump only %r, in the map only and not "
                       "inherited %r" % (pid, sorted(extra)[:3], sorted(foreign)[:3]))
    elif not allow_partial and map_names != dump_names:
        missing = set(map_names) ^ set(dump_names)
        raise Fail("pid %d: map (%d) and dump (%d) name different functions, e.g. %r" %
                   (pid, len(map_names), len(dump_names), sorted(missing)[:3]))
    joined = "\n".join(map_names)
    for want in expect_names:
        if want not in joined:
            raise Fail("pid %d: %r is not named" % (pid, want))
    return map_names


def script(name):
    return os.path.join(SCRIPTS, name)


def need_root(what):
    if os.geteuid() != 0:
        raise Skip("%s needs root" % what)


def in_namespace(mount_cmds, argv):
    """argv inside a private mount namespace after `mount_cmds` (sh); exit
    99 if mounting fails."""
    if shutil.which("unshare") is None:
        raise Skip("unshare(1) is not installed")
    need_root("a private mount namespace")
    return ["unshare", "-m", "--propagation", "private", "sh", "-c",
            "%s || exit 99; exec \"$@\"" % mount_cmds, "sh"] + argv


# ================================================================ 1. file system



def workload(interp):
    return [interp.command, script("churn.py"), "30"]


def plant_test(ctx, interp, work, plant, expect_warning, which):
    """Runs the workload with `plant(dir, pid)` done first; checks the
    program is unchanged, one warning, and the planted objects intact."""
    out = os.path.join(work, "out")
    os.mkdir(out)
    plain = ctx.run(workload(interp), False, out)
    state = {}
    pre, pid = ctx.planted(workload(interp), out, lambda pid: state.update(plant(out, pid) or {}))
    mine = same_program(plain, pre, "planted " + which, 1, expect_warning)
    if not mine:
        raise Fail("no warning although %s was planted" % which)
    verify = state.get("verify")
    if verify:
        verify()
    return pid, mine


def victim(work, content=b"victim\n"):
    path = os.path.join(work, "victim.txt")
    with open(path, "wb") as f:
        f.write(content)
    st = os.stat(path)
    return path, (st.st_size, st.st_mtime_ns, content)


def unchanged(path, before):
    with open(path, "rb") as f:
        data = f.read()
    st = os.stat(path)
    if (st.st_size, st.st_mtime_ns, data) != before:
        raise Fail("the planted target %s was changed: %r" % (path, data[:80]))


def t_symlink(which):
    def test(ctx, interp, work):
        vpath, before = victim(work)

        def plant(out, pid):
            mpath, dpath = files_of(out, pid)
            links = {"map": [mpath], "dump": [dpath], "both": [mpath, dpath]}[which]
            for l in links:
                os.symlink(vpath, l)

            def verify():
                unchanged(vpath, before)
                for l in links:
                    if not os.path.islink(l) or os.readlink(l) != vpath:
                        raise Fail("the planted link %s was replaced" % l)
                other = {"map": dpath, "dump": mpath}.get(which)
                if other:  # the other output carries on
                    check_process_files_one(ctx, other, pid)
            return {"verify": verify}
        pid, mine = plant_test(ctx, interp, work, plant, r"symbolic link|refusing|Too many levels",
                               "a symlink at the %s path" % which)
        return mine[0][:90]
    return test


def check_process_files_one(ctx, path, pid):
    if path.endswith(".map"):
        entries, _ = read_map(path)
        if not entries:
            raise Fail("%s is empty" % path)
    else:
        if not check_dump(ctx, path, pid=pid):
            raise Fail("%s has no loads" % path)


def t_dangling(ctx, interp, work):
    target = os.path.join(work, "created-through-link")

    def plant(out, pid):
        for p in files_of(out, pid):
            os.symlink(target + os.path.basename(p), p)

        def verify():
            left = [f for f in os.listdir(work) if f.startswith("created-through-link")]
            if left:
                raise Fail("a file was created through a dangling link: %s" % left)
        return {"verify": verify}
    _, mine = plant_test(ctx, interp, work, plant, r"symbolic link|refusing", "dangling symlinks")
    return mine[0][:90]


def t_hardlink(ctx, interp, work):
    vpath, before = victim(work)

    def plant(out, pid):
        for p in files_of(out, pid):
            os.link(vpath, p)
        return {"verify": lambda: unchanged(vpath, before)}
    _, mine = plant_test(ctx, interp, work, plant, r"hard links|refusing", "hard links")
    return mine[0][:90]


def t_fifo_dir(ctx, interp, work):
    def plant(out, pid):
        mpath, dpath = files_of(out, pid)
        os.mkfifo(mpath, 0o600)
        os.mkdir(dpath)

        def verify():
            if not stat.S_ISFIFO(os.lstat(mpath).st_mode) or not os.path.isdir(dpath):
                raise Fail("the planted fifo/directory was replaced")
        return {"verify": verify}
    _, mine = plant_test(ctx, interp, work, plant, r"not a regular file|Is a directory|refusing",
                         "a fifo and a directory")
    return mine[0][:90]


def t_other_owner(ctx, interp, work):
    need_root("chown to another user")

    def plant(out, pid):
        saved = []
        for p in files_of(out, pid):
            with open(p, "wb") as f:
                f.write(b"belongs to nobody\n")
            os.chown(p, NOBODY, NOBODY)
            os.chmod(p, 0o666)
            saved.append((p, os.stat(p).st_mtime_ns))

        def verify():
            for p, mtime in saved:
                st = os.stat(p)
                with open(p, "rb") as f:
                    if f.read() != b"belongs to nobody\n" or st.st_uid != NOBODY or \
                            st.st_mtime_ns != mtime or stat.S_IMODE(st.st_mode) != 0o666:
                        raise Fail("another user's file %s was modified" % p)
        return {"verify": verify}
    _, mine = plant_test(ctx, interp, work, plant, r"owned by another user|refusing",
                         "files owned by another user")
    return mine[0][:90]


def t_stale_own(ctx, interp, work):
    """A stale file of ours from an earlier process with the same pid is
    emptied, then written."""
    def plant(out, pid):
        for p in files_of(out, pid):
            with open(p, "wb") as f:
                f.write(b"stale garbage \x00\xff line without newline" * 100)
            os.chmod(p, 0o644)
    out = os.path.join(work, "out")
    os.mkdir(out)
    pre, pid = ctx.planted(workload(interp), out, lambda pid: plant(out, pid))
    if pre.returncode != 0 or ours(pre.stderr)[0]:
        raise Fail("rc %d, stderr %r" % (pre.returncode, pre.stderr[-300:]))
    names = check_process_files(ctx, out, pid, ["py::churn_0_29:<churn>"])
    for p in files_of(out, pid):
        if stat.S_IMODE(os.stat(p).st_mode) != 0o600:
            raise Fail("%s is not 0600 after reuse" % p)
    return "%d names, stale content gone" % len(names)


def t_readonly(ctx, interp, work):
    out = os.path.join(work, "ro")
    os.mkdir(out)
    argv = workload(interp)
    plain = ctx.run(argv, False, out)
    pre = ctx.run(in_namespace('mount -t tmpfs -o ro,size=64k none "%s"' % out, argv), True, out)
    if pre.returncode == 99:
        raise Skip("cannot mount a tmpfs here: %r" % pre.stderr[-200:])
    mine = same_program(plain, pre, "read-only directory", 1, r"Read-only file system")
    if not mine:
        raise Fail("no warning for a read-only directory")
    return mine[0][:90]


def t_unwritable_unprivileged(ctx, interp, work):
    """An unprivileged process and a root-owned 0755 directory."""
    need_root("running as another user")
    if shutil.which("setpriv") is None:
        raise Skip("setpriv(1) is not installed")
    if not os.access(interp.command, os.X_OK) or interp.command.startswith("/root/"):
        raise Skip("%s is not reachable by an unprivileged user" % interp.command)
    out = os.path.join(work, "rootdir")
    os.mkdir(out, 0o755)
    argv = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
            interp.command, script("churn.py"), "30"]
    plain = ctx.run(argv, False, out, cwd="/")
    pre = ctx.run(argv, True, out, cwd="/")
    mine = same_program(plain, pre, "unwritable directory", 1, r"Permission denied")
    if not mine or os.listdir(out):
        raise Fail("expected one warning and no files, got %s, %s" % (mine, os.listdir(out)))
    return mine[0][:90]


def tmpfs_run(ctx, interp, work, size, fill, count):
    mnt = os.path.join(work, "small")
    got = os.path.join(work, "got")
    os.mkdir(mnt)
    os.mkdir(got)
    argv = [interp.command, script("churn.py"), str(count)]
    fill_cmd = ' && dd if=/dev/zero of="%s/fill" bs=4k 2>/dev/null; true' % mnt if fill else ""
    shell = ('mount -t tmpfs -o size=%s none "%s"%s' % (size, mnt, fill_cmd))
    wrapped = in_namespace(shell, ["sh", "-c", '"$@"; rc=$?; cp -a "%s"/. "%s"/; exit $rc' %
                                   (mnt, got), "sh"] + argv)
    plain = ctx.run(argv, False, got)
    pre = ctx.run(wrapped, True, mnt, cwd=work)
    if pre.returncode == 99:
        raise Skip("cannot mount a tmpfs here: %r" % pre.stderr[-200:])
    return plain, pre, got


def t_enospc_start(ctx, interp, work):
    plain, pre, got = tmpfs_run(ctx, interp, work, "64k", True, 200)
    mine = same_program(plain, pre, "full directory", 2, r"No space left")
    if not mine:
        raise Fail("no warning although the directory is full")
    problems = []
    for name in sorted(os.listdir(got)):
        path = os.path.join(got, name)
        if name.startswith("perf-"):
            read_map(path)
        elif name.startswith("jit-") and os.path.getsize(path) > 0:
            check_dump(ctx, path)
        elif name.startswith("jit-"):
            problems.append("an empty %s is left behind" % name)
    if problems:
        raise Fail("; ".join(problems) + " (warnings: %s)" % " | ".join(mine))
    return " | ".join(mine)[:120]


def t_enospc_midway(ctx, interp, work):
    plain, pre, got = tmpfs_run(ctx, interp, work, "256k", False, 3000)
    mine = same_program(plain, pre, "disk full while running", 2, r"No space left")
    if not mine:
        raise Fail("no warning although the disk filled up")
    pid = only_pid(got)
    mpath, dpath = files_of(got, pid)
    entries, _ = read_map(mpath)  # whole lines only
    loads = check_dump(ctx, dpath, pid=pid) if os.path.exists(dpath) else []
    return "%d map lines, %d loads kept whole; %s" % (len(entries), len(loads),
                                                      " | ".join(mine)[:100])


def t_rlimit_fsize(ctx, interp, work):
    import resource
    out = os.path.join(work, "out")
    os.mkdir(out)
    limit = 64 * 1024

    def lim():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
    argv = [interp.command, script("churn.py"), "2000"]
    plain = ctx.run(argv, False, out, preexec=lim)
    pre = ctx.run(argv, True, out, preexec=lim)
    mine = same_program(plain, pre, "RLIMIT_FSIZE", 2, r"too large|File too large")
    if not mine:
        raise Fail("no warning although the files hit RLIMIT_FSIZE")
    pid = only_pid(out)
    mpath, dpath = files_of(out, pid)
    entries, _ = read_map(mpath)
    loads = check_dump(ctx, dpath, pid=pid)
    if os.path.getsize(mpath) > limit or os.path.getsize(dpath) > limit:
        raise Fail("a file exceeds the limit")
    return "%d lines, %d loads; %s" % (len(entries), len(loads), " | ".join(mine)[:80])


def t_deleted_dir(ctx, interp, work):
    """The output directory is deleted while the program runs; a child
    forked afterwards cannot create its files."""
    plain_dir = os.path.join(work, "plain")
    out = os.path.join(work, "out")
    os.mkdir(plain_dir)
    os.mkdir(out)
    plain = ctx.run([interp.command, script("deleted_dir.py"), plain_dir], False, work)
    pre = ctx.run([interp.command, script("deleted_dir.py"), out], True, out, cwd=work)
    mine = same_program(plain, pre, "deleted directory", 2, r"forked child|No such file")
    if os.path.exists(out):
        raise Fail("the deleted directory was recreated")
    if len(mine) > 1:
        raise Fail("the child printed %d warnings for one problem: %s" % (len(mine),
                                                                         " | ".join(mine)))
    return mine[0][:90] if mine else "no warning"


def t_deleted_cwd(ctx, interp, work):
    """Started in a deleted directory (getcwd fails): relative and empty
    code file names still give valid lines and dump records."""
    out = os.path.join(work, "out")
    gone = os.path.join(work, "gone")
    os.mkdir(out)
    os.mkdir(gone)
    code = ("ns = {}\n"
            "for fn, name in (('', 'emptyfile'), ('rel.py', 'relfile')):\n"
            "    exec(compile('def %s():\\n    return 1\\n' % name, fn, 'exec'), ns)\n"
            "    ns[name]()\n"
            "print('cwd gone')\n")

    argv = [interp.command, "-c", code]
    env = ctx.env(True, {"PYPERFINJECT_DIR": out})
    p = subprocess.run(["sh", "-c", 'cd "$1" && rmdir "$1" && shift && exec "$@"', "sh", gone] +
                       argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                       timeout=TIMEOUT)
    if p.returncode != 0 or b"cwd gone" not in p.stdout or ours(p.stderr)[0]:
        raise Fail("rc %d, %r %r" % (p.returncode, p.stdout[-100:], p.stderr[-300:]))
    pid = only_pid(out)
    check_process_files(ctx, out, pid, ["py::emptyfile:", "py::relfile:rel.py"])
    return "relative names stay relative"


# ================================================================ 2. bad input

def huge(n=100000):
    return "a" * n


BAD_VALUES = ["", " ", huge(), "-1", "-0", "+1", "1 ", " 1", "0x1", "1e3", "99999999999999999999",
              "-99999999999999999999", "\x01\x02", b"\xff\xfe", "yes\n", "TRUE", "oN", "\uff11",
              "2", "4", "3", "none", "USR2", "SIGRTMIN+1", "RTMIN+99", "/", "relative/dir",
              "/tmp/\n", "/" + "d" * 5000, "/nonexistent/x", "%s%n", "31536001"]

SIGRTMIN = 34


def model(var, value):
    """The documented grammar (docs/configuration.md); True if accepted."""
    if isinstance(value, bytes):
        return False if var not in ("DIR", "KEEP_BINARIES") else value.startswith(b"/")
    v = value

    def is_int(s, lo, hi):
        if not s or len(s) > 12:
            return False
        m = re.match(r"^[ \t\n\v\f\r]*([+-]?)([0-9]+)$", s)
        if not m:
            return False
        n = int(m.group(2)) * (-1 if m.group(1) == "-" else 1)
        return lo <= n <= hi
    if var in ("ENABLE", "MAP", "JITDUMP", "GDB", "FORK_COPY", "START", "PASSTHROUGH"):
        return v.lower() in ("1", "0", "yes", "no", "on", "off", "true", "false")
    if var == "VERBOSE":
        return is_int(v, 0, 3)
    if var == "DURATION":
        return is_int(v, 0, 31536000)
    if var == "GDB_BATCH":
        return is_int(v, 1, 1024)
    if var == "KEEP_BINARIES" and v.lower() in ("1", "0", "yes", "no", "on", "off", "true", "false"):
        return True
    if var in ("DIR", "KEEP_BINARIES"):
        return bool(v) and v.startswith("/") and len(v.encode()) < 4064 and \
            not any(ord(c) < 0x20 or ord(c) == 0x7f for c in v)
    if var == "SIGNAL":
        s = v
        if s.lower() == "none" or s == "0":
            return True
        if s[:3].upper() == "SIG":
            s = s[3:]
        if s.upper() in ("USR1", "USR2"):
            return True
        if s[:5].upper() == "RTMIN":
            if s[5:] == "":
                return True
            return s[5] == "+" and is_int(s[6:], 0, 64) and \
                SIGRTMIN + int(s[6:].strip()) <= 64
        if is_int(v, 1, 64):
            n = int(v.strip())
            return n in (10, 12) or SIGRTMIN <= n <= 64
        return False
    raise ValueError(var)


def t_env(var):
    def test(ctx, interp, work):
        out = os.path.join(work, "out")
        os.mkdir(out)
        argv = [interp.command, "-c", "def f():\n    return 42\nprint(f())\n"]
        plain = ctx.run(argv, False, out)
        checked = rejected = 0
        for value in BAD_VALUES:
            if var in ("DIR", "KEEP_BINARIES") and value in ("/",):
                continue  # would write into / (accepted, but not here)
            name = "PYPERFINJECT_" + var
            env = {name: value} if not isinstance(value, bytes) else {}
            e = ctx.env(True, {"PYPERFINJECT_DIR": out})
            e.update(env)
            if var != "DIR":
                e["PYPERFINJECT_DIR"] = out
            eb = dict((k.encode(), v.encode("utf-8", "surrogateescape")) for k, v in e.items())
            if isinstance(value, bytes):
                eb[name.encode()] = value
            try:
                p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=eb,
                                   cwd=out, timeout=60)
            except subprocess.TimeoutExpired:
                raise Fail("%s=%r: timed out" % (name, value[:20]))
            pre = Result(p.returncode, p.stdout, p.stderr)
            accepted = model(var, value)
            shown = repr(value[:24])
            if accepted:
                mine = same_program(plain, pre, "%s=%s" % (name, shown), 5)
                if any("bad value" in l for l in mine):
                    raise Fail("%s=%s: rejected, but the documented grammar accepts it: %s" %
                               (name, shown, mine))
            else:
                rejected += 1
                mine = same_program(plain, pre, "%s=%s" % (name, shown), 1,
                                    r"bad value for %s " % name)
                if len(mine) != 1:
                    raise Fail("%s=%s: no warning for a bad value" % (name, shown))
                if os.listdir(out):
                    raise Fail("%s=%s: files written despite the bad value" % (name, shown))
            for f in os.listdir(out):
                if os.path.isdir(os.path.join(out, f)):  # binaries/ (KEEP_BINARIES)
                    shutil.rmtree(os.path.join(out, f))
                else:
                    os.unlink(os.path.join(out, f))
            checked += 1
        return "%d values, %d rejected with one line" % (checked, rejected)
    return test


def t_names(ctx, interp, work):
    out = os.path.join(work, "out")
    os.mkdir(out)
    argv = [interp.command, script("hostile_names.py")]
    plain = ctx.run(argv, False, out)
    pre = ctx.run(argv, True, out)
    same_program(plain, pre, "hostile_names.py", 0)
    pid = only_pid(out)
    names = check_process_files(ctx, out, pid)
    ran = re.findall(rb"^(mk\d+) ran", pre.stdout, re.M)
    unsupported = re.findall(rb"^(mk\d+) unsupported", pre.stdout, re.M)
    joined = "\n".join(names)
    missing = [m.decode() for m in ran if m.decode() not in joined]
    if missing:
        raise Fail("functions that ran are not named: %s" % missing)
    cwd = out
    exact = {
        "mk01": "py::mk01_a\\x0ab:",
        "mk02": "py::mk02_\\x0d\\x09\\x00\\x1b[31m\\x7f:",
        "mk03": "py::mk03_\u0085\u2028\u202e\ufeff:",
        "mk04": "py::mk04_\\ud800:",
        "mk05": "py::mk05_\\xff\\x80:",
        "mk15": "py::mk15:%s/rel/dir/x.py" % cwd,
        "mk16": "py::mk16:/tmp/a\\x00b.py",
        "mk17": "py::mk17:/tmp/\\xff\\xfe.py",
        "mk23": "py::mk23_\\x00:",
        "mk12": "py:::/tmp/mk12.py",
    }
    for marker, want in exact.items():
        if marker.encode() in ran and not any(n.startswith(want) for n in names):
            got = [n for n in names if marker in n][:1]
            raise Fail("%s: expected a name starting %r, got %r" % (marker, want, got))
    for marker in ("mk06", "mk07", "mk08", "mk18"):
        got = [n for n in names if marker in n]
        if got and not got[0].endswith("..."):
            raise Fail("%s: a cut name does not end with '...': %r" % (marker, got[0][-40:]))
    dups = sum(1 for n in names if n.startswith("py::mk42_dup\\x0a:"))
    # 3.6/3.7 (side table): a code object at a dead one's address with the
    # same name, file and line may reuse its trampoline (same symbol).
    if dups != 50 and not (interp.version < (3, 8) and dups >= 1):
        raise Fail("mk42: %d trampolines named for 50 code objects" % dups)
    return "%d cases named, %d refused by this version, %d names valid in map and dump" % (
        len(ran), len(unsupported), len(names))


# ================================================================ 3. SIGKILL

def kill_once(ctx, interp, work, rng, record_perf=False):
    out = os.path.join(work, "out")
    os.mkdir(out)
    env = ctx.env(True, {"PYPERFINJECT_DIR": out})
    argv = [interp.command, script("kill_target.py")]
    if record_perf:
        env["PERF_BUILDID_DIR"] = os.path.join(work, "buildid")
        argv = ["perf", "record", "-q", "-k", "1", "-e", "cpu-clock", "-F", "999", "-g",
                "-o", os.path.join(work, "perf.data"), "--"] + argv
    proc = subprocess.Popen(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE, env=env,
                            cwd=out)
    first = proc.stdout.readline()
    m = re.match(rb"pid (\d+)", first)
    if not m:
        proc.kill()
        raise Fail("kill_target.py did not start: %r %r" % (first, proc.stderr.read()[-300:]))
    pid = int(m.group(1))
    started = proc.stdout.readline()  # creating functions now
    delay = rng.uniform(0.02, 0.8)
    time.sleep(delay)
    os.kill(pid, signal.SIGKILL)
    rest, err = proc.communicate(timeout=TIMEOUT)
    names = set(re.findall(rb"^started (\S+)$", started + rest, re.M))
    mpath, dpath = files_of(out, pid)
    entries, tail = read_map(mpath, allow_partial_tail=True)
    mapped = set(e[2].split(":")[2] for e in entries)
    loads = check_dump(ctx, dpath, pid=pid, allow_truncated=True)
    dumped = set(l[3].split(":")[2] for l in loads)
    lost_map = [n.decode() for n in names if n.decode() not in mapped]
    lost_dump = [n.decode() for n in names if n.decode() not in dumped]
    if lost_map or lost_dump:
        raise Fail("killed after %.2fs: %d started functions missing from the map (%s), %d "
                   "from the dump (%s)" % (delay, len(lost_map), lost_map[:3], len(lost_dump),
                                           lost_dump[:3]))
    if not names:
        raise Fail("no function reported starting before the kill")
    return pid, len(names), len(entries), len(loads), bool(tail), out


def t_kill(ctx, interp, work):
    seeds = 20 if ctx.full else 5
    rng = random.Random(8000 + seeds)
    total = partial = 0
    for i in range(seeds):
        w = os.path.join(work, "k%d" % i)
        os.mkdir(w)
        _, n, lines, loads, tail, _ = kill_once(ctx, interp, w, rng)
        total += n
        partial += tail
        shutil.rmtree(w, ignore_errors=True)
    return "%d kills, %d started functions all in map and dump (%d maps ended mid-line)" % (
        seeds, total, partial)


def t_kill_perf(ctx, interp, work):
    why = perftool.why_unusable()
    if why:
        raise Skip(why)
    rng = random.Random(4242)
    pid, n, lines, loads, _, out = kill_once(ctx, interp, work, rng, record_perf=True)
    dump = files_of(out, pid)[1]
    notes = []
    # The dump as the kill left it, then cut inside records at random offsets.
    size = os.path.getsize(dump)
    with open(dump, "rb") as f:
        original = f.read()
    # The library grows the dump ahead of its records (docs/design.md): a
    # killed writer leaves zeros after them, which every reader must stop at.
    zeros = len(original) - len(original.rstrip(b"\0"))
    if zeros == 0:
        raise Fail("the killed process's dump ends in no zeros: the test no longer covers them")
    notes.append("%d zero bytes after the records" % zeros)
    for cut in [None] + sorted(rng.sample(range(41, size), 3)):
        with open(dump, "wb") as f:
            f.write(original if cut is None else original[:cut])
        check_dump(ctx, dump, pid=pid, allow_truncated=True)
        for f in os.listdir(out):
            if f.startswith("jitted-"):
                os.unlink(os.path.join(out, f))
        inj = subprocess.run(["perf", "inject", "--jit", "-i", os.path.join(work, "perf.data"),
                              "-o", os.path.join(work, "perf.jit.data")],
                             stdout=subprocess.PIPE, stderr=subprocess.PIPE, cwd=work,
                             env=dict(os.environ, PERF_BUILDID_DIR=os.path.join(work, "buildid")))
        if inj.returncode != 0:
            raise Fail("perf inject --jit failed on a dump cut at %s: %r" % (cut, inj.stderr[-300:]))
        made = len([f for f in os.listdir(out) if f.startswith("jitted-%d-" % pid)])
        rep = subprocess.run(["perf", "report", "-i", os.path.join(work, "perf.jit.data"),
                              "--stdio", "--sort", "sym"], stdout=subprocess.PIPE,
                             stderr=subprocess.PIPE, cwd=work,
                             env=dict(os.environ, PERF_BUILDID_DIR=os.path.join(work, "buildid")))
        if rep.returncode != 0:
            raise Fail("perf report on the injected data failed: %r" % rep.stderr[-300:])
        notes.append("%s: %d ELF" % ("whole" if cut is None else "cut@%d" % cut, made))
        if cut is None and made < loads * 0.9:
            raise Fail("perf inject made %d ELF files for %d loads" % (made, loads))
    return "%d functions; perf inject ok: %s" % (n, ", ".join(notes))


# ================================================================ 4. concurrency

def t_threads(ctx, interp, work):
    out = os.path.join(work, "out")
    os.mkdir(out)
    t, m = 64, 1000
    start = time.time()
    pre = ctx.run([interp.command, script("threads64.py"), str(t), str(m)], True, out)
    took = time.time() - start
    if pre.returncode != 0 or b"done %d errors 0" % (t * m) not in pre.stdout or ours(pre.stderr)[0]:
        raise Fail("rc %d %r %r" % (pre.returncode, pre.stdout[-200:], pre.stderr[-300:]))
    pid = only_pid(out)
    names = check_process_files(ctx, out, pid)
    made = set(n.split(":")[2] for n in names if n.endswith(":<threads64>"))
    made.discard("<module>")
    want = set("thr%d_%d" % (a, b) for a in range(t) for b in range(m))
    if made != want:
        raise Fail("%d of %d functions named; missing e.g. %s" % (len(made & want), len(want),
                                                                  sorted(want - made)[:3]))
    return "%d threads x %d functions in %.1fs: %d lines, all whole, none overlap" % (
        t, m, took, len(names))


def ft_stress_once(ctx, interp, work, mode, t, m):
    out = os.path.join(work, "out")
    os.mkdir(out)
    pre = ctx.run([interp.command, "-W", "ignore::DeprecationWarning", script("ft_stress.py"),
                   str(t), str(m), mode], True, out, timeout=300)
    total = t * m * (2 if mode == "switch" else 1)
    if pre.returncode != 0 or b"done %d errors 0" % total not in pre.stdout or ours(pre.stderr)[0]:
        raise Fail("%s: rc %d %r %r" % (mode, pre.returncode, pre.stdout[-200:],
                                        pre.stderr[-300:]))
    pid = int(re.search(rb"^pid (\d+)", pre.stdout, re.M).group(1))
    names = check_process_files(ctx, out, pid)
    mine = [n.split(":")[2] for n in names if n.endswith(":<ft_stress>")]
    mine = [n for n in mine if n != "<module>"]  # one per exec'd definition
    if len(mine) != len(set(mine)):
        counts = collections.Counter(mine)
        raise Fail("%s: named twice: %s" % (mode, sorted(n for n, c in counts.items()
                                                          if c > 1)[:3]))
    made = set(mine)
    # Switched off meanwhile, a first call may run unnamed; afterwards every
    # one is named.
    prefix = "fin" if mode == "switch" else "ft"
    want = set("%s%d_%d" % (prefix, a, b) for a in range(t) for b in range(m))
    if not want <= made:
        raise Fail("%s: %d of %d functions named; missing e.g. %s" % (
            mode, len(want & made), len(want), sorted(want - made)[:3]))
    kids = re.findall(rb"^child (\d+) (\d+)$", pre.stdout, re.M)
    inherited = set(names)
    for n, kid in kids:
        check_process_files(ctx, out, int(kid), expect_names=[
            "py::kid%s_%d:<ft_stress>" % (n.decode(), i) for i in range(5)], inherited=inherited)
    if mode == "fork" and len(kids) != 8:
        raise Fail("fork: %d children reported, want 8" % len(kids))
    return len(made), len(names)


def t_ft_stress(ctx, interp, work):
    """Free-threaded builds run the library on 32 threads at once: no crash,
    whole unique lines, every function named; also while switching on and
    off, and while the main thread forks."""
    ft = interp.probe().get("free_threaded")
    runs = (50 if ctx.full else 6) if ft else (5 if ctx.full else 1)
    modes = ("plain", "switch", "fork")
    named = lines = 0
    for r in range(runs):
        mode = modes[r % len(modes)]
        w = os.path.join(work, "r%d" % r)
        os.mkdir(w)
        a, b = ft_stress_once(ctx, interp, w, mode, 32, 2000)
        named += a
        lines += b
        shutil.rmtree(w, ignore_errors=True)
    return "%d runs (plain, switch, fork) of 32 threads x 2000 new functions%s: %d named " \
        "once each, %d whole lines" % (runs, " (free-threaded)" if ft else "", named, lines)


def t_forks(ctx, interp, work):
    out = os.path.join(work, "out")
    os.mkdir(out)
    counts = ["100", "20", "4", "8", "8", "40"]  # 100 + 20*3 + 4*8 + 8 workers = 200 children
    argv = [interp.command, "-W", "ignore::DeprecationWarning", script("forks.py")] + counts
    plain = ctx.run(argv, False, out)
    for f in os.listdir(out):
        os.unlink(os.path.join(out, f))
    pre = ctx.run(argv, True, out, timeout=300)
    if pre.returncode != 0 or b"forks done 0" not in pre.stdout:
        raise Fail("rc %d %r %r" % (pre.returncode, pre.stdout[-200:], pre.stderr[-300:]))
    mine = ours(pre.stderr)[0]
    if mine:
        raise Fail("warnings: %s" % " | ".join(mine)[:300])

    def tags(text):
        return sorted(re.findall(rb"^(?:child|mp) \d+ (\S+)$", text, re.M))
    if tags(plain.stdout) != tags(pre.stdout):
        raise Fail("the children did different things with the library")
    children = dict((int(p), t.decode()) for p, t in
                    re.findall(rb"^child (\d+) (\S+)$", pre.stdout, re.M))
    tasks = {}
    for pid, tag in re.findall(rb"^mp (\d+) task(\d+)$", pre.stdout, re.M):
        tasks.setdefault(int(pid), []).append(tag.decode())
    pids = sorted(int(f[5:-4]) for f in os.listdir(out) if f.startswith("perf-"))
    files = len(os.listdir(out))
    if files != 2 * len(pids):
        raise Fail("%d files for %d processes: a map or a dump is missing" % (files, len(pids)))
    parent = int(re.findall(rb"^forks done \d+ parent (\d+)$", pre.stdout, re.M)[0])
    # Children write their own functions; one that kept running (nested
    # parents, pool workers) also has its ancestors' map lines.
    everything = set()
    for pid in pids:
        everything.update(e[2] for e in read_map(files_of(out, pid)[0])[0])
    inherited = 0
    for pid in pids:
        if pid in children:
            want = ["py::child_%s:<forks>" % children[pid]]
        else:  # the parent, pool workers (those that got tasks name them)
            want = ["py::mp_task_%s:<forks>" % t for t in tasks.get(pid, [])]
        names = check_process_files(ctx, out, pid, want,
                                    inherited=everything if pid != parent else None)
        inherited += pid != parent and "py::parent_before_fork:" in "\n".join(names)
    lost = sorted(set(children) - set(pids))
    if lost:
        raise Fail("children without files: %s" % lost[:5])
    nproc = len(pids) - 1
    if nproc < 200:
        raise Fail("only %d child processes made files" % nproc)
    return "%d child processes (raw, nested, from threads, multiprocessing): maps and dumps " \
        "consistent, %d with the parent's lines" % (nproc, inherited)


def t_fork_thread_exit(ctx, interp, work):
    """Forks while other threads exit (pthread_exit unwinds through libgcc
    on 3.6-3.8): no child may hang. Registering arenas with libgcc
    (__register_frame_table) makes every unwind take libgcc's global mutex;
    a fork while another thread holds it leaves it locked in the child."""
    out = os.path.join(work, "out")
    os.mkdir(out)
    argv = [interp.command, "-W", "ignore::DeprecationWarning", script("fork_thread_exit.py"),
            "150", "1100", "30000"]
    start = time.time()
    plain = ctx.run(argv, False, out, timeout=120)
    took = time.time() - start
    if plain.returncode != 0:
        raise Skip("the workload fails without the library: %r" % plain.stderr[-200:])
    limit = max(40, int(took * 6))
    try:
        pre = ctx.run(argv, True, out, {"PYPERFINJECT_FORK_COPY": "0"}, timeout=limit)
    except Fail:
        raise Fail("deadlock: not done after %ds (%.0fs without the library); a child waits "
                   "for libgcc's object_mutex, inherited locked from a thread that was "
                   "unwinding at the fork" % (limit, took))
    same_program(plain, pre, "fork_thread_exit.py", 0)
    return "150 forks while threads exit: no hang (%.0fs without the library)" % took


def t_subinterp(ctx, interp, work):
    if interp.version < (3, 8):
        raise Skip("3.6/3.7: no audit hooks, subinterpreters are not hooked (docs/design.md)")
    out = os.path.join(work, "out")
    os.mkdir(out)
    n, threads = (100, 4) if ctx.full else (50, 4)
    argv = [interp.command, script("subinterp_loop.py"), str(n), str(threads)]
    pre = ctx.run(argv, True, out)
    if b"no subinterpreter API" in pre.stdout:
        raise Skip("this build has no _interpreters/_xxsubinterpreters module")
    if pre.returncode != 0 or b"errors 0" not in pre.stdout or ours(pre.stderr)[0]:
        raise Fail("rc %d %r %r" % (pre.returncode, pre.stdout[-200:], pre.stderr[-300:]))
    pid = only_pid(out)
    names = check_process_files(ctx, out, pid)
    made = set(x.split(":")[2] for x in names if x.startswith("py::sub_"))
    want = set("sub_%d_%d" % (t, i) for t in range(threads) for i in range(n))
    if made != want:
        raise Fail("%d of %d subinterpreter functions named" % (len(made & want), len(want)))
    return "%d subinterpreters (%d threads) created, run and destroyed; %s" % (
        n * threads, threads, pre.stdout.strip().decode()[-40:])


def t_exec_chain(ctx, interp, work):
    notes = []
    for mode in ("exec", "spawn"):
        out = os.path.join(work, mode)
        os.mkdir(out)
        argv = [interp.command, script("exec_chain.py"), "0", "4", mode]
        pre = ctx.run(argv, True, out)
        levels = re.findall(rb"^level (\d+) pid (\d+)$", pre.stdout, re.M)
        if pre.returncode != 0 or len(levels) != 5 or ours(pre.stderr)[0]:
            raise Fail("%s: rc %d %r %r" % (mode, pre.returncode, pre.stdout, pre.stderr[-300:]))
        pids = {}
        for level, pid in levels:
            pids.setdefault(int(pid), []).append(int(level))
        if mode == "exec" and len(pids) != 1:
            raise Fail("exec chain changed pid: %s" % pids)
        if mode == "spawn" and len(pids) != 5:
            raise Fail("spawn chain reused pids: %s" % pids)
        kept = 0
        for pid, lv in pids.items():
            names = check_process_files(ctx, out, pid, ["py::level_%d:<chain>" % max(lv)])
            kept += sum(1 for l in lv if "py::level_%d:<chain>" % l in names)
        if mode == "exec":
            notes.append("exec: the last image's files complete (%d of 5 levels in the map: "
                         "an exec'd image starts the pid's files afresh)" % kept)
        else:
            notes.append("spawn: 5 processes complete")
    return "; ".join(notes)


# ================================================================ 8. security

def t_mode(ctx, interp, work):
    notes = []
    for mask in (0o000, 0o022, 0o077):
        out = os.path.join(work, "m%o" % mask)
        os.mkdir(out)
        pre = ctx.run(workload(interp), True, out, preexec=lambda m=mask: os.umask(m))
        if pre.returncode != 0:
            raise Fail("rc %d" % pre.returncode)
        for name in os.listdir(out):
            st = os.lstat(os.path.join(out, name))
            if not stat.S_ISREG(st.st_mode) or stat.S_IMODE(st.st_mode) != 0o600 or \
                    st.st_uid != os.geteuid():
                raise Fail("umask %03o: %s has mode %o, uid %d" % (mask, name,
                                                                    stat.S_IMODE(st.st_mode),
                                                                    st.st_uid))
        notes.append("%03o" % mask)
    return "regular files, mode 0600, ours, under umask " + ", ".join(notes)


def t_paths(ctx, interp, work):
    out = os.path.join(work, "out")
    elsewhere = os.path.join(work, "elsewhere")
    os.mkdir(out)
    os.mkdir(elsewhere)
    before = set(os.listdir("/tmp"))
    pre = ctx.run([interp.command, script("paths.py"), elsewhere], True, out)
    m = re.search(rb"^child (\d+)$", pre.stdout, re.M)
    if pre.returncode != 0 or not m or ours(pre.stderr)[0]:
        raise Fail("rc %d %r %r" % (pre.returncode, pre.stdout, pre.stderr[-300:]))
    child = int(m.group(1))
    parent = [int(f[5:-4]) for f in os.listdir(out) if f.startswith("perf-") and
              int(f[5:-4]) != child]
    if len(parent) != 1:
        raise Fail("files in the output directory: %s" % sorted(os.listdir(out)))
    want = sorted(os.path.basename(p) for pid in (parent[0], child) for p in files_of(out, pid))
    if sorted(os.listdir(out)) != want:
        raise Fail("unexpected files: %s" % sorted(os.listdir(out)))
    if os.listdir(elsewhere):
        raise Fail("files written where the program pointed: %s" % os.listdir(elsewhere))
    new = [f for f in set(os.listdir("/tmp")) - before
           if re.match(r"(perf-|jit-)(%d|%d)\." % (parent[0], child), f)]
    if new:
        raise Fail("files written to /tmp: %s" % new)
    check_process_files(ctx, out, parent[0], ["py::pb:/etc/passwd"])
    check_process_files(ctx, out, child, ["py::in_child:"])
    return "chdir, rewritten PYPERFINJECT_DIR/TMPDIR and path-like names change nothing"


def t_at_secure(ctx, interp, work):
    """setuid, setgid and file-capability (AT_SECURE) copies of python, run
    by nobody: nothing happens, even when the library is forced in through
    /etc/ld.so.preload (an overlay in a private mount namespace; the real
    /etc is untouched) where the loader does load it. The same runs without
    the privilege bits write files (the control: the test can fail)."""
    need_root("setuid copies and a private /etc")
    if interp.kind not in ("debian", "debian-dbg"):
        raise Skip("needs Debian's self-contained /usr/bin/python3.X (a copy must still run)")
    for tool in ("unshare", "setpriv"):
        if shutil.which(tool) is None:
            raise Skip("%s(1) is not installed" % tool)
    real = os.path.realpath(interp.command)
    bindir = os.path.join(work, "bin")
    os.mkdir(bindir)
    os.chmod(bindir, 0o755)
    lib = os.path.join(bindir, "libpyperfinject.so")
    shutil.copy(ctx.lib, lib)
    os.chmod(lib, 0o755)
    out = os.path.join(work, "out")
    os.mkdir(out)
    os.chmod(out, 0o1777)
    code = ("def secure_probe():\n    return 1\nsecure_probe()\n"
            "print('loaded', 'libpyperfinject' in open('/proc/self/maps').read())\n")
    upper, wk = os.path.join(work, "upper"), os.path.join(work, "wk")
    os.mkdir(upper)
    os.mkdir(wk)
    with open(os.path.join(upper, "ld.so.preload"), "w") as f:
        f.write(harness.ld_preload(lib, ctx.prefix) + "\n")
    mount = ('mount -t overlay overlay -o lowerdir=/etc,upperdir=%s,workdir=%s /etc' %
             (upper, wk))
    kinds = [("plain", 0o755, None), ("setuid", 0o4755, None), ("setgid", 0o2755, None)]
    if shutil.which("setcap"):
        kinds.append(("filecap", 0o755, "cap_net_bind_service+ep"))
    notes = []
    for kind, mode, caps in kinds:
        py = os.path.join(bindir, "python-" + kind)
        shutil.copy(real, py)
        os.chown(py, 0, 0)
        os.chmod(py, mode)
        if caps and subprocess.run(["setcap", caps, py]).returncode != 0:
            notes.append("setcap failed: file capabilities not tested")
            continue
        for how in ("ld.so.preload", "LD_PRELOAD"):
            for f in os.listdir(out):
                os.unlink(os.path.join(out, f))
            argv = ["setpriv", "--reuid=%d" % NOBODY, "--regid=%d" % NOBODY, "--clear-groups",
                    py, "-c", code]
            extra = {"PYPERFINJECT_VERBOSE": "3", "PYPERFINJECT_DIR": out}
            if how == "ld.so.preload":
                argv = in_namespace(mount, argv)
            else:
                extra["LD_PRELOAD"] = harness.ld_preload(lib, ctx.prefix)
            p = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                               env=ctx.env(False, extra), cwd="/", timeout=120)
            if p.returncode == 99:
                raise Skip("cannot mount an overlay over /etc here: %r" % p.stderr[-200:])
            if p.returncode != 0:
                raise Fail("%s via %s: rc %d %r" % (kind, how, p.returncode, p.stderr[-300:]))
            files, lines = sorted(os.listdir(out)), ours(p.stderr)[0]
            loaded = b"loaded True" in p.stdout
            if kind == "plain":
                if len(files) != 2 or not loaded:
                    raise Fail("control (%s via %s): loaded %s, files %s %s: the test cannot "
                               "tell a secure process apart" % (kind, how, loaded, files,
                                                                lines[:2]))
            elif files or lines:
                raise Fail("%s via %s: the library acted: files %s, lines %s" %
                           (kind, how, files, lines[:2]))
            elif how == "ld.so.preload" and not loaded:
                raise Fail("%s: the loader did not load the library from /etc/ld.so.preload, "
                           "so the library's own AT_SECURE check was not exercised" % kind)
        notes.append(kind)
    return "as nobody, via /etc/ld.so.preload (loaded, inert) and LD_PRELOAD: " + ", ".join(notes)


def t_recursion(ctx, interp, work):
    """Deepest recursion with and without the library (and with CPython's
    own -X perf on 3.12+, which adds the same PEP 523 frame)."""
    out = os.path.join(work, "out")
    os.mkdir(out)

    def ok(depth, mode):
        args = [interp.command] + (["-X", "perf"] if mode == "xperf" else []) + \
            [script("recursion.py"), str(depth), "200000"]
        p = ctx.run(args, mode == "pre", out, timeout=120)
        for f in os.listdir(out):
            os.unlink(os.path.join(out, f))
        return p.returncode == 0 and p.stdout.strip() == b"ok %d" % depth

    def deepest(mode):
        lo, hi = 50, 100000
        if not ok(lo, mode):
            return 0
        if ok(hi, mode):
            return hi
        while hi - lo > max(20, lo // 50):
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if ok(mid, mode) else (lo, mid)
        return lo
    # Under the default limit: identical verdicts at 3/4 of it.
    default = [interp.command, "-c", "import sys; print(sys.getrecursionlimit())"]
    limit = int(ctx.run(default, False, out).stdout)
    d = limit * 3 // 4
    a = ctx.run([interp.command, script("recursion.py"), str(d)], False, out)
    b = ctx.run([interp.command, script("recursion.py"), str(d)], True, out)
    plain, pre = deepest("plain"), deepest("pre")
    v = interp.version
    note = "deepest recursion: %d without, %d with the library" % (plain, pre)
    if v >= (3, 12):
        xperf = deepest("xperf")
        note += ", %d with -X perf" % xperf
        if pre < xperf * 0.95:
            raise Fail(note + ": worse than CPython's own trampoline")
    elif v == (3, 11):
        if pre < 10000:
            raise Fail(note + ": below 10000 (docs/reliability.md)")
    elif pre < plain * 0.9:
        raise Fail(note + ": more than 10% lost")
    if a.stdout != b.stdout:
        note += "; at depth %d (3/4 of the default limit) %s without, %s with" % (
            d, a.stdout.strip().decode(), b.stdout.strip().decode())
        if v < (3, 12):
            raise Fail(note)
    return note


def t_fork_stderr(ctx, interp, work):
    """Twisted's and gevent's way of starting a process: fork, put a pipe
    the parent reads on fds 1-2, close every other descriptor (the
    library's files too), run new Python code, then exec or write and
    _exit. What the parent reads from the child is the same with and
    without the library, at PYPERFINJECT_VERBOSE 0, 1 and 2: the library
    never writes into a stderr the program has rearranged (log.h)."""
    out = os.path.join(work, "out")
    os.mkdir(out)
    argv = [interp.command, script("fork_stderr.py")]
    plain = ctx.run(argv, False, out)
    if plain.returncode != 0:
        raise Fail("without the library: rc %d, %r" % (plain.returncode, plain.stdout[-200:]))
    for verbose in ("0", "1", "2"):
        pre = ctx.run(argv, True, out, {"PYPERFINJECT_VERBOSE": verbose})
        if pre.returncode != 0 or pre.stdout != plain.stdout:
            raise Fail("verbose %s: the children's output differs: %r (without: %r)" %
                       (verbose, pre.stdout[-300:], plain.stdout[-200:]))
    return "children's stderr byte-identical at verbose 0-2: " + plain.stdout.decode().strip()


def debian_python3_with(interp, module):
    """Debian's python3 runs the programs Debian packages (python3-twisted,
    python3-gevent: tests/provision/deps.sh programs)."""
    if interp.kind != "debian":
        raise Skip("Debian's packaged programs run on Debian's python3 only")
    found = subprocess.run([interp.command, "-c", "import " + module],
                           stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    if found.returncode != 0:
        raise Skip("%s is not installed for %s (tests/provision/deps.sh programs)" %
                   (module, interp.command))


def t_twisted_process(ctx, interp, work):
    """Twisted's own process tests (trial twisted.test.test_process
    .ProcessTests): the same result with the library as without. They hung
    when the library wrote a warning into a child's stderr pipe before exec."""
    debian_python3_with(interp, "twisted")
    out = os.path.join(work, "out")
    os.mkdir(out)
    argv = [interp.command, "-m", "twisted.trial", "--temp-directory",
            os.path.join(work, "_trial_temp"), "twisted.test.test_process.ProcessTests"]

    def summary(r):
        lines = [l for l in r.stdout.decode(errors="replace").splitlines() if l.strip()]
        return r.returncode, lines[-1] if lines else ""
    plain = summary(ctx.run(argv, False, out, cwd=work, timeout=180))
    pre = summary(ctx.run(argv, True, out, cwd=work, timeout=180))
    if pre != plain or plain[0] != 0:
        raise Fail("with the library %r, without %r" % (pre, plain))
    return "%s with and without the library" % plain[1]


def t_gevent_spawn(ctx, interp, work):
    """gevent.subprocess children run Python between fork and exec: what
    they write is the same with the library as without, at verbose 0-2."""
    debian_python3_with(interp, "gevent")
    out = os.path.join(work, "out")
    os.mkdir(out)
    argv = [interp.command, script("gevent_spawn.py")]
    plain = ctx.run(argv, False, out)
    for verbose in ("0", "1", "2"):
        pre = ctx.run(argv, True, out, {"PYPERFINJECT_VERBOSE": verbose})
        if (pre.returncode, pre.stdout) != (plain.returncode, plain.stdout):
            raise Fail("verbose %s: %r, without the library %r" % (verbose, pre.stdout[-200:],
                                                                   plain.stdout[-200:]))
    return "10 children at verbose 0-2: %s" % plain.stdout.decode().strip()


def t_deep_stack(ctx, interp, work):
    """Recursion with the limit at 10**6 until RecursionError, on the main
    thread (8 MiB and `ulimit -s 1024`), a default thread and a 256 KiB
    threading.stack_size() thread:
    with the library always RecursionError and a working interpreter after
    it, never a signal (the C-stack guard, docs/reliability.md). Without
    the library 3.6-3.10 die of SIGSEGV here; 3.11+ reach the limit (not
    run: a million frames take minutes on a debug build)."""
    out = os.path.join(work, "out")
    os.mkdir(out)
    notes, bad = [], []

    def small_main_stack():  # ulimit -s 1024
        import resource
        resource.setrlimit(resource.RLIMIT_STACK,
                           (1 << 20, resource.getrlimit(resource.RLIMIT_STACK)[1]))
    for where, preexec in (("main", None), ("thread", None), ("thread:262144", None),
                           ("main", small_main_stack)):
        argv = [interp.command, script("deep_stack.py"), where]
        pre = ctx.run(argv, True, out, timeout=120, preexec=preexec)
        if preexec:
            where = "main(ulimit -s 1024)"
        got = pre.stdout.decode(errors="replace").split()
        if pre.returncode != 0 or got[1:2] != ["RecursionError"] or got[3:4] != ["OK"]:
            bad.append("%s: rc %d, %r %r" % (where, pre.returncode, pre.stdout[-80:],
                                             pre.stderr[-160:]))
            continue
        notes.append("%s %s" % (where, got[2]))
        for f in os.listdir(out):
            os.unlink(os.path.join(out, f))
    if bad:
        raise Fail("; ".join(bad))
    return "RecursionError at depth " + ", ".join(notes)


def t_allocator(ctx, interp, work):
    """Memory allocator switches at start-up (PYTHONMALLOC, -X dev,
    PYTHONDEVMODE): the program runs and exits as without the library."""
    out = os.path.join(work, "out")
    os.mkdir(out)
    code = ["-c", "def f():\n    return 1\nprint(f())\n"]
    cases = [("PYTHONMALLOC=" + v, {"PYTHONMALLOC": v}, []) for v in
             ("debug", "malloc_debug", "pymalloc_debug", "malloc", "pymalloc")]
    cases += [("PYTHONDEVMODE=1", {"PYTHONDEVMODE": "1"}, []), ("-X dev", {}, ["-X", "dev"])]
    bad = []
    for what, extra, args in cases:
        argv = [interp.command] + args + code
        plain = ctx.run(argv, False, out, extra)
        pre = ctx.run(argv, True, out, extra)
        for f in os.listdir(out):
            os.unlink(os.path.join(out, f))
        try:
            same_program(plain, pre, what, 0)
        except Fail as e:
            bad.append(str(e)[:160])
    if bad:
        raise Fail("%d of %d: %s" % (len(bad), len(cases), " | ".join(bad[:3])))
    return "%d allocator settings: same output and exit status" % len(cases)


def t_fd_closed(ctx, interp, work):
    """The program closes every descriptor above 2 (daemonising) and opens a
    file of its own: nothing of the library's may end up in it."""
    out = os.path.join(work, "out")
    os.mkdir(out)
    log_plain, log_pre = os.path.join(work, "plain.log"), os.path.join(work, "pre.log")
    plain = ctx.run([interp.command, script("daemonize.py"), log_plain], False, out)
    pre = ctx.run([interp.command, script("daemonize.py"), log_pre], True, out)
    with open(log_pre, "rb") as f:
        got = f.read()
    if got != b"log line\n":
        raise Fail("the program's own file received the library's output: %r" % got[:160])
    mine = same_program(plain, pre, "daemonize.py", 1)
    return "the program's file intact" + ("; " + mine[0][:80] if mine else "")


def t_sys_introspection(ctx, interp, work):
    """What the program sees of sys: the library's stand-in for
    sys.activate_stack_trampoline (3.12+) must look like the original to
    introspection (inspect.signature, names, doc, module)."""
    if interp.version < (3, 12):
        raise Skip("sys.activate_stack_trampoline exists from 3.12")
    out = os.path.join(work, "out")
    os.mkdir(out)
    code = ("import inspect, sys, json\n"
            "import os.path\n"  # an audit event or two: the wrapper is in by now
            "f = sys.activate_stack_trampoline\n"
            "try:\n"
            "    sig = str(inspect.signature(f))\n"
            "except (ValueError, TypeError) as e:\n"
            "    sig = 'no signature: %s' % type(e).__name__\n"
            "print(json.dumps([sig, f.__name__, f.__qualname__, f.__module__, f.__doc__, repr(f),\n"
            "                  f.__self__.__name__,\n"
            "                  getattr(f, '__text_signature__', None),\n"
            "                  [n for n in dir(sys) if n.endswith('trampoline')]]))\n")
    argv = [interp.command, "-c", code]
    plain = ctx.run(argv, False, out)
    pre = ctx.run(argv, True, out)
    same_program(plain, pre, "introspecting sys.activate_stack_trampoline", 0)
    return "signature, names, doc and module as without the library: " + \
        plain.stdout.decode().split(",")[0].strip('["')


def t_forkwarn(ctx, interp, work):
    """A single-threaded program's fork() must not start warning about
    threads (3.12+ counts OS threads) because of the library. Opt-in runtime
    switching (PYPERFINJECT_SIGNAL/DURATION) runs a control thread and is
    documented to cause that warning (docs/runtime-control.md)."""
    if interp.version < (3, 12):
        raise Skip("only 3.12+ warns about fork() in a multi-threaded process")
    out = os.path.join(work, "out")
    os.mkdir(out)
    argv = [interp.command, script("forkwarn.py")]
    plain = ctx.run(argv, False, out)
    notes = []
    for extra in ({}, {"PYPERFINJECT_START": "0"}):
        pre = ctx.run(argv, True, out, extra)
        what = " ".join("%s=%s" % kv for kv in extra.items()) or "defaults"
        same_program(plain, pre, what, 0)
        notes.append(what)
    return "no new warning with " + ", ".join(notes)


# ------------------------------------------------------------------ the table

SMOKE_ALL = ("debian", "oldest", "newest-pyenv", "newest-sid", "newest-ft")
EVERY = ("every",)  # every CPython 3 of the matrix, in the smoke run too
TESTS = [
    # (name, function, smoke roles)
    ("fs/symlink-map", t_symlink("map"), ("debian", "oldest")),
    ("fs/symlink-dump", t_symlink("dump"), ("debian",)),
    ("fs/symlink-both", t_symlink("both"), ("debian",)),
    ("fs/dangling-symlink", t_dangling, ("debian",)),
    ("fs/hard-link", t_hardlink, ("debian",)),
    ("fs/fifo-and-dir", t_fifo_dir, ("debian",)),
    ("fs/other-owner", t_other_owner, ("debian",)),
    ("fs/stale-own-file", t_stale_own, ("debian",)),
    ("fs/read-only", t_readonly, ("debian",)),
    ("fs/unprivileged", t_unwritable_unprivileged, ("debian",)),
    ("fs/enospc-at-start", t_enospc_start, ("debian",)),
    ("fs/enospc-midway", t_enospc_midway, ("debian", "newest-sid")),
    ("fs/rlimit-fsize", t_rlimit_fsize, ("debian",)),
    ("fs/deleted-dir", t_deleted_dir, ("debian",)),
    ("fs/deleted-cwd", t_deleted_cwd, ("debian",)),
] + [("env/" + v, t_env(v), ("debian",)) for v in
     ("ENABLE", "MAP", "JITDUMP", "GDB", "GDB_BATCH", "VERBOSE", "FORK_COPY", "DIR", "START",
      "SIGNAL", "DURATION", "PASSTHROUGH", "KEEP_BINARIES")] + [
    ("input/hostile-names", t_names, SMOKE_ALL),
    ("crash/sigkill", t_kill, ("debian", "newest-sid")),
    ("crash/sigkill-perf-inject", t_kill_perf, ("debian",)),
    ("conc/threads-64x1000", t_threads, ("debian", "oldest", "newest-sid", "newest-ft")),
    ("conc/ft-stress-32x2000", t_ft_stress, ("newest-ft",)),
    ("conc/fork-200", t_forks, ("debian", "newest-pyenv")),
    ("conc/fork-while-threads-exit", t_fork_thread_exit, ("oldest", "debian")),
    ("conc/subinterpreters", t_subinterp, ("debian", "newest-pyenv")),
    ("conc/exec-chain", t_exec_chain, ("debian",)),
    ("sec/mode-0600", t_mode, ("debian",)),
    ("sec/program-controls-no-path", t_paths, ("debian", "oldest")),
    ("sec/at-secure", t_at_secure, ("debian",)),
    ("sec/fork-warning", t_forkwarn, ("newest-pyenv",)),
    ("sec/fds-closed-by-program", t_fd_closed, ("debian", "oldest")),
    ("input/sys-introspection", t_sys_introspection, ("newest-pyenv", "newest-sid")),
    ("input/allocator-switch", t_allocator, ("debian", "debian-dbg", "oldest", "newest-pyenv")),
    ("input/recursion-depth", t_recursion, SMOKE_ALL),
    ("input/deep-recursion-stack", t_deep_stack, EVERY),
    ("proc/fork-close-fds-stderr", t_fork_stderr, EVERY),
    ("proc/twisted-test-process", t_twisted_process, ("debian",)),
    ("proc/gevent-subprocess", t_gevent_spawn, ("debian",)),
]

# Tests that a preloaded sanitizer runtime (--preload-prefix) keeps from
# meaning anything, by limits of the runtime, not of the library: name ->
# (a part of the runtime's file name, or "" for any runtime; the reason).
SANITIZER_LIMITS = {
    "input/recursion-depth": (
        "", "it measures the C stack each call costs (instrumented frames are larger) and "
        "overflows the stack on purpose (each overflow is a sanitizer report)"),
    "input/deep-recursion-stack": (
        "", "it runs the C stack out on purpose, which a sanitizer runtime reports (and its "
        "instrumented frames are larger)"),
    "conc/fork-while-threads-exit": (
        "asan", "the ASan runtime does not lock its allocator around fork(): a child forked "
        "while another thread allocates hangs in the runtime's free(), library or not"),
    "sec/at-secure": (
        "asan", "a setgid python run by nobody cannot read its own /proc/self/environ, where "
        "the runtime reads ASAN_OPTIONS: LeakSanitizer then runs at exit and fails (it cannot "
        "ptrace a non-dumpable process)"),
    "proc/gevent-subprocess": (
        "asan", "greenlet switches stacks by copying raw stack slices, which reads the redzones "
        "of instrumented frames: the runtime reports that (greenlet is not ASan-aware), and the "
        "llvm-symbolizer it starts for the report outlives the program holding its output pipe"),
}


def sanitizer_limit(name, prefix):
    """Why test `name` cannot run with the runtimes in prefix, or None."""
    part, why = SANITIZER_LIMITS.get(name, (None, None))
    if why and any(part in os.path.basename(p) for p in prefix):
        return why
    return None


def common_arguments():
    """The options harden.py and regrtest.py share."""
    parser = argparse.ArgumentParser()
    mode = parser.add_mutually_exclusive_group()
    mode.add_argument("--smoke", action="store_true")
    mode.add_argument("--full", action="store_true")
    parser.add_argument("--lib", default=harness.LIB)
    # default: the sanitizer runtime `make check SANITIZE=...` exports (tests/run-all.sh)
    parser.add_argument("--preload-prefix", default=" ".join(harness.sanitizer_runtime()))
    parser.add_argument("--interpreters", default=os.path.join(ROOT, "build", "interpreters.txt"))
    parser.add_argument("--interp", default="")
    return parser


def main():
    parser = common_arguments()
    parser.add_argument("--checker", default=os.path.join(ROOT, "build", "jitdump-check"))
    parser.add_argument("--only", default="")
    parser.add_argument("--keep", action="store_true")
    args = parser.parse_args()
    ctx = Ctx(args)
    tally = harness.Tally("harden", widths=(30, 16), one_line=True, cut=400)
    report = tally.report

    if not os.path.exists(ctx.lib):
        report("FAIL", "setup", "-", "%s is not built" % ctx.lib)
    everything = harness.discover(args.interpreters)
    interps, pick = roles(everything)
    if args.full and not args.interp:
        for i in everything:
            if i.emulated:
                report("SKIP", "all", i.label, "arm64 under qemu-user: the hardening tests run "
                       "on the host's interpreters (arm64: tests/aarch64, tests/integration)")
    if args.interp:
        exact = [i for i in interps if i.label == args.interp]
        interps = exact or [i for i in interps if args.interp in i.label]
    only = [o for o in args.only.split(",") if o]
    names = set(t[0] for t in TESTS)

    def selected(name):
        return not only or any(name == o or (o not in names and o in name) for o in only)
    if not interps:
        report("SKIP", "all", "-", "no CPython 3 interpreter found (tests/provision)")
    try:
        for name, fn, smoke_roles in TESTS:
            if not selected(name):
                continue
            why = sanitizer_limit(name, ctx.prefix)
            if why:
                report("SKIP", name, "-", "with a sanitizer runtime preloaded: " + why)
                continue
            if args.full or args.interp or smoke_roles == EVERY:
                chosen = interps
            else:
                chosen = [pick[r] for r in smoke_roles if r in pick and pick[r] in interps]
                chosen = [c for n, c in enumerate(chosen) if c not in chosen[:n]]
                if not chosen and not args.interp:
                    report("SKIP", name, "-", "none of the interpreters %s is provisioned" %
                           ", ".join(smoke_roles))
            for interp in chosen:
                work = tempfile.mkdtemp(prefix=name.replace("/", "-") + "-", dir=ctx.base)
                os.chmod(work, 0o755)
                start = time.time()
                status, note = harness.attempt(fn, ctx, interp, work)
                took = time.time() - start
                report(status, name, interp.label, "%s [%.1fs]" % (note, took))
                if not args.keep:
                    shutil.rmtree(work, ignore_errors=True)
    finally:
        if not args.keep:
            shutil.rmtree(ctx.base, ignore_errors=True)
    return tally.summary()


if __name__ == "__main__":
    sys.exit(main())
