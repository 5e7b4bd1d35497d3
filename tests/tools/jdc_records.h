/* The record walk's state, and the checks of the three records with a
 * payload: DEBUG_INFO, UNWINDING_INFO and the CODE_LOAD they precede.
 *
 * Each check gets one whole record (the walk has made sure total_size bytes
 * are there) and reports to s->r at s->at; a record too short for its kind
 * is reported and skipped. A DEBUG_INFO or UNWINDING_INFO stays pending
 * until the next CODE_LOAD, which is checked against it. Pending data and
 * code refs point into the dump buffer; load names go to the report. */
#ifndef PI_JDC_RECORDS_H
#define PI_JDC_RECORDS_H

#include "jdc_loads.h"
#include "jdc_report.h"

struct jdc_pending_debug {
    bool set;
    struct jdc_where at;
    uint64_t code_addr;
    uint64_t lo, hi; /* entry address range */
};

struct jdc_pending_unwind {
    bool set;
    struct jdc_where at;
    const uint8_t *data;
    uint64_t size, hdr_size, mapped_size;
};

struct jdc_scan {
    struct pi_jdc_report *r;
    const struct pi_jdc_options *o;
    const uint8_t *buf;
    size_t len;
    struct jdc_where at; /* the record being checked */
    uint64_t last_ts;
    bool have_index[2];    /* trampolines, then CPython's JIT code: each its own order */
    uint64_t last_index[2];
    bool closed;
    struct jdc_pending_debug debug;
    struct jdc_pending_unwind unwind;
    struct jdc_codes *codes;
};

void jdc_check_debug_info(struct jdc_scan *s, const uint8_t *rec, uint32_t size);
void jdc_check_unwinding_info(struct jdc_scan *s, const uint8_t *rec, uint32_t size);
void jdc_check_code_load(struct jdc_scan *s, const uint8_t *rec, uint32_t size);

#endif
