/* sidetable.c: lookups validated by identity of name, file and line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>

#include <cmocka.h>

#include "sidetable.h"

static void test_put_get_and_validation(void **state)
{
    (void)state;
    struct pi_sidetable t = {0};
    int name, file, other;
    struct pi_side_key key = {(void *)0x1000, &name, &file, 7};
    assert_null(pi_sidetable_get(&t, &key));
    assert_int_equal(pi_sidetable_put(&t, &key, (void *)0xabc), 0);
    assert_ptr_equal(pi_sidetable_get(&t, &key), (void *)0xabc);

    /* Same address, another code object (reused memory): a miss. */
    struct pi_side_key reused = key;
    reused.name = &other;
    assert_null(pi_sidetable_get(&t, &reused));
    reused = key;
    reused.firstlineno = 8;
    assert_null(pi_sidetable_get(&t, &reused));
    /* Replacing the entry serves the new object. */
    assert_int_equal(pi_sidetable_put(&t, &reused, (void *)0xdef), 0);
    assert_ptr_equal(pi_sidetable_get(&t, &reused), (void *)0xdef);
    assert_null(pi_sidetable_get(&t, &key));
    assert_int_equal(t.used, 1);
    free(t.slots);
}

static void test_growth_keeps_everything(void **state)
{
    (void)state;
    struct pi_sidetable t = {0};
    int name, file;
    enum { N = 50000 };
    for (uintptr_t i = 1; i <= N; i++) {
        struct pi_side_key key = {(void *)(i * 16), &name, &file, (int32_t)i};
        assert_int_equal(pi_sidetable_put(&t, &key, (void *)(i * 3)), 0);
    }
    assert_int_equal(t.used, N);
    assert_true(t.capacity >= 2 * N);
    for (uintptr_t i = 1; i <= N; i++) {
        struct pi_side_key key = {(void *)(i * 16), &name, &file, (int32_t)i};
        assert_ptr_equal(pi_sidetable_get(&t, &key), (void *)(i * 3));
    }
    free(t.slots);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_put_get_and_validation),
        cmocka_unit_test(test_growth_keeps_everything),
    };
    return cmocka_run_group_tests_name("sidetable", tests, NULL, NULL);
}
