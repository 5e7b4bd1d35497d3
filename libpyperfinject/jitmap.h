/* Perf map lines for CPython's JIT code.
 *
 * perf reads a map without time: of two lines at one address it keeps the
 * one with the longer name (choose_best_symbol), and lines that overlap are
 * resolved arbitrarily. JIT code comes and goes, and new code may land where
 * other code was. So a region that overlaps earlier ones gets one line over
 * the union of their ranges, under a name listing every function that ran
 * there ("py::jit:a:f.py|b:f.py"); the same function again writes nothing.
 * The jitdump, which has time, keeps the exact names. */
#ifndef PI_JITMAP_H
#define PI_JITMAP_H

#include "backend.h"

#include <stddef.h>
#include <stdint.h>

struct pi_jit_map_range; /* jitmap.c */

/* The lines written so far, as disjoint ranges sorted by start. */
struct pi_jit_map {
    struct pi_jit_map_range *ranges;
    size_t n, cap;
};

/* The line for the new region t (addr, code_size, symbol "py::jit:..."):
 * sets t->map_skip when a line names it already, or t->map_symbol, map_addr
 * and map_size when its line must differ from the region's own. `buf` (cap
 * bytes, PI_SYMBOL_MAX + 1 is enough) holds the name being built. Returns 0,
 * or -1 when memory runs out (t is then left as it was). */
int pi_jit_map_place(struct pi_jit_map *m, struct pi_tramp_info *t, char *buf, size_t cap);

/* 1 when a line covers any byte of [start, end). */
int pi_jit_map_overlaps(const struct pi_jit_map *m, uint64_t start, uint64_t end);

/* Releases the lines (a test's cleanup; the library keeps its own). */
void pi_jit_map_free(struct pi_jit_map *m);

#endif
