/* Fuzz target: pi_ehframe_build with arbitrary template shapes.
 *
 * Invariants:
 *   - an invalid shape (docs in ehframe.h: 0 < after_push < after_setfp <
 *     after_pop < code_size <= PI_EHFRAME_MAX_CODE, offsets on instruction
 *     boundaries, a known arch) returns 0 and zeroed sizes;
 *   - a valid one: measuring (NULL, 0) and building give the same sizes,
 *     one byte less of room writes nothing, mapped_size = round16(total);
 *   - the bytes parse (independent decoder in the dump checker): one CIE,
 *     one FDE, the terminator, a 20-byte .eh_frame_hdr whose pointers reach
 *     the code and the FDE under the slot layout, address_range ==
 *     code_size;
 *   - the CFA and saved-register rules at every instruction boundary are
 *     those of the frame-record prologue/epilogue the shape describes. */
#include "ehframe.h"
#include "fuzz_common.h"
#include "jitdump_check.h"

static uint32_t pick(struct fz *f, uint32_t granule)
{
    uint8_t how = fz_u8(f);
    uint32_t v = how & 0x80 ? fz_u32(f) : (uint32_t)fz_u8(f);
    if (how & 0x40)
        v *= granule; /* mostly aligned */
    return v;
}

static int shape_valid(const struct pi_tramp_shape *s)
{
    uint32_t g = s->arch == PI_ARCH_X86_64 ? 1 : 4;
    if (s->arch != PI_ARCH_X86_64 && s->arch != PI_ARCH_AARCH64)
        return 0;
    return s->code_size > 0 && s->code_size <= PI_EHFRAME_MAX_CODE && 0 < s->after_push &&
           s->after_push < s->after_setfp && s->after_setfp < s->after_pop &&
           s->after_pop < s->code_size && s->after_push % g == 0 && s->after_setfp % g == 0 &&
           s->after_pop % g == 0;
}

static void check_rows(const struct pi_tramp_shape *s, const struct pi_jdc_eh *eh)
{
    int x86 = s->arch == PI_ARCH_X86_64;
    uint32_t g = x86 ? 1 : 4;
    uint32_t sp = x86 ? 7 : 31, fp = x86 ? 6 : 29, ra = x86 ? 16 : 30;
    int64_t entry = x86 ? 8 : 0;
    char err[200];
    /* Every boundary in the prologue/epilogue, and a sample of the body
     * (shapes can be a MiB long). */
    for (uint64_t pc = 0; pc < s->code_size; pc += g) {
        if (pc > s->after_pop + 64 * g && pc + 64 * g < s->code_size)
            pc = s->code_size - 64 * g;
        if (pc > s->after_push + 64 * g && pc + 64 * g < s->after_setfp)
            pc = s->after_setfp - 64 * g;
        if (pc > s->after_setfp + 64 * g && pc + 64 * g < s->after_pop)
            pc = s->after_pop - 64 * g;
        struct pi_jdc_row row;
        FUZZ_CHECK(pi_jdc_row_at(eh, pc, &row, err, sizeof err), "pc %llu: %s",
                   (unsigned long long)pc, err);
        int pushed = pc >= s->after_push && pc < s->after_pop;
        int framed = pc >= s->after_setfp && pc < s->after_pop;
        uint32_t want_reg = framed ? fp : sp;
        int64_t want_off = pushed ? 16 : entry;
        FUZZ_CHECK(row.cfa_reg == want_reg && row.cfa_off == want_off,
                   "pc %llu: CFA r%u%+lld, want r%u%+lld", (unsigned long long)pc, row.cfa_reg,
                   (long long)row.cfa_off, want_reg, (long long)want_off);
        if (pushed)
            FUZZ_CHECK(row.reg[fp].kind == PI_JDC_RULE_OFFSET && row.reg[fp].off == -16,
                       "pc %llu: fp not at CFA-16", (unsigned long long)pc);
        else
            FUZZ_CHECK(row.reg[fp].kind == PI_JDC_RULE_SAME, "pc %llu: fp not restored",
                       (unsigned long long)pc);
        if (x86)
            FUZZ_CHECK(row.reg[ra].kind == PI_JDC_RULE_OFFSET && row.reg[ra].off == -8,
                       "pc %llu: return address not at CFA-8", (unsigned long long)pc);
        else if (pushed)
            FUZZ_CHECK(row.reg[ra].kind == PI_JDC_RULE_OFFSET && row.reg[ra].off == -8,
                       "pc %llu: lr not at CFA-8", (unsigned long long)pc);
        else
            FUZZ_CHECK(row.reg[ra].kind == PI_JDC_RULE_SAME, "pc %llu: lr not in lr",
                       (unsigned long long)pc);
    }
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f = {data, size};
    uint8_t a = fz_u8(&f);
    struct pi_tramp_shape s;
    s.arch = a % 5 == 4 ? (enum pi_arch)(a / 5) : (enum pi_arch)(a % 2);
    uint32_t g = s.arch == PI_ARCH_AARCH64 ? 4 : 1;
    s.after_push = pick(&f, g);
    s.after_setfp = s.after_push + pick(&f, g);
    s.after_pop = s.after_setfp + pick(&f, g);
    s.code_size = fz_u8(&f) & 1 ? pick(&f, g) : s.after_pop + pick(&f, g);

    struct pi_unwind_sizes sz, sz2;
    memset(&sz, 0xa5, sizeof sz);
    size_t measured = pi_ehframe_build(&s, NULL, 0, &sz);
    FUZZ_CHECK(measured == 0, "measuring returned %zu", measured);
    if (!shape_valid(&s)) {
        FUZZ_CHECK(sz.total == 0 && sz.eh_frame_size == 0 && sz.hdr_size == 0 &&
                       sz.mapped_size == 0,
                   "sizes not zeroed for an invalid shape");
        uint8_t buf[512];
        FUZZ_CHECK(pi_ehframe_build(&s, buf, sizeof buf, NULL) == 0, "invalid shape built");
        return 0;
    }
    FUZZ_CHECK(sz.total > 0 && sz.hdr_size == 20 && sz.eh_frame_size + 20 == sz.total &&
                   sz.mapped_size == (sz.total + 15) / 16 * 16,
               "sizes: total %u eh %u hdr %u mapped %u", sz.total, sz.eh_frame_size,
               sz.hdr_size, sz.mapped_size);
    uint8_t *out = malloc(sz.total);
    FUZZ_CHECK(out != NULL, "out of memory");
    memset(out, 0xee, sz.total);
    FUZZ_CHECK(pi_ehframe_build(&s, out, sz.total - 1, &sz2) == 0, "built into a short buffer");
    for (size_t i = 0; i < sz.total; i++)
        FUZZ_CHECK(out[i] == 0xee, "short build wrote byte %zu", i);
    FUZZ_CHECK(memcmp(&sz, &sz2, sizeof sz) == 0, "sizes differ between calls");
    FUZZ_CHECK(pi_ehframe_build(&s, out, sz.total, NULL) == sz.total, "build size");

    struct pi_jdc_eh eh;
    char err[200];
    enum pi_jdc_issue bad = pi_jdc_parse_eh_frame(out, sz.eh_frame_size, &eh, err, sizeof err);
    FUZZ_CHECK(bad == PI_JDC_ISSUE_COUNT, "eh_frame does not parse: %s: %s",
               pi_jdc_issue_name(bad), err);
    FUZZ_CHECK(eh.terminated && eh.trailing == 0, "terminator");
    FUZZ_CHECK(eh.pc_range == s.code_size, "address_range %u != code_size %u", eh.pc_range,
               s.code_size);
    uint32_t code_off = (s.code_size + 7u) & ~7u;
    /* pcrel: the field sits at fde_offset + 8; the code starts code_off
     * bytes before the .eh_frame. */
    FUZZ_CHECK((int64_t)eh.fde_offset + 8 + eh.pc_begin == -(int64_t)code_off,
               "FDE start does not reach the code");
    struct pi_jdc_eh_hdr hdr;
    FUZZ_CHECK(pi_jdc_parse_eh_hdr(out + sz.eh_frame_size, 20, &hdr), "hdr parse");
    FUZZ_CHECK(hdr.version == 1 && hdr.fde_count == 1, "hdr version/count");
    FUZZ_CHECK((int64_t)sz.eh_frame_size + 4 + hdr.eh_frame_ptr == 0, "eh_frame_ptr");
    FUZZ_CHECK((int64_t)sz.eh_frame_size + hdr.table_from == -(int64_t)code_off,
               "table initial location");
    FUZZ_CHECK((int64_t)sz.eh_frame_size + hdr.table_to == (int64_t)eh.fde_offset,
               "table FDE address");
    check_rows(&s, &eh);
    free(out);
    return 0;
}
