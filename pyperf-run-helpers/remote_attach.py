"""pyperf-run attach for CPython 3.14+: PEP 768's remote execution.

    remote_attach.py PID LIBRARY SETTINGS_FILE RESULT_FILE SCRIPT_FILE

Run by an interpreter of the target's own version (sys.remote_exec needs
that). Writes a copy of this file with its parameters filled in to
SCRIPT_FILE (a path the target can read), and asks the target to run it at
its next safe point with sys.remote_exec. Run there, in the main thread with
the GIL, the copy loads LIBRARY (ctypes.PyDLL: the GIL stays held) and calls
pyperfinject_attach, which installs at once, and writes "RC<TAB>WHY" to
RESULT_FILE, then removes itself and SETTINGS_FILE: CPython opens the
script only when its main thread gets to it, which may be long after
pyperf-run stopped waiting, and raises in the program if it is gone then.
This process only asks; pyperf-run waits for RESULT_FILE.
Prints one line: "asked", or "refused: REASON" (remote debugging disabled in
the target or this build, no permission) with exit status 1.
"""
import json
import sys

PARAMS = None  # set in the copy the target runs: {"library", "settings", "result", "remove"}


def attach_here(params):
    """In the target: the library installs itself; the outcome to the file."""
    import ctypes
    why = ctypes.create_string_buffer(512)
    try:
        lib = ctypes.PyDLL(params["library"])
        rc = lib.pyperfinject_attach(params["settings"].encode(), 0, why, len(why))
        line = "%d\t%s\n" % (rc, why.value.decode("utf-8", "replace"))
    except Exception as e:  # never an exception of ours in the program
        line = "-1\t%s: %s\n" % (type(e).__name__, e)
    try:
        with open(params["result"], "w") as f:
            f.write(line)
    except OSError:
        pass
    import os
    for path in params["remove"]:
        try:
            os.unlink(path)
        except OSError:
            pass


def ask(pid, library, settings_file, result, script):
    with open(settings_file) as f:
        settings = f.read()
    with open(__file__) as f:
        source = f.read()
    params = {"library": library, "settings": settings, "result": result,
              "remove": [script, settings_file]}
    filled = source.replace("PARAMS = None  # set in the copy", "PARAMS = %s  # set in the copy" %
                            json.dumps(params), 1)
    with open(script, "w") as f:
        f.write(filled)
    try:
        sys.remote_exec(pid, script)
    except (RuntimeError, PermissionError, OSError) as e:
        print("refused: %s" % e)
        return 1
    print("asked")
    return 0


if PARAMS is not None:
    attach_here(PARAMS)
elif __name__ == "__main__":
    if len(sys.argv) != 6 or not sys.argv[1].isdigit():
        sys.exit("usage: remote_attach.py PID LIBRARY SETTINGS_FILE RESULT_FILE SCRIPT_FILE")
    if not hasattr(sys, "remote_exec"):
        print("refused: this interpreter has no sys.remote_exec (CPython 3.14+)")
        sys.exit(1)
    sys.exit(ask(int(sys.argv[1]), sys.argv[2], sys.argv[3], sys.argv[4], sys.argv[5]))
