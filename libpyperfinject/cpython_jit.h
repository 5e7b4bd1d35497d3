/* CPython's JIT code in the outputs (3.15+).
 *
 * With PYTHON_JIT=1 hot loops run in machine code CPython's JIT wrote into
 * anonymous memory: no map names it and perf cannot unwind out of it.
 * CPython 3.15 registers every executor with the GDB JIT interface (its own
 * __jit_debug_descriptor; each entry an in-memory ELF with the code's
 * address, size and .eh_frame). The library looks at that list from the
 * eval hook: CPython changes it under the GIL and so does the hook read it,
 * and a change costs one compare to notice. Each new executor is named after
 * its code object (found through the executors CPython links together, from
 * one seen on the current thread's frames) and announced to the perf map
 * and the jitdump, with CPython's own CFI as its unwinding record.
 *
 * Unregistered executors need nothing in the jitdump (perf's model is time-
 * ordered); the perf map is not, so an address that held code of two
 * functions gets a line naming both (jitmap.h). */
#ifndef PI_CPYTHON_JIT_H
#define PI_CPYTHON_JIT_H

#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>

struct pi_state;
struct pi_abi;
struct pi_jit_book; /* cpython_jit.c */

/* GDB's layout (gdb/doc "JIT Interface"), which CPython uses. */
struct pi_gdb_jit_entry {
    struct pi_gdb_jit_entry *next, *prev;
    const char *symfile_addr;
    uint64_t symfile_size;
    const void *code_addr; /* CPython 3.15 adds this after GDB's fields */
};
struct pi_gdb_jit_descriptor {
    uint32_t version;
    uint32_t action_flag;
    struct pi_gdb_jit_entry *relevant_entry;
    struct pi_gdb_jit_entry *first_entry;
};

/* What the eval hook reads on every call; changed under the GIL (there is
 * no JIT to follow in free-threaded builds). */
struct pi_jit_watch {
    /* CPython's descriptor, NULL when there is none to follow. */
    const volatile struct pi_gdb_jit_descriptor *desc;
    const void *seen;  /* first_entry at the last look */
    int pending;       /* executors wait for their names */
    unsigned tick;     /* calls while they wait */
    int16_t co_executors; /* PyCodeObject.co_executors */
    struct pi_jit_book *book;
};

/* At activation: finds CPython's descriptor in `handle` when this build's
 * table row has a JIT to follow. Returns 1 when there is one. */
int pi_jit_setup(struct pi_jit_watch *w, void *handle, const struct pi_abi *abi);

/* The eval hook's questions, on every call. Did the list change since
 * the last look? */
static inline int pi_jit_changed(const struct pi_jit_watch *w)
{
    return w->desc != NULL && (const void *)w->desc->first_entry != w->seen;
}

/* While executors wait for their names (w->pending), should the call of
 * `code` (NULL: not a code object) look? At calls of functions that have
 * JIT code (theirs may be it) and at every 256th call (the frames below may
 * hold it: a loop that runs on makes no call of its own function). */
static inline int pi_jit_waiting_look(struct pi_jit_watch *w, const void *code)
{
    return (code != NULL && *(void *const *)((const char *)code + w->co_executors) != NULL) ||
           (++w->tick & 255) == 0;
}

/* The look: new executors are read, named and announced. From the eval
 * hook, GIL held, state lock not held; `tstate` and `frame` are the call's
 * (frame: the one about to run). */
void pi_jit_look(struct pi_state *s, void *tstate, void *frame);

/* At exit, state lock held: what still waits goes out under CPython's
 * name, so that no JIT code the process ran is left out of the files. */
void pi_jit_at_exit(struct pi_state *s);

/* The arena pool's pi_arena_taken_fn (ctx: the watch): 1 when the range
 * overlaps JIT code already named in the perf map. State lock held. */
int pi_jit_address_taken(uintptr_t start, size_t len, void *ctx);

/* Statistics for the tests and bench: executors announced with their code
 * object's name, and with CPython's generic one. */
void pi_jit_counts(const struct pi_jit_watch *w, uint64_t *named, uint64_t *generic);

#endif
