/* In-process unwinding through trampolines.
 *
 * libgcc's unwinder (glibc backtrace(), C++ exception propagation, most crash
 * handlers) only knows code it has unwind info for: each arena's slots are
 * registered with it, by a table of pointers to the FDEs that already sit in
 * every slot. libunwind needs nothing: where it finds no unwind info it
 * follows the frame record that every trampoline keeps (tested). */
#ifndef PI_UNWIND_REGISTRY_H
#define PI_UNWIND_REGISTRY_H

#include "arena.h"

/* Registers every slot of the arena at base. Returns 0, or -1 if memory for
 * the table is short (the arena then simply stays unknown to libgcc). */
int pi_unwind_register_arena(const uint8_t *base, const struct pi_slot_image *image);

#endif
