"""Unit tests of probe.py (pyperf-run's question to an interpreter), run
as pyperf-run runs it (-E -s -S) by this machine's interpreters: the system
python3, pyenv's versions (2.7 included) and a pyenv shim when present,
and by an interpreter whose sysconfig is played here, for the frame-pointer
and free-threading answers."""
import glob
import json
import os
import re
import subprocess
import sys
import unittest

HELPERS = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..", "pyperf-run-helpers")
PROBE = os.path.join(HELPERS, "probe.py")
sys.path.insert(0, HELPERS)

PYENV = os.path.expanduser(os.environ.get("PYENV_ROOT", "~/.pyenv"))
FLAGS = ("CONFIGURE_CFLAGS", "CFLAGS", "PY_CFLAGS", "PY_CFLAGS_NODIST", "OPT")


def probe(cmd, env=None):
    proc = subprocess.run(cmd + ["-E", "-s", "-S", PROBE], stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                          stdin=subprocess.DEVNULL, universal_newlines=True, timeout=60, env=env)
    return proc.returncode, proc.stdout, proc.stderr


def config(interp):
    """The interpreter's compiler flags (in probe.py's order) and
    Py_GIL_DISABLED, asked separately."""
    code = ("import sysconfig, json, sys\n"
            "sys.stdout.write(json.dumps([[str(sysconfig.get_config_var(k) or '') for k in %r],"
            " bool(sysconfig.get_config_var('Py_GIL_DISABLED'))]))\n" % (FLAGS,))
    out = subprocess.run([interp, "-E", "-s", "-c", code], stdout=subprocess.PIPE, universal_newlines=True,
                         timeout=60).stdout
    return json.loads(out)


def built_with_frame_pointers(flags):
    """The last of the two options, word by word."""
    last = None
    for word in " ".join(flags).split():
        if word in ("-fno-omit-frame-pointer", "-fomit-frame-pointer"):
            last = word
    return last == "-fno-omit-frame-pointer"


def version_of(path):
    """X.Y from the interpreter's path: pyenv's version directory, or the
    name the system's python3 links to."""
    m = re.match(r"(\d+\.\d+)\.", os.path.relpath(path, os.path.join(PYENV, "versions")))
    if m:
        return m.group(1)
    return re.match(r"python(\d+\.\d+)", os.path.basename(os.path.realpath(path))).group(1)


INTERPRETERS = ["/usr/bin/python3", "/usr/bin/python2.7"] + sorted(
    glob.glob(os.path.join(PYENV, "versions", "*", "bin", "python")))


class InterpreterTest(unittest.TestCase):
    def check(self, interp):
        if not os.access(interp, os.X_OK):
            self.skipTest("no %s" % interp)
        rc, out, err = probe([interp])
        self.assertEqual((rc, err), (0, ""))
        self.assertTrue(out.endswith("\n"))
        self.assertEqual(out.count("\n"), 1)
        fields = out[:-1].split("\t")
        self.assertEqual(len(fields), 5, out)
        impl, ver, fp, ft, exe = fields
        self.assertEqual(impl, "pypy" if "pypy" in interp else "cpython")
        self.assertEqual(ver, version_of(interp))
        flags, gil_disabled = config(interp)
        self.assertEqual(fp, "yes" if built_with_frame_pointers(flags) else "no")
        self.assertEqual(ft, "yes" if gil_disabled else "no")
        self.assertTrue(os.path.isabs(exe))
        self.assertTrue(os.path.samefile(exe, interp))
        return fields

    def test_system_python3(self):
        fields = self.check("/usr/bin/python3")
        if os.path.samefile(sys.executable, "/usr/bin/python3"):
            self.assertEqual(fields[1], "%d.%d" % sys.version_info[:2])

    def test_python_27(self):
        found = [p for p in INTERPRETERS if version_of(p) == "2.7" and os.access(p, os.X_OK)]
        if not found:
            self.skipTest("no Python 2.7")
        self.assertEqual(self.check(found[0])[:2], ["cpython", "2.7"])

    def test_pyenv_shim_answers_with_the_interpreter_it_runs(self):
        shim = os.path.join(PYENV, "shims", "python")
        versions = sorted(glob.glob(os.path.join(PYENV, "versions", "3.*", "bin", "python")))
        if not os.access(shim, os.X_OK) or not versions:
            self.skipTest("no pyenv shim")
        real = versions[-1]
        env = dict(os.environ, PYENV_VERSION=real.split(os.sep)[-3])
        rc, out, err = probe([shim], env=env)
        self.assertEqual(rc, 0, err)
        fields = out.rstrip("\n").split("\t")
        self.assertEqual(fields[1], version_of(real))
        self.assertEqual(fields[4], real)


def add_interpreter_tests():
    """One test per interpreter (test_pyenv_versions_3_12_1_bin_python)."""
    def test(path):
        def run(self):
            self.check(path)
        return run
    for path in INTERPRETERS[1:]:
        name = "test_" + re.sub(r"\W+", "_", path.replace(PYENV, "pyenv")).strip("_")
        setattr(InterpreterTest, name, test(path))


add_interpreter_tests()

# probe.py run with a sysconfig module of our own making.
FAKE = r"""
import json, sys, types
cfg = json.loads(sys.argv[1])
sysconfig = types.ModuleType("sysconfig")
def get_config_var(name):
    if cfg is None:
        raise RuntimeError("no configuration")
    return cfg.get(name)
sysconfig.get_config_var = get_config_var
sys.modules["sysconfig"] = sysconfig
path = sys.argv[2]
sys.argv = [path]
exec(compile(open(path).read(), path, "exec"), {"__name__": "__main__"})
"""


class ConfigTest(unittest.TestCase):
    def answer(self, cfg, interp=sys.executable):
        proc = subprocess.run([interp, "-E", "-s", "-S", "-c", FAKE, json.dumps(cfg), PROBE], stdout=subprocess.PIPE,
                              stderr=subprocess.PIPE, universal_newlines=True, timeout=60)
        self.assertEqual((proc.returncode, proc.stderr), (0, ""))
        impl, ver, fp, ft, exe = proc.stdout.rstrip("\n").split("\t")
        self.assertEqual(exe, interp)
        return fp, ft

    def test_no_flags(self):
        self.assertEqual(self.answer({}), ("no", "no"))

    def test_frame_pointers(self):
        self.assertEqual(self.answer({"CFLAGS": "-O2 -fno-omit-frame-pointer -g"}), ("yes", "no"))
        self.assertEqual(self.answer({"OPT": "-DNDEBUG -fno-omit-frame-pointer -mno-omit-leaf-frame-pointer"}),
                         ("yes", "no"))

    def test_the_last_option_wins(self):
        # probe.py's order: CONFIGURE_CFLAGS CFLAGS PY_CFLAGS PY_CFLAGS_NODIST OPT
        self.assertEqual(self.answer({"CFLAGS": "-fno-omit-frame-pointer", "OPT": "-O3 -fomit-frame-pointer"}),
                         ("no", "no"))
        self.assertEqual(self.answer({"CONFIGURE_CFLAGS": "-fomit-frame-pointer",
                                      "PY_CFLAGS_NODIST": "-fno-omit-frame-pointer"}), ("yes", "no"))
        self.assertEqual(self.answer({"CFLAGS": "-fno-omit-frame-pointer -fomit-frame-pointer"}), ("no", "no"))

    def test_only_the_omitting_option(self):
        self.assertEqual(self.answer({"CFLAGS": "-O2 -fomit-frame-pointer"}), ("no", "no"))

    def test_free_threaded(self):
        self.assertEqual(self.answer({"Py_GIL_DISABLED": 1}), ("no", "yes"))
        self.assertEqual(self.answer({"Py_GIL_DISABLED": 0}), ("no", "no"))
        self.assertEqual(self.answer({"Py_GIL_DISABLED": 1, "PY_CFLAGS": "-fno-omit-frame-pointer"}), ("yes", "yes"))

    def test_a_failing_sysconfig_answers_no(self):
        self.assertEqual(self.answer(None), ("no", "no"))

    def test_under_python_27(self):
        found = [p for p in INTERPRETERS if version_of(p) == "2.7" and os.access(p, os.X_OK)]
        if not found:
            self.skipTest("no Python 2.7")
        self.assertEqual(self.answer({"CFLAGS": "-fno-omit-frame-pointer", "Py_GIL_DISABLED": 1}, found[0]),
                         ("yes", "yes"))


if __name__ == "__main__":
    unittest.main()
