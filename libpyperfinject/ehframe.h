/* Unwind info (.eh_frame + .eh_frame_hdr) for one trampoline copy.
 *
 * Each trampoline slot is laid out as perf inject's genelf lays out the ELF
 * it builds from a jitdump, so one byte string serves both consumers:
 *
 *   slot + 0                      code (instructions, padding, 8-byte tag)
 *   slot + round8(code_size)      .eh_frame: CIE, one FDE, 4-byte zero end
 *   ... + eh_frame_size           .eh_frame_hdr: 20 bytes, one table entry
 *
 * In process the .eh_frame part goes to __register_frame (which walks until
 * the zero terminator); in the jitdump the whole string is the payload of
 * JIT_CODE_UNWINDING_INFO. Every pc-relative and data-relative value inside
 * is computed from this layout, so the bytes are position independent: they
 * are right wherever the slot lands, as long as the layout holds.
 *
 * The CFI is generated from the template's label offsets (pi_tramp_shape),
 * never hard-coded, so it follows the assembly (CET/BTI variants included).
 */
#ifndef PI_EHFRAME_H
#define PI_EHFRAME_H

#include <stddef.h>
#include <stdint.h>

enum pi_arch { PI_ARCH_X86_64, PI_ARCH_AARCH64 };

/* Where the template's frame-record instructions end, as byte offsets from
 * the first instruction. Must satisfy 0 < after_push < after_setfp <
 * after_pop < code_size, each a multiple of the instruction size. */
struct pi_tramp_shape {
    enum pi_arch arch;
    uint32_t code_size;   /* bytes the FDE covers: insns + pad + tag */
    uint32_t after_push;  /* just after push %rbp / stp x29,x30,[sp,-16]! */
    uint32_t after_setfp; /* just after mov %rsp,%rbp / mov x29,sp */
    uint32_t after_pop;   /* just after pop %rbp / ldp x29,x30,[sp],16 */
};

struct pi_unwind_sizes {
    uint32_t eh_frame_size; /* CIE + FDE + 4-byte terminator */
    uint32_t hdr_size;      /* .eh_frame_hdr, always 20 */
    uint32_t total;         /* eh_frame_size + hdr_size: bytes written */
    uint32_t mapped_size;   /* round16(total), for JIT_CODE_UNWINDING_INFO */
};

/* Largest code_size accepted: keeps every offset far inside int32. */
#define PI_EHFRAME_MAX_CODE (1u << 20)

/* DWARF call frame instructions used here and decoded by the test checker
 * (DWARF 5, section 6.4.2). The three "primary" opcodes carry their operand
 * in the low 6 bits. */
enum pi_dw_cfa {
    PI_DW_CFA_nop = 0x00,
    PI_DW_CFA_set_loc = 0x01,
    PI_DW_CFA_advance_loc1 = 0x02,
    PI_DW_CFA_advance_loc2 = 0x03,
    PI_DW_CFA_advance_loc4 = 0x04,
    PI_DW_CFA_offset_extended = 0x05,
    PI_DW_CFA_restore_extended = 0x06,
    PI_DW_CFA_undefined = 0x07,
    PI_DW_CFA_same_value = 0x08,
    PI_DW_CFA_register = 0x09,
    PI_DW_CFA_remember_state = 0x0a,
    PI_DW_CFA_restore_state = 0x0b,
    PI_DW_CFA_def_cfa = 0x0c,
    PI_DW_CFA_def_cfa_register = 0x0d,
    PI_DW_CFA_def_cfa_offset = 0x0e,
    PI_DW_CFA_def_cfa_expression = 0x0f,
    PI_DW_CFA_expression = 0x10,
    PI_DW_CFA_offset_extended_sf = 0x11,
    PI_DW_CFA_def_cfa_sf = 0x12,
    PI_DW_CFA_def_cfa_offset_sf = 0x13,
    PI_DW_CFA_advance_loc = 0x40, /* | delta */
    PI_DW_CFA_offset = 0x80,      /* | reg, then ULEB128 factored offset */
    PI_DW_CFA_restore = 0xc0,     /* | reg */
    PI_DW_CFA_primary_mask = 0xc0,
    PI_DW_CFA_operand_mask = 0x3f,
};

/* Pointer encodings (LSB 4.1, "DWARF Exception Header Encoding"). */
enum pi_dw_eh_pe {
    PI_DW_EH_PE_absptr = 0x00,
    PI_DW_EH_PE_udata4 = 0x03,
    PI_DW_EH_PE_sdata4 = 0x0b,
    PI_DW_EH_PE_pcrel = 0x10,
    PI_DW_EH_PE_datarel = 0x30,
    PI_DW_EH_PE_omit = 0xff,
};

/* DWARF register numbers (x86-64 psABI 3.6.2; AArch64 DWARF ABI 4.1). */
enum pi_dw_reg {
    PI_DW_X86_RBP = 6,
    PI_DW_X86_RSP = 7,
    PI_DW_X86_RIP = 16, /* return address column */
    PI_DW_A64_X29 = 29, /* frame pointer */
    PI_DW_A64_X30 = 30, /* link register, return address column */
    PI_DW_A64_SP = 31,
};

/* Builds .eh_frame + .eh_frame_hdr for a trampoline whose code starts
 * round8(code_size) bytes before `out`. Returns bytes written (sizes->total),
 * or 0 if the shape is invalid or cap is too small. When the shape is valid
 * `sizes` (may be NULL) is filled even if cap is too small, so a call with
 * out = NULL, cap = 0 measures; on an invalid shape it is zeroed. Pure. */
size_t pi_ehframe_build(const struct pi_tramp_shape *shape, uint8_t *out, size_t cap,
                        struct pi_unwind_sizes *sizes);

/* The same CFI for the GDB JIT interface's symbol files (gdbjit_elf.h),
 * whose .eh_frame lies wherever the file is: one CIE at section offset 0
 * whose FDE pointers are absolute (DW_EH_PE_absptr), then one FDE per
 * trampoline copy, all of one size. Each returns the bytes written, or the
 * size when out is NULL; 0 if the shape is invalid or cap is too small.
 * fde_offset: where the FDE goes in the section (for its CIE pointer). Pure. */
size_t pi_ehframe_abs_cie(const struct pi_tramp_shape *shape, uint8_t *out, size_t cap);
size_t pi_ehframe_abs_fde(const struct pi_tramp_shape *shape, uint64_t code_addr,
                          uint32_t fde_offset, uint8_t *out, size_t cap);

/* Turns a copy of such an FDE into the one pi_ehframe_abs_fde would build for
 * code_addr at fde_offset: only those two fields differ between FDEs of one
 * shape, so a file makes its FDE once and copies it. Pure. */
void pi_ehframe_abs_fde_move(uint8_t *fde, uint64_t code_addr, uint32_t fde_offset);

/* Someone else's CFI for a code region, as its own .eh_frame states it:
 * the CIE's factors and return address column, its initial instructions,
 * and the FDE's instructions. The instructions must be position independent
 * (no DW_CFA_set_loc, no expressions): pi_cfi_insns_portable checks. */
struct pi_cfi_rules {
    uint32_t code_align;
    int32_t data_align;
    uint8_t ra_column;
    const uint8_t *cie_insns;
    size_t cie_len;
    const uint8_t *fde_insns;
    size_t fde_len;
};

/* Builds .eh_frame + .eh_frame_hdr in the slot layout above (code starts
 * round8(code_size) bytes before the .eh_frame) from borrowed rules: what
 * CPython's JIT says about an executor becomes the payload of the jitdump's
 * JIT_CODE_UNWINDING_INFO. Returns bytes written, or 0 on invalid rules or a
 * short buffer; `sizes` as pi_ehframe_build. Pure. */
size_t pi_ehframe_build_rules(const struct pi_cfi_rules *rules, uint32_t code_size, uint8_t *out,
                              size_t cap, struct pi_unwind_sizes *sizes);

/* 1 when `len` bytes of call frame instructions decode completely, with
 * operations that mean the same wherever the code is; 0 otherwise. Pure. */
int pi_cfi_insns_portable(const uint8_t *insns, size_t len);

/* ELF e_machine for the jitdump header: 62 (EM_X86_64), 183 (EM_AARCH64);
 * 0 for an unknown value. */
uint32_t pi_arch_elf_mach(enum pi_arch arch);

#endif
