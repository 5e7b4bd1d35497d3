"""What new functions cost while gdb is attached (bench/run.py's last phase).

A program started under gdb (`gdb -batch -ex run --args python ...`) makes
COUNT new functions (workloads/many_functions.py); its own call_s metric is
the time they took. Three ways: without gdb, under gdb with the library's
default batching (PYPERFINJECT_GDB_BATCH), and under gdb announcing every
function alone (PYPERFINJECT_GDB_BATCH=1: gdb stops the process twice and
re-reads the arena's symbol file each time)."""
import os
import re
import shutil
import subprocess

import harness

HERE = os.path.dirname(os.path.abspath(__file__))
MANY = os.path.join(HERE, "workloads", "many_functions.py")
WAYS = (("none", "no debugger", None),
        ("batched", "gdb attached, default batching", {}),
        ("alone", "gdb attached, every function announced alone",
         {"PYPERFINJECT_GDB_BATCH": "1"}))
TIMEOUT = 1800


def call_seconds(text):
    m = re.search(r"^metric call_s ([0-9.]+)$", text, re.M)
    return float(m.group(1)) if m else None


def measure(command, lib, count, scratch):
    """{way: seconds or None} for COUNT new functions; {} without gdb."""
    if shutil.which("gdb") is None:
        return {}
    out = {}
    for key, _title, settings in WAYS:
        env = harness.clean_env(PYPERFINJECT_DIR=scratch, **(settings or {}))
        argv = [command, MANY, str(count), "1000"]
        if settings is None:
            harness.preload(env, lib)
        else:  # the preload for the program only: gdb embeds a Python of its own
            argv = ["gdb", "-batch", "-nx", "-ex", "set debuginfod enabled off",
                    "-ex", "set auto-load off",
                    "-ex", "set environment LD_PRELOAD " + harness.ld_preload(lib),
                    "-ex", "run", "--args"] + argv
        try:
            run = subprocess.run(argv, stdout=subprocess.PIPE, stderr=subprocess.STDOUT,
                                 stdin=subprocess.DEVNULL, env=env, cwd=scratch,
                                 universal_newlines=True, timeout=TIMEOUT)
            out[key] = call_seconds(run.stdout)
        except subprocess.TimeoutExpired:
            out[key] = None
        for f in os.listdir(scratch):
            if f.startswith(("perf-", "jit-")):
                os.unlink(os.path.join(scratch, f))
    return out
