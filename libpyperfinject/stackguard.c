#include "stackguard.h"

#include <pthread.h>
#include <string.h>
#include <sys/auxv.h>
#include <sys/resource.h>
#include <unistd.h>

__thread uintptr_t pi_stack_floor = UINTPTR_MAX;

/* The calling thread's stack, known once the floor is (slow path only). */
static __thread uintptr_t stack_lo;
static __thread size_t stack_size;
static __thread int estimated; /* the floor is pi_stack_main_estimate's */

/* Kept free: 64 KiB on ordinary stacks (hundreds of release evaluator
 * frames, dozens of a debug build's), a quarter of a small one
 * (threading.stack_size() accepts 32 KiB). */
enum { MARGIN_BYTES = 64 * 1024 };

size_t pi_stack_margin(size_t size) { return size / 4 < MARGIN_BYTES ? size / 4 : MARGIN_BYTES; }

int pi_stack_bounds(uintptr_t *lo, size_t *size)
{
    pthread_attr_t attr;
    /* For the main thread glibc reads /proc/self/maps and RLIMIT_STACK:
     * once per thread, on its first Python call. */
    if (pthread_getattr_np(pthread_self(), &attr) != 0)
        return -1;
    void *addr = NULL;
    size_t n = 0;
    int rc = pthread_attr_getstack(&attr, &addr, &n);
    pthread_attr_destroy(&attr);
    if (rc != 0 || addr == NULL || n == 0)
        return -1;
    *lo = (uintptr_t)addr;
    *size = n;
    return 0;
}

/* The main thread's stack without reading /proc/self/maps (pthread_getattr_np
 * does, about 150 000 instructions, most of a short process's start-up
 * share): the kernel copies the program's file name to the very top of the
 * stack (AT_EXECFN) and the stack may grow RLIMIT_STACK below that top. The
 * floor this gives is raised by a slack, so that it is never below the real
 * one; the exact bounds are read only if a thread goes below it. Not for an
 * unlimited stack (another layout), nor for a stack pointer elsewhere (a
 * thread's own stack, also a forked child's main thread's). */
enum { ESTIMATE_SLACK_BYTES = 256 * 1024 };

int pi_stack_main_estimate(uintptr_t sp, uintptr_t execfn, size_t execfn_len, size_t limit,
                           size_t page, uintptr_t *floor)
{
    if (execfn == 0 || page == 0 || limit == 0 || limit > ((size_t)1 << 30))
        return -1;
    uintptr_t top = (execfn + execfn_len + 1 + sizeof(void *) + page - 1) & ~(uintptr_t)(page - 1);
    if (sp >= top || top - sp >= limit || top < limit)
        return -1;
    *floor = top - limit + pi_stack_margin(limit) + ESTIMATE_SLACK_BYTES;
    return 0;
}

static int estimate_floor(uintptr_t sp, uintptr_t *floor)
{
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    struct rlimit rl;
    if (execfn == NULL || getrlimit(RLIMIT_STACK, &rl) != 0 || rl.rlim_cur == RLIM_INFINITY)
        return -1;
    return pi_stack_main_estimate(sp, (uintptr_t)execfn, strlen(execfn), (size_t)rl.rlim_cur,
                                  (size_t)getpagesize(), floor);
}

/* The floor from the thread's exact bounds; 0 (unguarded) if unknown. */
static uintptr_t exact_floor(void)
{
    estimated = 0;
    if (pi_stack_bounds(&stack_lo, &stack_size) != 0)
        return 0;
    return stack_lo + pi_stack_margin(stack_size);
}

int pi_stack_exhausted(uintptr_t sp, int guard, size_t *used, size_t *size)
{
    if (pi_stack_floor == UINTPTR_MAX) {
        uintptr_t floor = 0;
        if (!guard)
            pi_stack_floor = 0;
        else if (estimate_floor(sp, &floor) == 0)
            pi_stack_floor = floor, estimated = 1;
        else
            pi_stack_floor = exact_floor();
    }
    if (sp >= pi_stack_floor)
        return 0;
    if (estimated) { /* below the estimate: judge by the exact bounds */
        pi_stack_floor = exact_floor();
        if (sp >= pi_stack_floor)
            return 0;
    }
    if (sp < stack_lo) { /* another stack than the thread's: cannot judge */
        pi_stack_floor = 0;
        return 0;
    }
    *used = (size_t)(stack_lo + stack_size - sp);
    *size = stack_size;
    return 1;
}
