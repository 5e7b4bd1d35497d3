/* mmaplog.c: records through a shared mapping, growth, failures, trim. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmocka.h>

#include "scratch_dir.h"

#include "mmaplog.h"
#include "outfile.h"

static int open_file(const char *name, struct pi_file_id *id)
{
    char path[256], err[256];
    snprintf(path, sizeof path, "%s/%s", dir, name);
    int fd = pi_outfile_open(path, O_RDWR | O_APPEND, err, sizeof err);
    assert_true(fd >= 0);
    assert_int_equal(pi_outfile_identify(fd, id), 0);
    return fd;
}

static off_t size_of(int fd)
{
    struct stat st;
    assert_int_equal(fstat(fd, &st), 0);
    return st.st_size;
}

static uint8_t *read_all(int fd, off_t *len)
{
    *len = size_of(fd);
    uint8_t *buf = malloc((size_t)*len + 1);
    assert_non_null(buf);
    assert_int_equal(pread(fd, buf, (size_t)*len, 0), *len);
    return buf;
}

/* A record of len bytes (a multiple of 8): a non-zero head naming its
 * number, then bytes of that number. */
static void record(uint8_t *out, size_t len, uint32_t n)
{
    uint32_t head[2] = {n + 1, (uint32_t)len};
    memset(out, (int)(n % 251 + 1), len);
    memcpy(out, head, sizeof head);
}

/* Records go in after the bytes written before; the file is allocated
 * ahead and holds zeros after them until trim cuts them off. */
static void test_records_then_zeros_then_trim(void **state)
{
    (void)state;
    struct pi_file_id id;
    int fd = open_file("a.dump", &id);
    assert_int_equal(write(fd, "HEADER__", 8), 8);
    struct pi_mmaplog m;
    assert_int_equal(pi_mmaplog_start(&m, fd, &id, 8, 0), 0);
    assert_true(pi_mmaplog_active(&m));
    assert_true(size_of(fd) >= PI_MMAPLOG_FIRST_STEP);
    uint8_t rec[40];
    record(rec, sizeof rec, 7);
    assert_int_equal(pi_mmaplog_append(&m, rec, sizeof rec), 0);
    assert_int_equal(m.end, 48);

    off_t len;
    uint8_t *buf = read_all(fd, &len); /* through read(2): the page cache */
    assert_memory_equal(buf, "HEADER__", 8);
    assert_memory_equal(buf + 8, rec, sizeof rec);
    for (off_t i = 48; i < len; i++)
        assert_int_equal(buf[i], 0);
    free(buf);

    assert_int_equal(pi_mmaplog_trim(&m), 0);
    assert_false(pi_mmaplog_active(&m));
    assert_int_equal(size_of(fd), 48);
    assert_int_equal(pi_mmaplog_append(&m, rec, sizeof rec), -1); /* done */
    close(fd);
}

/* Megabytes of records across many growths: every byte where it belongs,
 * and only a window of the file mapped at any time. */
static void test_growth_keeps_every_record(void **state)
{
    (void)state;
    struct pi_file_id id;
    int fd = open_file("b.dump", &id);
    struct pi_mmaplog m;
    assert_int_equal(pi_mmaplog_start(&m, fd, &id, 0, 0), 0);
    enum { COUNT = 20000 };
    uint8_t rec[1024];
    uint64_t at = 0;
    for (uint32_t n = 0; n < COUNT; n++) {
        size_t len = 8 * (1 + n % 100); /* 8 .. 800 bytes */
        record(rec, len, n);
        assert_int_equal(pi_mmaplog_append(&m, rec, len), 0);
        at += len;
        assert_true(m.cap - m.window_off <= PI_MMAPLOG_MAX_STEP + 2 * 4096 + len);
    }
    assert_int_equal(m.end, at);
    assert_int_equal(pi_mmaplog_trim(&m), 0);
    off_t len;
    uint8_t *buf = read_all(fd, &len);
    assert_int_equal(len, (off_t)at);
    uint64_t off = 0;
    for (uint32_t n = 0; n < COUNT; n++) {
        size_t rlen = 8 * (1 + n % 100);
        record(rec, rlen, n);
        assert_memory_equal(buf + off, rec, rlen);
        off += rlen;
    }
    free(buf);
    close(fd);
}

static int fallocate_all(int fd, off_t off, off_t len) { return (int)fallocate(fd, 0, off, len); }

static int unsupported(int fd, off_t off, off_t len)
{
    (void)fd, (void)off, (void)len;
    return errno = EOPNOTSUPP, -1;
}

/* A file system that cannot allocate ahead: start says so, and the file
 * is as it was (the caller writes with write(2)). */
static void test_start_fails_without_fallocate(void **state)
{
    (void)state;
    struct pi_file_id id;
    int fd = open_file("c.dump", &id);
    assert_int_equal(write(fd, "HEADER__", 8), 8);
    pi_mmaplog_allocate = unsupported;
    struct pi_mmaplog m;
    assert_int_equal(pi_mmaplog_start(&m, fd, &id, 8, 0), -1);
    assert_int_equal(errno, EOPNOTSUPP);
    assert_false(pi_mmaplog_active(&m));
    assert_int_equal(size_of(fd), 8);
    pi_mmaplog_allocate = fallocate_all;
    /* A file that is not `end` bytes long is another writer's too. */
    assert_int_equal(pi_mmaplog_start(&m, fd, &id, 5, 0), -1);
    assert_int_equal(errno, EBUSY);
    close(fd);
}

/* Room for `limit` bytes in all, as a full disk or RLIMIT_FSIZE leave it. */
static off_t limit;
static int limited(int fd, off_t off, off_t len)
{
    if (off + len > limit)
        return errno = EFBIG, -1;
    return (int)fallocate(fd, 0, off, len);
}

/* Near the limit the file grows by what the record needs; a record that
 * does not fit fails with the reason, and the records before stay whole. */
static void test_limit_takes_whole_records_only(void **state)
{
    (void)state;
    struct pi_file_id id;
    int fd = open_file("d.dump", &id);
    limit = PI_MMAPLOG_FIRST_STEP + 100;
    pi_mmaplog_allocate = limited;
    struct pi_mmaplog m;
    assert_int_equal(pi_mmaplog_start(&m, fd, &id, 0, 0), 0);
    uint8_t rec[64];
    uint64_t written = 0;
    int rc = 0;
    for (uint32_t n = 0; rc == 0; n++) {
        record(rec, sizeof rec, n);
        rc = pi_mmaplog_append(&m, rec, sizeof rec);
        written += rc == 0 ? sizeof rec : 0;
    }
    assert_int_equal(errno, EFBIG);
    assert_int_equal(written, (uint64_t)limit / 64 * 64); /* all that fit */
    assert_int_equal(m.end, written);
    assert_true(size_of(fd) <= limit);
    assert_int_equal(pi_mmaplog_trim(&m), 0);
    assert_int_equal(size_of(fd), (off_t)written);
    close(fd);
}

/* The program closed the descriptor and opened something else under its
 * number: the growth finds out and stops, writing nothing there. */
static void test_reused_descriptor_is_left_alone(void **state)
{
    (void)state;
    struct pi_file_id id;
    int fd = open_file("e.dump", &id);
    struct pi_mmaplog m;
    assert_int_equal(pi_mmaplog_start(&m, fd, &id, 0, 0), 0);
    char other[256];
    snprintf(other, sizeof other, "%s/other", dir);
    close(fd);
    int fd2 = open(other, O_RDWR | O_CREAT, 0600);
    assert_int_equal(fd2, fd);
    uint8_t rec[4096];
    int rc = 0;
    for (uint32_t n = 0; rc == 0 && n < 1000; n++) {
        record(rec, sizeof rec, n);
        rc = pi_mmaplog_append(&m, rec, sizeof rec);
    }
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EBADF);
    assert_int_equal(size_of(fd2), 0);
    pi_mmaplog_forget(&m);
    close(fd2);
}

/* Records under 8 bytes are refused; others need not be multiples of 8. */
static void test_lengths(void **state)
{
    (void)state;
    struct pi_file_id id;
    int fd = open_file("f.dump", &id);
    struct pi_mmaplog m;
    assert_int_equal(pi_mmaplog_start(&m, fd, &id, 0, 0), 0);
    uint8_t rec[16] = {1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12};
    assert_int_equal(pi_mmaplog_append(&m, rec, 7), -1);
    assert_int_equal(errno, EINVAL);
    assert_int_equal(pi_mmaplog_append(&m, rec, 0), -1);
    assert_int_equal(m.end, 0);
    assert_int_equal(pi_mmaplog_append(&m, rec, 12), 0);
    assert_int_equal(pi_mmaplog_append(&m, rec, 9), 0); /* its head unaligned */
    assert_int_equal(pi_mmaplog_trim(&m), 0);
    off_t len;
    uint8_t *buf = read_all(fd, &len);
    assert_int_equal(len, 21);
    assert_memory_equal(buf, rec, 12);
    assert_memory_equal(buf + 12, rec, 9);
    free(buf);
    close(fd);
}

/* A text file (the perf map): what is allocated ahead reads as blank lines,
 * lines of any length go in whole, and trim leaves the lines alone. */
static void test_text_lines_between_newlines(void **state)
{
    (void)state;
    struct pi_file_id id;
    int fd = open_file("t.map", &id);
    struct pi_mmaplog m;
    assert_int_equal(pi_mmaplog_start(&m, fd, &id, 0, '\n'), 0);
    char line[128], want[64 * 1024];
    size_t used = 0;
    for (int n = 0; used + 128 < sizeof want; n++) {
        int len = snprintf(line, sizeof line, "7f%010x %x py::f%d:%.*s\n", n * 128, 128, n,
                           n % 37, "/some/where/in/a/long/path/file.py");
        assert_int_equal(pi_mmaplog_append(&m, line, (size_t)len), 0);
        memcpy(want + used, line, (size_t)len);
        used += (size_t)len;
    }
    off_t len;
    uint8_t *buf = read_all(fd, &len);
    assert_true((uint64_t)len > used);
    assert_memory_equal(buf, want, used);
    for (off_t i = (off_t)used; i < len; i++)
        assert_int_equal(buf[i], '\n');
    free(buf);
    assert_int_equal(pi_mmaplog_trim(&m), 0);
    assert_int_equal(size_of(fd), (off_t)used);
    close(fd);
}

/* Another writer appends to the file (CPython's perf map at run time): its
 * line lands after the fill, the mapping goes on until it would have to
 * grow over it, then stops with EBUSY, and trim cuts nothing of it. */
static void test_another_writer_stops_the_mapping(void **state)
{
    (void)state;
    struct pi_file_id id;
    int fd = open_file("u.map", &id);
    struct pi_mmaplog m;
    assert_int_equal(pi_mmaplog_start(&m, fd, &id, 0, '\n'), 0);
    const char ours[] = "7f0000001000 80 py::ours:a.py\n";
    const char theirs[] = "7f0000009000 40 py::theirs:b.py\n";
    assert_int_equal(pi_mmaplog_append(&m, ours, sizeof ours - 1), 0);
    char path[256];
    snprintf(path, sizeof path, "%s/u.map", dir);
    int other = open(path, O_WRONLY | O_APPEND);
    assert_true(other >= 0);
    assert_int_equal(write(other, theirs, sizeof theirs - 1), (ssize_t)sizeof theirs - 1);
    close(other);
    off_t cap = size_of(fd);
    int rc = 0, n = 0;
    while (rc == 0 && n++ < 100000)
        rc = pi_mmaplog_append(&m, ours, sizeof ours - 1);
    assert_int_equal(rc, -1);
    assert_int_equal(errno, EBUSY);
    assert_int_equal(size_of(fd), cap); /* nothing grown over their line */
    uint64_t end = m.end;
    assert_int_equal(pi_mmaplog_trim(&m), 0);
    off_t len;
    uint8_t *buf = read_all(fd, &len);
    assert_int_equal(len, cap);
    assert_memory_equal(buf + len - (sizeof theirs - 1), theirs, sizeof theirs - 1);
    for (off_t i = (off_t)end; i < len - (off_t)(sizeof theirs - 1); i++)
        assert_int_equal(buf[i], '\n');
    free(buf);
    close(fd);
}

/* A forked child forgets the parent's file: it is unmapped in the child,
 * which writes nothing into it, and the parent goes on. */
static void test_forked_child_forgets_the_parents_file(void **state)
{
    (void)state;
    struct pi_file_id id;
    int fd = open_file("g.dump", &id);
    struct pi_mmaplog m;
    assert_int_equal(pi_mmaplog_start(&m, fd, &id, 0, 0), 0);
    uint8_t rec[32];
    record(rec, sizeof rec, 1);
    assert_int_equal(pi_mmaplog_append(&m, rec, sizeof rec), 0);
    pid_t pid = fork();
    if (pid == 0) {
        uint8_t *window = m.window;
        pi_mmaplog_forget(&m);
        /* Unmapped: mincore fails with ENOMEM on a range not mapped. */
        unsigned char vec;
        int gone = mincore(window, 1, &vec) != 0 && errno == ENOMEM;
        int refused = pi_mmaplog_append(&m, rec, sizeof rec) == -1;
        _exit(gone && refused && !pi_mmaplog_active(&m) ? 0 : 1);
    }
    int status;
    assert_int_equal(waitpid(pid, &status, 0), pid);
    assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
    record(rec, sizeof rec, 2);
    assert_int_equal(pi_mmaplog_append(&m, rec, sizeof rec), 0);
    assert_int_equal(pi_mmaplog_trim(&m), 0);
    assert_int_equal(size_of(fd), 64);
    close(fd);
}

static int restore_allocate(void **state)
{
    (void)state;
    static int (*original)(int, off_t, off_t);
    if (original == NULL)
        original = pi_mmaplog_allocate;
    pi_mmaplog_allocate = original;
    return 0;
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_records_then_zeros_then_trim, restore_allocate),
        cmocka_unit_test_setup(test_growth_keeps_every_record, restore_allocate),
        cmocka_unit_test_setup(test_start_fails_without_fallocate, restore_allocate),
        cmocka_unit_test_setup(test_limit_takes_whole_records_only, restore_allocate),
        cmocka_unit_test_setup(test_reused_descriptor_is_left_alone, restore_allocate),
        cmocka_unit_test_setup(test_lengths, restore_allocate),
        cmocka_unit_test_setup(test_text_lines_between_newlines, restore_allocate),
        cmocka_unit_test_setup(test_another_writer_stops_the_mapping, restore_allocate),
        cmocka_unit_test_setup(test_forked_child_forgets_the_parents_file, restore_allocate),
    };
    return cmocka_run_group_tests_name("mmaplog", tests, scratch_setup, scratch_teardown);
}
