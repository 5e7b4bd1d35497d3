#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
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

/* copy_file_range through syscall(2): the glibc wrapper appeared in 2.27,
 * and a library linked against it would not load on older systems. */
static long kernel_copy(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out, size_t len)
{
#ifdef SYS_copy_file_range
    return syscall(SYS_copy_file_range, fd_in, off_in, fd_out, off_out, len, 0u);
#else
    (void)fd_in, (void)off_in, (void)fd_out, (void)off_out, (void)len;
    return errno = ENOSYS, -1;
#endif
}

long (*pi_outfile_kernel_copy)(int, int64_t *, int, int64_t *, size_t) = kernel_copy;

/* Where copy_file_range cannot serve: an old kernel (ENOSYS), another file
 * system (EXDEV), a file system or file it does not support (EINVAL,
 * EOPNOTSUPP). Anything else (EIO, ENOSPC) is a real failure. */
static int kernel_copy_unsupported(int e)
{
    return e == ENOSYS || e == EXDEV || e == EINVAL || e == EOPNOTSUPP;
}

/* The fallback: large chunks through a heap buffer (the calling thread's
 * stack may be small). */
static int buffered_copy(int from_fd, int64_t in, int64_t end, int to_fd, int64_t out)
{
    size_t cap = 1u << 20;
    char *buf = malloc(cap);
    if (buf == NULL && (buf = malloc(cap = 64u << 10)) == NULL)
        return -1;
    int rc = 0;
    while (rc == 0 && in < end) {
        size_t want = (uint64_t)(end - in) < cap ? (size_t)(end - in) : cap;
        ssize_t n = pread(from_fd, buf, want, (off_t)in);
        if (n < 0 && errno == EINTR)
            continue;
        if (n <= 0) { /* the source is shorter than `len` */
            if (n == 0)
                errno = ENODATA;
            rc = -1;
            break;
        }
        for (ssize_t done = 0; rc == 0 && done < n;) {
            ssize_t w = pwrite(to_fd, buf + done, (size_t)(n - done), (off_t)out);
            if (w < 0 && errno == EINTR)
                continue;
            if (w <= 0) {
                if (w == 0)
                    errno = ENOSPC;
                rc = -1;
            } else {
                done += w;
                out += w;
            }
        }
        in += n;
    }
    free(buf);
    return rc;
}

long long pi_outfile_append_copy(int from_fd, uint64_t len, int to_fd, uint64_t to_size)
{
    if (len > (uint64_t)INT64_MAX - to_size)
        return errno = EFBIG, -1;
    int flags = fcntl(to_fd, F_GETFL);
    if (flags < 0 || ((flags & O_APPEND) && fcntl(to_fd, F_SETFL, flags & ~O_APPEND) != 0))
        return -1;
    int64_t in = 0, out = (int64_t)to_size, end = (int64_t)len;
    int rc = 0;
    while (in < end) {
        long n = pi_outfile_kernel_copy(from_fd, &in, to_fd, &out, (size_t)(end - in));
        if (n > 0)
            continue; /* the kernel advanced both offsets */
        if (n < 0 && errno == EINTR)
            continue;
        if (n == 0) { /* end of the source before `len` */
            errno = ENODATA;
            rc = -1;
        } else if (kernel_copy_unsupported(errno)) {
            rc = buffered_copy(from_fd, in, end, to_fd, out);
        } else {
            rc = -1;
        }
        break;
    }
    long long by_kernel = in; /* the rest, if any, went through the buffer */
    int e = errno;
    if (rc != 0 && ftruncate(to_fd, (off_t)to_size) != 0) {
        /* Nothing more we can do; a reader sees a short last line. */
    }
    if ((flags & O_APPEND) && fcntl(to_fd, F_SETFL, flags) != 0 && rc == 0)
        e = errno, rc = -1; /* later lines would overwrite: report it */
    errno = e;
    return rc == 0 ? by_kernel : -1;
}
