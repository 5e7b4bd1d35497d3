/* Recording violations: what every part of the checker calls when a rule
 * is broken.
 *
 * jdc_violate never fails. It always counts the issue; it keeps the
 * message only while fewer than PI_JDC_MAX_KEPT are kept and memory allows,
 * and counts the rest in n_dropped. The report owns the kept list
 * (pi_jdc_report_free releases it). */
#ifndef PI_JDC_REPORT_H
#define PI_JDC_REPORT_H

#include "jitdump_check.h"

/* Where a violation is attributed: a record's 1-based number and file
 * offset, or JDC_NO_RECORD for the header, rules over the whole dump and
 * checks outside one. */
struct jdc_where {
    size_t record;
    size_t offset;
};

#define JDC_NO_RECORD ((struct jdc_where){ 0, 0 })

void jdc_violate(struct pi_jdc_report *r, struct jdc_where at, enum pi_jdc_issue issue,
                 const char *fmt, ...) __attribute__((format(printf, 4, 5)));

#endif
