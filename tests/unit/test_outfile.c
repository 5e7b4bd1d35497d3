/* outfile.c + perfmap.c: safe opening, whole-line appends, fork inheritance. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cmocka.h>

#include "scratch_dir.h"

#include "backend.h"
#include "outfile.h"


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

/* Sets the trampoline's symbol and its length, as the evaluator does. */
static void name(struct pi_tramp_info *t, const char *symbol)
{
    t->symbol = symbol;
    t->symbol_len = strlen(symbol);
}

/* The lines of a map being written: what the library allocated ahead
 * (newlines, until trim) is left out. */
static char *map_lines(const char *path)
{
    char *text = slurp(path);
    size_t n = strlen(text);
    while (n > 1 && text[n - 1] == '\n' && text[n - 2] == '\n')
        text[--n] = '\0';
    return text;
}

/* A forked child's copy of a map's state. In a real fork the child has its
 * own copy of the parent's mapping, which its fork handler unmaps; a
 * stand-in in the same process must not unmap the parent's. */
static struct pi_perfmap forked_copy(const struct pi_perfmap *m, int inherit)
{
    struct pi_perfmap copy = *m;
    copy.log = (struct pi_mmaplog){.fd = -1};
    pi_perfmap_ops.forked(&copy, inherit);
    return copy;
}

static void test_perfmap_lines_and_fork_copy(void **state)
{
    (void)state;
    struct pi_perfmap parent = {.fd = -1};
    char err[256];
    assert_int_equal(pi_perfmap_ops.open(&parent, dir, 100, err, sizeof err), 0);
    struct pi_tramp_info t = {.addr = 0x7f0000001000u, .code_size = 16};
    name(&t, "py::a:/x.py");
    assert_int_equal(pi_perfmap_ops.write(&parent, &t), 0);
    t.addr += 128;
    name(&t, "py::b:/x.py");
    assert_int_equal(pi_perfmap_ops.write(&parent, &t), 0);

    /* What a forked child does: its own file first, with its own lines;
     * the parent's lines up to the fork are appended later, in bulk. */
    struct pi_perfmap dup_parent = parent;
    dup_parent.fd = dup(parent.fd);
    struct pi_perfmap child = forked_copy(&dup_parent, 1);
    assert_int_equal(child.fd, -1);
    assert_int_equal(pi_perfmap_ops.inheritable(&child), parent.size);
    assert_int_equal(pi_perfmap_ops.start_child(&child, dir, 101, err, sizeof err), 0);
    t.addr = 0x7f0000101000u;
    name(&t, "py::c:/x.py");
    assert_int_equal(pi_perfmap_ops.write(&child, &t), 0);
    t.addr = 0x7f0000001100u;
    name(&t, "py::parent_later:/x.py");
    assert_int_equal(pi_perfmap_ops.write(&parent, &t), 0);

    char path[256];
    snprintf(path, sizeof path, "%s/perf-101.map", dir);
    assert_string_equal(map_lines(path), "7f0000101000 10 py::c:/x.py\n");
    assert_int_equal(pi_perfmap_ops.inherit(&child, dir, err, sizeof err), 0);
    assert_int_equal(pi_perfmap_ops.inheritable(&child), 0);
    t.addr = 0x7f0000101080u;
    name(&t, "py::d:/x.py");
    assert_int_equal(pi_perfmap_ops.write(&child, &t), 0);
    assert_string_equal(map_lines(path), "7f0000101000 10 py::c:/x.py\n"
                                     "7f0000001000 10 py::a:/x.py\n"
                                     "7f0000001080 10 py::b:/x.py\n"
                                     "7f0000101080 10 py::d:/x.py\n");
    snprintf(path, sizeof path, "%s/perf-100.map", dir);
    assert_string_equal(map_lines(path), "7f0000001000 10 py::a:/x.py\n"
                                     "7f0000001080 10 py::b:/x.py\n"
                                     "7f0000001100 10 py::parent_later:/x.py\n");
    close(parent.fd);
    close(child.fd);
}

/* A grandchild forked before its parent copied: the grandparent's lines and
 * the parent's own, even with the inherited descriptors closed (found again
 * by path); PYPERFINJECT_FORK_COPY=0 remembers nothing. */
static void test_perfmap_grandchild_inherits_both(void **state)
{
    (void)state;
    char err[256];
    struct pi_perfmap gp = {.fd = -1};
    assert_int_equal(pi_perfmap_ops.open(&gp, dir, 200, err, sizeof err), 0);
    struct pi_tramp_info t = {.addr = 0x7f0000001000u, .code_size = 16};
    name(&t, "py::gp:/x.py");
    assert_int_equal(pi_perfmap_ops.write(&gp, &t), 0);

    struct pi_perfmap child = forked_copy(&gp, 1);
    assert_int_equal(pi_perfmap_ops.start_child(&child, dir, 201, err, sizeof err), 0);
    t.addr = 0x7f0000101000u;
    name(&t, "py::child:/x.py");
    assert_int_equal(pi_perfmap_ops.write(&child, &t), 0);

    struct pi_perfmap off = forked_copy(&child, 0);
    assert_int_equal(pi_perfmap_ops.inheritable(&off), 0);

    struct pi_perfmap grand = forked_copy(&child, 1);
    assert_int_equal(grand.nsources, 2);
    assert_int_equal(pi_perfmap_ops.start_child(&grand, dir, 202, err, sizeof err), 0);
    close(grand.sources[0].fd); /* the program closed it: found by path */
    grand.sources[0].fd = 999;
    t.addr = 0x7f0000201000u;
    name(&t, "py::grand:/x.py");
    assert_int_equal(pi_perfmap_ops.write(&grand, &t), 0);
    assert_int_equal(pi_perfmap_ops.inherit(&grand, dir, err, sizeof err), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/perf-202.map", dir);
    assert_string_equal(map_lines(path), "7f0000201000 10 py::grand:/x.py\n"
                                     "7f0000001000 10 py::gp:/x.py\n"
                                     "7f0000101000 10 py::child:/x.py\n");
    close(grand.fd);
}

/* The source's bytes in a fresh file of our own; returns its fd. */
static int source_file(const char *name, const char *text)
{
    char path[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = open(path, O_RDWR | O_CREAT | O_TRUNC | O_APPEND, 0600);
    assert_true(fd >= 0);
    assert_int_equal(write(fd, text, strlen(text)), (ssize_t)strlen(text));
    return fd;
}

static void check_append_copy(int expect_kernel)
{
    int from = source_file("copy-src", "line one\nline two\nline three\n");
    int to = source_file("copy-dst", "own line\n");
    long long rc = pi_outfile_append_copy(from, 18, to, 9); /* the first two lines */
    assert_true(rc >= 0);
    if (expect_kernel == 0)
        assert_int_equal(rc, 0);
    /* O_APPEND is back: the next write lands at the end. */
    assert_true(fcntl(to, F_GETFL) & O_APPEND);
    assert_int_equal(write(to, "after\n", 6), 6);
    char path[256];
    snprintf(path, sizeof path, "%s/copy-dst", dir);
    assert_string_equal(slurp(path), "own line\nline one\nline two\nafter\n");
    close(from);
    close(to);
}

static void test_append_copy_exact_prefix(void **state)
{
    (void)state;
    check_append_copy(-1); /* copy_file_range where the kernel serves it */
}

static long refuse_copy(int a, int64_t *b, int c, int64_t *d, size_t e)
{
    (void)a, (void)b, (void)c, (void)d, (void)e;
    errno = EXDEV;
    return -1;
}

static long copy_one_byte_then_refuse(int a, int64_t *b, int c, int64_t *d, size_t e)
{
    static int calls;
    if (calls++ % 2 == 1)
        return refuse_copy(a, b, c, d, e);
    char byte;
    if (pread(a, &byte, 1, *b) != 1 || pwrite(c, &byte, 1, *d) != 1)
        return -1;
    ++*b, ++*d;
    return 1;
}

static void test_append_copy_fallback(void **state)
{
    (void)state;
    long (*real)(int, int64_t *, int, int64_t *, size_t) = pi_outfile_kernel_copy;
    pi_outfile_kernel_copy = refuse_copy; /* another file system, an old kernel */
    check_append_copy(0);
    pi_outfile_kernel_copy = copy_one_byte_then_refuse; /* refused midway */
    check_append_copy(-1);
    pi_outfile_kernel_copy = real;
}

static void test_append_copy_short_source_leaves_file(void **state)
{
    (void)state;
    int from = source_file("copy-src", "short\n");
    int to = source_file("copy-dst", "own line\n");
    assert_int_equal(pi_outfile_append_copy(from, 100, to, 9), -1);
    assert_true(fcntl(to, F_GETFL) & O_APPEND);
    char path[256];
    snprintf(path, sizeof path, "%s/copy-dst", dir);
    assert_string_equal(slurp(path), "own line\n"); /* no half copy left */
    close(from);
    close(to);
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
        cmocka_unit_test(test_perfmap_grandchild_inherits_both),
        cmocka_unit_test(test_append_copy_exact_prefix),
        cmocka_unit_test(test_append_copy_fallback),
        cmocka_unit_test(test_append_copy_short_source_leaves_file),
        cmocka_unit_test(test_append_cuts_partial_record),
    };
    return cmocka_run_group_tests_name("outfile", tests, scratch_setup, scratch_teardown);
}
