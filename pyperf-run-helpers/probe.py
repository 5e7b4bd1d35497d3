"""pyperf-run's question to an interpreter, run by that interpreter (any
Python, 2.7 included): its implementation, version, whether it was built
with frame pointers and free-threaded, and its real executable (a pyenv
shim answers with the interpreter it runs). One tab-separated line."""
import sys, platform
fp = "no"
ft = "no"
try:
    import sysconfig
    flags = " ".join(str(sysconfig.get_config_var(k) or "") for k in
                     ("CONFIGURE_CFLAGS", "CFLAGS", "PY_CFLAGS", "PY_CFLAGS_NODIST", "OPT"))
    last_on = flags.rfind("-fno-omit-frame-pointer")
    last_off = flags.rfind("-fomit-frame-pointer")
    if last_on >= 0 and last_on > last_off:
        fp = "yes"
    if sysconfig.get_config_var("Py_GIL_DISABLED"):
        ft = "yes"
except Exception:
    pass
sys.stdout.write("%s\t%d.%d\t%s\t%s\t%s\n" % (platform.python_implementation().lower(),
                 sys.version_info[0], sys.version_info[1], fp, ft, sys.executable))
