/* The loads of a dump and the rules across them; see jdc_loads.h. */
#define _POSIX_C_SOURCE 200809L /* fnmatch */

#include "jdc_loads.h"

#include "jdc_report.h"

#include <fnmatch.h>
#include <stdlib.h>
#include <string.h>

bool jdc_add_load(struct pi_jdc_report *r, struct jdc_codes *codes, const struct pi_jdc_load *l,
                  const uint8_t *code)
{
    if (r->n_loads == codes->cap) {
        size_t want = codes->cap ? 2 * codes->cap : 64;
        struct pi_jdc_load *nl = realloc(r->loads, want * sizeof *nl);
        if (!nl)
            return false;
        r->loads = nl;
        struct jdc_code_ref *nc = realloc(codes->ref, want * sizeof *nc);
        if (!nc)
            return false;
        codes->ref = nc;
        codes->cap = want;
    }
    r->loads[r->n_loads] = *l;
    codes->ref[r->n_loads] = (struct jdc_code_ref){ code, l->code_size, r->n_loads };
    r->n_loads++;
    return true;
}

void jdc_codes_free(struct jdc_codes *codes)
{
    free(codes->ref);
    codes->ref = NULL;
    codes->cap = 0;
}

static int cmp_addr(const void *pa, const void *pb)
{
    const struct pi_jdc_load *a = pa, *b = pb;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int cmp_code(const void *pa, const void *pb)
{
    const struct jdc_code_ref *a = pa, *b = pb;
    if (a->size != b->size)
        return a->size < b->size ? -1 : 1;
    int c = memcmp(a->code, b->code, (size_t)a->size);
    if (c)
        return c;
    return a->load < b->load ? -1 : a->load > b->load;
}

void jdc_check_overlaps(struct pi_jdc_report *r)
{
    size_t n = r->n_loads;
    struct pi_jdc_load *sorted = n > 1 ? malloc(n * sizeof *sorted) : NULL;

    if (!sorted)
        return; /* fewer than two loads, or no memory */
    memcpy(sorted, r->loads, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_addr);
    for (size_t i = 1, reach = 0; i < n; i++) {
        const struct pi_jdc_load *prev = &sorted[reach], *cur = &sorted[i];
        int both_foreign = prev->code_index >= PI_JDC_FOREIGN_INDEX &&
                           cur->code_index >= PI_JDC_FOREIGN_INDEX; /* freed, reused */
        if (cur->addr < prev->addr + prev->span && !both_foreign)
            jdc_violate(r, JDC_NO_RECORD, PI_JDC_OVERLAP,
                        "'%s' at 0x%llx overlaps '%s' mapped over [0x%llx, 0x%llx)", cur->name,
                        (unsigned long long)cur->addr, prev->name, (unsigned long long)prev->addr,
                        (unsigned long long)(prev->addr + prev->span));
        if (cur->addr + cur->span > prev->addr + prev->span)
            reach = i;
    }
    free(sorted);
}

void jdc_check_duplicates(struct pi_jdc_report *r, struct jdc_codes *codes)
{
    if (r->n_loads < 2)
        return;
    qsort(codes->ref, r->n_loads, sizeof *codes->ref, cmp_code);
    for (size_t i = 1; i < r->n_loads; i++) {
        const struct jdc_code_ref *a = &codes->ref[i - 1], *b = &codes->ref[i];
        if (r->loads[a->load].code_index >= PI_JDC_FOREIGN_INDEX ||
            r->loads[b->load].code_index >= PI_JDC_FOREIGN_INDEX)
            continue; /* CPython's code (perf's build-ids also hash the address) */
        if (a->size == b->size && memcmp(a->code, b->code, (size_t)a->size) == 0)
            jdc_violate(r, JDC_NO_RECORD, PI_JDC_DUPLICATE_CODE,
                        "'%s' and '%s' have identical code bytes (same perf build-id)",
                        r->loads[a->load].name, r->loads[b->load].name);
    }
}

void jdc_check_expected(struct pi_jdc_report *r, const struct pi_jdc_options *o)
{
    for (size_t e = 0; e < o->n_expect; e++) {
        bool found = false;
        for (size_t i = 0; i < r->n_loads && !found; i++)
            found = r->loads[i].name && fnmatch(o->expect[e], r->loads[i].name, 0) == 0;
        if (!found)
            jdc_violate(r, JDC_NO_RECORD, PI_JDC_EXPECTED_MISSING, "no CODE_LOAD named '%s'",
                        o->expect[e]);
    }
}
