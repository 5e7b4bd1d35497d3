"""Unit tests of libstate.py (pyperf-run --pid PID status): the library's
state read from outside, in real processes that run this tree's library,
and its answers when there is no library, no block or no permission."""
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
sys.path.insert(0, os.path.join(ROOT, "pyperf-run-helpers"))
import libstate  # noqa: E402

LIB = os.path.join(ROOT, "build", "libpyperfinject.so")
PYTHON = "/usr/bin/python3" if os.path.exists("/usr/bin/python3") else sys.executable


@unittest.skipUnless(os.path.exists(LIB), "build/libpyperfinject.so is not built (make)")
class RunningProcess(unittest.TestCase):
    def start(self, code, **env):
        out = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, out, True)
        full = dict(os.environ, PYPERFINJECT_DIR=out, LD_PRELOAD=LIB, **env)
        proc = subprocess.Popen([PYTHON, "-c", code], env=full, stdout=subprocess.PIPE,
                                stderr=subprocess.DEVNULL, universal_newlines=True)
        self.addCleanup(proc.stdout.close)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        self.assertEqual(proc.stdout.readline().strip(), "ready")
        return proc

    def test_on_then_off_through_the_api(self):
        proc = self.start("import ctypes, sys, time\nprint('ready', flush=True)\n"
                          "sys.stdin = None\ntime.sleep(0.5)\n"
                          "ctypes.CDLL(None).pyperfinject_disable()\ntime.sleep(30)\n")
        self.assertEqual(libstate.state_of(proc.pid), "on")
        deadline = time.time() + 10
        while libstate.state_of(proc.pid) == "on" and time.time() < deadline:
            time.sleep(0.1)
        self.assertEqual(libstate.state_of(proc.pid), "off")

    def test_started_off(self):
        proc = self.start("import time\nprint('ready', flush=True)\ntime.sleep(30)\n",
                          PYPERFINJECT_START="0")
        self.assertEqual(libstate.state_of(proc.pid), "off")

    def test_stood_aside(self):
        # A bad setting: the library stands aside when Python starts.
        proc = self.start("import time\nprint('ready', flush=True)\ntime.sleep(30)\n",
                          PYPERFINJECT_VERBOSE="9")
        self.assertEqual(libstate.state_of(proc.pid), "stood-aside")

    def test_not_python(self):
        env = dict(os.environ, LD_PRELOAD=LIB)
        proc = subprocess.Popen(["sleep", "30"], env=env)
        self.addCleanup(proc.wait)
        self.addCleanup(proc.kill)
        deadline = time.time() + 10
        while libstate.library_mapping(proc.pid) is None and time.time() < deadline:
            time.sleep(0.05)
        self.assertEqual(libstate.state_of(proc.pid), "inactive")


class Answers(unittest.TestCase):
    def test_no_library(self):
        self.assertTrue(libstate.state_of(os.getpid()).startswith("unknown: no libpyperfinject"))

    @unittest.skipUnless(os.path.exists(LIB), "build/libpyperfinject.so is not built (make)")
    def test_symbol_of_the_built_library(self):
        value = libstate.dynamic_symbol(LIB, b"pyperfinject_remote")
        self.assertGreater(value, 0)
        with self.assertRaises(ValueError):
            libstate.dynamic_symbol(LIB, b"pi_state")  # hidden: not in .dynsym

    def test_not_an_elf_file(self):
        with tempfile.NamedTemporaryFile() as f:
            f.write(b"#!/bin/sh\n")
            f.flush()
            with self.assertRaises(ValueError):
                libstate.dynamic_symbol(f.name, b"pyperfinject_remote")


if __name__ == "__main__":
    unittest.main()
