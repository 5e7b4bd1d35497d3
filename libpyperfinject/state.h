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
#include "backend.h"
#include "config.h"
#include "ehframe.h"
#include "fork.h"
#include "pysyms.h"
#include "sidetable.h"

#include <pthread.h>
#include <stdatomic.h>

enum { PI_MAX_INTERP_RECORDS = 64, PI_MAX_BACKENDS = 2 };

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

    /* What waiting needs, resolved apart from `py` (see start_waiting). */
    struct {
        int (*add_audit_hook)(pi_audit_hook_fn hook, void *userdata);
        void *(*thread_state_get)(void);
        void *(*interpreter_head)(void);
    } wait;

    pthread_mutex_t lock;
    /* Guarded by lock. */
    long pid;                    /* the process the files belong to */
    struct pi_arena_pool pool;
    struct pi_backend backends[PI_MAX_BACKENDS];
    int nbackends;
    struct pi_perfmap perfmap;
    struct pi_jitdump jitdump;
    struct pi_fork fork;         /* a forked child's pending work (fork.c) */
    struct pi_sidetable side;
    struct pi_interp_record records[PI_MAX_INTERP_RECORDS];
    unsigned nrecords;
    _Atomic(uint64_t *) installed_ids; /* bitmap of interpreter IDs hooked */
    _Atomic uint64_t installed_words;
    int atexit_registered;       /* this runtime cycle */
    int replacement_reported;    /* "another eval function replaced ours" said */
    int direct_lookup_verified;  /* the co_extra offset was checked against the API */
    _Atomic int coexist_pending; /* records whose sys functions are not wrapped yet */
    struct pi_control *control;  /* runtime switching (control.c), NULL until used */
};

/* The one instance (inject.c). Hidden: the hot path reaches it without a
 * GOT load. */
extern struct pi_state pi_state __attribute__((visibility("hidden")));

/* eval.c: the eval-frame functions, one per hook kind. */
void *pi_eval_hook_for(enum pi_hook_kind kind);

/* interp.c: hooks the interpreter the calling thread is attached to, unless
 * done already. Called with the thread state attached (audit hook) or, for
 * PI_WAIT_WATCHER, from the watcher thread once Py_IsInitialized(). */
void pi_interp_install(struct pi_state *s, void *interp);

/* interp.c: the switch. leave: the calling interpreter steps out (from its
 * own hook, when switched off). rejoin_all: every interpreter that left is
 * hooked again (from a pending call, GIL held). yield: CPython's trampoline
 * takes the interpreter (yield=1), or did not after all (yield=0); returns 1
 * if anything changed. */
void pi_interp_leave(struct pi_state *s, void *interp);
void pi_interp_rejoin_all(struct pi_state *s);
int pi_interp_yield(struct pi_state *s, void *interp, int yield);

/* coexist.c: called at audit events; on 3.12+ wraps
 * sys.activate_stack_trampoline once per interpreter so that CPython's own
 * trampoline can take over instead of failing. */
void pi_coexist_watch(struct pi_state *s, void *interp);

/* coexist.c: why CPython's own perf support was requested at start-up
 * (-X perf, PYTHONPERFSUPPORT, ...), or NULL. */
const char *pi_coexist_cpython_requested(unsigned minor);

/* coexist.c: why the memory allocator will change between the library's
 * registration and finalisation (PYTHONMALLOC, development mode), or NULL. */
const char *pi_coexist_allocator_switch(unsigned minor);

/* interp.c: starts waiting for interpreters (audit hook or watcher). Uses
 * only the symbols it resolves itself from handle, so it works even when
 * preparing failed (the failure is then reported when Python starts). */
int pi_interp_start_waiting(struct pi_state *s, void *handle, unsigned minor, char *err,
                            size_t errlen);

/* inject.c: 1 once the library is attached to a running interpreter. */
int pi_is_active(void);

#define PI_VERSION "0.1.0"

/* inject.c: called when an interpreter is first seen; creates the files or
 * reports why not. Returns 0 if interpreters may be hooked. */
int pi_activate(struct pi_state *s);

#endif
