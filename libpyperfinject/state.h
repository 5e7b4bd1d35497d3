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
#include "pysyms.h"
#include "sidetable.h"

#include <pthread.h>
#include <stdatomic.h>

enum { PI_MAX_INTERP_RECORDS = 64, PI_MAX_BACKENDS = 2 };

/* What one interpreter needs on the hot path when interpreters differ. */
struct pi_interp_record {
    void *interp;       /* identity check only; refreshed on every install */
    long extra_index;   /* its code-extra index (-1 with the side table) */
    void *next_eval;    /* what the hook calls: default or a chained hook */
};

/* Read on every call: kept together in one cache line. */
struct pi_hot {
    _Atomic int fork_pending;  /* a child that has not made its own files yet */
    _Atomic int mixed;         /* interpreters differ: look up records */
    long extra_index;          /* when !mixed */
    void *next_eval;           /* when !mixed */
    int16_t frame_code_offset;
    int16_t ob_type_offset;
    uintptr_t frame_code_tag;
    const void *code_type;
    int (*get_extra)(pi_pyobj *, pi_ssize_t, void **);
} __attribute__((aligned(64)));

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
    struct pi_sidetable side;
    struct pi_interp_record records[PI_MAX_INTERP_RECORDS];
    unsigned nrecords;
    _Atomic(uint64_t *) installed_ids; /* bitmap of interpreter IDs hooked */
    _Atomic uint64_t installed_words;
    int atexit_registered;       /* this runtime cycle */
};

/* The one instance (inject.c). */
extern struct pi_state pi_state;

/* eval.c: the eval-frame functions, one per hook kind. */
void *pi_eval_hook_for(enum pi_hook_kind kind);

/* eval.c: makes the calling child process's own files (fork_pending). */
void pi_after_fork_in_child(struct pi_state *s);

/* interp.c: hooks the interpreter the calling thread is attached to, unless
 * done already. Called with the thread state attached (audit hook) or, for
 * PI_WAIT_WATCHER, from the watcher thread once Py_IsInitialized(). */
void pi_interp_install(struct pi_state *s, void *interp);

/* interp.c: starts waiting for interpreters (audit hook or watcher). Uses
 * only the symbols it resolves itself from handle, so it works even when
 * preparing failed (the failure is then reported when Python starts). */
int pi_interp_start_waiting(struct pi_state *s, void *handle, unsigned minor, char *err,
                            size_t errlen);

/* inject.c: called when an interpreter is first seen; creates the files or
 * reports why not. Returns 0 if interpreters may be hooked. */
int pi_activate(struct pi_state *s);

#endif
