/* Per-version facts about CPython's eval-frame hook and code objects.
 *
 * One row per minor version (abi.c); the library reads them once when it
 * attaches and never branches on the version anywhere else. Offsets were taken
 * from offsetof() on real builds and are cross-checked at run time against
 * PyCode_Type's member table (pi_abi_check_members) before anything is
 * installed: a wrong offset would crash somebody's production process. */
#ifndef PI_ABI_H
#define PI_ABI_H

#include <stddef.h>
#include <stdint.h>

/* How the eval-frame function is called. */
enum pi_hook_kind {
    PI_HOOK_FRAME_THROW,        /* 3.6-3.8:  PyObject *(PyFrameObject *, int) */
    PI_HOOK_TSTATE_FRAME_THROW, /* 3.9+:     PyObject *(PyThreadState *, frame *, int) */
};

/* How it is installed into an interpreter. */
enum pi_install_kind {
    PI_INSTALL_FIELD,  /* store at interp + eval_frame_offset (no setter exported) */
    PI_INSTALL_SETTER, /* _PyInterpreterState_{Get,Set}EvalFrameFunc */
};

/* Where per-code trampoline pointers are kept. */
enum pi_extra_kind {
    PI_EXTRA_SIDE_TABLE, /* 3.6/3.7: requesting an index from a preload is unsafe */
    PI_EXTRA_PRIVATE,    /* _PyEval_RequestCodeExtraIndex, _PyCode_{Get,Set}Extra */
    PI_EXTRA_UNSTABLE,   /* PyUnstable_Eval_RequestCodeExtraIndex, PyUnstable_Code_* */
};

/* How the library learns that the interpreter exists. */
enum pi_wait_kind {
    PI_WAIT_WATCHER,    /* 3.6/3.7: a thread polls Py_IsInitialized */
    PI_WAIT_AUDIT_HOOK, /* 3.8+: PySys_AddAuditHook before initialisation */
};

/* What a NULL/initial eval_frame field means. */
enum pi_default_kind {
    PI_DEFAULT_IS_FUNCTION, /* field holds _PyEval_EvalFrameDefault (3.6-3.10) */
    PI_DEFAULT_IS_NULL,     /* NULL means default (3.11+) */
};

/* What CPython offers of its own perf support, which the library gives way
 * to (coexist.c, preflight.c). */
enum pi_cpython_perf {
    PI_CPYTHON_PERF_NONE,    /* 3.6-3.11 */
    PI_CPYTHON_PERF_MAP,     /* 3.12: -X perf, PYTHONPERFSUPPORT, sys.activate_stack_trampoline */
    PI_CPYTHON_PERF_MAP_JIT, /* 3.13+: also -X perf_jit, PYTHON_PERF_JIT_SUPPORT */
};

/* How the hook refuses a call when the thread's C stack is nearly full
 * (stackguard.h): it depends on who pops the frame it is given. */
enum pi_refusal {
    PI_REFUSE_RETURN, /* 3.6-3.11: the caller pops it. Return NULL with
                         RecursionError set before the evaluator owns the
                         frame, as the evaluator's own check does at entry. */
    PI_REFUSE_THROW,  /* 3.12/3.13: the evaluator pops it. Call the evaluator
                         with the exception set and throwflag 1: it unwinds
                         and pops the frame, as for a generator's throw().
                         (CPython counts C recursion there, not bytes.) */
    PI_REFUSE_NONE,   /* 3.14+: CPython checks the stack itself on every
                         evaluator entry. */
};

/* What following CPython's JIT needs (cpython_jit.c): a code object's
 * executors, where an executor keeps its machine code, and how a thread's
 * frames are reached. All -1 where there is no JIT, or none the library
 * follows (free-threaded builds). */
struct pi_abi_jit {
    int16_t co_executors;   /* PyCodeObject.co_executors (_PyExecutorArray *) */
    int16_t exec_jit_code;  /* _PyExecutorObject.jit_code */
    int16_t tstate_frame;   /* PyThreadState.current_frame */
    int16_t frame_previous; /* _PyInterpreterFrame.previous */
    int16_t exec_code;      /* _PyExecutorObject.vm_data.code: where its trace starts */
    int16_t exec_exit_count; /* _PyExecutorObject.exit_count */
    int16_t exec_exits;     /* _PyExecutorObject.exits: {.., executor at +8}, 16 bytes each */
};

struct pi_abi {
    uint8_t major, minor;
    enum pi_hook_kind hook;
    enum pi_install_kind install;
    enum pi_extra_kind extra;
    enum pi_wait_kind wait;
    enum pi_default_kind default_eval;
    enum pi_refusal refusal;
    enum pi_cpython_perf cpython_perf;
    uint8_t ft_builds;          /* free-threaded builds of this version exist */
    int16_t tstate_interp;      /* PyThreadState.interp */
    int16_t eval_frame_offset;  /* PI_INSTALL_FIELD only, else -1 */
    int16_t frame_code_offset;  /* code object pointer in the evaluated frame */
    uintptr_t frame_code_tag;   /* low bits to clear (tagged _PyStackRef, 3.14+) */
    int16_t ob_type_offset;     /* PyObject.ob_type */
    int16_t co_filename, co_name, co_qualname, co_firstlineno; /* -1: absent */
    int16_t co_extra;           /* _PyCodeObjectExtra *; -1: use the API only */
    uint8_t free_threaded;
    struct pi_abi_jit jit;
};

/* Copies the row for major.minor into *out, adjusted for free-threaded
 * builds. Returns 0, or -1 if the version is not supported. Pure. */
int pi_abi_lookup(unsigned major, unsigned minor, int free_threaded, struct pi_abi *out);

/* What start-up must know before the build is known to be supported: how
 * the library waits for interpreters, and CPython's own perf support. A
 * version newer than the table gets the newest row's facts (it is refused
 * later, with a reason, once it runs Python). Returns 0, or -1 for Python 2
 * and 3.0-3.5, where the library stays inert. Pure. */
struct pi_abi_startup {
    enum pi_wait_kind wait;
    enum pi_cpython_perf cpython_perf;
};
int pi_abi_startup_facts(unsigned major, unsigned minor, struct pi_abi_startup *out);

/* The interpreter a thread state belongs to. */
static inline void *pi_abi_interp_of(const struct pi_abi *abi, void *tstate)
{
    return *(void **)((char *)tstate + abi->tstate_interp);
}

/* Lowest and highest supported minor versions of Python 3. */
void pi_abi_supported_range(unsigned *lo, unsigned *hi);

/* Parses the leading "X.Y" of Py_GetVersion()'s text. Returns 0 on success. */
int pi_abi_parse_version(const char *text, unsigned *major, unsigned *minor);

/* Checks the table's code-object offsets against a PyMemberDef array (the
 * code type's tp_members, NULL-name terminated, at most max_members long).
 * Returns 0 when every offset the table has is confirmed; otherwise -1 with a
 * reason in err. Reads only the memory it is given. */
int pi_abi_check_members(const struct pi_abi *abi, const void *members, size_t max_members,
                         char *err, size_t errlen);

/* Offset of tp_members in PyTypeObject: identical in every 3.x x86_64/aarch64
 * build (ob_type at +8 or +24 shifts only the free-threaded header). */
size_t pi_abi_tp_members_offset(int free_threaded);

#endif
