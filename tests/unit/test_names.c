/* names.c: symbol formatting and sanitising, map line format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "names.h"

static void test_plain_symbol(void **state)
{
    (void)state;
    char out[256];
    size_t n = pi_format_symbol(out, sizeof out, "Cls.meth", 8, "/src/app.py", 11);
    assert_string_equal(out, "py::Cls.meth:/src/app.py");
    assert_int_equal(n, strlen(out));
}

static void test_control_bytes_are_escaped(void **state)
{
    (void)state;
    char out[256];
    pi_format_symbol(out, sizeof out, "a\nb", 3, "/t/x\x01\x7f.py", 9);
    assert_string_equal(out, "py::a\\x0ab:/t/x\\x01\\x7f.py");
    assert_null(strchr(out, '\n'));
}

static void test_utf8_kept_invalid_escaped(void **state)
{
    (void)state;
    char out[256];
    /* é and 漢 are valid; a lone 0xff, a surrogate encoded in UTF-8 (ED A0 80)
     * and an overlong "/" (C0 AF) are not. */
    const char file[] = "/caf\xc3\xa9-\xe6\xbc\xa2-\xff-\xed\xa0\x80-\xc0\xaf";
    pi_format_symbol(out, sizeof out, "f", 1, file, sizeof file - 1);
    assert_string_equal(out, "py::f:/caf\xc3\xa9-\xe6\xbc\xa2-\\xff-\\xed\\xa0\\x80-\\xc0\\xaf");
}

static void test_null_parts(void **state)
{
    (void)state;
    char out[64];
    pi_format_symbol(out, sizeof out, NULL, 0, NULL, 0);
    assert_string_equal(out, "py::?:?");
}

static void test_long_names_are_cut_with_ellipsis(void **state)
{
    (void)state;
    char file[5000];
    memset(file, 'x', sizeof file);
    char out[2048];
    size_t n = pi_format_symbol(out, sizeof out, "f", 1, file, sizeof file);
    assert_true(n <= PI_SYMBOL_MAX);
    assert_int_equal(n, strlen(out));
    assert_string_equal(out + n - 3, "...");

    /* Small buffers: cut, terminated, ellipsis. */
    char small[20];
    n = pi_format_symbol(small, sizeof small, "function", 8, "/file.py", 8);
    assert_true(n < sizeof small);
    assert_string_equal(small + n - 3, "...");
}

static void test_cut_never_splits_utf8(void **state)
{
    (void)state;
    char name[300];
    for (size_t i = 0; i < sizeof name; i += 3)
        memcpy(name + i, "\xe6\xbc\xa2", 3); /* 漢 x 100 */
    char out[64];
    size_t n = pi_format_symbol(out, sizeof out, name, sizeof name, "/f.py", 5);
    /* "py::" + whole characters + "..." */
    assert_int_equal((n - 4 - 3) % 3, 0);
}

static void test_map_line(void **state)
{
    (void)state;
    char line[128];
    size_t n = pi_format_map_line(line, sizeof line, 0x7f3529fcf759u, 0xb, "py::bar:/run/t.py");
    assert_string_equal(line, "7f3529fcf759 b py::bar:/run/t.py\n");
    assert_int_equal(n, strlen(line));
    assert_int_equal(pi_format_map_line(line, 10, 0x7f3529fcf759u, 0xb, "py::x"), 0);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_plain_symbol),
        cmocka_unit_test(test_control_bytes_are_escaped),
        cmocka_unit_test(test_utf8_kept_invalid_escaped),
        cmocka_unit_test(test_null_parts),
        cmocka_unit_test(test_long_names_are_cut_with_ellipsis),
        cmocka_unit_test(test_cut_never_splits_utf8),
        cmocka_unit_test(test_map_line),
    };
    return cmocka_run_group_tests_name("names", tests, NULL, NULL);
}
