#include "stackguard.h"

#include <pthread.h>

__thread uintptr_t pi_stack_floor = UINTPTR_MAX;

/* The calling thread's stack, known once the floor is (slow path only). */
static __thread uintptr_t stack_lo;
static __thread size_t stack_size;

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

int pi_stack_exhausted(uintptr_t sp, int guard, size_t *used, size_t *size)
{
    if (pi_stack_floor == UINTPTR_MAX) {
        if (!guard || pi_stack_bounds(&stack_lo, &stack_size) != 0)
            pi_stack_floor = 0;
        else
            pi_stack_floor = stack_lo + pi_stack_margin(stack_size);
    }
    if (sp >= pi_stack_floor)
        return 0;
    if (sp < stack_lo) { /* another stack than the thread's: cannot judge */
        pi_stack_floor = 0;
        return 0;
    }
    *used = (size_t)(stack_lo + stack_size - sp);
    *size = stack_size;
    return 1;
}
