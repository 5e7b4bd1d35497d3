/* The symbol file the GDB JIT interface hands a debugger for one arena.
 *
 * An in-memory ELF (ET_DYN, as CPython's JIT and LLVM write them): .text is
 * the arena's slots as SHT_NOBITS (the debugger reads the code from the
 * process or the core), .eh_frame holds one CIE and one FDE per trampoline
 * with absolute addresses, .symtab one function symbol per trampoline.
 *
 * The file grows in place inside a region reserved for a whole arena, and a
 * debugger may read it at any instant (it attaches, or the process dumps
 * core, between two stores). So new bytes go in first, then the sizes that
 * make them part of the file: the file's own size, then strings, FDEs and
 * last the symbols that name them. Each size is one aligned store. */
#ifndef PI_GDBJIT_ELF_H
#define PI_GDBJIT_ELF_H

#include "ehframe.h"

#include <stddef.h>
#include <stdint.h>

struct pi_gdbelf {
    uint8_t *base;            /* the ELF header: start of the file */
    volatile uint64_t *size;  /* where the file's size is published */
    uint32_t max_syms;
    uint32_t nsyms;           /* function symbols so far */
    uint32_t cie_size, fde_size;
    uint64_t eh_off, sym_off, str_off; /* section offsets in the file */
    uint64_t str_used;
    uint8_t fde[64];          /* the FDE every trampoline's is a moved copy of */
};

/* Bytes to reserve for a file of up to max_syms trampolines whose names are
 * at most name_max bytes; 0 for an invalid shape. Pure. */
size_t pi_gdbelf_reserve(const struct pi_tramp_shape *shape, uint32_t max_syms, size_t name_max);

/* Lays the empty file out at base (cap bytes reserved, zero-filled, as
 * mmap gives them) for trampolines in [text_addr, text_addr + text_size),
 * and publishes its size through *size. 0, or -1 if it does not fit. */
int pi_gdbelf_init(struct pi_gdbelf *e, uint8_t *base, size_t cap, volatile uint64_t *size,
                   const struct pi_tramp_shape *shape, uint32_t max_syms, size_t name_max,
                   uint64_t text_addr, uint64_t text_size);

/* Adds one trampoline: its symbol (name[0..len), no NUL needed) and FDE.
 * 0, or -1 when the file is full. */
int pi_gdbelf_add(struct pi_gdbelf *e, uint64_t addr, uint32_t code_size, const char *name,
                  size_t len);

#endif
