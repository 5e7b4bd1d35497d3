"""The interpreter's own call machinery, per CPython version: the native
frames a Python view folds away between (and around) Python frames.

Rows are (first minor, last minor, names). A name is folded only in a frame
of the interpreter itself (python3.X, libpython3.X) or of this library; a C
function that does work (long_mul, list_sort, a module's function) is not in
any row and stays. Names a version does not have cost nothing.
"""

ROWS = [
    # Entry: from main() to the first Python frame of the program.
    (6, 15, ("main", "Py_BytesMain", "Py_Main", "pymain_main", "Py_RunMain", "pymain_run_python",
             "pymain_run_file", "pymain_run_file_obj", "pymain_run_module", "pymain_run_command",
             "PyRun_AnyFileExFlags", "PyRun_SimpleFileExFlags", "_PyRun_AnyFileObject",
             "_PyRun_SimpleFileObject", "_PyRun_SimpleStringFlagsWithName", "PyRun_SimpleStringFlags",
             "pyrun_file", "pyrun_simple_file", "run_mod", "run_eval_code_obj", "PyRun_FileExFlags",
             "PyEval_EvalCode", "PyEval_EvalCodeEx", "builtin_exec", "builtin_exec_impl",
             "run_module_as_main")),
    # Threads started by the threading module.
    (6, 15, ("t_bootstrap", "thread_run", "pythread_wrapper")),
    # The evaluation loop and generic calls, in every version.
    (6, 15, ("_PyEval_EvalFrameDefault", "PyObject_Call", "_PyObject_Call", "PyObject_CallObject",
             "_PyObject_Call_Prepend", "slot_tp_call", "slot_tp_init", "type_call",
             "PyObject_CallFunctionObjArgs", "PyObject_CallMethodObjArgs", "call_unbound",
             "call_unbound_noarg", "vectorcall_unbound", "vectorcall_method", "call_method")),
    # 3.6-3.7: fast calls.
    (6, 7, ("PyEval_EvalFrameEx", "_PyEval_EvalCodeWithName", "fast_function", "call_function",
            "_PyFunction_FastCall",
            "_PyFunction_FastCallDict", "_PyFunction_FastCallKeywords", "function_code_fastcall",
            "_PyObject_FastCallDict", "_PyObject_FastCallKeywords", "_PyObject_FastCallKeywords",
            "function_call", "method_call", "_PyMethodDef_RawFastCallKeywords",
            "_PyMethodDescr_FastCallKeywords", "_PyCFunction_FastCallKeywords",
            "_PyCFunction_FastCallDict", "_PyObject_FastCall_Prepend", "_PyMethodDef_RawFastCallDict",
            "gen_send_ex", "gen_iternext")),
    # 3.8-3.10: vectorcall.
    (8, 10, ("_PyEval_EvalCodeWithName", "_PyEval_EvalCode", "call_function", "function_code_fastcall",
             "_PyFunction_Vectorcall", "_PyObject_Vectorcall", "PyVectorcall_Call", "method_vectorcall",
             "_PyObject_MakeTpCall", "_PyObject_FastCallDict", "_PyEval_Vector",
             "cfunction_vectorcall_FASTCALL", "cfunction_vectorcall_FASTCALL_KEYWORDS",
             "cfunction_vectorcall_O", "cfunction_vectorcall_NOARGS", "cfunction_call",
             "cfunction_call_varargs", "method_vectorcall_FASTCALL",
             "method_vectorcall_FASTCALL_KEYWORDS", "method_vectorcall_O", "method_vectorcall_NOARGS",
             "gen_send_ex", "gen_send_ex2", "gen_iternext", "_PyObject_VectorcallTstate",
             "PyObject_Vectorcall")),
    # 3.11+: frames pushed by the loop itself; fewer C levels.
    (11, 15, ("_PyEval_Vector", "_PyFunction_Vectorcall", "PyObject_Vectorcall",
              "_PyObject_VectorcallTstate", "PyVectorcall_Call", "method_vectorcall",
              "_PyObject_MakeTpCall", "_PyObject_FastCallDictTstate", "_PyObject_Call_Prepend",
              "cfunction_vectorcall_FASTCALL", "cfunction_vectorcall_FASTCALL_KEYWORDS",
              "cfunction_vectorcall_O", "cfunction_vectorcall_NOARGS", "cfunction_call",
              "method_vectorcall_FASTCALL", "method_vectorcall_FASTCALL_KEYWORDS",
              "method_vectorcall_O", "method_vectorcall_NOARGS", "gen_send_ex", "gen_send_ex2",
              "gen_iternext", "_PyEval_EvalFrame", "PyEval_EvalFrame", "_PyObject_VectorcallDictTstate",
              "PyObject_VectorcallDict", "_Py_call_instrumentation", "object_vacall",
              "PyObject_CallOneArg", "_PyObject_CallNoArgs", "PyObject_CallNoArgs")),
]

# Process and thread entry in the C library: nothing to see in a Python view.
ENTRY = frozenset(("_start", "__libc_start_main", "__libc_start_main_impl", "__libc_start_call_main",
                   "start_thread", "clone", "clone3", "__clone", "__clone3", "__GI___clone3",
                   "thread_start", "libc_start_main_stage2"))

OLDEST, NEWEST = 6, 15


def machinery(minor):
    """The names folded for Python 3.MINOR (frozenset); the newest's for an
    unknown or newer version."""
    minor = minor if OLDEST <= minor <= NEWEST else NEWEST
    names = set()
    for first, last, row in ROWS:
        if first <= minor <= last:
            names.update(row)
    return frozenset(names)
