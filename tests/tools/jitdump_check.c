/* jitdump checker: the entry points of jitdump_check.h.
 *
 * It shares only vocabulary with the library (record structs, DW_CFA and
 * DW_EH_PE names); every expectation (template bytes, CFA rules, the slot
 * layout arithmetic) is restated from the formats, so a mistake in the
 * builder is not mirrored by the checker. Fields are copied out with memcpy
 * (bytes.h, jdc_cursor.h): records are unaligned in the file.
 *
 *   jdc_walk.c       header, record prefixes, stream order and grouping
 *   jdc_records.c    DEBUG_INFO, UNWINDING_INFO and CODE_LOAD records
 *   jdc_loads.c      rules across loads: overlap, duplicate code, names
 *   jdc_unwind.c     one load's unwind data against its code
 *   jdc_template.c   the trampoline templates and their CFA rules
 *   jdc_eh_frame.c   .eh_frame / .eh_frame_hdr decoding
 *   jdc_cfi.c        the CFI interpreter
 *   jdc_cursor.c     bounded DWARF reads
 *   jdc_report.c     violations and the report */
#include "jitdump_check.h"

#include "jdc_loads.h"
#include "jdc_walk.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

bool pi_jdc_check(const uint8_t *buf, size_t len, const struct pi_jdc_options *opts,
                  struct pi_jdc_report *report)
{
    static const struct pi_jdc_options defaults = { false, 0, NULL, 0, false };
    const struct pi_jdc_options *o = opts ? opts : &defaults;
    struct jdc_codes codes = { NULL, 0 };

    memset(report, 0, sizeof *report);
    jdc_walk(buf, len, o, report, &codes);
    /* Without a readable header there are no loads: these find nothing. */
    jdc_check_overlaps(report);
    jdc_check_duplicates(report, &codes);
    jdc_check_expected(report, o);
    jdc_codes_free(&codes);

    report->valid = true;
    for (int i = 0; i < PI_JDC_ISSUE_COUNT; i++) {
        if (report->count[i] && !(i == PI_JDC_TRUNCATED && o->allow_truncated))
            report->valid = false;
    }
    return report->valid;
}

bool pi_jdc_check_file(const char *path, const struct pi_jdc_options *opts,
                       struct pi_jdc_report *report, const char **err)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;

    memset(report, 0, sizeof *report);
    if (err)
        *err = NULL;
    if (!f) {
        if (err)
            *err = "cannot open file";
        return false;
    }
    for (;;) {
        if (len == cap) {
            size_t want = cap ? 2 * cap : 1 << 16;
            uint8_t *nb = realloc(buf, want);
            if (!nb) {
                free(buf);
                fclose(f);
                if (err)
                    *err = "out of memory";
                return false;
            }
            buf = nb;
            cap = want;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    bool read_error = ferror(f) != 0;
    fclose(f);
    if (read_error) {
        free(buf);
        if (err)
            *err = "read error";
        return false;
    }
    bool ok = pi_jdc_check(buf, len, opts, report);
    free(buf);
    return ok;
}
