# Runs a function inside a subinterpreter, with whatever API this version has.
import sys

CODE = "def in_subinterp():\n    return 42\nin_subinterp()\n"


def run():
    try:
        import _interpreters as mod  # 3.13+
    except ImportError:
        try:
            import _xxsubinterpreters as mod  # 3.8-3.12
        except ImportError:
            mod = None
    if mod is not None:
        interp = mod.create()
        if hasattr(mod, "exec"):
            mod.exec(interp, CODE)
        else:
            mod.run_string(interp, CODE)
        mod.destroy(interp)
        return "interpreters"
    try:
        import _testcapi
    except ImportError:
        return None
    _testcapi.run_in_subinterp(CODE)
    return "_testcapi"


how = run()
print("subinterpreter via %s" % how if how else "no subinterpreter API")
