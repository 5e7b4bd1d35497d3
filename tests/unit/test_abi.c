/* abi.c: the version table, version parsing and the member cross-check. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "abi.h"

static void test_every_supported_version_has_a_row(void **state)
{
    (void)state;
    unsigned lo, hi;
    pi_abi_supported_range(&lo, &hi);
    assert_int_equal(lo, 6);
    assert_int_equal(hi, 15);
    for (unsigned minor = lo; minor <= hi; minor++) {
        struct pi_abi abi;
        assert_int_equal(pi_abi_lookup(3, minor, 0, &abi), 0);
        assert_int_equal(abi.minor, minor);
        assert_true(abi.co_name > 0 && abi.co_filename > 0 && abi.co_firstlineno > 0);
        /* Field installs need an offset; setter installs must not have one. */
        assert_int_equal(abi.install == PI_INSTALL_FIELD, abi.eval_frame_offset > 0);
        assert_int_equal(abi.ob_type_offset, 8);
    }
    struct pi_abi abi;
    assert_int_equal(pi_abi_lookup(3, 5, 0, &abi), -1);
    assert_int_equal(pi_abi_lookup(3, 16, 0, &abi), -1);
    assert_int_equal(pi_abi_lookup(2, 7, 0, &abi), -1);
}

static void test_version_facts(void **state)
{
    (void)state;
    struct pi_abi abi;
    pi_abi_lookup(3, 8, 0, &abi);
    assert_int_equal(abi.hook, PI_HOOK_FRAME_THROW);
    assert_int_equal(abi.eval_frame_offset, 568);
    assert_int_equal(abi.wait, PI_WAIT_AUDIT_HOOK);
    pi_abi_lookup(3, 7, 0, &abi);
    assert_int_equal(abi.extra, PI_EXTRA_SIDE_TABLE);
    assert_int_equal(abi.wait, PI_WAIT_WATCHER);
    pi_abi_lookup(3, 11, 0, &abi);
    assert_int_equal(abi.co_qualname, 128);
    assert_int_equal(abi.frame_code_offset, 32);
    assert_int_equal(abi.default_eval, PI_DEFAULT_IS_NULL);
    pi_abi_lookup(3, 10, 0, &abi);
    assert_int_equal(abi.co_qualname, -1);
    pi_abi_lookup(3, 14, 0, &abi);
    assert_int_equal(abi.frame_code_tag, 3);
    assert_int_equal(abi.extra, PI_EXTRA_UNSTABLE);
}

static void test_free_threaded_shift(void **state)
{
    (void)state;
    struct pi_abi abi;
    assert_int_equal(pi_abi_lookup(3, 12, 1, &abi), -1); /* no 3.12t exists */
    assert_int_equal(pi_abi_lookup(3, 13, 1, &abi), 0);
    assert_int_equal(abi.co_filename, 128);
    assert_int_equal(abi.co_name, 136);
    assert_int_equal(abi.co_qualname, 144);
    assert_int_equal(abi.ob_type_offset, 24);
    assert_int_equal(pi_abi_tp_members_offset(1), 40 + 27 * 8);
    assert_int_equal(pi_abi_tp_members_offset(0), 240);
}

static void test_parse_version(void **state)
{
    (void)state;
    unsigned a, b;
    assert_int_equal(pi_abi_parse_version("3.11.7 (main, Jan  1 2024)", &a, &b), 0);
    assert_int_equal(a, 3);
    assert_int_equal(b, 11);
    assert_int_equal(pi_abi_parse_version("2.7.18 (default)", &a, &b), 0);
    assert_int_equal(b, 7);
    assert_int_equal(pi_abi_parse_version("", &a, &b), -1);
    assert_int_equal(pi_abi_parse_version(NULL, &a, &b), -1);
    assert_int_equal(pi_abi_parse_version("3", &a, &b), -1);
    assert_int_equal(pi_abi_parse_version("x.1", &a, &b), -1);
}

struct member { const char *name; int type; long offset; int flags; const char *doc; };

static void test_member_check(void **state)
{
    (void)state;
    struct pi_abi abi;
    pi_abi_lookup(3, 12, 0, &abi);
    struct member good[] = {{"co_argcount", 1, 56, 0, 0},   {"co_filename", 6, 112, 0, 0},
                            {"co_name", 6, 120, 0, 0},      {"co_qualname", 6, 128, 0, 0},
                            {"co_firstlineno", 1, 68, 0, 0}, {NULL, 0, 0, 0, 0}};
    char err[200] = "";
    assert_int_equal(pi_abi_check_members(&abi, good, 16, err, sizeof err), 0);
    good[2].offset = 128;
    assert_int_equal(pi_abi_check_members(&abi, good, 16, err, sizeof err), -1);
    assert_non_null(strstr(err, "co_name"));
    good[2].offset = 120;
    good[3].name = "co_other";
    assert_int_equal(pi_abi_check_members(&abi, good, 16, err, sizeof err), -1);
    assert_non_null(strstr(err, "co_qualname"));
    /* No terminator within the bound: stops at the bound. */
    struct member unterminated[2] = {{"a", 0, 0, 0, 0}, {"b", 0, 0, 0, 0}};
    assert_int_equal(pi_abi_check_members(&abi, unterminated, 2, err, sizeof err), -1);
}

static void test_columns_every_row_has(void **state)
{
    (void)state;
    unsigned lo, hi;
    pi_abi_supported_range(&lo, &hi);
    for (unsigned minor = lo; minor <= hi; minor++) {
        struct pi_abi abi;
        assert_int_equal(pi_abi_lookup(3, minor, 0, &abi), 0);
        assert_int_equal(abi.tstate_interp, 16);
        /* CPython's own trampoline exists from 3.12, perf_jit from 3.13;
         * free-threaded builds from 3.13. */
        assert_int_equal(abi.cpython_perf, minor < 12   ? PI_CPYTHON_PERF_NONE
                                           : minor < 13 ? PI_CPYTHON_PERF_MAP
                                                        : PI_CPYTHON_PERF_MAP_JIT);
        assert_int_equal(abi.ft_builds, minor >= 13);
        assert_int_equal(pi_abi_lookup(3, minor, 1, &abi), minor >= 13 ? 0 : -1);
    }
    char tstate[32] = {0};
    void *interp = &lo;
    memcpy(tstate + 16, &interp, sizeof interp);
    struct pi_abi abi;
    pi_abi_lookup(3, 11, 0, &abi);
    assert_ptr_equal(pi_abi_interp_of(&abi, tstate), &lo);
}

static void test_startup_facts(void **state)
{
    (void)state;
    struct pi_abi_startup f;
    assert_int_equal(pi_abi_startup_facts(3, 7, &f), 0);
    assert_int_equal(f.wait, PI_WAIT_WATCHER);
    assert_int_equal(f.cpython_perf, PI_CPYTHON_PERF_NONE);
    assert_int_equal(pi_abi_startup_facts(3, 8, &f), 0);
    assert_int_equal(f.wait, PI_WAIT_AUDIT_HOOK);
    assert_int_equal(pi_abi_startup_facts(3, 12, &f), 0);
    assert_int_equal(f.cpython_perf, PI_CPYTHON_PERF_MAP);
    /* Newer than the table: the newest row's facts (refused later, with a
     * reason); older, or Python 2: inert. */
    assert_int_equal(pi_abi_startup_facts(3, 16, &f), 0);
    assert_int_equal(f.wait, PI_WAIT_AUDIT_HOOK);
    assert_int_equal(f.cpython_perf, PI_CPYTHON_PERF_MAP_JIT);
    assert_int_equal(pi_abi_startup_facts(3, 5, &f), -1);
    assert_int_equal(pi_abi_startup_facts(2, 7, &f), -1);
    assert_int_equal(pi_abi_startup_facts(4, 0, &f), -1);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_every_supported_version_has_a_row),
        cmocka_unit_test(test_version_facts),
        cmocka_unit_test(test_free_threaded_shift),
        cmocka_unit_test(test_parse_version),
        cmocka_unit_test(test_member_check),
        cmocka_unit_test(test_columns_every_row_has),
        cmocka_unit_test(test_startup_facts),
    };
    return cmocka_run_group_tests_name("abi", tests, NULL, NULL);
}
