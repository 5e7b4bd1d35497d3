/* Another PEP 523 user, like a debugger or a JIT: it installs its own
 * eval-frame function, counts every call and passes it on to whatever was
 * installed before it. Header-less (dlsym), for CPython 3.9+.
 *
 * Loaded as a preload *after* libpyperfinject in LD_PRELOAD, its constructor
 * registers an audit hook before the library's, so it installs first
 * (PEP523_COUNTER_EARLY=1). Loaded later through ctypes, install_counter()
 * puts it in front of whatever runs then. */
#include <dlfcn.h>
#include <stdatomic.h>
#include <stdlib.h>

typedef void *(*eval_fn)(void *tstate, void *frame, int throwflag);

static eval_fn previous;
static _Atomic long calls;
static int installed;

static void *(*get_eval)(void *interp);
static void (*set_eval)(void *interp, void *fn);
static void *(*interp_get)(void);
static void *default_eval;

static void *counting_eval(void *tstate, void *frame, int throwflag)
{
    atomic_fetch_add(&calls, 1);
    return previous(tstate, frame, throwflag);
}

static int resolve(void)
{
    get_eval = (void *(*)(void *))dlsym(RTLD_DEFAULT, "_PyInterpreterState_GetEvalFrameFunc");
    set_eval = (void (*)(void *, void *))dlsym(RTLD_DEFAULT, "_PyInterpreterState_SetEvalFrameFunc");
    interp_get = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyInterpreterState_Get");
    default_eval = dlsym(RTLD_DEFAULT, "_PyEval_EvalFrameDefault");
    return get_eval && set_eval && interp_get && default_eval ? 0 : -1;
}

/* Call with the GIL held (ctypes.PyDLL). Returns 0 on success. */
int install_counter(void)
{
    if (installed || resolve() != 0)
        return -1;
    void *interp = interp_get();
    void *current = get_eval(interp);
    previous = (eval_fn)(current ? current : default_eval);
    set_eval(interp, (void *)counting_eval);
    installed = 1;
    return 0;
}

long counted_calls(void) { return atomic_load(&calls); }

/* 1 if our function is still the interpreter's eval function. */
int counter_is_installed(void) { return installed && get_eval(interp_get()) == (void *)counting_eval; }

typedef int (*audit_hook_fn)(const char *, void *, void *);

/* Like the library: install at the first audit event with a thread state. */
static int early_hook(const char *event, void *args, void *data)
{
    (void)event, (void)args, (void)data;
    void *(*tstate_get)(void) = (void *(*)(void))dlsym(RTLD_DEFAULT, "PyThreadState_GetUnchecked");
    if (tstate_get == NULL)
        tstate_get = (void *(*)(void))dlsym(RTLD_DEFAULT, "_PyThreadState_UncheckedGet");
    if (!installed && tstate_get != NULL && tstate_get() != NULL)
        install_counter();
    return 0;
}

__attribute__((constructor)) static void early(void)
{
    const char *want = getenv("PEP523_COUNTER_EARLY");
    int (*add_hook)(audit_hook_fn, void *) =
        (int (*)(audit_hook_fn, void *))dlsym(RTLD_DEFAULT, "PySys_AddAuditHook");
    if (want != NULL && want[0] == '1' && add_hook != NULL)
        add_hook(early_hook, NULL);
}
