/* Perf map lines for CPython's JIT code (jitmap.h). */
#include "jitmap.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

struct pi_jit_map_range {
    uint64_t start, end;
    char *name; /* "py::jit:" and its functions, '|' between them */
};

static const char PREFIX[] = "py::jit:";
static const char MORE[] = "..."; /* the last part of a list cut short */

/* "py::jit:<functions>" -> "<functions>" */
static const char *functions_of(const char *symbol)
{
    return strncmp(symbol, PREFIX, sizeof PREFIX - 1) == 0 ? symbol + sizeof PREFIX - 1 : symbol;
}

/* 1 when the list (functions, '|' between them) holds the n bytes at
 * `part`, or was cut short and so may. An empty list holds nothing. */
static int lists(const char *list, const char *part, size_t n)
{
    for (const char *p = list; *p != '\0'; p++) {
        const char *end = strchr(p, '|');
        size_t len = end ? (size_t)(end - p) : strlen(p);
        if ((len == n && memcmp(p, part, n) == 0) ||
            (len == sizeof MORE - 1 && memcmp(p, MORE, len) == 0))
            return 1;
        if (end == NULL)
            break;
        p = end;
    }
    return 0;
}

struct name_builder {
    char *buf;
    size_t cap, len;
    int full;
};

/* Adds each function of `list` not there yet; what does not fit ends the
 * name with "|..." (or "..." alone). */
static void add_functions(struct name_builder *b, const char *list)
{
    for (const char *p = list; !b->full && *p != '\0';) {
        const char *end = strchr(p, '|');
        size_t n = end ? (size_t)(end - p) : strlen(p);
        const char *have = functions_of(b->buf);
        if (!lists(have, p, n)) {
            size_t sep = *have != '\0';
            if (b->len + sep + n + sizeof MORE + 1 > b->cap) {
                if (sep)
                    b->buf[b->len++] = '|';
                memcpy(b->buf + b->len, MORE, sizeof MORE);
                b->len += sizeof MORE - 1;
                b->full = 1;
                return;
            }
            if (sep)
                b->buf[b->len++] = '|';
            memcpy(b->buf + b->len, p, n);
            b->len += n;
            b->buf[b->len] = '\0';
        }
        if (end == NULL)
            return;
        p = end + 1;
    }
}

static int grow(struct pi_jit_map *m)
{
    if (m->n < m->cap)
        return 0;
    size_t cap = m->cap ? 2 * m->cap : 64;
    struct pi_jit_map_range *bigger = realloc(m->ranges, cap * sizeof *bigger);
    if (bigger == NULL)
        return -1;
    m->ranges = bigger;
    m->cap = cap;
    return 0;
}

int pi_jit_map_place(struct pi_jit_map *m, struct pi_tramp_info *t, char *buf, size_t cap)
{
    uint64_t start = t->addr, end = t->addr + t->code_size;
    size_t lo = 0;
    while (lo < m->n && m->ranges[lo].end <= start)
        lo++;
    size_t hi = lo;
    while (hi < m->n && m->ranges[hi].start < end)
        hi++;
    const char *mine = functions_of(t->symbol);
    if (hi == lo + 1 && m->ranges[lo].start <= start && m->ranges[lo].end >= end &&
        lists(functions_of(m->ranges[lo].name), mine, strlen(mine))) {
        t->map_skip = 1;
        return 0;
    }
    if (cap < sizeof PREFIX + sizeof MORE)
        return -1;
    struct name_builder b = {buf, cap, sizeof PREFIX - 1, 0};
    memcpy(buf, PREFIX, sizeof PREFIX);
    for (size_t i = lo; i < hi; i++)
        add_functions(&b, functions_of(m->ranges[i].name));
    add_functions(&b, mine);
    if (hi > lo) {
        start = start < m->ranges[lo].start ? start : m->ranges[lo].start;
        end = end > m->ranges[hi - 1].end ? end : m->ranges[hi - 1].end;
    }
    char *copy = strdup(buf);
    if (copy == NULL || (hi == lo && grow(m) != 0))
        return free(copy), -1;
    for (size_t i = lo; i < hi; i++)
        free(m->ranges[i].name);
    /* [lo, hi) becomes the one range at lo. */
    if (hi == lo)
        memmove(&m->ranges[lo + 1], &m->ranges[lo], (m->n - lo) * sizeof *m->ranges);
    else if (hi > lo + 1)
        memmove(&m->ranges[lo + 1], &m->ranges[hi], (m->n - hi) * sizeof *m->ranges);
    m->n = m->n + 1 - (hi - lo);
    m->ranges[lo] = (struct pi_jit_map_range){start, end, copy};
    if (start != t->addr || end != t->addr + t->code_size || strcmp(copy, t->symbol) != 0) {
        t->map_symbol = copy;
        t->map_symbol_len = strlen(copy);
        t->map_addr = (uintptr_t)start;
        t->map_size = (uint32_t)(end - start);
    }
    return 0;
}

int pi_jit_map_overlaps(const struct pi_jit_map *m, uint64_t start, uint64_t end)
{
    size_t lo = 0, hi = m->n; /* the first range that ends after start */
    while (lo < hi) {
        size_t mid = lo + (hi - lo) / 2;
        if (m->ranges[mid].end <= start)
            lo = mid + 1;
        else
            hi = mid;
    }
    return lo < m->n && m->ranges[lo].start < end;
}

void pi_jit_map_free(struct pi_jit_map *m)
{
    for (size_t i = 0; i < m->n; i++)
        free(m->ranges[i].name);
    free(m->ranges);
    *m = (struct pi_jit_map){NULL, 0, 0};
}
