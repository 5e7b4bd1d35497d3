/* preflight.c: CPython's own perf support and allocator switches, from a
 * given environment and command line. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

#include <cmocka.h>

#include "preflight.h"

/* A tiny environment: NAME=VALUE strings, NULL-terminated. */
static const char *lookup(const char *name, void *ctx)
{
    size_t len = strlen(name);
    for (const char *const *e = ctx; *e != NULL; e++)
        if (strncmp(*e, name, len) == 0 && (*e)[len] == '=')
            return *e + len + 1;
    return NULL;
}

static const char *const no_env[] = {NULL};

/* argv joined as /proc/self/cmdline holds it: each argument NUL-ended. */
static size_t cmdline(char *buf, size_t len, const char *const *argv)
{
    size_t used = 0;
    for (; *argv != NULL; argv++) {
        size_t n = strlen(*argv) + 1;
        assert_true(used + n <= len);
        memcpy(buf + used, *argv, n);
        used += n;
    }
    return used;
}

struct probe {
    struct pi_abi_startup facts;
    char args[512];
    struct pi_preflight_input in;
};

static struct pi_preflight_input *input(struct probe *p, unsigned minor, const char *const *env,
                                        const char *const *argv)
{
    assert_int_equal(pi_abi_startup_facts(3, minor, &p->facts), 0);
    p->in = (struct pi_preflight_input){&p->facts, lookup, (void *)env, p->args, 0};
    p->in.cmdline_len = cmdline(p->args, sizeof p->args, argv);
    return &p->in;
}

static void test_cpython_perf_by_environment(void **state)
{
    (void)state;
    struct probe p;
    const char *const argv[] = {"python3", "app.py", NULL};
    const char *const perf[] = {"PYTHONPERFSUPPORT=1", NULL};
    const char *const perf0[] = {"PYTHONPERFSUPPORT=0", NULL};
    const char *const empty[] = {"PYTHONPERFSUPPORT=", NULL};
    const char *const jit[] = {"PYTHON_PERF_JIT_SUPPORT=1", NULL};
    assert_string_equal(pi_preflight_cpython_requested(input(&p, 12, perf, argv)),
                        "PYTHONPERFSUPPORT");
    assert_null(pi_preflight_cpython_requested(input(&p, 12, perf0, argv)));
    assert_null(pi_preflight_cpython_requested(input(&p, 12, empty, argv)));
    /* perf_jit is 3.13's: 3.12 ignores the variable, and so does the check. */
    assert_null(pi_preflight_cpython_requested(input(&p, 12, jit, argv)));
    assert_string_equal(pi_preflight_cpython_requested(input(&p, 13, jit, argv)),
                        "PYTHON_PERF_JIT_SUPPORT");
    /* Before 3.12 there is nothing to give way to. */
    assert_null(pi_preflight_cpython_requested(input(&p, 11, perf, argv)));
}

static void test_cpython_perf_by_option(void **state)
{
    (void)state;
    struct probe p;
    const char *const joined[] = {"python3", "-Xperf", "app.py", NULL};
    const char *const split[] = {"python3", "-X", "perf_jit", "app.py", NULL};
    const char *const after_w[] = {"python3", "-W", "ignore", "-X", "perf", "app.py", NULL};
    const char *const script_arg[] = {"python3", "app.py", "-X", "perf", NULL};
    const char *const after_c[] = {"python3", "-c", "pass", "-X", "perf", NULL};
    const char *const w_value[] = {"python3", "-W", "-Xperf", "app.py", NULL};
    const char *const loader[] = {"/lib64/ld-linux-x86-64.so.2", "--library-path", "/x",
                                  "/usr/bin/python3", "-X", "perf", "app.py", NULL};
    const char *const other[] = {"python3", "-X", "importtime", "app.py", NULL};
    assert_string_equal(pi_preflight_cpython_requested(input(&p, 12, no_env, joined)), "-X perf");
    assert_non_null(pi_preflight_cpython_requested(input(&p, 13, no_env, split)));
    assert_non_null(pi_preflight_cpython_requested(input(&p, 12, no_env, after_w)));
    assert_non_null(pi_preflight_cpython_requested(input(&p, 14, no_env, loader)));
    /* The program's own arguments and a -W value are not interpreter options. */
    assert_null(pi_preflight_cpython_requested(input(&p, 12, no_env, script_arg)));
    assert_null(pi_preflight_cpython_requested(input(&p, 12, no_env, after_c)));
    assert_null(pi_preflight_cpython_requested(input(&p, 12, no_env, w_value)));
    assert_null(pi_preflight_cpython_requested(input(&p, 12, no_env, other)));
    assert_null(pi_preflight_cpython_requested(input(&p, 11, no_env, joined)));
}

static void test_allocator_switch(void **state)
{
    (void)state;
    struct probe p;
    const char *const argv[] = {"python3", "app.py", NULL};
    const char *const dev_argv[] = {"python3", "-X", "dev", "app.py", NULL};
    const char *const malloc_env[] = {"PYTHONMALLOC=malloc", NULL};
    const char *const devmode[] = {"PYTHONDEVMODE=1", NULL};
    const char *const devmode0[] = {"PYTHONDEVMODE=0", NULL};
    assert_string_equal(pi_preflight_allocator_switch(input(&p, 8, malloc_env, argv)),
                        "PYTHONMALLOC");
    assert_string_equal(pi_preflight_allocator_switch(input(&p, 11, devmode, argv)),
                        "PYTHONDEVMODE");
    assert_null(pi_preflight_allocator_switch(input(&p, 11, devmode0, argv)));
    assert_string_equal(pi_preflight_allocator_switch(input(&p, 15, no_env, dev_argv)), "-X dev");
    assert_null(pi_preflight_allocator_switch(input(&p, 15, no_env, argv)));
    /* 3.6/3.7 wait with a thread, no audit hook: nothing to survive. */
    assert_null(pi_preflight_allocator_switch(input(&p, 7, malloc_env, dev_argv)));
}

static void test_unusable_command_line(void **state)
{
    (void)state;
    struct probe p;
    const char *const argv[] = {"python3", "-X", "perf", NULL};
    struct pi_preflight_input *in = input(&p, 12, no_env, argv);
    in->cmdline_len--; /* not NUL-ended: a cut read is not scanned */
    assert_null(pi_preflight_cpython_requested(in));
    in->cmdline = NULL;
    in->cmdline_len = 0;
    assert_null(pi_preflight_cpython_requested(in));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpython_perf_by_environment),
        cmocka_unit_test(test_cpython_perf_by_option),
        cmocka_unit_test(test_allocator_switch),
        cmocka_unit_test(test_unusable_command_line),
    };
    return cmocka_run_group_tests_name("preflight", tests, NULL, NULL);
}
