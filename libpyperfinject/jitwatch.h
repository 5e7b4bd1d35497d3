/* What the eval hook reads of CPython's JIT list (cpython_jit.h) on every
 * call, kept apart so that the state (state.h) can hold it without
 * depending on what reads the list. */
#ifndef PI_JITWATCH_H
#define PI_JITWATCH_H

#include <stddef.h>
#include <stdint.h>

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

#endif
