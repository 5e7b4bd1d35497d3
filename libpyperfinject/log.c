#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

/* Written once by the constructor, read everywhere: plain fields suffice. */
static int current_level = PI_LOG_WARN;
static struct {
    int known; /* fd 2 was open at start */
    dev_t dev;
    ino_t ino;
} start_stderr;

void pi_log_capture_stderr(void)
{
    struct stat st;
    int saved_errno = errno;
    start_stderr.known = fstat(STDERR_FILENO, &st) == 0;
    if (start_stderr.known) {
        start_stderr.dev = st.st_dev;
        start_stderr.ino = st.st_ino;
    }
    errno = saved_errno;
}

/* fstat is async-signal-safe: usable where pi_log is. */
static int stderr_is_ours(void)
{
    struct stat st;
    return start_stderr.known && fstat(STDERR_FILENO, &st) == 0 &&
           st.st_dev == start_stderr.dev && st.st_ino == start_stderr.ino;
}

void pi_log_set_level(int level) { current_level = level; }

int pi_log_level(void) { return current_level; }

void pi_log(int level, const char *fmt, ...)
{
    if (level > current_level || level <= PI_LOG_QUIET)
        return;
    int saved_errno = errno; /* a guest must not change the host's errno */
    if (!stderr_is_ours()) {
        errno = saved_errno;
        return;
    }
    char line[512];
    static const char prefix[] = "pyperfinject: ";
    memcpy(line, prefix, sizeof prefix - 1);
    size_t used = sizeof prefix - 1;
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(line + used, sizeof line - used - 1, fmt, ap);
    va_end(ap);
    if (n < 0)
        n = 0;
    used += (size_t)n < sizeof line - used - 1 ? (size_t)n : sizeof line - used - 2;
    line[used++] = '\n';
    ssize_t w;
    do
        w = write(STDERR_FILENO, line, used);
    while (w < 0 && errno == EINTR);
    errno = saved_errno;
}
