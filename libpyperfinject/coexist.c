/* Living with CPython's own perf trampoline (3.12+).
 *
 * Policy: CPython wins. CPython refuses to start its trampoline while
 * another eval-frame function is installed (RuntimeError, or a fatal error
 * at start-up for -X perf), so:
 *  - -X perf / -X perf_jit / PYTHONPERFSUPPORT / PYTHON_PERF_JIT_SUPPORT at
 *    start-up: the library stands aside for the whole process;
 *  - sys.activate_stack_trampoline() at run time: the library wraps it; the
 *    wrapper first steps out of the calling interpreter for good, then calls
 *    CPython's function, which then succeeds as it would without us. If it
 *    fails anyway (a bad backend name), the library comes back.
 * The perf map is shared without conflict (both append whole lines, for
 * different addresses). CPython's perf_jit backend truncates and rewrites
 * /tmp/jit-PID.dump, so the library stops writing its own dump there
 * (backend.h's cpython_rival). The start-up checks are preflight.c's. */
#include "coexist.h"

#include "interp.h"
#include "lock.h"
#include "log.h"
#include "state.h"

#include <stdio.h>
#include <string.h>

/* PyMethodDef as laid out on LP64 in every version. */
struct method_def {
    const char *name;
    void *meth;
    int flags;
    const char *doc;
};
enum { METH_VARARGS = 1, METH_KEYWORDS = 2 };

static void *interp_of_current(struct pi_state *s)
{
    void *tstate = s->py.ThreadStateGet();
    return tstate ? pi_abi_interp_of(&s->abi, tstate) : NULL;
}

/* The wrapper's `self` is a module of its own holding CPython's function:
 * a module, so that the wrapper's __qualname__ is its bare name as for
 * CPython's (a builtin bound to anything else is qualified by its type). */
#define ORIGINAL_ATTR "activate_stack_trampoline"

/* Called instead of sys.activate_stack_trampoline(backend). */
static pi_pyobj *activate_wrapper(pi_pyobj *holder, pi_pyobj *args, pi_pyobj *kwargs)
{
    struct pi_state *s = &pi_state;
    pi_pyobj *original = s->py.ObjectGetAttrString(holder, ORIGINAL_ATTR);
    if (original == NULL)
        return NULL;
    void *interp = interp_of_current(s);
    int left = interp != NULL && pi_interp_yield(s, interp, 1);
    pi_pyobj *backend = s->py.TupleGetItem(args, 0);
    const char *name = backend ? s->py.UnicodeAsUTF8AndSize(backend, NULL) : NULL;
    if (backend == NULL || name == NULL)
        s->py.ErrClear(); /* CPython reports a bad argument itself below */
    /* Before CPython opens (and truncates) the file it will write. */
    unsigned stopped = 0;
    if (left && name != NULL) {
        pi_lock(s);
        stopped = pi_backends_give_way(&s->backends, name, s->cfg.dir);
        pi_unlock(s);
    }
    pi_pyobj *result = s->py.ObjectCall(original, args, kwargs);
    s->py.DecRef(original);
    if (result == NULL && left) {
        pi_interp_yield(s, interp, 0); /* CPython did not take it */
        pi_lock(s);
        pi_backends_resume(&s->backends, stopped);
        pi_unlock(s);
    } else if (result != NULL && left) {
        pi_log(PI_LOG_INFO, "sys.activate_stack_trampoline: CPython's trampoline takes over "
                            "this interpreter");
    }
    return result;
}

/* The wrapper must look like CPython's function to introspection (help(),
 * inspect.signature): same name, and the same internal doc, from which
 * CPython derives __doc__ and __text_signature__ ("NAME(SIG)\n--\n\nDOC"). */
static struct method_def activate_def = {
    "activate_stack_trampoline", (void *)activate_wrapper, METH_VARARGS | METH_KEYWORDS, NULL,
};
static char activate_doc[2048];

/* Under the GIL: str(getattr(o, name)) into buf, or "" (errors cleared). */
static void attr_text(struct pi_state *s, pi_pyobj *o, const char *name, char *buf, size_t len)
{
    buf[0] = '\0';
    pi_pyobj *v = s->py.ObjectGetAttrString(o, name);
    pi_ssize_t n = 0;
    const char *text = v != NULL ? s->py.UnicodeAsUTF8AndSize(v, &n) : NULL;
    if (text != NULL && (size_t)n < len)
        memcpy(buf, text, (size_t)n + 1);
    if (v != NULL)
        s->py.DecRef(v);
    s->py.ErrClear(); /* None, absent or too long: no text */
}

/* Under the GIL, once: the wrapper's internal doc, rebuilt from CPython's. */
static void build_doc(struct pi_state *s, pi_pyobj *original)
{
    char sig[256], doc[1536], full[sizeof activate_doc];
    attr_text(s, original, "__text_signature__", sig, sizeof sig);
    attr_text(s, original, "__doc__", doc, sizeof doc);
    if (sig[0] != '\0')
        snprintf(full, sizeof full, "%s%s\n--\n\n%s", activate_def.name, sig, doc);
    else
        snprintf(full, sizeof full, "%s", doc);
    pi_lock(s);
    if (activate_def.doc == NULL && full[0] != '\0') {
        memcpy(activate_doc, full, sizeof activate_doc);
        activate_def.doc = activate_doc;
    }
    pi_unlock(s);
}

/* Under the GIL: sys.activate_stack_trampoline replaced by the wrapper. */
static void wrap(struct pi_state *s, pi_pyobj *original)
{
    build_doc(s, original);
    pi_pyobj *holder = s->py.ModuleNew("sys");
    pi_pyobj *module = s->py.ObjectGetAttrString(original, "__module__");
    pi_pyobj *wrapper = NULL;
    if (holder != NULL && module != NULL &&
        s->py.ObjectSetAttrString(holder, ORIGINAL_ATTR, original) == 0)
        wrapper = s->py.CFunctionNewEx(&activate_def, holder, module);
    if (wrapper == NULL || s->py.SysSetObject("activate_stack_trampoline", wrapper) != 0)
        s->py.ErrClear(); /* CPython's own function stays */
    if (wrapper != NULL)
        s->py.DecRef(wrapper);
    if (module != NULL)
        s->py.DecRef(module);
    if (holder != NULL)
        s->py.DecRef(holder);
}

void pi_coexist_watch(struct pi_state *s, void *interp)
{
    if (s->abi.cpython_perf == PI_CPYTHON_PERF_NONE || !s->py.IsInitialized())
        return;
    pi_lock(s);
    struct pi_interp_record *r = NULL;
    unsigned n = s->nrecords < PI_MAX_INTERP_RECORDS ? s->nrecords : PI_MAX_INTERP_RECORDS;
    for (unsigned i = 0; i < n && r == NULL; i++)
        if (s->records[i].interp == interp && !s->records[i].coexist_checked)
            r = &s->records[i];
    if (r != NULL) {
        r->coexist_checked = 1;
        atomic_fetch_sub(&s->coexist_pending, 1);
    }
    pi_unlock(s);
    if (r == NULL)
        return;

    pi_pyobj *et = NULL, *ev = NULL, *etb = NULL;
    int saved = s->py.ErrOccurred() != NULL;
    if (saved)
        s->py.ErrFetch(&et, &ev, &etb);
    pi_pyobj *original = s->py.SysGetObject("activate_stack_trampoline");
    if (original != NULL)
        wrap(s, original);
    if (saved)
        s->py.ErrRestore(et, ev, etb);
}
