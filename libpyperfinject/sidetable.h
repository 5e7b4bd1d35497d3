/* Code object -> trampoline, for interpreters without a safe code-extra API
 * (3.6/3.7: requesting an index from a preload crashes Py_EndInterpreter).
 *
 * Keyed by the code object's address alone. The caller holds a reference to
 * every code object it records (eval.c), so an address is never reused for
 * another code object while its entry exists. (Before that reference, 64
 * threads exec'ing look-alike functions got freed objects' addresses back,
 * names included: no comparison of name, file and line could tell them
 * apart, and the reference made such a comparison redundant.) An entry is
 * two pointers, and the table grows at three quarters full: 16 bytes a slot,
 * 21-43 bytes per function. Guarded by the GIL (those versions have one GIL
 * for all interpreters). */
#ifndef PI_SIDETABLE_H
#define PI_SIDETABLE_H

#include <stddef.h>
#include <stdint.h>

struct pi_side_entry {
    const void *code; /* NULL: a free slot */
    void *tramp;
};

struct pi_sidetable {
    struct pi_side_entry *slots; /* open addressing, capacity a power of two */
    size_t capacity, used;
};

static inline size_t pi_side_hash(const void *code)
{
    uintptr_t x = (uintptr_t)code >> 4; /* objects are 16-byte aligned */
    return (size_t)(x * 0x9e3779b97f4a7c15ull >> 20);
}

/* The trampoline recorded for code, or NULL. Inline: it is on the hot path
 * of 3.6/3.7. */
static inline void *pi_sidetable_get(const struct pi_sidetable *t, const void *code)
{
    if (t->capacity == 0)
        return NULL;
    size_t mask = t->capacity - 1;
    for (size_t i = pi_side_hash(code) & mask;; i = (i + 1) & mask) {
        const struct pi_side_entry *e = &t->slots[i];
        if (e->code == code)
            return e->tramp;
        if (e->code == NULL)
            return NULL;
    }
}

/* Records (or replaces) the trampoline for code. Returns 0, or -1 when
 * memory runs out (the table is unchanged). */
int pi_sidetable_put(struct pi_sidetable *t, const void *code, void *tramp);

#endif
