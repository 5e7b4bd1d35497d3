#include "sidetable.h"

#include <stdlib.h>

static struct pi_side_entry *find(const struct pi_sidetable *t, const void *code)
{
    size_t mask = t->capacity - 1;
    for (size_t i = pi_side_hash(code) & mask;; i = (i + 1) & mask)
        if (t->slots[i].code == code || t->slots[i].code == NULL)
            return &t->slots[i];
}

static int grow(struct pi_sidetable *t)
{
    size_t capacity = t->capacity ? t->capacity * 2 : 1024;
    struct pi_side_entry *slots = calloc(capacity, sizeof *slots);
    if (slots == NULL)
        return -1;
    struct pi_sidetable bigger = {slots, capacity, 0};
    for (size_t i = 0; i < t->capacity; i++)
        if (t->slots[i].code != NULL) {
            *find(&bigger, t->slots[i].code) = t->slots[i];
            bigger.used++;
        }
    free(t->slots);
    *t = bigger;
    return 0;
}

int pi_sidetable_put(struct pi_sidetable *t, const void *code, void *tramp)
{
    /* At most three quarters full: linear probing stays short (a hit takes
     * 2.5 probes on average there), and the table stays small. */
    if ((t->used + 1) * 4 > t->capacity * 3 && grow(t) != 0)
        return -1;
    struct pi_side_entry *e = find(t, code);
    if (e->code == NULL)
        t->used++;
    e->code = code;
    e->tramp = tramp;
    return 0;
}
