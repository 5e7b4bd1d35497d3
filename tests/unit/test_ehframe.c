/* Unit tests for ehframe.c: the .eh_frame/.eh_frame_hdr of a trampoline slot.
 *
 * Expectations are restated here from the formats, not from the builder:
 * golden CIE/FDE bytes that GNU as emits for the same CFI directives, the
 * slot-layout arithmetic for every pc-relative value, and a table of unwind
 * rows per byte of each template variant. On a matching host the bytes are
 * also handed to libgcc's unwinder (__register_frame) and a real backtrace
 * must walk through a trampoline copy. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unwind.h>

#include "bytes.h"
#include "ehframe.h"
#include "jitdump_check.h"
#include "tramp_code.h"

#define EM_X86_64 62
#define EM_AARCH64 183

/* ---- Template variants (code: tests/tools/tramp_code.h). ---- */

struct variant {
    const char *name;
    enum pi_arch arch;
    int landing_pad; /* endbr64 / bti c first */
};

static const struct variant x86 = { "x86_64", PI_ARCH_X86_64, 0 };
static const struct variant x86_cet = { "x86_64+CET", PI_ARCH_X86_64, 1 };
static const struct variant a64 = { "aarch64", PI_ARCH_AARCH64, 0 };
static const struct variant a64_bti = { "aarch64+BTI", PI_ARCH_AARCH64, 1 };

static struct pi_tramp_shape make_code(const struct variant *v, uint8_t *code, uint64_t tag)
{
    return make_tramp_code(v->arch, v->landing_pad, code, tag);
}

static uint32_t elf_mach_of(const struct variant *v)
{
    return v->arch == PI_ARCH_X86_64 ? EM_X86_64 : EM_AARCH64;
}

/* ---- GNU as reference ----
 * `gcc -c` of push/mov/call/pop/ret with .cfi_def_cfa_offset 16,
 * .cfi_offset %rbp,-16, .cfi_def_cfa_register %rbp, .cfi_def_cfa %rsp,8,
 * .cfi_restore %rbp (binutils 2.40) gives this .eh_frame; its FDE's pc_begin
 * is a relocation (0 in the object), and as emits no terminator. */
static const uint8_t gas_x86_cie[24] = {
    0x14, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x00, 0x01, 0x7a, 0x52, 0x00,
    0x01, 0x78, 0x10, 0x01, 0x1b, 0x0c, 0x07, 0x08, 0x90, 0x01, 0x00, 0x00,
};
static const uint8_t gas_x86_fde_head[8] = { 0x1c, 0x00, 0x00, 0x00, 0x1c, 0x00, 0x00, 0x00 };
static const uint8_t gas_x86_fde_tail[16] = {
    /* address_range 16, aug len 0, then the CFI program and nop padding */
    0x10, 0x00, 0x00, 0x00, 0x00, 0x41, 0x0e, 0x10,
    0x86, 0x02, 0x43, 0x0d, 0x06, 0x43, 0x0c, 0x07,
};
static const uint8_t gas_x86_fde_end[4] = { 0x08, 0xc6, 0x00, 0x00 };

static void test_x86_matches_gnu_as(void **state)
{
    (void)state;
    uint8_t code[32], out[128];
    struct pi_unwind_sizes sz;
    struct pi_tramp_shape s = make_code(&x86, code, 1);

    assert_int_equal(s.code_size, 16);
    assert_int_equal(pi_ehframe_build(&s, out, sizeof out, &sz), 80);
    assert_memory_equal(out, gas_x86_cie, sizeof gas_x86_cie);
    assert_memory_equal(out + 24, gas_x86_fde_head, sizeof gas_x86_fde_head);
    /* pc_begin: from its own field (eh+32) back to the code (eh-16). */
    assert_int_equal(s32_at(out + 32), -(16 + 32));
    assert_memory_equal(out + 36, gas_x86_fde_tail, sizeof gas_x86_fde_tail);
    assert_memory_equal(out + 52, gas_x86_fde_end, sizeof gas_x86_fde_end);
    assert_int_equal(u32_at(out + 56), 0); /* terminator */
}

/* ---- Field-by-field layout, all four variants. ---- */

struct layout_case {
    const struct variant *v;
    uint32_t code_size, cie_size, fde_size;
    uint64_t code_align, ra_column;
};

static const struct layout_case layout_cases[] = {
    { &x86, 16, 24, 32, 1, 16 },
    { &x86_cet, 24, 24, 32, 1, 16 },
    { &a64, 32, 24, 40, 4, 30 },
    { &a64_bti, 32, 24, 40, 4, 30 },
};

/* One test per row of layout_cases (the row comes in as the state). */
/* The symbol-file form: the same CIE but for the pointer encoding
 * (absptr), and an FDE whose CIE pointer counts from its section offset,
 * with 8-byte pc_begin and range, then the same CFI program. */
static void test_x86_absolute_form(void **state)
{
    (void)state;
    uint8_t code[32], cie[64], fde[64];
    struct pi_tramp_shape s = make_code(&x86, code, 1);
    uint8_t want_cie[sizeof gas_x86_cie];
    memcpy(want_cie, gas_x86_cie, sizeof want_cie);
    want_cie[16] = 0x00; /* DW_EH_PE_absptr instead of pcrel|sdata4 */

    assert_int_equal(pi_ehframe_abs_cie(&s, NULL, 0), sizeof gas_x86_cie);
    assert_int_equal(pi_ehframe_abs_cie(&s, cie, sizeof cie), sizeof gas_x86_cie);
    assert_memory_equal(cie, want_cie, sizeof want_cie);

    const uint64_t at = 0x7f1234567890u;
    const uint32_t fde_offset = 24 + 3 * 40; /* the fourth FDE after the CIE */
    assert_int_equal(pi_ehframe_abs_fde(&s, at, fde_offset, NULL, 0), 40);
    assert_int_equal(pi_ehframe_abs_fde(&s, at, fde_offset, fde, 39), 0);
    assert_int_equal(pi_ehframe_abs_fde(&s, at, fde_offset, fde, sizeof fde), 40);
    assert_int_equal(u32_at(fde), 36);                 /* length */
    assert_int_equal(u32_at(fde + 4), fde_offset + 4); /* back to the CIE at 0 */
    assert_true(u64_at(fde + 8) == at);                /* pc_begin */
    assert_true(u64_at(fde + 16) == 16);               /* address_range */
    assert_int_equal(fde[24], 0); /* augmentation data length */
    /* the CFI program of GNU as' FDE (after its 4-byte range and aug length) */
    assert_memory_equal(fde + 25, gas_x86_fde_tail + 5, sizeof gas_x86_fde_tail - 5);
    assert_memory_equal(fde + 25 + sizeof gas_x86_fde_tail - 5, gas_x86_fde_end, 2);
    for (size_t i = 25 + sizeof gas_x86_fde_tail - 5 + 2; i < 40; i++)
        assert_int_equal(fde[i], 0); /* DW_CFA_nop padding */

    /* Any FDE of the shape, moved, is the one built for the new place. */
    uint8_t moved[64];
    assert_int_equal(pi_ehframe_abs_fde(&s, 0x1000, 24, moved, sizeof moved), 40);
    pi_ehframe_abs_fde_move(moved, at, fde_offset);
    assert_memory_equal(moved, fde, 40);

    struct pi_tramp_shape bad = s;
    bad.after_push = 0;
    assert_int_equal(pi_ehframe_abs_cie(&bad, cie, sizeof cie), 0);
    assert_int_equal(pi_ehframe_abs_fde(&bad, at, 24, fde, sizeof fde), 0);
}

static void test_layout_fields(void **state)
{
    const struct layout_case *c = *state;
    uint8_t code[64], out[256];
    struct pi_unwind_sizes sz;
    struct pi_tramp_shape s = make_code(c->v, code, 7);
    struct pi_jdc_eh eh;
    struct pi_jdc_eh_hdr hdr;
    char err[160];

    assert_int_equal(s.code_size, c->code_size);
    size_t n = pi_ehframe_build(&s, out, sizeof out, &sz);
    uint32_t eh_size = c->cie_size + c->fde_size + 4;
    int64_t code_off = (c->code_size + 7) / 8 * 8; /* eh start - code start */
    assert_int_equal(sz.eh_frame_size, eh_size);
    assert_int_equal(sz.hdr_size, 20);
    assert_int_equal(sz.total, eh_size + 20);
    assert_int_equal(sz.mapped_size, (eh_size + 20 + 15) / 16 * 16);
    assert_int_equal(n, sz.total);

    assert_int_equal(pi_jdc_parse_eh_frame(out, eh_size, &eh, err, sizeof err),
                     PI_JDC_ISSUE_COUNT);
    assert_int_equal(eh.cie_size, c->cie_size);
    assert_int_equal(eh.cie_id, 0);
    assert_int_equal(eh.version, 1);
    assert_string_equal(eh.augmentation, "zR");
    assert_int_equal(eh.code_align, c->code_align);
    assert_int_equal(eh.data_align, -8);
    assert_int_equal(eh.ra_column, c->ra_column);
    assert_int_equal(eh.fde_encoding, 0x1b);
    assert_int_equal(eh.fde_offset, c->cie_size);
    assert_int_equal(eh.fde_size, c->fde_size);
    assert_int_equal(eh.cie_pointer, c->cie_size + 4);
    /* pcrel from the field at eh + cie + 8 to the code at eh - code_off */
    assert_int_equal(eh.pc_begin, -(code_off + c->cie_size + 8));
    assert_int_equal(eh.pc_range, c->code_size);
    assert_int_equal(eh.fde_aug_len, 0);
    assert_true(eh.terminated);
    assert_int_equal(eh.trailing, 0);
    /* nop padding keeps both entries 8-aligned */
    assert_int_equal(eh.cie_size % 8, 0);
    assert_int_equal(eh.fde_size % 8, 0);

    assert_true(pi_jdc_parse_eh_hdr(out + eh_size, 20, &hdr));
    assert_int_equal(hdr.version, 1);
    assert_int_equal(hdr.eh_frame_ptr_enc, 0x1b);
    assert_int_equal(hdr.fde_count_enc, 0x03);
    assert_int_equal(hdr.table_enc, 0x3b);
    assert_int_equal(hdr.eh_frame_ptr, -(int64_t)(eh_size + 4)); /* pcrel, field at +4 */
    assert_int_equal(hdr.fde_count, 1);
    assert_int_equal(hdr.table_from, -(code_off + eh_size)); /* datarel: hdr start */
    assert_int_equal(hdr.table_to, (int64_t)c->cie_size - eh_size);
}

/* ---- The unwind row at every byte of each template. ---- */

#define SAME 0 /* register unchanged */

struct row_expect {
    uint32_t from, to; /* byte offsets [from, to) */
    uint32_t cfa_reg;
    int64_t cfa_off;
    int64_t fp, ra; /* CFA-relative save slot, or SAME */
};

static const struct row_expect rows_x86[] = {
    { 0, 1, 7, 8, SAME, -8 },     /* push %rbp */
    { 1, 4, 7, 16, -16, -8 },     /* mov %rsp,%rbp */
    { 4, 7, 6, 16, -16, -8 },     /* call *%rcx; pop %rbp */
    { 7, 16, 7, 8, SAME, -8 },    /* ret, padding, tag */
};
static const struct row_expect rows_x86_cet[] = {
    { 0, 5, 7, 8, SAME, -8 },
    { 5, 8, 7, 16, -16, -8 },
    { 8, 11, 6, 16, -16, -8 },
    { 11, 24, 7, 8, SAME, -8 },
};
static const struct row_expect rows_a64[] = {
    { 0, 4, 31, 0, SAME, SAME },  /* stp */
    { 4, 8, 31, 16, -16, -8 },    /* mov x29, sp */
    { 8, 16, 29, 16, -16, -8 },   /* blr x3; ldp */
    { 16, 32, 31, 0, SAME, SAME }, /* ret, padding, tag */
};
static const struct row_expect rows_a64_bti[] = {
    { 0, 8, 31, 0, SAME, SAME },
    { 8, 12, 31, 16, -16, -8 },
    { 12, 20, 29, 16, -16, -8 },
    { 20, 32, 31, 0, SAME, SAME },
};

static void check_rule(const struct pi_jdc_row *row, uint32_t reg, int64_t want)
{
    if (want == SAME) {
        assert_int_equal(row->reg[reg].kind, PI_JDC_RULE_SAME);
    } else {
        assert_int_equal(row->reg[reg].kind, PI_JDC_RULE_OFFSET);
        assert_int_equal(row->reg[reg].off, want);
    }
}

static void check_rows(const struct variant *v, const struct row_expect *rows, size_t n)
{
    uint8_t code[64], out[256];
    struct pi_unwind_sizes sz;
    struct pi_tramp_shape s = make_code(v, code, 3);
    struct pi_jdc_eh eh;
    char err[160];
    uint32_t fp = v->arch == PI_ARCH_X86_64 ? PI_DW_X86_RBP : PI_DW_A64_X29;
    uint32_t ra = v->arch == PI_ARCH_X86_64 ? PI_DW_X86_RIP : PI_DW_A64_X30;

    assert_true(pi_ehframe_build(&s, out, sizeof out, &sz) > 0);
    assert_int_equal(pi_jdc_parse_eh_frame(out, sz.eh_frame_size, &eh, err, sizeof err),
                     PI_JDC_ISSUE_COUNT);
    assert_int_equal(rows[n - 1].to, s.code_size);
    for (size_t i = 0; i < n; i++) {
        for (uint32_t pc = rows[i].from; pc < rows[i].to; pc++) {
            struct pi_jdc_row row;
            if (!pi_jdc_row_at(&eh, pc, &row, err, sizeof err))
                fail_msg("%s +%u: %s", v->name, pc, err);
            if (row.cfa_reg != rows[i].cfa_reg || row.cfa_off != rows[i].cfa_off)
                print_error("%s +%u: CFA r%u%+lld\n", v->name, pc, row.cfa_reg,
                            (long long)row.cfa_off);
            assert_int_equal(row.cfa_reg, rows[i].cfa_reg);
            assert_int_equal(row.cfa_off, rows[i].cfa_off);
            check_rule(&row, fp, rows[i].fp);
            check_rule(&row, ra, rows[i].ra);
        }
    }
}

static void test_rows_x86(void **state)
{
    (void)state;
    check_rows(&x86, rows_x86, sizeof rows_x86 / sizeof rows_x86[0]);
}

static void test_rows_x86_cet(void **state)
{
    (void)state;
    check_rows(&x86_cet, rows_x86_cet, sizeof rows_x86_cet / sizeof rows_x86_cet[0]);
}

static void test_rows_a64(void **state)
{
    (void)state;
    check_rows(&a64, rows_a64, sizeof rows_a64 / sizeof rows_a64[0]);
}

static void test_rows_a64_bti(void **state)
{
    (void)state;
    check_rows(&a64_bti, rows_a64_bti, sizeof rows_a64_bti / sizeof rows_a64_bti[0]);
}

/* The checker's full unwind verification agrees, for every variant. */
static void test_checker_accepts_all_variants(void **state)
{
    (void)state;
    const struct variant *vs[] = { &x86, &x86_cet, &a64, &a64_bti };
    for (size_t i = 0; i < 4; i++) {
        uint8_t code[64], out[256];
        struct pi_unwind_sizes sz;
        struct pi_tramp_shape s = make_code(vs[i], code, 0x1234);
        struct pi_jdc_report rep;

        memset(&rep, 0, sizeof rep);
        assert_true(pi_ehframe_build(&s, out, sizeof out, &sz) > 0);
        pi_jdc_check_unwind(elf_mach_of(vs[i]), code, s.code_size, out, sz.total, sz.hdr_size,
                            &rep);
        for (size_t k = 0; k < rep.n_violations; k++)
            print_error("%s: %s: %s\n", vs[i]->name, pi_jdc_issue_name(rep.violations[k].issue),
                        rep.violations[k].msg);
        assert_int_equal(rep.n_violations, 0);
        pi_jdc_report_free(&rep);
    }
}

/* A shape the CFI cannot describe is refused, and sizes are zeroed. */
static void test_invalid_shapes(void **state)
{
    (void)state;
    const struct pi_tramp_shape bad[] = {
        { PI_ARCH_X86_64, 16, 0, 4, 7 },                   /* nothing pushed */
        { PI_ARCH_X86_64, 16, 4, 4, 7 },                   /* setfp not after push */
        { PI_ARCH_X86_64, 16, 1, 7, 4 },                   /* pop before setfp */
        { PI_ARCH_X86_64, 7, 1, 4, 7 },                    /* no room for ret */
        { PI_ARCH_X86_64, 0, 0, 0, 0 },                    /* empty */
        { PI_ARCH_X86_64, PI_EHFRAME_MAX_CODE + 1, 1, 4, 7 },
        { PI_ARCH_AARCH64, 32, 4, 6, 16 },                 /* not on a 4-byte boundary */
        { PI_ARCH_AARCH64, 32, 2, 8, 16 },
        { (enum pi_arch)7, 16, 1, 4, 7 },                  /* unknown arch */
    };
    for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
        uint8_t out[256];
        struct pi_unwind_sizes sz = { 1, 1, 1, 1 };
        if (pi_ehframe_build(&bad[i], out, sizeof out, &sz) != 0)
            fail_msg("bad shape %zu accepted", i);
        assert_int_equal(sz.total, 0);
        assert_int_equal(sz.eh_frame_size, 0);
        assert_int_equal(sz.mapped_size, 0);
    }
    assert_int_equal(pi_ehframe_build(NULL, NULL, 0, NULL), 0);
}

/* Too small a buffer: nothing written, sizes still reported. */
static void test_cap_too_small(void **state)
{
    (void)state;
    uint8_t code[64], out[256];
    struct pi_unwind_sizes sz;
    struct pi_tramp_shape s = make_code(&a64, code, 9);

    assert_int_equal(pi_ehframe_build(&s, NULL, 0, &sz), 0);
    assert_int_equal(sz.total, 88);
    for (size_t cap = 0; cap < sz.total; cap++) {
        struct pi_unwind_sizes got;
        memset(out, 0xa5, sizeof out);
        assert_int_equal(pi_ehframe_build(&s, out, cap, &got), 0);
        assert_int_equal(got.total, sz.total);
        for (size_t k = 0; k < sizeof out; k++)
            assert_int_equal(out[k], 0xa5);
    }
    assert_int_equal(pi_ehframe_build(&s, out, sz.total, NULL), sz.total);
}

/* Large gaps between labels need advance_loc1/2/4; rows must still land. */
static void test_long_advances(void **state)
{
    (void)state;
    const struct {
        struct pi_tramp_shape s;
        uint8_t opcode; /* the long advance that must appear */
    } cases[] = {
        { { PI_ARCH_X86_64, 1000, 100, 400, 600 }, PI_DW_CFA_advance_loc2 },
        { { PI_ARCH_X86_64, 1000, 63, 127, 382 }, PI_DW_CFA_advance_loc1 },
        { { PI_ARCH_X86_64, 200000, 1, 70000, 70002 }, PI_DW_CFA_advance_loc4 },
        { { PI_ARCH_AARCH64, 4096, 4, 1024, 2048 }, PI_DW_CFA_advance_loc2 },
    };
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        const struct pi_tramp_shape *s = &cases[i].s;
        uint8_t out[256];
        struct pi_unwind_sizes sz;
        struct pi_jdc_eh eh;
        struct pi_jdc_row row;
        char err[160];
        uint32_t sp = s->arch == PI_ARCH_X86_64 ? 7 : 31, fp = s->arch == PI_ARCH_X86_64 ? 6 : 29;
        int64_t entry = s->arch == PI_ARCH_X86_64 ? 8 : 0;

        assert_true(pi_ehframe_build(s, out, sizeof out, &sz) > 0);
        assert_int_equal(pi_jdc_parse_eh_frame(out, sz.eh_frame_size, &eh, err, sizeof err),
                         PI_JDC_ISSUE_COUNT);
        assert_non_null(memchr(eh.fde_insns, cases[i].opcode, eh.fde_insns_len));
        const struct {
            uint32_t pc, reg;
            int64_t off;
        } probe[] = {
            { s->after_push - 1, sp, entry }, { s->after_push, sp, 16 },
            { s->after_setfp - 1, sp, 16 },   { s->after_setfp, fp, 16 },
            { s->after_pop - 1, fp, 16 },     { s->after_pop, sp, entry },
            { s->code_size - 1, sp, entry },
        };
        for (size_t k = 0; k < sizeof probe / sizeof probe[0]; k++) {
            assert_true(pi_jdc_row_at(&eh, probe[k].pc, &row, err, sizeof err));
            assert_int_equal(row.cfa_reg, probe[k].reg);
            assert_int_equal(row.cfa_off, probe[k].off);
        }
    }
}

static void test_elf_mach(void **state)
{
    (void)state;
    assert_int_equal(pi_arch_elf_mach(PI_ARCH_X86_64), 62);
    assert_int_equal(pi_arch_elf_mach(PI_ARCH_AARCH64), 183);
    assert_int_equal(pi_arch_elf_mach((enum pi_arch)42), 0);
}

/* ---- libgcc walks through a live trampoline using these bytes. ---- */

#if defined(__x86_64__) || defined(__aarch64__)
void __register_frame(void *begin);
void __deregister_frame(void *begin);

typedef int (*tramp_fn)(void *, void *, void *, int (*)(void *, void *, void *));

struct walk {
    uintptr_t tramp_lo, tramp_hi;
    uintptr_t caller;        /* entry of run_through() */
    int saw_tramp;           /* a frame's pc was inside the trampoline */
    int caller_after_tramp;  /* and the next frame was run_through() */
    int tramp_fn_found;      /* the unwinder's FDE lookup named the trampoline */
    int prev_was_tramp;
};

static _Unwind_Reason_Code walk_frame(struct _Unwind_Context *ctx, void *arg)
{
    struct walk *w = arg;
    uintptr_t ip = _Unwind_GetIP(ctx);
    /* Return addresses point after the call; look up the call itself. */
    void *fn = _Unwind_FindEnclosingFunction((void *)(ip - 1));

    if (w->prev_was_tramp && (uintptr_t)fn == w->caller)
        w->caller_after_tramp = 1;
    w->prev_was_tramp = ip > w->tramp_lo && ip <= w->tramp_hi;
    if (w->prev_was_tramp) {
        w->saw_tramp = 1;
        w->tramp_fn_found = (uintptr_t)fn == w->tramp_lo;
    }
    return _URC_NO_REASON;
}

static __attribute__((noinline)) int evaluator(void *a, void *b, void *c)
{
    (void)b;
    (void)c;
    _Unwind_Backtrace(walk_frame, a);
    return 41;
}

static __attribute__((noinline)) int run_through(tramp_fn t, struct walk *w)
{
    int r = t(w, NULL, NULL, evaluator);
    __asm__ volatile("" ::: "memory");
    return r + 1; /* no tail call: this frame must stay on the stack */
}

/* absolute: the symbol-file form (pi_ehframe_abs_*), put at an offset of
 * its own in the page, instead of the slot's pc-relative one. */
static void walk_variant(const struct variant *v, int absolute)
{
    size_t page = 4096;
    uint8_t *slot = mmap(NULL, page, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    struct pi_unwind_sizes sz;

    assert_true(slot != MAP_FAILED);
    struct pi_tramp_shape s = make_code(v, slot, 0xfeedu);
    uint32_t code_off = (s.code_size + 7) / 8 * 8;
    if (absolute) {
        code_off = 1024;
        size_t cie = pi_ehframe_abs_cie(&s, slot + code_off, page - code_off);
        assert_true(cie > 0);
        size_t fde = pi_ehframe_abs_fde(&s, (uintptr_t)slot, (uint32_t)cie, slot + code_off + cie,
                                        page - code_off - cie);
        assert_true(fde > 0);
        memset(slot + code_off + cie + fde, 0, 4); /* terminator for __register_frame */
    } else {
        assert_true(pi_ehframe_build(&s, slot + code_off, page - code_off, &sz) > 0);
    }
    if (mprotect(slot, page, PROT_READ | PROT_EXEC) != 0) {
        munmap(slot, page);
        skip(); /* no executable memory here */
    }
    __builtin___clear_cache((char *)slot, (char *)slot + s.code_size);

    tramp_fn t;
    void *entry = slot;
    memcpy(&t, &entry, sizeof t);
    struct walk w = { (uintptr_t)slot, (uintptr_t)slot + s.code_size, 0, 0, 0, 0, 0 };
    int (*caller)(tramp_fn, struct walk *) = run_through;
    memcpy(&w.caller, &caller, sizeof w.caller);

    /* Control: unregistered, the unwinder is stuck at the trampoline. */
    assert_int_equal(run_through(t, &w), 42);
    assert_true(w.saw_tramp);
    assert_false(w.caller_after_tramp);

    __register_frame(slot + code_off);
    memset(&w.saw_tramp, 0, sizeof w - offsetof(struct walk, saw_tramp));
    assert_int_equal(run_through(t, &w), 42);
    __deregister_frame(slot + code_off);
    print_message("%s%s: tramp seen %d, named %d, caller next %d\n", v->name,
                  absolute ? " (absolute)" : "", w.saw_tramp, w.tramp_fn_found,
                  w.caller_after_tramp);
    assert_true(w.saw_tramp);
    assert_true(w.tramp_fn_found);
    assert_true(w.caller_after_tramp);
    munmap(slot, page);
}
#endif

static void test_libgcc_unwinds_through_trampoline(void **state)
{
    (void)state;
#if defined(__x86_64__)
    for (int absolute = 0; absolute < 2; absolute++) {
        walk_variant(&x86, absolute);
        walk_variant(&x86_cet, absolute);
    }
#elif defined(__aarch64__)
    for (int absolute = 0; absolute < 2; absolute++) {
        walk_variant(&a64, absolute);
        walk_variant(&a64_bti, absolute); /* bti is a nop outside guarded pages */
    }
#else
    skip();
#endif
}

/* ---- Borrowed rules: CPython's CFI for JIT code, rebuilt in the slot
 * layout for the jitdump (pi_ehframe_build_rules). ---- */

/* What CPython 3.15 writes for an x86-64 executor: DW_CFA_def_cfa rsp+8,
 * DW_CFA_offset rip at cfa-8 (CIE); advance 1, def_cfa_offset 16, offset
 * rbp at cfa-16, advance 4, def_cfa_offset 8 (FDE). */
static const uint8_t jit_cie_insns[] = {0x0c, 0x07, 0x08, 0x90, 0x01};
static const uint8_t jit_fde_insns[] = {0x41, 0x0e, 0x10, 0x86, 0x02, 0x44, 0x0e, 0x08};

static void test_rules_rebuilt_in_slot_layout(void **state)
{
    (void)state;
    struct pi_cfi_rules r = {1, -8, 16, jit_cie_insns, sizeof jit_cie_insns,
                             jit_fde_insns, sizeof jit_fde_insns};
    uint8_t out[256];
    struct pi_unwind_sizes sz;
    uint32_t code_size = 0x77e;
    size_t n = pi_ehframe_build_rules(&r, code_size, out, sizeof out, &sz);
    assert_int_equal(n, sz.total);
    assert_int_equal(sz.hdr_size, PI_JDC_EH_HDR_SIZE);
    assert_int_equal(sz.mapped_size % 16, 0);
    struct pi_jdc_eh eh;
    char err[160];
    assert_int_equal(pi_jdc_parse_eh_frame(out, sz.eh_frame_size, &eh, err, sizeof err),
                     PI_JDC_ISSUE_COUNT);
    assert_string_equal(eh.augmentation, "zR");
    assert_int_equal(eh.code_align, 1);
    assert_int_equal(eh.data_align, -8);
    assert_int_equal(eh.ra_column, 16);
    assert_int_equal(eh.fde_encoding, 0x1b);
    /* the instructions are CPython's, then padding (DW_CFA_nop) */
    assert_memory_equal(eh.cie_insns, jit_cie_insns, sizeof jit_cie_insns);
    for (size_t i = sizeof jit_cie_insns; i < eh.cie_insns_len; i++)
        assert_int_equal(eh.cie_insns[i], 0);
    assert_memory_equal(eh.fde_insns, jit_fde_insns, sizeof jit_fde_insns);
    assert_int_equal(eh.pc_range, code_size);
    int64_t code_off = (code_size + 7) / 8 * 8; /* the code lies right before the .eh_frame */
    assert_int_equal(eh.pc_begin, -(code_off + eh.cie_size + 8));
    struct pi_jdc_eh_hdr hdr;
    assert_true(pi_jdc_parse_eh_hdr(out + sz.eh_frame_size, sz.hdr_size, &hdr));
    assert_int_equal(hdr.fde_count, 1);
    assert_int_equal(hdr.table_from, -(code_off + (int64_t)sz.eh_frame_size));
    /* too small a buffer: sizes told, nothing written */
    assert_int_equal(pi_ehframe_build_rules(&r, code_size, out, 16, &sz), 0);
    assert_int_equal(sz.total, n);
}

static void test_rules_refused_when_not_portable(void **state)
{
    (void)state;
    /* DW_CFA_set_loc (an absolute address) and DW_CFA_expression mean
     * something else once the code is described elsewhere. */
    static const uint8_t set_loc[] = {0x01, 1, 2, 3, 4, 5, 6, 7, 8};
    static const uint8_t expression[] = {0x10, 0x06, 0x02, 0x76, 0x00};
    static const uint8_t cut_leb[] = {0x0c, 0x87};           /* def_cfa, register never ends */
    static const uint8_t cut_fixed[] = {0x03, 0x01};         /* advance_loc2 needs two bytes */
    static const uint8_t good[] = {0x0c, 0x07, 0x08, 0x90, 0x01, 0x0a, 0x0b, 0x02, 0x10, 0x00,
                                   0x41, 0xc6, 0x12, 0x05, 0x01};
    assert_true(pi_cfi_insns_portable(good, sizeof good));
    assert_true(pi_cfi_insns_portable(good, 0));
    assert_false(pi_cfi_insns_portable(set_loc, sizeof set_loc));
    assert_false(pi_cfi_insns_portable(expression, sizeof expression));
    assert_false(pi_cfi_insns_portable(cut_leb, sizeof cut_leb));
    assert_false(pi_cfi_insns_portable(cut_fixed, sizeof cut_fixed));
    uint8_t out[256];
    struct pi_cfi_rules r = {1, -8, 16, expression, sizeof expression, jit_fde_insns,
                             sizeof jit_fde_insns};
    assert_int_equal(pi_ehframe_build_rules(&r, 64, out, sizeof out, NULL), 0);
    r.cie_insns = jit_cie_insns, r.cie_len = sizeof jit_cie_insns;
    r.code_align = 0; /* no such factor */
    assert_int_equal(pi_ehframe_build_rules(&r, 64, out, sizeof out, NULL), 0);
    r.code_align = 1;
    assert_int_equal(pi_ehframe_build_rules(&r, 0, out, sizeof out, NULL), 0);
    assert_true(pi_ehframe_build_rules(&r, 64, out, sizeof out, NULL) > 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_x86_matches_gnu_as),
        cmocka_unit_test(test_x86_absolute_form),
        { "test_layout_fields/x86_64", test_layout_fields, NULL, NULL, (void *)&layout_cases[0] },
        { "test_layout_fields/x86_64+CET", test_layout_fields, NULL, NULL,
          (void *)&layout_cases[1] },
        { "test_layout_fields/aarch64", test_layout_fields, NULL, NULL, (void *)&layout_cases[2] },
        { "test_layout_fields/aarch64+BTI", test_layout_fields, NULL, NULL,
          (void *)&layout_cases[3] },
        cmocka_unit_test(test_rows_x86),
        cmocka_unit_test(test_rows_x86_cet),
        cmocka_unit_test(test_rows_a64),
        cmocka_unit_test(test_rows_a64_bti),
        cmocka_unit_test(test_checker_accepts_all_variants),
        cmocka_unit_test(test_invalid_shapes),
        cmocka_unit_test(test_cap_too_small),
        cmocka_unit_test(test_long_advances),
        cmocka_unit_test(test_elf_mach),
        cmocka_unit_test(test_libgcc_unwinds_through_trampoline),
        cmocka_unit_test(test_rules_rebuilt_in_slot_layout),
        cmocka_unit_test(test_rules_refused_when_not_portable),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
