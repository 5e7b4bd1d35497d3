/* Fuzz target: the jitdump checker itself on hostile bytes.
 *
 * The checker reads dumps written by crashed processes and by other tools,
 * so it must survive anything: raw bytes, or raw bytes behind a valid
 * header (to get past the magic), with and without allow_truncated and
 * expected-name patterns. Invariants: no crash or out-of-bounds read
 * (exact-size heap copy under ASan); the report is self-consistent
 * (valid == no violations other than allowed truncation, kept violations
 * <= PI_JDC_MAX_KEPT, counts add up, loads have names). */
#include "fuzz_common.h"
#include "jitdump_check.h"
#include "jitdump_format.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f = {data, size};
    uint8_t mode = fz_u8(&f);
    size_t len = f.n + (mode & 1 ? sizeof(struct pi_jitdump_header) : 0);
    uint8_t *buf = malloc(len ? len : 1);
    FUZZ_CHECK(buf != NULL, "out of memory");
    size_t at = 0;
    if (mode & 1) {
        struct pi_jitdump_header h = {PI_JITDUMP_MAGIC, PI_JITDUMP_VERSION, sizeof h,
                                      mode & 2 ? 183u : 62u, 0, 4242, 1, 0};
        memcpy(buf, &h, sizeof h);
        at = sizeof h;
    }
    if (f.n)
        memcpy(buf + at, f.p, f.n);

    static const char *const patterns[] = {"py::*", "*[", "py::f[0-9]:*", "\\"};
    struct pi_jdc_options opts = {(mode & 4) != 0, mode & 8 ? 4242u : 0u, patterns,
                                  (size_t)(mode >> 4) % 5, (mode >> 4) % 5 == 4};
    struct pi_jdc_report rep;
    bool ok = pi_jdc_check(buf, len, &opts, &rep);
    size_t total = 0, truncs = pi_jdc_count(&rep, PI_JDC_TRUNCATED);
    for (int i = 0; i < PI_JDC_ISSUE_COUNT; i++)
        total += rep.count[i];
    FUZZ_CHECK(ok == rep.valid, "return value != report.valid");
    FUZZ_CHECK(rep.n_violations <= PI_JDC_MAX_KEPT, "kept %zu", rep.n_violations);
    FUZZ_CHECK(total == rep.n_violations + rep.n_dropped, "counts %zu != %zu + %zu", total,
               rep.n_violations, rep.n_dropped);
    FUZZ_CHECK(ok == (total == 0 || (opts.allow_truncated && total == truncs)),
               "valid=%d with %zu violations (%zu truncation)", ok, total, truncs);
    for (size_t i = 0; i < rep.n_violations; i++)
        FUZZ_CHECK(rep.violations[i].issue < PI_JDC_ISSUE_COUNT &&
                       memchr(rep.violations[i].msg, '\0', sizeof rep.violations[i].msg),
                   "violation %zu malformed", i);
    for (size_t i = 0; i < rep.n_loads; i++)
        FUZZ_CHECK(rep.loads[i].name != NULL, "load %zu without a name", i);
    pi_jdc_report_free(&rep);
    free(buf);
    return 0;
}
