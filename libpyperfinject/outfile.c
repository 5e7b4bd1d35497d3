#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

int pi_outfile_path(char *path, size_t cap, const char *dir, const char *prefix, long pid,
                    const char *suffix)
{
    int n = snprintf(path, cap, "%s/%s%ld%s", dir, prefix, pid, suffix);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

int pi_outfile_open(const char *path, int access, char *err, size_t errlen)
{
    int fd = open(path, access | O_CREAT | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
    if (fd < 0) {
        int e = errno;
        snprintf(err, errlen, "cannot open %s: %s%s", path, strerror(e),
                 e == ELOOP ? " (it is a symbolic link; not following it)" : "");
        return -1;
    }
    struct stat st;
    const char *why = NULL;
    if (fstat(fd, &st) != 0)
        why = strerror(errno);
    else if (!S_ISREG(st.st_mode))
        why = "not a regular file";
    else if (st.st_uid != geteuid())
        why = "owned by another user";
    else if (st.st_nlink != 1)
        why = "has other hard links";
    else if (ftruncate(fd, 0) != 0 || fchmod(fd, 0600) != 0)
        why = strerror(errno);
    if (why != NULL) {
        snprintf(err, errlen, "refusing to write %s: %s", path, why);
        close(fd);
        return -1;
    }
    return fd;
}

int pi_outfile_identify(int fd, struct pi_file_id *id)
{
    struct stat st;
    if (fstat(fd, &st) != 0)
        return -1;
    id->dev = (uint64_t)st.st_dev;
    id->ino = (uint64_t)st.st_ino;
    return 0;
}

int pi_outfile_still_ours(int fd, const struct pi_file_id *id)
{
    struct stat st;
    return fstat(fd, &st) == 0 && (uint64_t)st.st_dev == id->dev &&
           (uint64_t)st.st_ino == id->ino;
}

static int write_all(int fd, const char *p, size_t len, size_t *done)
{
    *done = 0;
    while (*done < len) {
        ssize_t w = write(fd, p + *done, len - *done);
        if (w < 0 && errno == EINTR)
            continue;
        if (w <= 0) {
            if (w == 0)
                errno = ENOSPC;
            return -1;
        }
        *done += (size_t)w;
    }
    return 0;
}

int pi_outfile_append(int fd, const void *buf, size_t len, uint64_t size_before)
{
    size_t done;
    if (write_all(fd, buf, len, &done) == 0)
        return 0;
    int e = errno;
    if (done > 0 && ftruncate(fd, (off_t)size_before) != 0) {
        /* Nothing more we can do; the reader will see a short last record. */
    }
    errno = e;
    return -1;
}

int pi_outfile_copy_prefix(int from_fd, int to_fd, uint64_t len)
{
    /* pread/write rather than copy_file_range: the target is O_APPEND, which
     * copy_file_range refuses. */
    char buf[8192];
    uint64_t in = 0;
    while (in < len) {
        size_t want = len - in < sizeof buf ? (size_t)(len - in) : sizeof buf;
        ssize_t n = pread(from_fd, buf, want, (off_t)in);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0)
            return -1;
        size_t done;
        if (write_all(to_fd, buf, (size_t)n, &done) != 0)
            return -1;
        in += (uint64_t)n;
    }
    return 0;
}
