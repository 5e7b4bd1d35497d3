/* sidetable.c: code object address -> trampoline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sidetable.h"

static void test_put_get_replace(void **state)
{
    (void)state;
    struct pi_sidetable t = {0};
    const void *code = (void *)0x1000;
    assert_null(pi_sidetable_get(&t, code));
    assert_int_equal(pi_sidetable_put(&t, code, (void *)0xabc), 0);
    assert_ptr_equal(pi_sidetable_get(&t, code), (void *)0xabc);
    assert_null(pi_sidetable_get(&t, (void *)0x1010));
    /* Replacing the entry keeps one entry. */
    assert_int_equal(pi_sidetable_put(&t, code, (void *)0xdef), 0);
    assert_ptr_equal(pi_sidetable_get(&t, code), (void *)0xdef);
    assert_int_equal(t.used, 1);
    free(t.slots);
}

/* Addresses that share a bucket are all found after the probe wraps past
 * the end of the table. */
static void test_collisions_wrap(void **state)
{
    (void)state;
    struct pi_sidetable t = {0};
    assert_int_equal(pi_sidetable_put(&t, (void *)0x10, (void *)1), 0);
    size_t mask = t.capacity - 1, last = mask;
    /* Find addresses hashing to the last bucket. */
    uintptr_t found[4];
    size_t n = 0;
    for (uintptr_t a = 0x20; n < 4; a += 16)
        if ((pi_side_hash((void *)a) & mask) == last)
            found[n++] = a;
    for (size_t i = 0; i < n; i++)
        assert_int_equal(pi_sidetable_put(&t, (void *)found[i], (void *)(i + 100)), 0);
    assert_int_equal(t.capacity, mask + 1); /* no growth moved them */
    for (size_t i = 0; i < n; i++)
        assert_ptr_equal(pi_sidetable_get(&t, (void *)found[i]), (void *)(i + 100));
    assert_ptr_equal(pi_sidetable_get(&t, (void *)0x10), (void *)1);
    free(t.slots);
}

static void test_growth_keeps_everything_at_three_quarters(void **state)
{
    (void)state;
    struct pi_sidetable t = {0};
    enum { N = 50000 };
    for (uintptr_t i = 1; i <= N; i++) {
        assert_int_equal(pi_sidetable_put(&t, (void *)(i * 16), (void *)(i * 3)), 0);
        assert_true(t.used * 4 <= t.capacity * 3);
    }
    assert_int_equal(t.used, N);
    assert_int_equal(t.capacity, 131072); /* 50 000 fit in 2^17 at 3/4, not in 2^16 */
    assert_int_equal(sizeof(struct pi_side_entry), 2 * sizeof(void *));
    for (uintptr_t i = 1; i <= N; i++)
        assert_ptr_equal(pi_sidetable_get(&t, (void *)(i * 16)), (void *)(i * 3));
    assert_null(pi_sidetable_get(&t, (void *)((N + 1) * 16)));
    free(t.slots);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_replace),
        cmocka_unit_test(test_collisions_wrap),
        cmocka_unit_test(test_growth_keeps_everything_at_three_quarters),
    };
    return cmocka_run_group_tests_name("sidetable", tests, NULL, NULL);
}
