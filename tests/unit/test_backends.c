/* backends.c: the process's outputs behind backend.h's operations: opening
 * what the settings switch on, announcing to every live backend, describing,
 * flushing and giving way to CPython's own trampoline. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "scratch_dir.h"

#include "backends.h"
#include "jitdump_check.h"
#include "slot.h"

static struct pi_config config(int map, int jitdump)
{
    struct pi_config cfg;
    memset(&cfg, 0, sizeof cfg);
    cfg.map = map;
    cfg.jitdump = jitdump;
    snprintf(cfg.dir, sizeof cfg.dir, "%s", dir);
    return cfg;
}

/* Slots as an arena holds them: the jitdump copies each one's code. */
static uint8_t slots[4][PI_SLOT_STRIDE] __attribute__((aligned(64)));

/* A trampoline as eval.c announces one: a copy of the real slot image, with
 * its code and unwind info. */
static struct pi_tramp_info tramp(const struct pi_slot_image *image,
                                  const struct pi_unwind_sizes *unwind, uint64_t index)
{
    uint8_t *slot = slots[index % 4];
    memcpy(slot, image->bytes, image->length);
    memcpy(slot + image->tag_offset, &index, sizeof index); /* unique code, as arenas make it */
    return (struct pi_tramp_info){
        .addr = (uintptr_t)slot,
        .code_size = image->code_size,
        .code_index = index,
        .symbol = "py::work:/srv/app.py",
        .symbol_len = strlen("py::work:/srv/app.py"),
        .filename = "/srv/app.py",
        .firstlineno = 7,
        .unwind = slot + ((image->code_size + 7u) & ~7u),
        .unwind_size = unwind->total,
        .unwind_hdr_size = unwind->hdr_size,
        .unwind_mapped_size = unwind->mapped_size,
    };
}

static size_t lines_of(const char *path)
{
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = 0;
    for (int c; (c = fgetc(f)) != EOF;)
        n += c == '\n';
    fclose(f);
    return n;
}

/* The dump at path is valid, with `loads` trampolines; else its problems. */
static void assert_dump(const char *path, size_t loads, size_t closes)
{
    struct pi_jdc_report report;
    const char *why = NULL;
    bool valid = pi_jdc_check_file(path, NULL, &report, &why);
    for (size_t i = 0; i < report.n_violations; i++)
        print_error("%s: %s\n", pi_jdc_issue_name(report.violations[i].issue),
                    report.violations[i].msg);
    assert_true(valid);
    assert_int_equal(report.n_loads, loads);
    assert_int_equal(report.closes, closes);
    pi_jdc_report_free(&report);
}

/* The real slot image, and both outputs open for process `pid`. */
static struct pi_slot_image image;
static struct pi_unwind_sizes unwind;
static void open_both(struct pi_backends *b, long pid)
{
    assert_int_equal(pi_slot_image_build(&image, &unwind), 0);
    struct pi_config cfg = config(1, 1);
    char err[512];
    assert_int_equal(pi_backends_open(b, &cfg, pid, err, sizeof err), 0);
    assert_int_equal(b->n, 2);
}

static void test_both_outputs_get_every_trampoline(void **state)
{
    (void)state;
    struct pi_backends b = {0}; /* as the library's state: static, zeroed */
    open_both(&b, 4101);
    for (uint64_t i = 1; i <= 3; i++) {
        struct pi_tramp_info t = tramp(&image, &unwind, i);
        pi_backends_announce(&b, &t);
    }
    char files[8200], map[300], dump[300];
    snprintf(map, sizeof map, "%s/perf-4101.map", dir);
    snprintf(dump, sizeof dump, "%s/jit-4101.dump", dir);
    pi_backends_describe(&b, files, sizeof files);
    char both[700];
    snprintf(both, sizeof both, "%s %s", map, dump);
    assert_string_equal(files, both);
    assert_int_equal(pi_backends_flush(&b), 0);
    pi_backends_close(&b);
    assert_int_equal(lines_of(map), 3);
    assert_dump(dump, 3, 1);
}

static void test_only_what_is_switched_on(void **state)
{
    (void)state;
    struct pi_config cfg = config(1, 0);
    struct pi_backends b = {0}; /* as the library's state: static, zeroed */
    char err[512], files[8200];
    assert_int_equal(pi_backends_open(&b, &cfg, 4102, err, sizeof err), 0);
    assert_int_equal(b.n, 1);
    pi_backends_describe(&b, files, sizeof files);
    assert_non_null(strstr(files, "perf-4102.map"));
    assert_null(strstr(files, "jit-"));
    char dump[300];
    snprintf(dump, sizeof dump, "%s/jit-4102.dump", dir);
    assert_int_equal(access(dump, F_OK), -1);

    cfg = config(0, 0);
    assert_int_equal(pi_backends_open(&b, &cfg, 4103, err, sizeof err), -1);
    assert_non_null(strstr(err, "every output is switched off"));
    cfg.passthrough = 1; /* the benchmark floor writes nothing, by design */
    assert_int_equal(pi_backends_open(&b, &cfg, 4103, err, sizeof err), 0);
    assert_int_equal(b.n, 0);
}

static void test_unusable_directory_gives_the_reason(void **state)
{
    (void)state;
    struct pi_config cfg = config(1, 1);
    snprintf(cfg.dir, sizeof cfg.dir, "%s/missing", dir);
    struct pi_backends b = {0}; /* as the library's state: static, zeroed */
    char err[512] = "";
    assert_int_equal(pi_backends_open(&b, &cfg, 4104, err, sizeof err), -1);
    assert_non_null(strstr(err, "missing"));
}

/* With the debugger entries on, a directory that does not exist costs the
 * files only: the library goes on naming trampolines for debuggers. */
static void test_unusable_directory_leaves_the_debugger_entries(void **state)
{
    (void)state;
    struct pi_config cfg = config(1, 1);
    cfg.gdb = 1;
    cfg.gdb_batch = 256;
    snprintf(cfg.dir, sizeof cfg.dir, "%s/missing", dir);
    struct pi_backends b = {0}; /* as the library's state: static, zeroed */
    char err[512] = "", files[8200];
    assert_int_equal(pi_backends_open(&b, &cfg, 4106, err, sizeof err), 0);
    assert_int_equal(b.n, 1);
    assert_string_equal(b.list[0].ops->name, pi_gdbjit_ops.name);
    assert_int_equal(b.gdbjit.batch, 256);
    pi_backends_describe(&b, files, sizeof files);
    assert_string_equal(files, ""); /* no file to name */
}

static void test_a_failed_output_stops_alone(void **state)
{
    (void)state;
    struct pi_backends b = {0}; /* as the library's state: static, zeroed */
    open_both(&b, 4105);
    /* The program closed the map's descriptor: lines still go into the
     * map's own mapping (never into a file that took the number)... */
    assert_true(pi_mmaplog_active(&b.perfmap.log));
    close(b.perfmap.fd);
    struct pi_tramp_info t = tramp(&image, &unwind, 1);
    pi_backends_announce(&b, &t);
    assert_false(b.list[0].failed);
    /* ... and where the map is written with write(2), it stops alone. */
    pi_mmaplog_forget(&b.perfmap.log);
    t = tramp(&image, &unwind, 2);
    pi_backends_announce(&b, &t);
    assert_true(b.list[0].failed);
    assert_false(b.list[1].failed);
    t = tramp(&image, &unwind, 3);
    pi_backends_announce(&b, &t);
    char dump[300];
    snprintf(dump, sizeof dump, "%s/jit-4105.dump", dir);
    assert_dump(dump, 3, 0);
}

static void test_giving_way_to_cpython(void **state)
{
    (void)state;
    struct pi_config cfg = config(1, 1);
    struct pi_backends b = {0}; /* as the library's state: static, zeroed */
    char err[512];
    assert_int_equal(pi_backends_open(&b, &cfg, 4106, err, sizeof err), 0);
    /* CPython writes /tmp only: files elsewhere are not in its way. */
    assert_int_equal(pi_backends_give_way(&b, "perf_jit", dir), 0);
    assert_false(b.list[0].failed || b.list[1].failed);
    /* Its perf backend shares the map; its perf_jit rewrites the dump. */
    assert_int_equal(pi_backends_give_way(&b, "perf", "/tmp"), 0);
    assert_false(b.list[0].failed || b.list[1].failed);
    unsigned stopped = pi_backends_give_way(&b, "perf_jit", "/tmp");
    assert_int_equal(stopped, 1u << 1);
    assert_false(b.list[0].failed);
    assert_true(b.list[1].failed);
    /* CPython's start failed: the dump goes on; a backend stopped before
     * for a reason of its own is not in the set and stays stopped. */
    pi_backends_resume(&b, stopped);
    assert_false(b.list[1].failed);
    b.list[1].failed = 1;
    assert_int_equal(pi_backends_give_way(&b, "perf_jit", "/tmp"), 0);
    pi_backends_resume(&b, 0);
    assert_true(b.list[1].failed);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_both_outputs_get_every_trampoline),
        cmocka_unit_test(test_only_what_is_switched_on),
        cmocka_unit_test(test_unusable_directory_gives_the_reason),
        cmocka_unit_test(test_unusable_directory_leaves_the_debugger_entries),
        cmocka_unit_test(test_a_failed_output_stops_alone),
        cmocka_unit_test(test_giving_way_to_cpython),
    };
    return cmocka_run_group_tests_name("backends", tests, scratch_setup, scratch_teardown);
}
