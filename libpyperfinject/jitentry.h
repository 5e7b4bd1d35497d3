/* One GDB JIT interface entry of CPython's JIT, read: the in-memory ELF
 * symbol file CPython 3.15+ builds for each executor (Python/jit_unwind.c):
 * .text at the code's address, one function symbol, and an .eh_frame with
 * absolute FDE pointers.
 *
 * The file is somebody else's memory: every offset, size and count is
 * checked against the file's size before it is followed. */
#ifndef PI_JITENTRY_H
#define PI_JITENTRY_H

#include "ehframe.h"

#include <stddef.h>
#include <stdint.h>

struct pi_jit_symfile {
    uint64_t text_addr, text_size; /* the code, as .text says */
    const char *symbol;            /* the function symbol's name, in the file */
    size_t symbol_len;
    int has_cfi;                   /* an FDE covering .text with portable rules */
    struct pi_cfi_rules cfi;       /* its pointers are into the file */
};

/* The largest code region taken (larger is refused, not truncated). */
#define PI_JIT_MAX_CODE (1u << 20)

/* Reads `size` bytes at `file`, an ELF64 for `machine` (EM_X86_64 62,
 * EM_AARCH64 183) whose .text starts at code_addr (0: anywhere). Returns 0, or -1 when
 * the file is not such a symbol file. Pure. */
int pi_jitentry_parse(const void *file, uint64_t size, uint16_t machine, uint64_t code_addr,
                      struct pi_jit_symfile *out);

#endif
