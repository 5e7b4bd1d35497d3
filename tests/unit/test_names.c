/* names.c: symbol formatting and sanitising, map line format. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
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

/* Names are scanned eight bytes at a time: a byte to escape is found at
 * every position of a word, and the bytes at the edges of the printable
 * range (0x20, 0x7e) are kept. */
static void test_escape_at_every_position(void **state)
{
    (void)state;
    static const unsigned char probes[] = {0x00, 0x01, 0x1f, 0x7f, 0x80, 0xff, 0x20, 0x7e};
    for (size_t k = 0; k < sizeof probes; k++) {
        for (size_t at = 0; at < 24; at++) {
            char in[24], want[64], out[64];
            memset(in, 'a', sizeof in);
            in[at] = (char)probes[k];
            int keep = probes[k] == 0x20 || probes[k] == 0x7e;
            int n = snprintf(want, sizeof want, "%.*s", (int)at, in);
            n += keep ? snprintf(want + n, sizeof want - (size_t)n, "%c", probes[k])
                      : snprintf(want + n, sizeof want - (size_t)n, "\\x%02x", probes[k]);
            snprintf(want + n, sizeof want - (size_t)n, "%.*s", (int)(sizeof in - at - 1), in + at + 1);
            size_t len = pi_sanitize_append(out, 0, sizeof out, in, sizeof in);
            assert_string_equal(out, want);
            assert_int_equal(len, strlen(want));
        }
    }
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
    size_t n = pi_format_map_line(line, sizeof line, 0x7f3529fcf759u, 0xb, "py::bar:/run/t.py", 17);
    assert_string_equal(line, "7f3529fcf759 b py::bar:/run/t.py\n");
    assert_int_equal(n, strlen(line));
    assert_int_equal(pi_format_map_line(line, 10, 0x7f3529fcf759u, 0xb, "py::x", 5), 0);
}

/* Zeros are one digit; the largest numbers are all their digits. */
static void test_map_line_extremes(void **state)
{
    (void)state;
    char line[128];
    assert_int_equal(pi_format_map_line(line, sizeof line, 0, 0, "py::z", 5), 10);
    assert_string_equal(line, "0 0 py::z\n");
    pi_format_map_line(line, sizeof line, UINTPTR_MAX, UINT32_MAX, "py::m", 5);
    assert_string_equal(line, "ffffffffffffffff ffffffff py::m\n");
    pi_format_map_line(line, sizeof line, 0x10, 0x100, "py::p", 5);
    assert_string_equal(line, "10 100 py::p\n");
}

/* The capacity asked for is the symbol and the longest numbers, so a line
 * never depends on the addresses to fit. */
static void test_map_line_capacity(void **state)
{
    (void)state;
    char line[64];
    memset(line, 'x', sizeof line);
    assert_int_equal(pi_format_map_line(line, 5 + 35, 1, 1, "py::a", 5), 0);
    assert_int_equal(line[0], 'x'); /* nothing written */
    assert_int_equal(pi_format_map_line(line, 5 + 36, 1, 1, "py::a", 5), 10);
    assert_string_equal(line, "1 1 py::a\n");
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
        cmocka_unit_test(test_escape_at_every_position),
        cmocka_unit_test(test_map_line),
        cmocka_unit_test(test_map_line_extremes),
        cmocka_unit_test(test_map_line_capacity),
    };
    return cmocka_run_group_tests_name("names", tests, NULL, NULL);
}
