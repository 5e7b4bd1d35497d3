/* The loads of a dump, gathered during the record walk, and the rules that
 * hold across them: no overlapping mappings, no identical code, every
 * expected name present. Violations go to the report, attributed to no
 * record. */
#ifndef PI_JDC_LOADS_H
#define PI_JDC_LOADS_H

#include "jitdump_check.h"

/* A load's code bytes, borrowed from the dump buffer. */
struct jdc_code_ref {
    const uint8_t *code;
    uint64_t size;
    size_t load; /* index in report->loads */
};

/* One ref per load in report->loads; cap is the capacity of both arrays.
 * Owned by the walk's caller: jdc_codes_free. */
struct jdc_codes {
    struct jdc_code_ref *ref;
    size_t cap;
};

/* Appends *l to r->loads (which then owns l->name) and its code to codes.
 * False if out of memory: nothing is appended, l->name stays the caller's. */
bool jdc_add_load(struct pi_jdc_report *r, struct jdc_codes *codes, const struct pi_jdc_load *l,
                  const uint8_t *code);

void jdc_codes_free(struct jdc_codes *codes);

/* perf inject maps [addr, addr + span) per load: ranges must be disjoint.
 * Silently skipped if out of memory. */
void jdc_check_overlaps(struct pi_jdc_report *r);

/* Identical bytes would give two loads the same perf build-id. Sorts
 * codes->ref, so it must come after the last jdc_add_load. */
void jdc_check_duplicates(struct pi_jdc_report *r, struct jdc_codes *codes);

/* Each of o->expect (fnmatch patterns) must name some load. */
void jdc_check_expected(struct pi_jdc_report *r, const struct pi_jdc_options *o);

#endif
