/* The record walk: the file header, then each record's prefix, the rules
 * over the stream (order, grouping, nothing after CODE_CLOSE), and the
 * record's own checks (jdc_records.h). */
#ifndef PI_JDC_WALK_H
#define PI_JDC_WALK_H

#include "jdc_loads.h"

/* Walks buf[0, len) into *report (zeroed by the caller), gathering the
 * loads and, in *codes (empty on entry; the caller frees it), their code.
 * Stops at a header or record it cannot step over; a file that ends mid
 * record or mid group is reported as PI_JDC_TRUNCATED. */
void jdc_walk(const uint8_t *buf, size_t len, const struct pi_jdc_options *o,
              struct pi_jdc_report *report, struct jdc_codes *codes);

#endif
