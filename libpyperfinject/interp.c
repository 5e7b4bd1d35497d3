/* Finding interpreters and hooking each one.
 *
 * 3.8+: an audit hook registered before initialisation (PySys_AddAuditHook is
 * documented safe then) fires inside every interpreter during its own
 * initialisation, with its thread state attached and before user code runs:
 * the first event seen in an interpreter installs the eval-frame function
 * there. Subinterpreters are covered the same way. Finalisation clears audit
 * hooks, so a Py_AtExit callback re-registers for a host that initialises
 * Python again.
 *
 * 3.6/3.7 have no audit hooks: a watcher thread polls for the main
 * interpreter and stores its eval_frame field (one aligned pointer store).
 * Code that runs before that (tens of microseconds into start-up) is missed;
 * subinterpreters are not hooked. */
#include "log.h"
#include "state.h"

#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static int64_t interp_id(const struct pi_state *s, void *interp)
{
    return s->py.InterpreterGetID ? s->py.InterpreterGetID(interp) : 0;
}

static int id_installed(struct pi_state *s, int64_t id)
{
    uint64_t words = atomic_load_explicit(&s->installed_words, memory_order_acquire);
    uint64_t *bits = atomic_load_explicit(&s->installed_ids, memory_order_acquire);
    if (id < 0 || (uint64_t)id / 64 >= words || bits == NULL)
        return 0;
    return (atomic_load_explicit((_Atomic uint64_t *)&bits[id / 64], memory_order_relaxed) >>
            (id % 64)) & 1;
}

/* Under lock. Old bitmaps are never freed: a reader may still hold one. */
static int mark_installed(struct pi_state *s, int64_t id)
{
    uint64_t words = atomic_load(&s->installed_words);
    uint64_t *bits = atomic_load(&s->installed_ids);
    if ((uint64_t)id / 64 >= words) {
        uint64_t grown = words ? words : 4;
        while ((uint64_t)id / 64 >= grown)
            grown *= 2;
        uint64_t *bigger = calloc(grown, sizeof *bigger);
        if (bigger == NULL)
            return -1;
        if (bits)
            memcpy(bigger, bits, words * sizeof *bits);
        atomic_store(&s->installed_ids, bigger);
        atomic_store(&s->installed_words, grown);
        bits = bigger;
    }
    atomic_fetch_or((_Atomic uint64_t *)&bits[id / 64], 1ull << (id % 64));
    return 0;
}

static void *read_eval_func(const struct pi_state *s, void *interp)
{
    if (s->abi.install == PI_INSTALL_SETTER)
        return s->py.GetEvalFrameFunc(interp);
    return *(void *volatile *)((char *)interp + s->abi.eval_frame_offset);
}

static void write_eval_func(const struct pi_state *s, void *interp, void *fn)
{
    if (s->abi.install == PI_INSTALL_SETTER)
        s->py.SetEvalFrameFunc(interp, fn);
    else /* aligned pointer store: atomic on x86_64 and aarch64 */
        __atomic_store_n((void **)((char *)interp + s->abi.eval_frame_offset), fn,
                         __ATOMIC_RELEASE);
}

/* The evaluator our hook must call in this interpreter: the default one, or
 * a PEP 523 function somebody installed before us (chaining keeps both
 * working). NULL if the field holds something that isn't code. */
static void *choose_next(const struct pi_state *s, void *current)
{
    if (current == NULL || current == s->py.EvalFrameDefault)
        return s->py.EvalFrameDefault;
    Dl_info info;
    if (dladdr(current, &info) == 0)
        return NULL; /* not in any loaded object: maybe a wrong offset */
    return current;
}

static void on_finalize(void);

static struct pi_interp_record *record_of(struct pi_state *s, void *interp)
{
    unsigned n = s->nrecords < PI_MAX_INTERP_RECORDS ? s->nrecords : PI_MAX_INTERP_RECORDS;
    for (unsigned i = 0; i < n; i++)
        if (s->records[i].interp == interp)
            return &s->records[i];
    return NULL;
}

/* Under lock: the hot path's uniform parameters, or the records when
 * interpreters differ (another co_extra user, another chained function). */
static void recompute_route(struct pi_state *s)
{
    unsigned n = s->nrecords < PI_MAX_INTERP_RECORDS ? s->nrecords : PI_MAX_INTERP_RECORDS;
    int mixed = s->nrecords > PI_MAX_INTERP_RECORDS;
    for (unsigned i = 1; i < n; i++)
        if (s->records[i].extra_index != s->records[0].extra_index ||
            s->records[i].next_eval != s->records[0].next_eval)
            mixed = 1;
    if (n > 0 && !mixed) {
        /* Usually unchanged (a new interpreter like the others): don't
         * dirty the line every hot path reads. */
        if (atomic_load_explicit(&s->hot.extra_index, memory_order_relaxed) !=
            s->records[0].extra_index)
            atomic_store_explicit(&s->hot.extra_index, s->records[0].extra_index,
                                  memory_order_relaxed);
        if (atomic_load_explicit(&s->hot.next_eval, memory_order_relaxed) !=
            s->records[0].next_eval)
            atomic_store_explicit(&s->hot.next_eval, s->records[0].next_eval,
                                  memory_order_relaxed);
    }
    if (mixed)
        atomic_fetch_or(&s->hot.attention, PI_ATTN_MIXED);
    else
        atomic_fetch_and(&s->hot.attention, ~PI_ATTN_MIXED);
}

/* Under lock: a new record (the oldest is reused past the limit; its
 * interpreter then runs unprofiled rather than wrongly). */
static struct pi_interp_record *new_record(struct pi_state *s, void *interp, int64_t id)
{
    struct pi_interp_record *r = record_of(s, interp);
    if (r == NULL)
        r = &s->records[s->nrecords++ % PI_MAX_INTERP_RECORDS];
    if (r->interp != NULL && !r->coexist_checked && s->abi.minor >= 12)
        atomic_fetch_sub(&s->coexist_pending, 1); /* an evicted record */
    memset(r, 0, sizeof *r);
    r->interp = interp;
    r->id = id;
    if (s->abi.minor >= 12)
        atomic_fetch_add(&s->coexist_pending, 1);
    return r;
}

/* Under lock: put our hook in front of whatever runs there now. */
static int hook_in(struct pi_state *s, struct pi_interp_record *r)
{
    void *hook = pi_eval_hook_for(s->abi.hook);
    void *current = read_eval_func(s, r->interp);
    if (current != hook) {
        void *next = choose_next(s, current);
        if (next == NULL) {
            pi_log(PI_LOG_WARN, "interpreter %lld: unexpected eval_frame value; not hooking it",
                   (long long)r->id);
            r->state = PI_INTERP_YIELDED;
            return -1;
        }
        if (next != s->py.EvalFrameDefault && next != r->next_eval) {
            Dl_info info;
            dladdr(next, &info);
            pi_log(PI_LOG_INFO, "interpreter %lld: another eval-frame function is installed "
                   "(%s in %s); chaining to it", (long long)r->id,
                   info.dli_sname ? info.dli_sname : "?", info.dli_fname ? info.dli_fname : "?");
        }
        r->next_eval = next;
        recompute_route(s);
        write_eval_func(s, r->interp, hook);
    }
    r->state = PI_INTERP_HOOKED;
    return 0;
}

void pi_interp_install(struct pi_state *s, void *interp)
{
    int64_t id = interp_id(s, interp);
    if (id_installed(s, id))
        return;
    pthread_mutex_lock(&s->lock);
    if (id_installed(s, id) || mark_installed(s, id) != 0)
        goto out;
    long index = -1;
    if (s->abi.extra != PI_EXTRA_SIDE_TABLE) {
        index = (long)s->py.RequestCodeExtraIndex(NULL);
        if (index < 0) {
            s->py.ErrClear();
            pi_log(PI_LOG_WARN, "interpreter %lld: no code-extra slot left; not hooking it",
                   (long long)id);
            goto out;
        }
    }
    struct pi_interp_record *r = new_record(s, interp, id);
    r->extra_index = index;
    r->next_eval = s->py.EvalFrameDefault;
    if (atomic_load(&s->hot.attention) & PI_ATTN_OFF) {
        r->state = PI_INTERP_LEFT; /* started switched off: hooked when switched on */
        recompute_route(s);
    } else if (hook_in(s, r) != 0) {
        goto out;
    }
    pi_log(PI_LOG_DEBUG, "%s interpreter %lld (code-extra index %ld)",
           r->state == PI_INTERP_HOOKED ? "hooked" : "found", (long long)id, index);
    if (!s->atexit_registered && s->py.AtExit(on_finalize) == 0)
        s->atexit_registered = 1;
out:
    pthread_mutex_unlock(&s->lock);
}

void pi_interp_leave(struct pi_state *s, void *interp)
{
    pthread_mutex_lock(&s->lock);
    struct pi_interp_record *r = record_of(s, interp);
    if (r != NULL && r->state == PI_INTERP_HOOKED &&
        (atomic_load(&s->hot.attention) & PI_ATTN_OFF)) {
        if (read_eval_func(s, interp) == pi_eval_hook_for(s->abi.hook))
            write_eval_func(s, interp, r->next_eval);
        r->state = PI_INTERP_LEFT;
        pi_log(PI_LOG_DEBUG, "interpreter %lld switched off", (long long)r->id);
    }
    pthread_mutex_unlock(&s->lock);
}

void pi_interp_rejoin_all(struct pi_state *s)
{
    pthread_mutex_lock(&s->lock);
    unsigned n = s->nrecords < PI_MAX_INTERP_RECORDS ? s->nrecords : PI_MAX_INTERP_RECORDS;
    for (unsigned i = 0; i < n && !(atomic_load(&s->hot.attention) & PI_ATTN_OFF); i++)
        if (s->records[i].state == PI_INTERP_LEFT && hook_in(s, &s->records[i]) == 0)
            pi_log(PI_LOG_DEBUG, "interpreter %lld switched on", (long long)s->records[i].id);
    pthread_mutex_unlock(&s->lock);
}

int pi_interp_yield(struct pi_state *s, void *interp, int yield)
{
    int changed = 0;
    pthread_mutex_lock(&s->lock);
    struct pi_interp_record *r = record_of(s, interp);
    void *hook = pi_eval_hook_for(s->abi.hook);
    if (r != NULL && yield && r->state != PI_INTERP_YIELDED) {
        if (read_eval_func(s, interp) == hook)
            write_eval_func(s, interp, r->next_eval);
        r->state = PI_INTERP_YIELDED;
        changed = 1;
    } else if (r != NULL && !yield && r->state == PI_INTERP_YIELDED &&
               read_eval_func(s, interp) == r->next_eval) {
        /* Nobody took the interpreter after all: come back. */
        r->state = PI_INTERP_LEFT;
        if (!(atomic_load(&s->hot.attention) & PI_ATTN_OFF))
            hook_in(s, r);
        changed = 1;
    }
    pthread_mutex_unlock(&s->lock);
    return changed;
}

/* Someone replaced our hook while it should run: say so once, don't fight
 * (debuggers and JIT compilers install their own eval function). */
static void notice_replacement(struct pi_state *s, void *interp)
{
    if (s->replacement_reported || (atomic_load(&s->hot.attention) & PI_ATTN_OFF))
        return;
    void *current = read_eval_func(s, interp);
    if (current == pi_eval_hook_for(s->abi.hook))
        return;
    pthread_mutex_lock(&s->lock);
    struct pi_interp_record *r = record_of(s, interp);
    if (r != NULL && r->state == PI_INTERP_HOOKED && !s->replacement_reported) {
        Dl_info info;
        int known = current != NULL && dladdr(current, &info) != 0;
        pi_log(PI_LOG_INFO,
               "interpreter %lld: another eval-frame function (%s in %s) was installed in "
               "front of ours; Python functions are named only while it passes calls on",
               (long long)r->id, known && info.dli_sname ? info.dli_sname : "?",
               known && info.dli_fname ? info.dli_fname : "?");
        s->replacement_reported = 1;
    }
    pthread_mutex_unlock(&s->lock);
}

static int audit_hook(const char *event, pi_pyobj *args, void *userdata)
{
    (void)event, (void)args;
    struct pi_state *s = userdata;
    if (pi_activate(s) != 0)
        return 0;
    void *tstate = s->wait.thread_state_get();
    if (tstate == NULL)
        return 0;
    void *interp = *(void **)((char *)tstate + 16);
    pi_interp_install(s, interp);
    notice_replacement(s, interp);
    if (atomic_load_explicit(&s->coexist_pending, memory_order_relaxed) > 0)
        pi_coexist_watch(s, interp);
    return 0;
}

/* Runs at the very end of Py_FinalizeEx. Interpreter IDs start again at 0 in
 * a new runtime, and the audit hook list was cleared: start over. Trampolines
 * and files stay (frames and perf still refer to them). */
static void on_finalize(void)
{
    struct pi_state *s = &pi_state;
    pthread_mutex_lock(&s->lock);
    uint64_t *bits = atomic_load(&s->installed_ids);
    uint64_t words = atomic_load(&s->installed_words);
    for (uint64_t i = 0; i < words; i++)
        atomic_store((_Atomic uint64_t *)&bits[i], 0);
    s->nrecords = 0;
    atomic_store(&s->coexist_pending, 0);
    atomic_fetch_and(&s->hot.attention, ~PI_ATTN_MIXED);
    s->atexit_registered = 0;
    pthread_mutex_unlock(&s->lock);
    if (s->wait.add_audit_hook && s->wait.add_audit_hook(audit_hook, s) != 0)
        pi_log(PI_LOG_INFO, "cannot re-register the audit hook after finalisation");
}

/* The main interpreter is published in the interpreter list only after its
 * fields are set (PyInterpreterState_New), and eval_frame is written nowhere
 * else: hooking as soon as it appears, well before Py_IsInitialized() turns
 * 1, catches the whole start-up. */
static void *watcher(void *arg)
{
    struct pi_state *s = arg;
    /* Poll fast at first (interpreters appear within milliseconds), then back
     * off; give up after a minute of a runtime that never starts. */
    long delay_ns = 20 * 1000;
    for (long waited_ns = 0; waited_ns < 60L * 1000 * 1000 * 1000; waited_ns += delay_ns) {
        void *interp = s->wait.interpreter_head();
        if (interp != NULL) {
            if (pi_activate(s) == 0)
                pi_interp_install(s, interp);
            return NULL;
        }
        struct timespec ts = {0, delay_ns};
        nanosleep(&ts, NULL);
        if (delay_ns < 5 * 1000 * 1000)
            delay_ns *= 2;
    }
    pi_log(PI_LOG_INFO, "Python was not initialised within a minute; not waiting any longer");
    return NULL;
}

int pi_interp_start_waiting(struct pi_state *s, void *handle, unsigned minor, char *err,
                            size_t errlen)
{
    s->wait.add_audit_hook = (int (*)(pi_audit_hook_fn, void *))dlsym(handle, "PySys_AddAuditHook");
    s->wait.thread_state_get = (void *(*)(void))dlsym(handle, "PyThreadState_GetUnchecked");
    if (s->wait.thread_state_get == NULL)
        s->wait.thread_state_get = (void *(*)(void))dlsym(handle, "_PyThreadState_UncheckedGet");
    s->wait.interpreter_head = (void *(*)(void))dlsym(handle, "PyInterpreterState_Head");
    if (minor >= 8) {
        if (s->wait.add_audit_hook == NULL || s->wait.thread_state_get == NULL) {
            snprintf(err, errlen, "Python 3.%u lacks PySys_AddAuditHook", minor);
            return -1;
        }
        if (s->wait.add_audit_hook(audit_hook, s) != 0) {
            snprintf(err, errlen, "PySys_AddAuditHook refused the hook");
            return -1;
        }
        return 0;
    }
    if (s->wait.interpreter_head == NULL) {
        snprintf(err, errlen, "Python 3.%u lacks PyInterpreterState_Head", minor);
        return -1;
    }
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    /* Block all signals in the watcher: the host's handlers must run on its
     * own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&thread, &attr, watcher, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the watcher thread: %s", strerror(rc));
        return -1;
    }
    return 0;
}
