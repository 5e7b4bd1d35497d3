/* The eval-frame functions: the hot path that runs on every Python call.
 *
 * Per call: read the code object out of the frame, look up its trampoline
 * (code extra, or the side table on 3.6/3.7), and call the real evaluator
 * through it. The trampoline is a unique native frame per code object, named
 * in the perf map, so a sampled native stack shows which Python function each
 * evaluator frame was running. A miss makes the trampoline (slow path, once
 * per code object): it is announced by every backend before it first runs. */
#include "eval.h"

#include "codenames.h"
#include "cpython_jit.h"
#include "interp.h"
#include "fork.h"
#include "lock.h"
#include "log.h"
#include "names.h"
#include "stackguard.h"
#include "state.h"
#include "unwind_registry.h"

#include <stdio.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

/* tramp(a0, a1, a2, evaluator) from tramp_<arch>.S */
typedef void *(*tramp_fn)(void *a0, void *a1, void *a2, void *evaluator);
typedef void *(*eval2_fn)(void *frame, int throwflag);
typedef void *(*eval3_fn)(void *tstate, void *frame, int throwflag);

#define UNLIKELY(x) __builtin_expect(!!(x), 0)
#define LIKELY(x) __builtin_expect(!!(x), 1)

/* CPython's _PyCodeObjectExtra: a size, then one slot per extra user. */
struct code_extra {
    pi_ssize_t size;
    void *slots[];
};

/* A code object's extra array and a slot of it, read with acquire: free-
 * threaded 3.14+ publishes both with release stores (gh-144981), and 3.13t
 * with plain stores in the same order, which x86-64 keeps (TSO). Plain
 * loads on x86-64; ldar on AArch64. */
static inline const struct code_extra *extra_of(const struct pi_hot *hot, const pi_pyobj *code)
{
    return __atomic_load_n(
        (struct code_extra *const *)(const void *)((const char *)code + hot->co_extra_offset),
        __ATOMIC_ACQUIRE);
}

static inline void *slot_of(const struct code_extra *x, long index)
{
    return __atomic_load_n(&x->slots[index], __ATOMIC_ACQUIRE);
}

static inline void *lookup(struct pi_state *s, pi_pyobj *code, long index)
{
    int mode = atomic_load_explicit(&s->hot.lookup, memory_order_relaxed);
    if (LIKELY(mode == PI_LOOKUP_DIRECT)) {
        const struct code_extra *x = extra_of(&s->hot, code);
        return x != NULL && index < x->size ? slot_of(x, index) : NULL;
    }
    if (mode == PI_LOOKUP_SIDE_TABLE)
        return pi_sidetable_get(&s->side, code);
    void *tramp = NULL;
    /* Fails only for non-code objects, which the caller ruled out. */
    if (s->hot.get_extra(code, index, &tramp) != 0)
        return NULL;
    return tramp;
}

/* The direct read is checked against the API on the first trampoline: if
 * the table's co_extra offset were wrong for this build, every later lookup
 * goes through the API instead. */
static void verify_direct_lookup(struct pi_state *s, pi_pyobj *code, long index, void *tramp)
{
    if (atomic_load(&s->hot.lookup) != PI_LOOKUP_DIRECT || s->direct_lookup_verified)
        return;
    void *via_api = NULL;
    int rc = s->hot.get_extra(code, index, &via_api);
    if (rc != 0)
        s->py.ErrClear();
    if (rc != 0 || via_api != tramp || lookup(s, code, index) != tramp) {
        atomic_store(&s->hot.lookup, PI_LOOKUP_API);
        pi_attention_raise(s, PI_ATTN_LOOKUP);
        pi_log(PI_LOG_INFO, "co_extra is not where the ABI table says; using the API");
    }
    s->direct_lookup_verified = 1;
}

static int remember(struct pi_state *s, pi_pyobj *code, long index, void *tramp)
{
    if (s->abi.extra == PI_EXTRA_SIDE_TABLE) {
        if (pi_sidetable_put(&s->side, code, tramp) != 0)
            return -1;
        /* Keep the code object: its address must not come back as another
         * code object's while the entry exists (sidetable.h). */
        s->py.IncRef(code);
        return 0;
    }
    /* Serialised by our lock: the code-extra functions are not thread-safe
     * in free-threaded 3.13. */
    pi_pyobj *et = NULL, *ev = NULL, *etb = NULL;
    int saved = s->py.ErrOccurred() != NULL;
    if (saved)
        s->py.ErrFetch(&et, &ev, &etb);
    int rc = s->py.CodeSetExtra(code, index, tramp);
    if (rc != 0)
        s->py.ErrClear();
    if (saved)
        s->py.ErrRestore(et, ev, etb);
    return rc;
}

/* Slow path: a code object without a trampoline. Returns NULL if none can be
 * made (the call then runs untouched). */
static __attribute__((noinline)) void *make_trampoline(struct pi_state *s, pi_pyobj *code,
                                                       long index)
{
    struct pi_code_names names;
    pi_code_names_read(s, code, &names);

    pi_lock(s);
    void *tramp = lookup(s, code, index); /* another thread may have won */
    if (tramp == NULL) {
        pi_fork_before_announce(s); /* a forked child's own files, at first need */
        uint64_t arenas = s->pool.arenas;
        tramp = pi_arena_alloc(&s->pool, &s->image);
        if (tramp != NULL && s->pool.arenas != arenas)
            pi_unwind_register_arena(s->pool.base, &s->image);
        if (tramp == NULL) {
            pi_log(PI_LOG_WARN, "cannot map executable memory (%m); new functions run unnamed");
        } else {
            struct pi_tramp_info info = {
                .addr = (uintptr_t)tramp,
                .arena = (uintptr_t)s->pool.base,
                .code_size = s->image.code_size,
                .code_index = s->pool.slots_made,
                .symbol = names.symbol,
                .symbol_len = names.symbol_len,
                .filename = names.filename,
                .firstlineno = names.firstlineno > 0 ? (uint32_t)names.firstlineno : 0,
                .unwind = (const uint8_t *)tramp + ((s->image.code_size + 7u) & ~7u),
                .unwind_size = s->unwind.total,
                .unwind_hdr_size = s->unwind.hdr_size,
                .unwind_mapped_size = s->unwind.mapped_size,
            };
            pi_backends_announce(&s->backends, &info);
            if (remember(s, code, index, tramp) == 0)
                verify_direct_lookup(s, code, index, tramp);
        }
    }
    pi_unlock(s);
    return tramp;
}

/* The uniform hot parameters (see struct pi_hot): relaxed loads. */
static inline long hot_extra_index(struct pi_hot *hot)
{
    return atomic_load_explicit(&hot->extra_index, memory_order_relaxed);
}

static inline void *hot_next_eval(struct pi_hot *hot)
{
    return atomic_load_explicit(&hot->next_eval, memory_order_relaxed);
}

/* Off the plain path (PI_ATTN_*): fork bookkeeping, switched off, or
 * interpreters that differ. Returns 0 to go on through a trampoline with
 * *index and *next, or -1 to call *next directly. */
static __attribute__((noinline)) int attend(struct pi_state *s, void *tstate, long *index,
                                            void **next)
{
    int attention = atomic_load_explicit(&s->hot.attention, memory_order_acquire);
    if (attention & PI_ATTN_FORK)
        pi_fork_first_call(s);
    if (tstate == NULL)
        tstate = s->py.ThreadStateGet();
    void *interp = tstate ? pi_abi_interp_of(&s->abi, tstate) : NULL;
    if (attention & PI_ATTN_MIXED) {
        struct pi_interp_record *r = NULL;
        unsigned n = s->nrecords < PI_MAX_INTERP_RECORDS ? s->nrecords : PI_MAX_INTERP_RECORDS;
        for (unsigned i = 0; i < n && r == NULL; i++)
            if (s->records[i].interp == interp)
                r = &s->records[i];
        if (r == NULL) { /* not ours to route: run it plainly */
            *next = s->py.EvalFrameDefault;
            return -1;
        }
        *index = r->extra_index;
        *next = r->next_eval;
    }
    if (attention & PI_ATTN_OFF) {
        if (interp != NULL)
            pi_interp_leave(s, interp); /* later calls skip the hook entirely */
        return -1;
    }
    return 0;
}

/* Everything but the plain path: attention bits, a lookup mode other than
 * the direct read, a miss (make the trampoline), or no code object. */
static __attribute__((noinline)) void *slow_path(struct pi_state *s, void *tstate, void *frame,
                                                 int throwflag, void **next_out)
{
    long index = hot_extra_index(&s->hot);
    void *next = hot_next_eval(&s->hot);
    *next_out = next;
    if (pi_jit_changed(&s->jit) || s->jit.pending)
        pi_jit_look(s, tstate, frame);
    if ((atomic_load_explicit(&s->hot.attention, memory_order_acquire) & ~PI_ATTN_LOOKUP) != 0 &&
        attend(s, tstate, &index, &next) != 0) {
        *next_out = next;
        return NULL;
    }
    *next_out = next;
    pi_pyobj *code = pi_hot_code_of(&s->hot, frame);
    if (code == NULL)
        return NULL;
    void *tramp = lookup(s, code, index);
    return tramp != NULL ? tramp : make_trampoline(s, code, index);
    (void)throwflag;
}

/* The plain path, kept free of calls so that it needs no stack frame and
 * leaves by a tail jump into the trampoline: attention clear, a code
 * object, its trampoline found by the direct co_extra read. */
static inline void *fast_lookup(struct pi_state *s, void *frame)
{
    if (UNLIKELY(atomic_load_explicit(&s->hot.attention, memory_order_relaxed) != 0))
        return NULL; /* PI_ATTN_LOOKUP covers the lookup modes other than direct */
    if (UNLIKELY(pi_stack_low()))
        return NULL; /* a new thread, or one near its stack's end */
    pi_pyobj *code = pi_hot_code_of(&s->hot, frame);
    if (UNLIKELY(code == NULL))
        return NULL;
    const struct code_extra *x = extra_of(&s->hot, code);
    long index = hot_extra_index(&s->hot);
    return LIKELY(x != NULL && index < x->size) ? slot_of(x, index) : NULL;
}

/* The entry points and the tail-call wrappers are left uninstrumented so
 * that a ThreadSanitizer build keeps the release build's shape: no frame of
 * ours between CPython's evaluator and the trampoline (perf 6.1 loses the
 * chain above such a frame in some runs: docs/reliability.md, F12). Their
 * reads of shared state go through fast_lookup, hot_next_eval and
 * slow_path, which stay instrumented: compilers don't inline across
 * differing sanitizer attributes. No local of theirs may have its address
 * taken (ASan would give it a frame). Without a sanitizer the attribute
 * changes nothing. */
#define SAME_FRAME_SHAPE __attribute__((no_sanitize("thread")))

/* The thread's C stack is nearly full (stackguard.h): sets RecursionError
 * and returns 1, unless CPython guards the stack itself there. Also
 * computes a new thread's floor on its first call. How the call is then
 * refused depends on who pops the frame (enum pi_refusal). */
static __attribute__((noinline, cold)) int refuse_deep_call(struct pi_state *s)
{
    size_t used = 0, size = 0;
    if (!pi_stack_exhausted(pi_stack_pointer(), s->abi.refusal != PI_REFUSE_NONE, &used, &size))
        return 0;
    char message[200];
    snprintf(message, sizeof message,
             "maximum recursion depth exceeded: %zu of %zu KiB of C stack used (pyperfinject: "
             "under a PEP 523 hook every Python call is a C call)",
             used / 1024, size / 1024);
    s->py.ErrSetString(*s->py.ExcRecursionError, message);
    return 1;
}

/* The rest of a call that missed the plain path; entered by tail call. */
static SAME_FRAME_SHAPE __attribute__((noinline)) void *
slow_tstate_frame_throw(void *tstate, void *frame, int throwflag)
{
    if (UNLIKELY(pi_stack_low()) && refuse_deep_call(&pi_state)) {
        if (pi_state.abi.refusal == PI_REFUSE_RETURN)
            return NULL;
        throwflag = 1; /* the evaluator unwinds the frame with the exception */
    }
    void *next;
    void *tramp = slow_path(&pi_state, tstate, frame, throwflag, &next);
    if (tramp == NULL)
        return ((eval3_fn)next)(tstate, frame, throwflag);
    return ((tramp_fn)tramp)(tstate, frame, (void *)(intptr_t)throwflag, next);
}

static SAME_FRAME_SHAPE __attribute__((noinline)) void *slow_frame_throw(void *frame,
                                                                          int throwflag)
{
    if (UNLIKELY(pi_stack_low()) && refuse_deep_call(&pi_state))
        return NULL;
    void *next;
    void *tramp = slow_path(&pi_state, NULL, frame, throwflag, &next);
    if (tramp == NULL)
        return ((eval2_fn)next)(frame, throwflag);
    return ((tramp_fn)tramp)(frame, (void *)(intptr_t)throwflag, NULL, next);
}

/* 3.9+: PyObject *(PyThreadState *, frame, int) */
static SAME_FRAME_SHAPE void *hook_tstate_frame_throw(void *tstate, void *frame, int throwflag)
{
    struct pi_state *s = &pi_state;
    void *tramp = fast_lookup(s, frame);
    if (LIKELY(tramp != NULL))
        return ((tramp_fn)tramp)(tstate, frame, (void *)(intptr_t)throwflag, hot_next_eval(&s->hot));
    return slow_tstate_frame_throw(tstate, frame, throwflag);
}

static inline int jit_wants_look(struct pi_state *s, void *frame)
{
    struct pi_jit_watch *w = &s->jit;
    return pi_jit_changed(w) ||
           (UNLIKELY(w->pending) && pi_jit_waiting_look(w, pi_hot_code_of(&s->hot, frame)));
}

/* 3.15+ with CPython's JIT list to follow: the same, and a look at the
 * list whenever it changed (cpython_jit.h). */
static SAME_FRAME_SHAPE void *hook_tstate_frame_throw_jit(void *tstate, void *frame, int throwflag)
{
    struct pi_state *s = &pi_state;
    void *tramp = UNLIKELY(jit_wants_look(s, frame)) ? NULL : fast_lookup(s, frame);
    if (LIKELY(tramp != NULL))
        return ((tramp_fn)tramp)(tstate, frame, (void *)(intptr_t)throwflag, hot_next_eval(&s->hot));
    return slow_tstate_frame_throw(tstate, frame, throwflag);
}

/* 3.6-3.8: PyObject *(PyFrameObject *, int) */
static SAME_FRAME_SHAPE void *hook_frame_throw(void *frame, int throwflag)
{
    struct pi_state *s = &pi_state;
    void *tramp = fast_lookup(s, frame);
    if (LIKELY(tramp != NULL))
        return ((tramp_fn)tramp)(frame, (void *)(intptr_t)throwflag, NULL, hot_next_eval(&s->hot));
    return slow_frame_throw(frame, throwflag);
}

/* 3.6/3.7: the same, with the side table instead of co_extra. */
static void *hook_frame_throw_side_table(void *frame, int throwflag)
{
    struct pi_state *s = &pi_state;
    if (LIKELY((atomic_load_explicit(&s->hot.attention, memory_order_relaxed) &
                ~PI_ATTN_LOOKUP) == 0 && !pi_stack_low())) {
        pi_pyobj *code = pi_hot_code_of(&s->hot, frame);
        if (LIKELY(code != NULL)) {
            void *tramp = pi_sidetable_get(&s->side, code);
            if (LIKELY(tramp != NULL))
                return ((tramp_fn)tramp)(frame, (void *)(intptr_t)throwflag, NULL,
                                         hot_next_eval(&s->hot));
        }
    }
    return slow_frame_throw(frame, throwflag);
}

/* The benchmark floor (PYPERFINJECT_PASSTHROUGH=1): what any PEP 523 hook
 * costs, with no trampoline, no lookup and no files. */
static void *passthrough_tstate_frame_throw(void *tstate, void *frame, int throwflag)
{
    struct pi_state *s = &pi_state;
    if (UNLIKELY(pi_stack_low()) && refuse_deep_call(s)) {
        if (s->abi.refusal == PI_REFUSE_RETURN)
            return NULL;
        throwflag = 1;
    }
    long index = hot_extra_index(&s->hot);
    void *next = hot_next_eval(&s->hot);
    if (UNLIKELY((atomic_load_explicit(&s->hot.attention, memory_order_relaxed) &
                  ~PI_ATTN_LOOKUP) != 0))
        attend(s, tstate, &index, &next);
    return ((eval3_fn)next)(tstate, frame, throwflag);
}

static void *passthrough_frame_throw(void *frame, int throwflag)
{
    struct pi_state *s = &pi_state;
    if (UNLIKELY(pi_stack_low()) && refuse_deep_call(s))
        return NULL;
    long index = hot_extra_index(&s->hot);
    void *next = hot_next_eval(&s->hot);
    if (UNLIKELY((atomic_load_explicit(&s->hot.attention, memory_order_relaxed) &
                  ~PI_ATTN_LOOKUP) != 0))
        attend(s, NULL, &index, &next);
    return ((eval2_fn)next)(frame, throwflag);
}

void *pi_eval_hook_for(const struct pi_state *s)
{
    enum pi_hook_kind kind = s->abi.hook;
    if (s->cfg.passthrough)
        return kind == PI_HOOK_FRAME_THROW ? (void *)passthrough_frame_throw
                                           : (void *)passthrough_tstate_frame_throw;
    if (kind == PI_HOOK_FRAME_THROW)
        return s->abi.extra == PI_EXTRA_SIDE_TABLE ? (void *)hook_frame_throw_side_table
                                                   : (void *)hook_frame_throw;
    return s->jit.desc != NULL ? (void *)hook_tstate_frame_throw_jit
                               : (void *)hook_tstate_frame_throw;
}
