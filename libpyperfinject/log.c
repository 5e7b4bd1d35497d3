#include "log.h"

#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

/* Written once by the constructor, read everywhere: a plain int suffices. */
static int current_level = PI_LOG_WARN;

void pi_log_set_level(int level) { current_level = level; }

int pi_log_level(void) { return current_level; }

void pi_log(int level, const char *fmt, ...)
{
    if (level > current_level || level <= PI_LOG_QUIET)
        return;
    int saved_errno = errno; /* a guest must not change the host's errno */
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
