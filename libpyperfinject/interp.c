/* The switch: each interpreter's eval-frame field and its record.
 *
 * install puts our hook in front of whatever eval-frame function runs in an
 * interpreter (the default evaluator, or a PEP 523 function installed
 * before us, which the hook then calls: chaining keeps both working). leave,
 * rejoin and yield move an interpreter between hooked, left (switched off)
 * and yielded (CPython's own trampoline took it). Finding interpreters is
 * wait.c's; deciding when to switch is control.c's and coexist.c's. */
#include "interp.h"

#include "lock.h"
#include "log.h"
#include "state.h"

#include <dlfcn.h>
#include <stdlib.h>
#include <string.h>

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
    if ((current == NULL && s->abi.default_eval == PI_DEFAULT_IS_NULL) ||
        current == s->py.EvalFrameDefault)
        return s->py.EvalFrameDefault;
    Dl_info info;
    if (dladdr(current, &info) == 0)
        return NULL; /* not in any loaded object: maybe a wrong offset */
    return current;
}

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
        pi_attention_raise(s, PI_ATTN_MIXED);
    else
        pi_attention_lower(s, PI_ATTN_MIXED);
}

/* Under lock: a new record (the oldest is reused past the limit; its
 * interpreter then runs unprofiled rather than wrongly). */
static struct pi_interp_record *new_record(struct pi_state *s, void *interp, int64_t id)
{
    struct pi_interp_record *r = record_of(s, interp);
    if (r == NULL)
        r = &s->records[s->nrecords++ % PI_MAX_INTERP_RECORDS];
    int coexists = s->abi.cpython_perf != PI_CPYTHON_PERF_NONE; /* coexist.c has work */
    if (r->interp != NULL && !r->coexist_checked && coexists)
        atomic_fetch_sub(&s->coexist_pending, 1); /* an evicted record */
    memset(r, 0, sizeof *r);
    r->interp = interp;
    r->id = id;
    if (coexists)
        atomic_fetch_add(&s->coexist_pending, 1);
    return r;
}

/* Under lock: put our hook in front of whatever runs there now. */
static int hook_in(struct pi_state *s, struct pi_interp_record *r)
{
    void *hook = s->hook;
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
    pi_lock(s);
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
out:
    pi_unlock(s);
}

void pi_interp_leave(struct pi_state *s, void *interp)
{
    pi_lock(s);
    struct pi_interp_record *r = record_of(s, interp);
    if (r != NULL && r->state == PI_INTERP_HOOKED &&
        (atomic_load(&s->hot.attention) & PI_ATTN_OFF)) {
        if (read_eval_func(s, interp) == s->hook)
            write_eval_func(s, interp, r->next_eval);
        r->state = PI_INTERP_LEFT;
        pi_log(PI_LOG_DEBUG, "interpreter %lld switched off", (long long)r->id);
    }
    pi_unlock(s);
}

void pi_interp_rejoin_all(struct pi_state *s)
{
    pi_lock(s);
    unsigned n = s->nrecords < PI_MAX_INTERP_RECORDS ? s->nrecords : PI_MAX_INTERP_RECORDS;
    for (unsigned i = 0; i < n && !(atomic_load(&s->hot.attention) & PI_ATTN_OFF); i++)
        if (s->records[i].state == PI_INTERP_LEFT && hook_in(s, &s->records[i]) == 0)
            pi_log(PI_LOG_DEBUG, "interpreter %lld switched on", (long long)s->records[i].id);
    pi_unlock(s);
}

int pi_interp_yield(struct pi_state *s, void *interp, int yield)
{
    int changed = 0;
    pi_lock(s);
    struct pi_interp_record *r = record_of(s, interp);
    void *hook = s->hook;
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
    pi_unlock(s);
    return changed;
}

void pi_interp_notice_replacement(struct pi_state *s, void *interp)
{
    if (atomic_load_explicit(&s->replacement_reported, memory_order_relaxed) ||
        (atomic_load(&s->hot.attention) & PI_ATTN_OFF))
        return;
    void *current = read_eval_func(s, interp);
    if (current == s->hook)
        return;
    pi_lock(s);
    struct pi_interp_record *r = record_of(s, interp);
    if (r != NULL && r->state == PI_INTERP_HOOKED && !atomic_load(&s->replacement_reported)) {
        Dl_info info;
        int known = current != NULL && dladdr(current, &info) != 0;
        pi_log(PI_LOG_INFO,
               "interpreter %lld: another eval-frame function (%s in %s) was installed in "
               "front of ours; Python functions are named only while it passes calls on",
               (long long)r->id, known && info.dli_sname ? info.dli_sname : "?",
               known && info.dli_fname ? info.dli_fname : "?");
        atomic_store(&s->replacement_reported, 1);
    }
    pi_unlock(s);
}

/* Nothing is remembered until an interpreter was hooked: before that the
 * ABI may be unknown (a library that stood aside never learns it), so the
 * thread state is not read. A new interpreter at a freed one's address runs
 * CPython's evaluator until hooked, so the last test sends it the full way. */
int pi_interp_settled(struct pi_state *s, void *tstate)
{
    void *settled = atomic_load_explicit(&s->settled_interp, memory_order_relaxed);
    return settled != NULL && pi_abi_interp_of(&s->abi, tstate) == settled &&
           read_eval_func(s, settled) == s->hook;
}

void pi_interp_remember(struct pi_state *s, void *interp)
{
    if (read_eval_func(s, interp) == s->hook)
        atomic_store_explicit(&s->settled_interp, interp, memory_order_relaxed);
}

void pi_interp_forget_all(struct pi_state *s)
{
    pi_lock(s);
    atomic_store(&s->settled_interp, NULL);
    uint64_t *bits = atomic_load(&s->installed_ids);
    uint64_t words = atomic_load(&s->installed_words);
    for (uint64_t i = 0; i < words; i++)
        atomic_store((_Atomic uint64_t *)&bits[i], 0);
    s->nrecords = 0;
    atomic_store(&s->coexist_pending, 0);
    pi_attention_lower(s, PI_ATTN_MIXED);
    pi_unlock(s);
}
