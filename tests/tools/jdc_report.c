/* The report: issue names, recording violations, releasing it. */
#include "jdc_report.h"

#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char *const issue_names[PI_JDC_ISSUE_COUNT] = {
    [PI_JDC_TRUNCATED] = "truncated",
    [PI_JDC_BAD_MAGIC] = "bad-magic",
    [PI_JDC_BAD_VERSION] = "bad-version",
    [PI_JDC_BAD_HEADER_SIZE] = "bad-header-size",
    [PI_JDC_BAD_ELF_MACH] = "bad-elf-mach",
    [PI_JDC_BAD_HEADER] = "bad-header",
    [PI_JDC_BAD_PID] = "bad-pid",
    [PI_JDC_BAD_RECORD_SIZE] = "bad-record-size",
    [PI_JDC_UNKNOWN_RECORD] = "unknown-record",
    [PI_JDC_UNSUPPORTED_RECORD] = "unsupported-record",
    [PI_JDC_AFTER_CLOSE] = "record-after-close",
    [PI_JDC_TIMESTAMP_ORDER] = "timestamp-order",
    [PI_JDC_CODE_INDEX_ORDER] = "code-index-order",
    [PI_JDC_BAD_LOAD] = "bad-load",
    [PI_JDC_UNKNOWN_TEMPLATE] = "unknown-template",
    [PI_JDC_DUPLICATE_CODE] = "duplicate-code",
    [PI_JDC_OVERLAP] = "overlap",
    [PI_JDC_LOAD_WITHOUT_UNWIND] = "load-without-unwind",
    [PI_JDC_UNWIND_NOT_BEFORE_LOAD] = "unwind-not-before-load",
    [PI_JDC_BAD_UNWIND_RECORD] = "bad-unwind-record",
    [PI_JDC_UNWIND_PADDING] = "unwind-padding",
    [PI_JDC_BAD_EH_FRAME] = "bad-eh-frame",
    [PI_JDC_BAD_CIE] = "bad-cie",
    [PI_JDC_BAD_FDE] = "bad-fde",
    [PI_JDC_FDE_LOCATION] = "fde-location",
    [PI_JDC_FDE_RANGE] = "fde-range",
    [PI_JDC_BAD_EH_HDR] = "bad-eh-hdr",
    [PI_JDC_EH_HDR_TABLE] = "eh-hdr-table",
    [PI_JDC_CFI_DECODE] = "cfi-decode",
    [PI_JDC_CFA_RULE] = "cfa-rule",
    [PI_JDC_BAD_DEBUG_INFO] = "bad-debug-info",
    [PI_JDC_DEBUG_ADDR] = "debug-addr",
    [PI_JDC_EXPECTED_MISSING] = "expected-missing",
    [PI_JDC_UNTRIMMED] = "untrimmed",
    [PI_JDC_AFTER_END] = "after-end",
};

const char *pi_jdc_issue_name(enum pi_jdc_issue issue)
{
    if ((unsigned)issue >= PI_JDC_ISSUE_COUNT)
        return "?";
    return issue_names[issue];
}

size_t pi_jdc_count(const struct pi_jdc_report *report, enum pi_jdc_issue issue)
{
    if ((unsigned)issue >= PI_JDC_ISSUE_COUNT)
        return 0;
    return report->count[issue];
}

void pi_jdc_report_free(struct pi_jdc_report *report)
{
    for (size_t i = 0; i < report->n_loads; i++)
        free(report->loads[i].name);
    free(report->loads);
    free(report->violations);
    memset(report, 0, sizeof *report);
}

void jdc_violate(struct pi_jdc_report *r, struct jdc_where at, enum pi_jdc_issue issue,
                 const char *fmt, ...)
{
    r->count[issue]++;
    if (r->n_violations >= PI_JDC_MAX_KEPT) {
        r->n_dropped++;
        return;
    }
    /* Grow by doubling; n_violations is a power of two exactly when full. */
    size_t n = r->n_violations;
    if ((n & (n - 1)) == 0) {
        size_t want = n ? 2 * n : 8;
        struct pi_jdc_violation *v = realloc(r->violations, want * sizeof *v);
        if (!v) {
            r->n_dropped++;
            return;
        }
        r->violations = v;
    }
    struct pi_jdc_violation *v = &r->violations[r->n_violations++];
    va_list ap;
    v->issue = issue;
    v->record = at.record;
    v->offset = at.offset;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
}
