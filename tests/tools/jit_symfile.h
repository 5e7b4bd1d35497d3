/* A GDB JIT symbol file as CPython 3.15's JIT registers one per executor
 * (Python/jit_unwind.c), built from the formats for the tests: ELF-64 with
 * .text (no bytes: the code is elsewhere), .eh_frame (a "zR" CIE with
 * absolute pointers and one FDE over the code), .symtab with one function
 * symbol over .text, .strtab and .shstrtab. */
#ifndef PI_TEST_JIT_SYMFILE_H
#define PI_TEST_JIT_SYMFILE_H

#include <stddef.h>
#include <stdint.h>

/* The host's e_machine: the library reads files of its own machine only. */
#if defined(__aarch64__)
#define JIT_SYMFILE_MACHINE 183 /* EM_AARCH64 */
#else
#define JIT_SYMFILE_MACHINE 62 /* EM_X86_64 */
#endif

struct jit_symfile {
    uint8_t bytes[2048];
    size_t size;
    size_t sym_at, eh_at; /* offsets of the function symbol and .eh_frame */
};

/* CPython's rules for x86-64 (CFA = rsp + 8, return address at CFA - 8;
 * then an advance and CFA offset 16), as the default `cie`/`fde`. */
extern const uint8_t jit_symfile_cie[5];
extern const uint8_t jit_symfile_fde[3];

/* Builds f for code at [addr, addr + size) named `symbol`, with the CIE's
 * initial instructions `cie` (cie_len bytes, at most 40). */
void jit_symfile_build(struct jit_symfile *f, uint64_t addr, uint64_t size, const uint8_t *cie,
                       size_t cie_len, const char *symbol);

#endif
