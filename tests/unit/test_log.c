/* log.c: one whole line per message, only into the file that was stderr at
 * start (a program that rearranged fd 2 keeps it for itself). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <unistd.h>

#include <cmocka.h>

#include "log.h"

/* A pipe for fd 2; the test's own stderr is kept aside. */
static int saved_stderr = -1;

static void pipe_on_stderr(int fds[2])
{
    assert_int_equal(pipe2(fds, O_NONBLOCK), 0);
    assert_int_equal(dup2(fds[1], STDERR_FILENO), STDERR_FILENO);
    close(fds[1]);
}

static size_t drain(int fd, char *buf, size_t cap)
{
    ssize_t n = read(fd, buf, cap - 1);
    size_t len = n > 0 ? (size_t)n : 0;
    buf[len] = '\0';
    return len;
}

static int setup(void **state)
{
    (void)state;
    saved_stderr = dup(STDERR_FILENO);
    pi_log_set_level(PI_LOG_INFO);
    return saved_stderr < 0 ? -1 : 0;
}

static int teardown(void **state)
{
    (void)state;
    dup2(saved_stderr, STDERR_FILENO);
    close(saved_stderr);
    return 0;
}

static void test_writes_to_start_stderr(void **state)
{
    (void)state;
    int p[2];
    char buf[1024];
    pipe_on_stderr(p);
    pi_log_capture_stderr();
    errno = 1234;
    pi_log(PI_LOG_WARN, "hello %d", 42);
    assert_int_equal(errno, 1234); /* the host's errno is untouched */
    drain(p[0], buf, sizeof buf);
    assert_string_equal(buf, "pyperfinject: hello 42\n");
    pi_log(PI_LOG_DEBUG, "above the level");
    assert_int_equal(drain(p[0], buf, sizeof buf), 0);
    close(p[0]);
}

/* A forked child about to exec, Twisted's and gevent's way: fd 2 is now a
 * pipe its parent reads as the child's stderr. */
static void test_silent_after_fd2_rearranged(void **state)
{
    (void)state;
    int start[2], child[2];
    char buf[1024];
    pipe_on_stderr(start);
    pi_log_capture_stderr();
    pipe_on_stderr(child);
    pi_log(PI_LOG_WARN, "must not appear");
    assert_int_equal(drain(child[0], buf, sizeof buf), 0);
    assert_int_equal(drain(start[0], buf, sizeof buf), 0);
    /* Closed fd 2 (daemons): nothing, and no error for the host. */
    close(STDERR_FILENO);
    errno = 0;
    pi_log(PI_LOG_WARN, "nowhere");
    assert_int_equal(errno, 0);
    close(child[0]);
    close(start[0]);
}

static void test_back_on_the_start_file(void **state)
{
    (void)state;
    int start[2], other[2];
    char buf[1024];
    pipe_on_stderr(start);
    pi_log_capture_stderr();
    int keep = dup(STDERR_FILENO);
    pipe_on_stderr(other);
    pi_log(PI_LOG_WARN, "dropped");
    dup2(keep, STDERR_FILENO); /* the program put the original back */
    close(keep);
    pi_log(PI_LOG_WARN, "said");
    drain(start[0], buf, sizeof buf);
    assert_string_equal(buf, "pyperfinject: said\n");
    assert_int_equal(drain(other[0], buf, sizeof buf), 0);
    close(start[0]);
    close(other[0]);
}

static void test_closed_at_start(void **state)
{
    (void)state;
    int p[2];
    char buf[1024];
    close(STDERR_FILENO);
    pi_log_capture_stderr(); /* nothing to remember: never write */
    pipe_on_stderr(p);
    pi_log(PI_LOG_WARN, "no");
    assert_int_equal(drain(p[0], buf, sizeof buf), 0);
    close(p[0]);
}

static void test_long_message_is_one_line(void **state)
{
    (void)state;
    int p[2];
    char buf[2048], big[1500];
    memset(big, 'x', sizeof big - 1);
    big[sizeof big - 1] = '\0';
    pipe_on_stderr(p);
    pi_log_capture_stderr();
    pi_log(PI_LOG_WARN, "%s", big);
    size_t n = drain(p[0], buf, sizeof buf);
    assert_true(n > 100 && n <= 512);
    assert_int_equal(buf[n - 1], '\n');
    assert_null(memchr(buf, '\n', n - 1));
    close(p[0]);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup_teardown(test_writes_to_start_stderr, setup, teardown),
        cmocka_unit_test_setup_teardown(test_silent_after_fd2_rearranged, setup, teardown),
        cmocka_unit_test_setup_teardown(test_back_on_the_start_file, setup, teardown),
        cmocka_unit_test_setup_teardown(test_closed_at_start, setup, teardown),
        cmocka_unit_test_setup_teardown(test_long_message_is_one_line, setup, teardown),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
