/* In-process unwinding through trampolines.
 *
 * Unwinders look unwind info up in two standard ways, and the library serves
 * both with the FDEs that already sit in every slot, reporting each arena as
 * an object of its own (named "[pyperfinject]") whose header page holds
 * program headers and an .eh_frame_hdr search table over the arena's slots:
 *  - _dl_find_object (glibc 2.35+): what libgcc's unwinder (glibc
 *    backtrace(), C++ exceptions, thread exit and cancellation) asks when it
 *    was built against such a glibc;
 *  - dl_iterate_phdr: libunwind, LLVM's libunwind, older libgcc.
 * Both are documented interpositions. Registering arenas with libgcc
 * (__register_frame_table) is only the fallback for a library that is not
 * the process's definition of them (dlopen'ed RTLD_LOCAL): it makes every
 * unwind take a libgcc mutex that fork() can leave locked in a child.
 * (x86-64 libunwind would also follow the frame record; aarch64 libunwind
 * falls back to the link register and needs the table.) */
#ifndef PI_UNWIND_REGISTRY_H
#define PI_UNWIND_REGISTRY_H

#include "arena.h"

/* An arena pool header callback (ctx: the slot image): writes the program
 * headers and the search table into the arena's header. */
void pi_unwind_fill_header(uint8_t *header, const uint8_t *slots, void *ctx);

/* Resolves the functions the interposers forward to (the constructor). */
void pi_unwind_init(void);

/* Makes a sealed arena known to both kinds of unwinder. header is the
 * arena's header (slots - PI_ARENA_HEADER_BYTES). Returns 0, or -1 if
 * it could not be recorded. */
int pi_unwind_register_arena(const uint8_t *slots, const struct pi_slot_image *image);

#endif
