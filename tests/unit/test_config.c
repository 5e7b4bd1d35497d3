/* config.c: defaults, accepted spellings, and rejection of bad values. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "config.h"

/* A fake environment: NULL-terminated name/value pairs. */
static const char *fake_getenv(const char *name, void *ctx)
{
    const char *const *kv = ctx;
    for (; kv[0] != NULL; kv += 2)
        if (strcmp(kv[0], name) == 0)
            return kv[1];
    return NULL;
}

static int parse(struct pi_config *cfg, const char *const *env, char *err, size_t errlen)
{
    return pi_config_parse(cfg, fake_getenv, (void *)env, err, errlen);
}

static void test_defaults(void **state)
{
    (void)state;
    const char *env[] = {NULL};
    struct pi_config cfg;
    char err[256] = "";
    assert_int_equal(parse(&cfg, env, err, sizeof err), 0);
    assert_int_equal(cfg.enable, 1);
    assert_int_equal(cfg.map, 1);
    assert_int_equal(cfg.jitdump, 1);
    assert_int_equal(cfg.gdb, 1);
    assert_int_equal(cfg.gdb_batch, 256);
    assert_int_equal(cfg.verbose, 1);
    assert_int_equal(cfg.copy_on_fork, 1);
    assert_string_equal(cfg.dir, "/tmp");
    assert_int_equal(cfg.start, 1);
    assert_int_equal(cfg.signal, 0);
    assert_int_equal(cfg.duration, 0);
    assert_string_equal(cfg.keep_binaries, "");
}

static void test_accepted_values(void **state)
{
    (void)state;
    const char *env[] = {"PYPERFINJECT_ENABLE", "off",  "PYPERFINJECT_MAP", "No",
                         "PYPERFINJECT_JITDUMP", "TRUE", "PYPERFINJECT_VERBOSE", "3",
                         "PYPERFINJECT_DIR", "/var/tmp/prof//", "PYPERFINJECT_KEEP_BINARIES",
                         "yes", "PYPERFINJECT_GDB", "off", "PYPERFINJECT_GDB_BATCH", "1", NULL};
    struct pi_config cfg;
    char err[256] = "";
    assert_int_equal(parse(&cfg, env, err, sizeof err), 0);
    assert_int_equal(cfg.gdb, 0);
    assert_int_equal(cfg.gdb_batch, 1);
    assert_int_equal(cfg.enable, 0);
    assert_int_equal(cfg.map, 0);
    assert_int_equal(cfg.jitdump, 1);
    assert_int_equal(cfg.verbose, 3);
    assert_string_equal(cfg.dir, "/var/tmp/prof");
    assert_string_equal(cfg.keep_binaries, "/var/tmp/prof"); /* 1: the output directory */
}

static void expect_rejected(const char *name, const char *value)
{
    const char *env[] = {name, value, NULL};
    struct pi_config cfg;
    char err[256] = "";
    assert_int_equal(parse(&cfg, env, err, sizeof err), -1);
    assert_non_null(strstr(err, name)); /* the message names the variable */
}

static void test_bad_values(void **state)
{
    (void)state;
    static char huge[10000];
    memset(huge, '7', sizeof huge - 1);
    expect_rejected("PYPERFINJECT_ENABLE", "");
    expect_rejected("PYPERFINJECT_ENABLE", "2");
    expect_rejected("PYPERFINJECT_ENABLE", "yes please");
    expect_rejected("PYPERFINJECT_VERBOSE", "-1");
    expect_rejected("PYPERFINJECT_VERBOSE", "4");
    expect_rejected("PYPERFINJECT_VERBOSE", "banana");
    expect_rejected("PYPERFINJECT_VERBOSE", "1x");
    expect_rejected("PYPERFINJECT_VERBOSE", huge);
    expect_rejected("PYPERFINJECT_VERBOSE", "99999999999999999999");
    expect_rejected("PYPERFINJECT_DIR", "");
    expect_rejected("PYPERFINJECT_DIR", "relative/dir");
    expect_rejected("PYPERFINJECT_DIR", "/tmp/new\nline");
    memset(huge, 'd', sizeof huge - 1);
    huge[0] = '/';
    expect_rejected("PYPERFINJECT_DIR", huge);
    expect_rejected("PYPERFINJECT_KEEP_BINARIES", "");
    expect_rejected("PYPERFINJECT_KEEP_BINARIES", "binaries");
    expect_rejected("PYPERFINJECT_KEEP_BINARIES", "2");
}

static void test_keep_binaries_forms(void **state)
{
    (void)state;
    const char *off[] = {"PYPERFINJECT_KEEP_BINARIES", "off", NULL};
    const char *dir[] = {"PYPERFINJECT_KEEP_BINARIES", "/profile/", "PYPERFINJECT_DIR",
                         "/profile/pidns-1-2", NULL};
    const char *on[] = {"PYPERFINJECT_KEEP_BINARIES", "1", NULL};
    struct pi_config cfg;
    char err[256] = "";
    assert_int_equal(parse(&cfg, off, err, sizeof err), 0);
    assert_string_equal(cfg.keep_binaries, "");
    assert_int_equal(parse(&cfg, dir, err, sizeof err), 0);
    assert_string_equal(cfg.keep_binaries, "/profile"); /* shared by the runs below it */
    assert_int_equal(parse(&cfg, on, err, sizeof err), 0);
    assert_string_equal(cfg.keep_binaries, "/tmp"); /* the default output directory */
}

static void test_signals(void **state)
{
    (void)state;
    const char *names[][2] = {{"USR2", NULL}, {"SIGUSR1", NULL}, {"sigusr2", NULL},
                              {"RTMIN", NULL}, {"RTMIN+3", NULL}, {"none", NULL}};
    int expect[] = {SIGUSR2, SIGUSR1, SIGUSR2, SIGRTMIN, SIGRTMIN + 3, 0};
    for (size_t i = 0; i < sizeof expect / sizeof *expect; i++) {
        const char *env[] = {"PYPERFINJECT_SIGNAL", names[i][0], NULL};
        struct pi_config cfg;
        char err[256] = "";
        assert_int_equal(parse(&cfg, env, err, sizeof err), 0);
        assert_int_equal(cfg.signal, expect[i]);
    }
    char usr1[8];
    snprintf(usr1, sizeof usr1, "%d", SIGUSR1);
    const char *numeric[] = {"PYPERFINJECT_SIGNAL", usr1, NULL};
    struct pi_config cfg;
    char err[256];
    assert_int_equal(parse(&cfg, numeric, err, sizeof err), 0);
    assert_int_equal(cfg.signal, SIGUSR1);
    /* Signals with a meaning of their own are never taken over. */
    expect_rejected("PYPERFINJECT_SIGNAL", "INT");
    expect_rejected("PYPERFINJECT_SIGNAL", "SIGTERM");
    expect_rejected("PYPERFINJECT_SIGNAL", "9");
    expect_rejected("PYPERFINJECT_SIGNAL", "SEGV");
    expect_rejected("PYPERFINJECT_SIGNAL", "RTMIN+99");
    expect_rejected("PYPERFINJECT_SIGNAL", "RTMINX");
    expect_rejected("PYPERFINJECT_SIGNAL", "");
    expect_rejected("PYPERFINJECT_DURATION", "-5");
    expect_rejected("PYPERFINJECT_START", "maybe");
    expect_rejected("PYPERFINJECT_GDB_BATCH", "0");
    expect_rejected("PYPERFINJECT_GDB_BATCH", "1025");
}

static void test_every_name_is_listed(void **state)
{
    (void)state;
    size_t i = 0;
    while (pi_config_name(i) != NULL) {
        assert_int_equal(strncmp(pi_config_name(i), "PYPERFINJECT_", 13), 0);
        i++;
    }
    assert_int_equal(i, 14);
}

static void test_settings_text(void **state)
{
    (void)state;
    struct pi_settings_text st = {"PYPERFINJECT_DIR=/srv/out\nPYPERFINJECT_VERBOSE=2\n"
                                  "PYPERFINJECT_VERBOSE=3\nPYPERFINJECT_MAPX=0\n", {0}};
    assert_string_equal(pi_settings_lookup("PYPERFINJECT_DIR", &st), "/srv/out");
    assert_string_equal(pi_settings_lookup("PYPERFINJECT_VERBOSE", &st), "3"); /* last wins */
    assert_null(pi_settings_lookup("PYPERFINJECT_MAP", &st)); /* not a prefix match */
    assert_null(pi_settings_lookup("PYPERFINJECT_START", &st));
    struct pi_config cfg;
    char err[256];
    assert_int_equal(pi_config_parse(&cfg, pi_settings_lookup, &st, err, sizeof err), 0);
    assert_string_equal(cfg.dir, "/srv/out");
    assert_int_equal(cfg.verbose, 3);
    assert_int_equal(cfg.map, 1);
    st.text = "PYPERFINJECT_START=maybe"; /* no newline at the end */
    assert_int_equal(pi_config_parse(&cfg, pi_settings_lookup, &st, err, sizeof err), -1);
    assert_non_null(strstr(err, "PYPERFINJECT_START"));
    st.text = NULL;
    assert_null(pi_settings_lookup("PYPERFINJECT_DIR", &st));
    assert_int_equal(pi_config_parse(&cfg, pi_settings_lookup, &st, err, sizeof err), 0);
    assert_string_equal(cfg.dir, "/tmp");
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_defaults),
        cmocka_unit_test(test_accepted_values),
        cmocka_unit_test(test_bad_values),
        cmocka_unit_test(test_signals),
        cmocka_unit_test(test_keep_binaries_forms),
        cmocka_unit_test(test_every_name_is_listed),
        cmocka_unit_test(test_settings_text),
    };
    return cmocka_run_group_tests_name("config", tests, NULL, NULL);
}
