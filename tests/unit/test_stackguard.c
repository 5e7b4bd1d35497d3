/* stackguard.c: the per-thread floor, found from the thread's real stack;
 * a C recursion that checks it stops before the stack's end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>
#include <sys/auxv.h>
#include <sys/resource.h>

#include <cmocka.h>

#include "stackguard.h"

static void test_margin(void **state)
{
    (void)state;
    assert_int_equal(pi_stack_margin(8u << 20), 64 * 1024);
    assert_int_equal(pi_stack_margin(256 * 1024), 64 * 1024);
    assert_int_equal(pi_stack_margin(128 * 1024), 32 * 1024); /* a quarter of a small one */
    assert_int_equal(pi_stack_margin(32 * 1024), 8 * 1024);
}

/* What a thread sees of its own stack and floor. */
struct probe {
    uintptr_t lo, sp;
    size_t size;
    int bounds_rc;
    uintptr_t floor_before, floor_after;
    int exhausted_high, exhausted_low, exhausted_below;
    size_t used, reported_size;
    int guard;
};

static void *probe_thread(void *arg)
{
    struct probe *p = arg;
    p->floor_before = pi_stack_floor;
    p->bounds_rc = pi_stack_bounds(&p->lo, &p->size);
    p->sp = pi_stack_pointer();
    p->exhausted_high = pi_stack_exhausted(p->sp, p->guard, &p->used, &p->reported_size);
    p->floor_after = pi_stack_floor;
    if (p->guard) {
        /* A stack pointer just above the stack's low end: refused. */
        p->exhausted_low = pi_stack_exhausted(p->lo + 128, 1, &p->used, &p->reported_size);
        /* One below the stack (another stack): unguarded from then on. */
        p->exhausted_below = pi_stack_exhausted(p->lo - 4096, 1, &p->used, &p->reported_size);
    }
    return NULL;
}

static void run_probe(struct probe *p, size_t stack_size)
{
    pthread_attr_t attr;
    pthread_t t;
    assert_int_equal(pthread_attr_init(&attr), 0);
    if (stack_size)
        assert_int_equal(pthread_attr_setstacksize(&attr, stack_size), 0);
    assert_int_equal(pthread_create(&t, &attr, probe_thread, p), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
}

static void test_thread_floor(void **state)
{
    (void)state;
    struct probe p = {.guard = 1};
    run_probe(&p, 256 * 1024);
    assert_int_equal(p.bounds_rc, 0);
    assert_true(p.size >= 256 * 1024);
    assert_true(p.sp > p.lo && p.sp < p.lo + p.size); /* we run on it */
    assert_true(p.floor_before == UINTPTR_MAX);       /* unknown in a new thread */
    assert_int_equal(p.exhausted_high, 0);
    assert_true(p.floor_after == p.lo + pi_stack_margin(p.size));
    assert_int_equal(p.exhausted_low, 1);
    assert_int_equal(p.reported_size, p.size);
    assert_int_equal(p.used, p.size - 128);
    assert_int_equal(p.exhausted_below, 0);
}

static void test_unguarded(void **state)
{
    (void)state;
    struct probe p = {.guard = 0};
    run_probe(&p, 0);
    assert_int_equal(p.exhausted_high, 0);
    assert_true(p.floor_after == 0); /* the plain path never leaves it again */
}

static void test_main_thread_bounds(void **state)
{
    (void)state;
    uintptr_t lo = 0;
    size_t size = 0;
    assert_int_equal(pi_stack_bounds(&lo, &size), 0);
    uintptr_t sp = pi_stack_pointer();
    assert_true(sp > lo && sp < lo + size);
}

/* A C recursion that checks the floor on every level, like the hook, in a
 * 256 KiB thread (arm64's minimum is 128 KiB): it stops at the floor
 * instead of faulting. */
static __attribute__((noinline)) unsigned descend(unsigned depth)
{
    char frame[512];
    memset(frame, 1, sizeof frame);
    __asm__ volatile("" : : "r"(frame) : "memory"); /* all of it is kept */
    if (pi_stack_low()) {
        size_t used, size;
        if (pi_stack_exhausted(pi_stack_pointer(), 1, &used, &size))
            return depth;
    }
    /* Not a tail call: the frame is read after the return. */
    return descend(depth + 1) + (unsigned)frame[448] - 1;
}

struct deep {
    unsigned depth;
    uintptr_t lo;
    size_t size;
};

static void *deep_thread(void *arg)
{
    struct deep *d = arg;
    if (pi_stack_bounds(&d->lo, &d->size) == 0)
        d->depth = descend(0);
    return NULL;
}

static void test_recursion_stops(void **state)
{
    (void)state;
    pthread_attr_t attr;
    pthread_t t;
    struct deep d = {0, 0, 0};
    assert_int_equal(pthread_attr_init(&attr), 0);
    assert_int_equal(pthread_attr_setstacksize(&attr, 256 * 1024), 0);
    assert_int_equal(pthread_create(&t, &attr, deep_thread, &d), 0);
    assert_int_equal(pthread_join(t, NULL), 0);
    pthread_attr_destroy(&attr);
    /* glibc may hand out a larger cached stack: judge by what it reports.
     * The levels (512 bytes and more each) filled most of what lies above
     * the floor, and stopped there. */
    size_t usable = d.size - pi_stack_margin(d.size);
    assert_true(d.depth > 0);
    assert_true((size_t)d.depth * 512 < usable);
    assert_true((size_t)d.depth * 512 > usable / 2);
}

/* The estimate's arithmetic: the page above the file name, less the limit,
 * plus the margin and a slack; refused off that stack or without a limit. */
static void test_main_estimate_arithmetic(void **state)
{
    (void)state;
    const uintptr_t execfn = 0x7ffff0000fe0; /* "/usr/bin/python3" ends at ...ff0 */
    const size_t limit = 8u << 20, page = 4096;
    uintptr_t floor = 0;
    assert_int_equal(pi_stack_main_estimate(0x7fffefff0000, execfn, 16, limit, page, &floor), 0);
    const uintptr_t top = 0x7ffff0001000;
    assert_true(floor == top - limit + pi_stack_margin(limit) + 256 * 1024);
    /* a name that ends within 8 bytes of a page's end: the top is the next page */
    assert_int_equal(pi_stack_main_estimate(0x7fffefff0000, execfn, 24, limit, page, &floor), 0);
    assert_true(floor == top + page - limit + pi_stack_margin(limit) + 256 * 1024);
    assert_int_equal(pi_stack_main_estimate(top + 64, execfn, 16, limit, page, &floor), -1);
    assert_int_equal(pi_stack_main_estimate(top - limit, execfn, 16, limit, page, &floor), -1);
    assert_int_equal(pi_stack_main_estimate(0x7fffefff0000, 0, 16, limit, page, &floor), -1);
    assert_int_equal(pi_stack_main_estimate(0x7fffefff0000, execfn, 16, (size_t)4 << 30, page,
                                            &floor), -1); /* another layout */
}

/* On this process's real main stack the estimate is never below the floor
 * of the exact bounds, and not far above it. */
static void test_main_estimate_real(void **state)
{
    (void)state;
    const char *execfn = (const char *)getauxval(AT_EXECFN);
    struct rlimit rl;
    assert_non_null(execfn);
    assert_int_equal(getrlimit(RLIMIT_STACK, &rl), 0);
    if (rl.rlim_cur == RLIM_INFINITY)
        skip();
    uintptr_t lo = 0, floor = 0;
    size_t size = 0;
    assert_int_equal(pi_stack_bounds(&lo, &size), 0);
    assert_int_equal(pi_stack_main_estimate(pi_stack_pointer(), (uintptr_t)execfn,
                                            strlen(execfn), rl.rlim_cur, 4096, &floor), 0);
    uintptr_t exact = lo + pi_stack_margin(size);
    assert_true(floor >= exact);
    assert_true(floor - exact <= 256 * 1024 + 4096);
}

/* The main thread under a 1 MiB limit: the estimate first, then, below it,
 * the exact floor, where the recursion stops instead of faulting. */
static void test_main_thread_recursion_stops(void **state)
{
    (void)state;
    struct rlimit old, small;
    assert_int_equal(getrlimit(RLIMIT_STACK, &old), 0);
    small = old;
    small.rlim_cur = 1u << 20;
    if (old.rlim_cur != RLIM_INFINITY && old.rlim_cur < small.rlim_cur)
        skip();
    assert_int_equal(setrlimit(RLIMIT_STACK, &small), 0);
    uintptr_t lo = 0;
    size_t size = 0;
    assert_int_equal(pi_stack_bounds(&lo, &size), 0);
    pi_stack_floor = UINTPTR_MAX; /* as in a thread not seen yet */
    unsigned depth = descend(0);
    uintptr_t floor_after = pi_stack_floor;
    assert_int_equal(setrlimit(RLIMIT_STACK, &old), 0);
    pi_stack_floor = UINTPTR_MAX;
    assert_true(floor_after == lo + pi_stack_margin(size)); /* the exact one, in the end */
    uintptr_t top = lo + size;
    size_t usable = (size_t)(top - floor_after);
    assert_true(depth > 0);
    assert_true((size_t)depth * 512 < usable);
    assert_true((size_t)depth * 512 > usable / 2);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_margin),
        cmocka_unit_test(test_thread_floor),
        cmocka_unit_test(test_unguarded),
        cmocka_unit_test(test_main_thread_bounds),
        cmocka_unit_test(test_recursion_stops),
        cmocka_unit_test(test_main_estimate_arithmetic),
        cmocka_unit_test(test_main_estimate_real),
        cmocka_unit_test(test_main_thread_recursion_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
