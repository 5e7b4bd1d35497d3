/* outfile.c + perfmap.c: safe opening, whole-line appends, fork inheritance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "backend.h"
#include "outfile.h"

static char dir[] = "/tmp/pyperfinject-outfile-XXXXXX";

static int setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

static char *slurp(const char *path)
{
    static char buf[65536];
    FILE *f = fopen(path, "r");
    assert_non_null(f);
    size_t n = fread(buf, 1, sizeof buf - 1, f);
    buf[n] = '\0';
    fclose(f);
    return buf;
}

static void test_creates_0600_and_truncates_own_file(void **state)
{
    (void)state;
    char path[256], err[256];
    assert_int_equal(pi_outfile_path(path, sizeof path, dir, "perf-", 42, ".map"), 0);
    FILE *f = fopen(path, "w");
    fputs("stale line from a previous process\n", f);
    fclose(f);
    chmod(path, 0644);
    int fd = pi_outfile_open(path, O_RDWR | O_APPEND, err, sizeof err);
    assert_true(fd >= 0);
    struct stat st;
    fstat(fd, &st);
    assert_int_equal(st.st_mode & 0777, 0600);
    assert_int_equal(st.st_size, 0);
    close(fd);
}

static void test_refuses_symlink_and_hardlink(void **state)
{
    (void)state;
    char target[256], link_path[256], err[256];
    snprintf(target, sizeof target, "%s/victim", dir);
    FILE *f = fopen(target, "w");
    fputs("precious\n", f);
    fclose(f);

    snprintf(link_path, sizeof link_path, "%s/perf-1.map", dir);
    assert_int_equal(symlink(target, link_path), 0);
    assert_int_equal(pi_outfile_open(link_path, O_RDWR | O_APPEND, err, sizeof err), -1);
    assert_non_null(strstr(err, "symbolic link"));

    snprintf(link_path, sizeof link_path, "%s/perf-2.map", dir);
    assert_int_equal(link(target, link_path), 0);
    assert_int_equal(pi_outfile_open(link_path, O_RDWR | O_APPEND, err, sizeof err), -1);
    assert_non_null(strstr(err, "hard links"));
    assert_string_equal(slurp(target), "precious\n"); /* untouched */
}

static void test_refuses_other_owner(void **state)
{
    (void)state;
    if (geteuid() != 0)
        skip(); /* only root can create a file owned by someone else */
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/perf-3.map", dir);
    FILE *f = fopen(path, "w");
    fputs("theirs\n", f);
    fclose(f);
    assert_int_equal(chown(path, 65534, 65534), 0);
    assert_int_equal(pi_outfile_open(path, O_RDWR | O_APPEND, err, sizeof err), -1);
    assert_non_null(strstr(err, "another user"));
    assert_string_equal(slurp(path), "theirs\n");
}

static void test_perfmap_lines_and_fork_copy(void **state)
{
    (void)state;
    struct pi_perfmap parent = {.fd = -1};
    char err[256];
    assert_int_equal(pi_perfmap_ops.open(&parent, dir, 100, err, sizeof err), 0);
    struct pi_tramp_info t = {.addr = 0x7f0000001000u, .code_size = 16, .symbol = "py::a:/x.py"};
    assert_int_equal(pi_perfmap_ops.write(&parent, &t), 0);
    t.addr += 128;
    t.symbol = "py::b:/x.py";
    assert_int_equal(pi_perfmap_ops.write(&parent, &t), 0);

    /* What a forked child does: its own file, starting with the parent's. */
    struct pi_perfmap child = parent;
    child.fd = dup(parent.fd);
    assert_int_equal(pi_perfmap_ops.after_fork_child(&child, dir, 101, 1, err, sizeof err), 0);
    t.addr += 128;
    t.symbol = "py::c:/x.py";
    assert_int_equal(pi_perfmap_ops.write(&child, &t), 0);
    t.symbol = "py::parent_later:/x.py";
    assert_int_equal(pi_perfmap_ops.write(&parent, &t), 0);

    char path[256];
    snprintf(path, sizeof path, "%s/perf-101.map", dir);
    assert_string_equal(slurp(path), "7f0000001000 10 py::a:/x.py\n"
                                     "7f0000001080 10 py::b:/x.py\n"
                                     "7f0000001100 10 py::c:/x.py\n");
    snprintf(path, sizeof path, "%s/perf-100.map", dir);
    assert_string_equal(slurp(path), "7f0000001000 10 py::a:/x.py\n"
                                     "7f0000001080 10 py::b:/x.py\n"
                                     "7f0000001100 10 py::parent_later:/x.py\n");
    close(parent.fd);
    close(child.fd);
}

static void test_append_cuts_partial_record(void **state)
{
    (void)state;
    /* A pipe is not a file, but /dev/full gives ENOSPC on every write. */
    int fd = open("/dev/full", O_WRONLY | O_APPEND);
    if (fd < 0)
        skip();
    assert_int_equal(pi_outfile_append(fd, "line\n", 5, 0), -1);
    close(fd);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_creates_0600_and_truncates_own_file),
        cmocka_unit_test(test_refuses_symlink_and_hardlink),
        cmocka_unit_test(test_refuses_other_owner),
        cmocka_unit_test(test_perfmap_lines_and_fork_copy),
        cmocka_unit_test(test_append_cuts_partial_record),
    };
    return cmocka_run_group_tests_name("outfile", tests, setup, teardown);
}
