/* In-process unwinding through trampolines.
 *
 * Unwinders find unwind info in two standard ways, and the library serves
 * both with the FDEs that already sit in every slot:
 *  - libgcc's unwinder (glibc backtrace(), C++ exceptions, most crash
 *    handlers) consults frames registered with it: every arena is registered
 *    (__register_frame_table) when it is made;
 *  - libunwind, LLVM's libunwind and other unwinders enumerate loaded objects
 *    with dl_iterate_phdr and read each object's PT_GNU_EH_FRAME: the
 *    library interposes dl_iterate_phdr (a documented interposition) and,
 *    after the real objects, reports each arena as one more object, named
 *    "[pyperfinject]", whose header page holds program headers and an
 *    .eh_frame_hdr search table over the arena's slots.
 * (x86-64 libunwind would also follow the frame record; aarch64 libunwind
 * falls back to the link register and needs the table.) */
#ifndef PI_UNWIND_REGISTRY_H
#define PI_UNWIND_REGISTRY_H

#include "arena.h"

/* An arena pool header callback (ctx: the slot image): writes the program
 * headers and the search table into the arena's header. */
void pi_unwind_fill_header(uint8_t *header, const uint8_t *slots, void *ctx);

/* Makes a sealed arena known to both kinds of unwinder. header is the
 * arena's header (slots - PI_ARENA_HEADER_BYTES). Returns 0, or -1 if
 * libgcc's table could not be allocated. */
int pi_unwind_register_arena(const uint8_t *slots, const struct pi_slot_image *image);

#endif
