/* The library's state: one instance per process (an eval-frame function has
 * no user-data argument, so the hook must find it statically).
 *
 * Fields are grouped by who may touch them:
 *   - set once while attaching, read-only afterwards;
 *   - `lock`-guarded: arenas, backends, interpreter records;
 *   - the hot block: read on every Python call, written under `lock` with
 *     release stores so a hook never sees half an update. */
#ifndef PI_STATE_H
#define PI_STATE_H

#include "abi.h"
#include "arena.h"
#include "backends.h"
#include "config.h"
#include "ehframe.h"
#include "jitwatch.h"
#include "pysyms.h"
#include "sidetable.h"

#include <pthread.h>
#include <stdatomic.h>

enum { PI_MAX_INTERP_RECORDS = 64 };

/* A forked child's pending work (fork.c). */
struct pi_fork {
    int child;        /* forked, and files or inherited lines still to make */
    uint64_t fork_ns; /* CLOCK_MONOTONIC at the fork */
};

/* Where an interpreter stands. */
enum pi_interp_state {
    PI_INTERP_HOOKED,  /* our eval function is installed */
    PI_INTERP_LEFT,    /* switched off: the previous function is back */
    PI_INTERP_YIELDED, /* CPython's own trampoline (or a bad field) took it: stay out */
};

/* One interpreter: what the hot path needs when interpreters differ, and
 * its switch state. Found by address, which is unique among live
 * interpreters and refreshed whenever a new interpreter is first seen. */
struct pi_interp_record {
    void *interp;
    int64_t id;
    long extra_index;   /* its code-extra index (-1 with the side table) */
    void *next_eval;    /* what the hook calls: default or a chained function */
    enum pi_interp_state state;
    int coexist_checked; /* sys.activate_stack_trampoline wrapped (3.12+) */
};

/* Bits of pi_hot.attention: anything but the plain path. */
enum {
    PI_ATTN_FORK = 1,  /* a forked child before its first Python call */
    PI_ATTN_OFF = 2,   /* switched off: hooks step out on their next call */
    PI_ATTN_MIXED = 4, /* interpreters differ: look up records */
    PI_ATTN_LOOKUP = 8, /* trampolines are found another way than the direct read */
};

/* Read on every call: kept together in one cache line. */
struct pi_hot {
    _Atomic int attention;     /* PI_ATTN_* bits; 0 on the plain path */
    /* Written under the lock when an interpreter appears, read without it
     * by threads running other interpreters (own GIL from 3.12): atomics,
     * accessed relaxed, which compiles to plain loads and stores. */
    _Atomic long extra_index;  /* when not PI_ATTN_MIXED */
    void *_Atomic next_eval;   /* when not PI_ATTN_MIXED */
    int16_t frame_code_offset;
    int16_t ob_type_offset;
    int16_t co_extra_offset;   /* PI_LOOKUP_DIRECT: the code object's co_extra */
    _Atomic int lookup;        /* enum pi_lookup */
    uintptr_t frame_code_tag;
    const void *code_type;
    int (*get_extra)(pi_pyobj *, pi_ssize_t, void **);
} __attribute__((aligned(64)));

/* obj when it is a code object, else NULL. */
static inline pi_pyobj *pi_hot_code_or_null(const struct pi_hot *hot, const void *obj)
{
    if (__builtin_expect(obj == NULL ||
                             *(const void *const *)((const char *)obj + hot->ob_type_offset) !=
                                 hot->code_type,
                         0))
        return NULL;
    return (pi_pyobj *)obj;
}

/* The code object a frame runs (a tagged reference from 3.14), or NULL. */
static inline pi_pyobj *pi_hot_code_of(const struct pi_hot *hot, const void *frame)
{
    uintptr_t bits =
        *(const uintptr_t *)((const char *)frame + hot->frame_code_offset) & ~hot->frame_code_tag;
    return pi_hot_code_or_null(hot, (const void *)bits);
}

/* How the hot path finds a code object's trampoline. */
enum pi_lookup {
    PI_LOOKUP_DIRECT,     /* read co_extra->ce_extras[index] (verified once) */
    PI_LOOKUP_API,        /* the code-extra functions */
    PI_LOOKUP_SIDE_TABLE, /* 3.6/3.7 */
};

struct pi_state {
    /* Set while attaching. */
    struct pi_config cfg;
    struct pi_abi abi;
    struct pi_py py;
    struct pi_slot_image image;
    struct pi_unwind_sizes unwind;
    char start_cwd[1024];        /* anchors relative code file names */

    struct pi_hot hot;
    struct pi_jit_watch jit; /* CPython's JIT code (jitwatch.h, cpython_jit.h) */

    void *hook; /* this build's eval-frame function (eval.c) */
    /* Where wait.c reports each running interpreter: `interp`, or the one
     * the attached thread state `tstate` belongs to (inject.c sets it). A
     * callback, so that the event source knows nothing of its listener.
     * Returns 0 when the interpreter is served. */
    int (*on_interpreter)(struct pi_state *s, void *tstate, void *interp);

    /* What waiting needs, resolved apart from `py` (wait.c). */
    struct {
        int (*add_audit_hook)(pi_audit_hook_fn hook, void *userdata);
        void *(*thread_state_get)(void);
        void *(*interpreter_head)(void);
        int (*at_exit)(void (*fn)(void));
        _Atomic int at_exit_registered; /* this runtime cycle */
    } wait;

    pthread_mutex_t lock;
    /* Guarded by lock. */
    long pid;                    /* the process the files belong to */
    struct pi_arena_pool pool;
    struct pi_backends backends; /* the outputs (backends.h) */
    struct pi_fork fork;         /* a forked child's pending work (fork.c) */
    struct pi_sidetable side;
    struct pi_interp_record records[PI_MAX_INTERP_RECORDS];
    unsigned nrecords;
    _Atomic(uint64_t *) installed_ids; /* bitmap of interpreter IDs hooked */
    _Atomic uint64_t installed_words;
    /* "another eval function replaced ours" said. Read without the lock by
     * audit hooks, which a free-threaded build runs on many threads at once. */
    _Atomic int replacement_reported;
    /* The interpreter last found hooked by an audit event (interp.c): most
     * events come from it, and it needs no more than a look. */
    _Atomic(void *) settled_interp;
    int direct_lookup_verified;  /* the co_extra offset was checked against the API */
    _Atomic int coexist_pending; /* records whose sys functions are not wrapped yet */
    struct pi_control *control;  /* runtime switching (control.c), NULL until used */
};

/* The one instance (state.c). Hidden: the hot path reaches it without a
 * GOT load. */
extern struct pi_state pi_state __attribute__((visibility("hidden")));

/* The one writer of hot.attention (state.c): sets or clears PI_ATTN_* bits.
 * Async-signal-safe (the fork child handler raises PI_ATTN_FORK). */
void pi_attention_raise(struct pi_state *s, int bits);
void pi_attention_lower(struct pi_state *s, int bits);

#endif
