/* Trampoline templates and the unwind rules they need; see jdc_template.h. */
#include "jdc_template.h"

#include "bytes.h"

#include <stdio.h>
#include <string.h>

struct jdc_insn {
    uint8_t bytes[4];
    uint8_t len;
    bool optional;          /* CET / BTI landing pad */
    enum jdc_frame_state after; /* state once it has executed */
    const char *text;
};

/* x86-64: [endbr64] push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret */
static const struct jdc_insn x86_template[] = {
    { { 0xf3, 0x0f, 0x1e, 0xfa }, 4, true, JDC_AT_ENTRY, "endbr64" },
    { { 0x55 }, 1, false, JDC_PUSHED, "push %rbp" },
    { { 0x48, 0x89, 0xe5 }, 3, false, JDC_FRAMED, "mov %rsp,%rbp" },
    { { 0xff, 0xd1 }, 2, false, JDC_FRAMED, "call *%rcx" },
    { { 0x5d }, 1, false, JDC_POPPED, "pop %rbp" },
    { { 0xc3 }, 1, false, JDC_POPPED, "ret" },
};

/* aarch64 words: [bti c] stp x29,x30,[sp,#-16]!; mov x29,sp; blr x3;
 * ldp x29,x30,[sp],#16; ret. A64() lays a word out little-endian, as
 * instructions are stored whatever the data endianness. */
#define A64(w) { (uint8_t)(w), (uint8_t)((w) >> 8), (uint8_t)((w) >> 16), (uint8_t)((w) >> 24) }
static const struct jdc_insn a64_template[] = {
    { A64(0xd503245fu), 4, true, JDC_AT_ENTRY, "bti c" },
    { A64(0xa9bf7bfdu), 4, false, JDC_PUSHED, "stp x29, x30, [sp, #-16]!" },
    { A64(0x910003fdu), 4, false, JDC_FRAMED, "mov x29, sp" },
    { A64(0xd63f0060u), 4, false, JDC_FRAMED, "blr x3" },
    { A64(0xa8c17bfdu), 4, false, JDC_POPPED, "ldp x29, x30, [sp], #16" },
    { A64(0xd65f03c0u), 4, false, JDC_POPPED, "ret" },
};

static const struct jdc_arch arches[] = {
    { JDC_EM_X86_64, "x86_64", x86_template, sizeof x86_template / sizeof x86_template[0], 0xcc, 1,
      -8, 16, 7, 6, 8, true, false },
    { JDC_EM_AARCH64, "aarch64", a64_template, sizeof a64_template / sizeof a64_template[0], -1, 4,
      -8, 30, 31, 29, 0, false, true },
};

const struct jdc_arch *jdc_arch_for(uint32_t elf_mach)
{
    for (size_t i = 0; i < sizeof arches / sizeof arches[0]; i++)
        if (arches[i].elf_mach == elf_mach)
            return &arches[i];
    return NULL;
}

bool jdc_recognise(const struct jdc_arch *a, const uint8_t *code, uint64_t size,
                   struct jdc_layout *out, char *why, size_t whylen)
{
    uint64_t off = 0;
    enum jdc_frame_state state = JDC_AT_ENTRY;

    out->n = 0;
    for (size_t i = 0; i < a->tmpl_len; i++) {
        const struct jdc_insn *in = &a->tmpl[i];
        bool match = size - off >= in->len && memcmp(code + off, in->bytes, in->len) == 0;
        if (!match) {
            if (in->optional)
                continue;
            snprintf(why, whylen, "%s code does not have `%s` at +%llu", a->name, in->text,
                     (unsigned long long)off);
            return false;
        }
        out->b[out->n++] = (struct jdc_boundary){ (uint32_t)off, state, in->text };
        state = in->after;
        off += in->len;
    }
    uint64_t tag = round8(off);
    if (size != tag + 8) {
        snprintf(why, whylen, "code_size %llu, expected %llu (insns %llu, pad to 8, 8-byte tag)",
                 (unsigned long long)size, (unsigned long long)(tag + 8),
                 (unsigned long long)off);
        return false;
    }
    for (uint64_t p = off; a->pad_byte >= 0 && p < tag; p++) {
        if (code[p] != a->pad_byte) {
            snprintf(why, whylen, "padding byte at +%llu is 0x%02x, expected 0x%02x",
                     (unsigned long long)p, code[p], a->pad_byte);
            return false;
        }
    }
    return true;
}

void jdc_describe_row(const struct pi_jdc_row *row, const struct jdc_arch *a, char *buf,
                      size_t len)
{
    const char *kinds[] = { "same", "undef", "off", "other" };
    snprintf(buf, len, "cfa=r%u%+lld fp=%s%+lld ra=%s%+lld", row->cfa_reg,
             (long long)row->cfa_off, kinds[row->reg[a->fp].kind], (long long)row->reg[a->fp].off,
             kinds[row->reg[a->ra_column].kind], (long long)row->reg[a->ra_column].off);
}

bool jdc_row_ok(const struct jdc_arch *a, enum jdc_frame_state st, const struct pi_jdc_row *row,
                char *why, size_t whylen)
{
    bool framed = st == JDC_PUSHED || st == JDC_FRAMED;
    int64_t cfa_off = framed ? 16 : a->entry_cfa;

    if (st == JDC_FRAMED) {
        /* sp == fp after the mov and across the call: either base works. */
        if (!((row->cfa_reg == a->fp || row->cfa_reg == a->sp) && row->cfa_off == 16)) {
            snprintf(why, whylen, "CFA must be r%u+16 or r%u+16", a->fp, a->sp);
            return false;
        }
    } else if (row->cfa_reg != a->sp || row->cfa_off != cfa_off) {
        snprintf(why, whylen, "CFA must be r%u%+lld", a->sp, (long long)cfa_off);
        return false;
    }
    for (uint32_t r = 0; r < PI_JDC_MAX_REG; r++) {
        int64_t want_off = 0;
        bool saved = false;
        if (r == a->fp && framed) {
            saved = true;
            want_off = -16;
        } else if (r == a->ra_column && (a->ra_on_stack || (a->lr_in_record && framed))) {
            saved = true;
            want_off = -8;
        }
        if (saved && !(row->reg[r].kind == PI_JDC_RULE_OFFSET && row->reg[r].off == want_off)) {
            snprintf(why, whylen, "r%u must be saved at CFA%+lld", r, (long long)want_off);
            return false;
        }
        if (!saved && row->reg[r].kind != PI_JDC_RULE_SAME) {
            snprintf(why, whylen, "r%u must be unchanged", r);
            return false;
        }
    }
    return true;
}
