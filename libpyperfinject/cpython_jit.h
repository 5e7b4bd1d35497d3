/* CPython's JIT code in the outputs (3.15+).
 *
 * With PYTHON_JIT=1 hot loops run in machine code CPython's JIT wrote into
 * anonymous memory: no map names it and perf cannot unwind out of it.
 * CPython 3.15 registers every executor with the GDB JIT interface (its own
 * __jit_debug_descriptor; each entry an in-memory ELF with the code's
 * address, size and .eh_frame). The library looks at that list from the
 * eval hook: CPython changes it under the GIL and so does the hook read it,
 * and a change costs one compare to notice. Each new executor is named after
 * its code object (found through the executors CPython links together, from
 * one seen on the current thread's frames) and announced to the perf map
 * and the jitdump, with CPython's own CFI as its unwinding record.
 *
 * Unregistered executors need nothing in the jitdump (perf's model is time-
 * ordered); the perf map is not, so an address that held code of two
 * functions gets a line naming both (jitmap.h). */
#ifndef PI_CPYTHON_JIT_H
#define PI_CPYTHON_JIT_H

#include "jitwatch.h"

#include <stddef.h>
#include <stdint.h>

struct pi_state;
struct pi_abi;

/* At activation: finds CPython's descriptor in `handle` when this build's
 * table row has a JIT to follow. Returns 1 when there is one. */
int pi_jit_setup(struct pi_jit_watch *w, void *handle, const struct pi_abi *abi);

/* The look: new executors are read, named and announced. From the eval
 * hook, GIL held, state lock not held; `tstate` and `frame` are the call's
 * (frame: the one about to run). */
void pi_jit_look(struct pi_state *s, void *tstate, void *frame);

/* At exit, state lock held: what still waits goes out under CPython's
 * name, so that no JIT code the process ran is left out of the files. */
void pi_jit_at_exit(struct pi_state *s);

/* The arena pool's pi_arena_taken_fn (ctx: the watch): 1 when the range
 * overlaps JIT code already named in the perf map. State lock held. */
int pi_jit_address_taken(uintptr_t start, size_t len, void *ctx);

#endif
