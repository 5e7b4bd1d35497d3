/* Code object -> trampoline, for interpreters without a safe code-extra API
 * (3.6/3.7: requesting an index from a preload crashes Py_EndInterpreter).
 *
 * Keyed by the code object's address and validated by its name and file name
 * objects and first line: a freed code object's address can be reused, and an
 * entry only counts if the new object would get the same symbol. Guarded by
 * the GIL (those versions have one GIL for all interpreters). */
#ifndef PI_SIDETABLE_H
#define PI_SIDETABLE_H

#include <stddef.h>
#include <stdint.h>

struct pi_side_key {
    const void *code;
    const void *name, *filename; /* the objects, compared by identity */
    int32_t firstlineno;
};

struct pi_side_entry {
    struct pi_side_key key;
    void *tramp;
};

struct pi_sidetable {
    struct pi_side_entry *slots; /* open addressing, capacity a power of two */
    size_t capacity, used;
};

/* The trampoline recorded for key, or NULL. */
void *pi_sidetable_get(const struct pi_sidetable *t, const struct pi_side_key *key);

/* Records (or replaces) the trampoline for key.code. Returns 0, or -1 when
 * memory runs out (the table is unchanged). */
int pi_sidetable_put(struct pi_sidetable *t, const struct pi_side_key *key, void *tramp);

#endif
