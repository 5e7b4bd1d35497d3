/* Fuzz target: the jitdump and eh_frame encoders, round-tripped through the
 * dump checker (tests/tools/jitdump_check.c).
 *
 * From the input: a template variant (x86-64 with/without endbr64, aarch64
 * with/without bti c), 1..24 trampolines with fuzzed names (raw bytes, or
 * sanitised by pi_format_symbol as the library does), file names, first
 * lines, address gaps and timestamps steps, and whether a CLOSE ends it.
 * Invariants:
 *   - every *_size function equals what its encoder writes; an encoder given
 *     one byte less writes nothing and returns 0 (exact-size heap buffers);
 *   - pi_jdc_check accepts the dump strictly, with the right pid, elf_mach,
 *     counts, names, addresses and code_index;
 *   - cut at any offset, the dump is accepted with allow_truncated, and
 *     rejected strictly only for truncation (cut inside a record group). */
#include "ehframe.h"
#include "fuzz_common.h"
#include "jitdump_check.h"
#include "jitdump_format.h"
#include "jitdump_records.h"
#include "names.h"
#include "tramp_code.h"

#define MAXN 24
#define PID 31337u
#define BASE 0x7f3400000000ull

/* Runs an encoder into an exact-size buffer and into one a byte short. */
#define ENCODE(dst, size_expr, call_with_buf_cap)                                              \
    do {                                                                                       \
        size_t need_ = (size_expr);                                                            \
        FUZZ_CHECK(need_ > 0, "size function returned 0");                                    \
        uint8_t *buf = malloc(need_);                                                          \
        size_t cap = need_ - 1;                                                                \
        FUZZ_CHECK(buf != NULL, "out of memory");                                              \
        memset(buf, 0xee, need_);                                                              \
        FUZZ_CHECK((call_with_buf_cap) == 0, "encoder wrote into a short buffer");             \
        for (size_t k_ = 0; k_ < need_; k_++)                                                  \
            FUZZ_CHECK(buf[k_] == 0xee, "encoder touched a short buffer at %zu", k_);          \
        cap = need_;                                                                           \
        size_t got_ = (call_with_buf_cap);                                                     \
        FUZZ_CHECK(got_ == need_, "encoder wrote %zu, size function said %zu", got_, need_);   \
        memcpy((dst), buf, need_);                                                             \
        (dst) += need_;                                                                        \
        free(buf);                                                                             \
    } while (0)

struct tramp {
    char name[PI_SYMBOL_MAX + 1];
    char file[PI_SYMBOL_MAX + 1];
    int32_t line;
    uint64_t addr;
};

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f = {data, size};
    int variant = fz_u8(&f) & 3; /* bit 1: aarch64, bit 0: endbr64 / bti c */
    enum pi_arch arch = variant & 2 ? PI_ARCH_AARCH64 : PI_ARCH_X86_64;
    size_t n = 1 + fz_u8(&f) % MAXN;
    int close = fz_u8(&f) & 1;
    static struct tramp t[MAXN];
    uint64_t addr = BASE + (uint64_t)(fz_u8(&f) & 0xf0);
    for (size_t i = 0; i < n; i++) {
        size_t ql, fl;
        uint8_t mode = fz_u8(&f);
        const uint8_t *q = fz_bytes(&f, &ql);
        const uint8_t *fn = fz_bytes(&f, &fl);
        if (mode & 1) { /* as the library writes them */
            pi_format_symbol(t[i].name, sizeof t[i].name, (const char *)q, ql, (const char *)fn,
                             fl);
            pi_sanitize_append(t[i].file, 0, sizeof t[i].file, (const char *)fn, fl);
        } else { /* raw bytes up to the first NUL */
            size_t a = ql < PI_SYMBOL_MAX ? ql : PI_SYMBOL_MAX;
            size_t b = fl < PI_SYMBOL_MAX ? fl : PI_SYMBOL_MAX;
            memcpy(t[i].name, q, a);
            t[i].name[a] = '\0';
            memcpy(t[i].file, fn, b);
            t[i].file[b] = '\0';
        }
        /* The library never writes an empty name or file name ("?" stands
         * for a missing one), and the checker holds it to that. */
        if (t[i].name[0] == '\0')
            strcpy(t[i].name, "?");
        if (t[i].file[0] == '\0')
            strcpy(t[i].file, "?");
        uint32_t line = fz_u32(&f);
        t[i].line = (int32_t)(line % 0x7fffffffu) + 1; /* 1 .. INT32_MAX */
        t[i].addr = addr;
        addr += 128 + 16 * (uint64_t)(fz_u8(&f) % 4); /* one slot stride or more */
    }

    size_t cap_all = 40 + n * (2 * 16 + 32 + 2 * (PI_SYMBOL_MAX + 1) + 40 + 256 + 56 +
                               PI_SYMBOL_MAX + 1 + 64) + 16;
    uint8_t *dump = malloc(cap_all);
    FUZZ_CHECK(dump != NULL, "out of memory");
    uint8_t *p = dump;
    size_t *group_end = malloc((n + 2) * sizeof *group_end);
    FUZZ_CHECK(group_end != NULL, "out of memory");
    uint32_t mach = pi_arch_elf_mach(arch);
    ENCODE(p, sizeof(struct pi_jitdump_header), pi_jr_header(buf, cap, mach, PID, 7));
    group_end[0] = (size_t)(p - dump);
    uint64_t ts = fz_u32(&f);
    for (size_t i = 0; i < n; i++) {
        uint8_t code[64], unwind[256];
        struct pi_unwind_sizes sz;
        struct pi_tramp_shape s = make_tramp_code(arch, variant & 1, code, 0x5100 + i);
        FUZZ_CHECK(pi_ehframe_build(&s, NULL, 0, &sz) == 0 && sz.total > 0, "measure");
        FUZZ_CHECK(pi_ehframe_build(&s, unwind, sz.total - 1, NULL) == 0, "short eh build");
        FUZZ_CHECK(pi_ehframe_build(&s, unwind, sizeof unwind, NULL) == sz.total, "eh build");
        ts += fz_u8(&f) % 3; /* equal timestamps are allowed */
        ENCODE(p, pi_jr_debug_info_size(t[i].file, 0),
               pi_jr_debug_info(buf, cap, ts, t[i].addr, s.code_size, t[i].line, t[i].file, 0));
        ENCODE(p, pi_jr_unwinding_info_size(sz.total),
               pi_jr_unwinding_info(buf, cap, ts, unwind, sz.total, sz.hdr_size, sz.mapped_size));
        ENCODE(p, pi_jr_code_load_size(t[i].name, s.code_size),
               pi_jr_code_load(buf, cap, ts, PID, PID + 1, t[i].addr, code, s.code_size, i + 1,
                               t[i].name));
        group_end[i + 1] = (size_t)(p - dump);
    }
    size_t nends = n + 1;
    if (close) {
        ENCODE(p, sizeof(struct pi_jr_code_close), pi_jr_code_close(buf, cap, ts + 1));
        group_end[nends++] = (size_t)(p - dump);
    }
    size_t len = (size_t)(p - dump);
    FUZZ_CHECK(len <= cap_all, "dump buffer overrun");

    /* Strict check of the whole dump, on an exact-size copy. */
    uint8_t *copy = fz_dup(dump, len);
    struct pi_jdc_options opts = {false, PID, NULL, 0, false};
    struct pi_jdc_report rep;
    bool ok = pi_jdc_check(copy, len, &opts, &rep);
    if (!ok)
        for (size_t i = 0; i < rep.n_violations; i++)
            fprintf(stderr, "record %zu @%zu %s: %s\n", rep.violations[i].record,
                    rep.violations[i].offset, pi_jdc_issue_name(rep.violations[i].issue),
                    rep.violations[i].msg);
    FUZZ_CHECK(ok, "the checker rejects an encoded dump");
    FUZZ_CHECK(rep.pid == PID && rep.elf_mach == mach, "header fields");
    FUZZ_CHECK(rep.n_loads == n && rep.unwinds == n && rep.debug_infos == n, "counts");
    FUZZ_CHECK(rep.closes == (size_t)close && !rep.truncated, "close/truncated");
    for (size_t i = 0; i < n; i++) {
        FUZZ_CHECK(rep.loads[i].addr == t[i].addr, "load %zu address", i);
        FUZZ_CHECK(rep.loads[i].code_index == i + 1, "load %zu code_index", i);
        FUZZ_CHECK(rep.loads[i].name && strcmp(rep.loads[i].name, t[i].name) == 0,
                   "load %zu name", i);
    }
    pi_jdc_report_free(&rep);
    free(copy);

    /* Cut it somewhere (a SIGKILL between two write(2)s cannot do this, a
     * full disk or a reader racing the writer can). */
    size_t cut = 40 + (size_t)fz_u32(&f) % (len - 40 + 1);
    int at_boundary = 0;
    for (size_t i = 0; i < nends; i++)
        at_boundary |= group_end[i] == cut;
    copy = fz_dup(dump, cut);
    opts.allow_truncated = true;
    ok = pi_jdc_check(copy, cut, &opts, &rep);
    FUZZ_CHECK(ok, "a dump cut at %zu of %zu is not accepted with allow_truncated", cut, len);
    pi_jdc_report_free(&rep);
    opts.allow_truncated = false;
    ok = pi_jdc_check(copy, cut, &opts, &rep);
    if (at_boundary) {
        FUZZ_CHECK(ok && !rep.truncated, "a dump cut between groups (%zu) is rejected", cut);
    } else {
        FUZZ_CHECK(!ok && rep.truncated, "a dump cut inside a group (%zu) is accepted", cut);
        FUZZ_CHECK(pi_jdc_count(&rep, PI_JDC_TRUNCATED) == rep.n_violations + rep.n_dropped,
                   "a cut dump has violations other than truncation");
    }
    pi_jdc_report_free(&rep);
    free(copy);
    free(dump);
    free(group_end);
    return 0;
}
