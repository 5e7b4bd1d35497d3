/* The CPython functions and objects the library uses, found with dlsym.
 *
 * No Python headers are included and libpython is not linked: one .so serves
 * every version and build. Objects are opaque (pi_pyobj); fields are read
 * through offsets from the ABI table. */
#ifndef PI_PYSYMS_H
#define PI_PYSYMS_H

#include <stddef.h>
#include <stdint.h>

typedef struct pi_pyobj pi_pyobj;
typedef long pi_ssize_t;
typedef int (*pi_audit_hook_fn)(const char *event, pi_pyobj *args, void *userdata);

struct pi_py {
    const char *(*GetVersion)(void);
    int (*IsInitialized)(void);
    void *EvalFrameDefault;                            /* _PyEval_EvalFrameDefault */
    pi_pyobj *CodeType;                                /* &PyCode_Type */
    void *(*ThreadStateGet)(void);                     /* may return NULL */
    void *(*InterpreterHead)(void);
    int64_t (*InterpreterGetID)(void *interp);         /* 3.7+ */
    void *(*GetEvalFrameFunc)(void *interp);           /* 3.9+ */
    void (*SetEvalFrameFunc)(void *interp, void *fn);  /* 3.9+ */
    pi_ssize_t (*RequestCodeExtraIndex)(void (*freefunc)(void *)); /* 3.8+ */
    int (*CodeGetExtra)(pi_pyobj *code, pi_ssize_t index, void **extra);
    int (*CodeSetExtra)(pi_pyobj *code, pi_ssize_t index, void *extra);
    int (*AddAuditHook)(pi_audit_hook_fn hook, void *userdata); /* 3.8+ */
    int (*AtExit)(void (*fn)(void));
    const char *(*UnicodeAsUTF8AndSize)(pi_pyobj *s, pi_ssize_t *size);
    pi_pyobj *(*UnicodeAsEncodedString)(pi_pyobj *s, const char *enc, const char *errors);
    char *(*BytesAsString)(pi_pyobj *b);
    void (*DecRef)(pi_pyobj *o);
    void (*IncRef)(pi_pyobj *o);
    pi_pyobj *(*ErrOccurred)(void);
    void (*ErrFetch)(pi_pyobj **type, pi_pyobj **value, pi_pyobj **tb);
    void (*ErrRestore)(pi_pyobj *type, pi_pyobj *value, pi_pyobj *tb);
    void (*ErrClear)(void);
    void (*ErrSetString)(pi_pyobj *type, const char *message);
    pi_pyobj **ExcRecursionError;                      /* &PyExc_RecursionError */
    int (*AddPendingCall)(int (*fn)(void *), void *arg);
    void *(*SaveThread)(void);                         /* detaches this thread */
    void (*RestoreThread)(void *tstate);
    int (*GILStateCheck)(void);                        /* 1: this thread holds the GIL */
    int (*GILStateEnsure)(void);                       /* PyGILState_STATE, an enum */
    void (*GILStateRelease)(int state);
    pi_pyobj *(*SysGetObject)(const char *name);                  /* borrowed */
    int (*SysSetObject)(const char *name, pi_pyobj *value);
    pi_pyobj *(*CFunctionNewEx)(void *methoddef, pi_pyobj *self, pi_pyobj *module);
    pi_pyobj *(*ObjectCall)(pi_pyobj *callable, pi_pyobj *args, pi_pyobj *kwargs);
    pi_pyobj *(*TupleGetItem)(pi_pyobj *tuple, pi_ssize_t i);     /* borrowed */
    pi_pyobj *(*ObjectGetAttrString)(pi_pyobj *o, const char *name);
    int (*ObjectSetAttrString)(pi_pyobj *o, const char *name, pi_pyobj *v);
    pi_pyobj *(*ModuleNew)(const char *name);
    int free_threaded; /* detected from build-specific symbols */
};

/* Resolves every symbol the given version needs through `handle` (a dlopen
 * handle or RTLD_DEFAULT). Returns 0, or -1 naming the first missing symbol
 * in `missing`. */
int pi_pysyms_resolve(struct pi_py *py, void *handle, unsigned minor, char *missing,
                      size_t missing_len);

/* True if `handle` looks like CPython (and not PyPy or another runtime that
 * exports a few Py* names). */
int pi_pysyms_is_cpython(void *handle);

#endif
