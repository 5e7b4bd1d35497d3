/* The C-stack guard: deep Python recursion ends in RecursionError, never in
 * SIGSEGV.
 *
 * With any PEP 523 function installed every Python call is a C call (3.11's
 * evaluator stops inlining them), so a program that raises the recursion
 * limit can run its thread's C stack out long before the limit. The hook
 * compares the stack pointer with a per-thread floor near the end of the
 * thread's real stack: one thread-local load and a compare on the plain
 * path. Below the floor the call is refused with RecursionError where that
 * is safe (enum pi_frame_owner), as CPython's evaluator refuses a frame at
 * entry when its own recursion check fails. */
#ifndef PI_STACKGUARD_H
#define PI_STACKGUARD_H

#include <stddef.h>
#include <stdint.h>

/* The calling thread's floor: UINTPTR_MAX until the thread's first call
 * (which then takes the slow path and computes it), 0 when unguarded.
 * Initial-exec: a %fs/tpidr_el0-relative load, no call. */
extern __thread uintptr_t pi_stack_floor
    __attribute__((tls_model("initial-exec"), visibility("hidden")));

static inline uintptr_t pi_stack_pointer(void)
{
    uintptr_t sp;
#if defined(__x86_64__)
    __asm__("movq %%rsp, %0" : "=r"(sp));
#elif defined(__aarch64__)
    __asm__("mov %0, sp" : "=r"(sp));
#else
#error "pi_stack_pointer: add this architecture (tramp_<arch>.S is needed too)"
#endif
    return sp;
}

/* The plain path's test: the thread is unknown or near its stack's end. */
static inline int pi_stack_low(void) { return pi_stack_pointer() < pi_stack_floor; }

/* How much of the stack to keep free below the floor: what the rest of a
 * refused call, the exception's unwinding and C code called between two
 * Python calls may need. Pure. */
size_t pi_stack_margin(size_t stack_size);

/* Where the calling thread's stack is: [*lo, *lo + *size). Returns 0, or -1
 * if the system does not say. */
int pi_stack_bounds(uintptr_t *lo, size_t *size);

/* A floor for the main thread's stack from where the kernel put the
 * program's file name (`execfn`, AT_EXECFN) and the stack limit: never below
 * the floor of the exact bounds. Returns -1 when sp is not on that stack or
 * the limit is unusable (unlimited). Pure. */
int pi_stack_main_estimate(uintptr_t sp, uintptr_t execfn, size_t execfn_len, size_t limit,
                           size_t page, uintptr_t *floor);

/* Slow path, when pi_stack_low(): computes the thread's floor on its first
 * call (0, unguarded, when `guard` is 0 or the stack is unknown). Returns 1
 * when sp is below the floor of the thread's real stack, with the bytes used
 * of it in *used and its size in *size; 0 otherwise. A stack pointer below
 * the thread's stack (a coroutine library's own stacks) switches the guard
 * off for the thread rather than refusing calls it cannot judge. */
int pi_stack_exhausted(uintptr_t sp, int guard, size_t *used, size_t *size);

#endif
