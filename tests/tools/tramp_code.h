/* Trampoline code for the unit tests and fuzz targets that build slots or
 * dumps: the template as tramp_x86_64.S / tramp_aarch64.S assemble it, then
 * padding to 8 bytes and the 8-byte tag each copy carries.
 *
 * Shared by tests/unit/test_ehframe.c, tests/unit/test_jitdump_records.c and
 * fuzz/fuzz_records.c so that one restatement of the template feeds them all.
 * The dump checker (jdc_template.c) deliberately keeps its own copy of the
 * template bytes for recognising code: were it to use this one, a wrong byte
 * here would be accepted there. Header-only, so nothing new to link. */
#ifndef PI_TRAMP_CODE_H
#define PI_TRAMP_CODE_H

#include <stdint.h>
#include <string.h>

#include "ehframe.h"

static inline size_t tramp_put(uint8_t *code, size_t at, const uint8_t *insn, size_t n)
{
    memcpy(code + at, insn, n);
    return at + n;
}

/* aarch64 instructions are little-endian words whatever the host. */
static inline size_t tramp_put_a64(uint8_t *code, size_t at, uint32_t word)
{
    uint8_t le[4] = { (uint8_t)word, (uint8_t)(word >> 8), (uint8_t)(word >> 16),
                      (uint8_t)(word >> 24) };
    return tramp_put(code, at, le, 4);
}

/* Writes the template (endbr64 / bti c first with landing_pad), its padding
 * and tag into code (32 bytes at most: aarch64 with bti c) and returns the
 * shape the assembler's labels would give. */
static inline struct pi_tramp_shape make_tramp_code(enum pi_arch arch, int landing_pad,
                                                    uint8_t *code, uint64_t tag)
{
    static const uint8_t x86_endbr64[] = { 0xf3, 0x0f, 0x1e, 0xfa };
    static const uint8_t x86_push_rbp[] = { 0x55 };
    static const uint8_t x86_mov_rsp_rbp[] = { 0x48, 0x89, 0xe5 };
    static const uint8_t x86_call_rcx[] = { 0xff, 0xd1 };
    static const uint8_t x86_pop_rbp[] = { 0x5d };
    static const uint8_t x86_ret[] = { 0xc3 };
    static const uint8_t x86_int3 = 0xcc;
    static const uint32_t a64_bti_c = 0xd503245f;
    static const uint32_t a64_stp_fp_lr = 0xa9bf7bfd; /* stp x29, x30, [sp, #-16]! */
    static const uint32_t a64_mov_fp_sp = 0x910003fd; /* mov x29, sp */
    static const uint32_t a64_blr_x3 = 0xd63f0060;
    static const uint32_t a64_ldp_fp_lr = 0xa8c17bfd; /* ldp x29, x30, [sp], #16 */
    static const uint32_t a64_ret = 0xd65f03c0;
    static const uint32_t a64_nop = 0xd503201f;
    struct pi_tramp_shape s = { arch, 0, 0, 0, 0 };
    size_t at = 0;

    if (arch == PI_ARCH_X86_64) {
        if (landing_pad)
            at = tramp_put(code, at, x86_endbr64, sizeof x86_endbr64);
        at = tramp_put(code, at, x86_push_rbp, sizeof x86_push_rbp);
        s.after_push = (uint32_t)at;
        at = tramp_put(code, at, x86_mov_rsp_rbp, sizeof x86_mov_rsp_rbp);
        s.after_setfp = (uint32_t)at;
        at = tramp_put(code, at, x86_call_rcx, sizeof x86_call_rcx);
        at = tramp_put(code, at, x86_pop_rbp, sizeof x86_pop_rbp);
        s.after_pop = (uint32_t)at;
        at = tramp_put(code, at, x86_ret, sizeof x86_ret);
        while (at % 8)
            code[at++] = x86_int3;
    } else {
        if (landing_pad)
            at = tramp_put_a64(code, at, a64_bti_c);
        at = tramp_put_a64(code, at, a64_stp_fp_lr);
        s.after_push = (uint32_t)at;
        at = tramp_put_a64(code, at, a64_mov_fp_sp);
        s.after_setfp = (uint32_t)at;
        at = tramp_put_a64(code, at, a64_blr_x3);
        at = tramp_put_a64(code, at, a64_ldp_fp_lr);
        s.after_pop = (uint32_t)at;
        at = tramp_put_a64(code, at, a64_ret);
        while (at % 8)
            at = tramp_put_a64(code, at, a64_nop);
    }
    memcpy(code + at, &tag, sizeof tag);
    s.code_size = (uint32_t)(at + sizeof tag);
    return s;
}

#endif
