/* stackguard.c: the per-thread floor, found from the thread's real stack;
 * a C recursion that checks it stops before the stack's end. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <pthread.h>

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

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_margin),
        cmocka_unit_test(test_thread_floor),
        cmocka_unit_test(test_unguarded),
        cmocka_unit_test(test_main_thread_bounds),
        cmocka_unit_test(test_recursion_stops),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
