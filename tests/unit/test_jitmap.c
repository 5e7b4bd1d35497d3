/* jitmap.c: the perf map's lines for CPython's JIT code, whose addresses
 * are reused: a region gets its own line, a line over the union of what it
 * overlaps naming every function, or none when a line names it already. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "jitmap.h"
#include "names.h"

struct placed {
    struct pi_tramp_info t;
    char buf[PI_SYMBOL_MAX + 1];
};

static void place(struct pi_jit_map *m, struct placed *p, uintptr_t addr, uint32_t size,
                  const char *symbol)
{
    memset(p, 0, sizeof *p);
    p->t.addr = addr;
    p->t.code_size = size;
    p->t.symbol = symbol;
    p->t.symbol_len = strlen(symbol);
    assert_int_equal(pi_jit_map_place(m, &p->t, p->buf, sizeof p->buf), 0);
}

static void test_new_code_gets_its_own_line(void **state)
{
    (void)state;
    struct pi_jit_map m = {NULL, 0, 0};
    struct placed p;
    place(&m, &p, 0x1000, 0x100, "py::jit:foo:a.py");
    assert_false(p.t.map_skip);
    assert_null(p.t.map_symbol); /* the region's own line */
    place(&m, &p, 0x2000, 0x100, "py::jit:bar:a.py");
    assert_null(p.t.map_symbol);
    assert_int_equal(m.n, 2);
    pi_jit_map_free(&m);
}

static void test_the_same_function_again_writes_nothing(void **state)
{
    (void)state;
    struct pi_jit_map m = {NULL, 0, 0};
    struct placed p;
    place(&m, &p, 0x1000, 0x100, "py::jit:foo:a.py");
    place(&m, &p, 0x1010, 0x20, "py::jit:foo:a.py"); /* freed, recompiled inside */
    assert_true(p.t.map_skip);
    assert_int_equal(m.n, 1);
    pi_jit_map_free(&m);
}

static void test_other_code_at_a_reused_address_names_both_over_the_union(void **state)
{
    (void)state;
    struct pi_jit_map m = {NULL, 0, 0};
    struct placed p;
    place(&m, &p, 0x1000, 0x100, "py::jit:foo:a.py");
    place(&m, &p, 0x1080, 0x100, "py::jit:bar:a.py");
    assert_false(p.t.map_skip);
    assert_string_equal(p.t.map_symbol, "py::jit:foo:a.py|bar:a.py");
    assert_int_equal(p.t.map_addr, 0x1000);
    assert_int_equal(p.t.map_size, 0x180);
    assert_int_equal(m.n, 1);
    /* A region spanning two lines joins them all. */
    place(&m, &p, 0x3000, 0x100, "py::jit:baz:a.py");
    place(&m, &p, 0x1100, 0x2000, "py::jit:qux:b.py");
    assert_string_equal(p.t.map_symbol, "py::jit:foo:a.py|bar:a.py|baz:a.py|qux:b.py");
    assert_int_equal(p.t.map_addr, 0x1000);
    assert_int_equal(p.t.map_size, 0x2100);
    assert_int_equal(m.n, 1);
    /* Any of them again, inside: nothing new to say. */
    place(&m, &p, 0x2000, 0x40, "py::jit:bar:a.py");
    assert_true(p.t.map_skip);
    pi_jit_map_free(&m);
}

static void test_lines_stay_sorted_and_apart(void **state)
{
    (void)state;
    struct pi_jit_map m = {NULL, 0, 0};
    struct placed p;
    for (int i = 99; i >= 0; i--) /* in reverse, past the first growth */
        place(&m, &p, 0x10000 + (uintptr_t)i * 0x100, 0x80, "py::jit:f:a.py");
    assert_int_equal(m.n, 100);
    place(&m, &p, 0x10040, 0x100, "py::jit:g:a.py"); /* touches lines 0 and 1 */
    assert_int_equal(p.t.map_addr, 0x10000);
    assert_int_equal(p.t.map_size, 0x180);
    assert_string_equal(p.t.map_symbol, "py::jit:f:a.py|g:a.py");
    assert_int_equal(m.n, 99);
    pi_jit_map_free(&m);
}

static void test_a_long_list_ends_in_dots_and_covers_what_follows(void **state)
{
    (void)state;
    struct pi_jit_map m = {NULL, 0, 0};
    static char names[40][64];
    char last[PI_SYMBOL_MAX + 1] = "";
    struct placed p;
    int skipped = 0;
    for (int i = 0; i < 40; i++) {
        snprintf(names[i], sizeof names[i], "py::jit:function_number_%02d:/some/long/path.py", i);
        place(&m, &p, 0x1000, 0x100, names[i]);
        if (p.t.map_skip)
            skipped++;
        else
            snprintf(last, sizeof last, "%s", p.t.map_symbol ? p.t.map_symbol : p.t.symbol);
    }
    size_t len = strlen(last);
    assert_true(len <= PI_SYMBOL_MAX);
    assert_string_equal(last + len - 4, "|..."); /* stopped growing */
    assert_true(skipped > 0);                      /* and then wrote nothing more */
    place(&m, &p, 0x1000, 0x100, "py::jit:another:/x.py");
    assert_true(p.t.map_skip); /* "..." may be it */
    pi_jit_map_free(&m);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_new_code_gets_its_own_line),
        cmocka_unit_test(test_the_same_function_again_writes_nothing),
        cmocka_unit_test(test_other_code_at_a_reused_address_names_both_over_the_union),
        cmocka_unit_test(test_lines_stay_sorted_and_apart),
        cmocka_unit_test(test_a_long_list_ends_in_dots_and_covers_what_follows),
    };
    return cmocka_run_group_tests_name("jitmap", tests, NULL, NULL);
}
