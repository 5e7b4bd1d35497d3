/* Opening the per-process output files safely.
 *
 * The directory is shared (/tmp by default) and the file names are
 * predictable, so another user may have planted a link or a file there. A
 * file is used only if it is a regular file we own with one link; it is
 * opened without following a symlink, is truncated only after those checks,
 * and has mode 0600. */
#ifndef PI_OUTFILE_H
#define PI_OUTFILE_H

#include <stddef.h>
#include <stdint.h>

/* Builds "<dir>/<prefix><pid><suffix>". Returns 0, or -1 if it doesn't fit. */
int pi_outfile_path(char *path, size_t cap, const char *dir, const char *prefix, long pid,
                    const char *suffix);

/* Opens (creating or emptying) the file at path with the given access mode
 * (O_WRONLY or O_RDWR; O_APPEND allowed). Returns the fd, or -1 with a reason
 * in err. Async-signal-safe apart from the error text. */
int pi_outfile_open(const char *path, int access, char *err, size_t errlen);

/* The identity of an open output file. */
struct pi_file_id {
    uint64_t dev, ino;
};

/* Records the identity of fd. Returns 0 or -1. */
int pi_outfile_identify(int fd, struct pi_file_id *id);

/* 1 if fd still refers to the file identified by id: a program that closes
 * every descriptor (daemons do) may reuse the number for a file of its own,
 * which must never receive our records. */
int pi_outfile_still_ours(int fd, const struct pi_file_id *id);

/* Writes all of buf at the end of the file (fd opened O_APPEND), retrying on
 * EINTR. If the write stops short (disk full), the partial bytes are cut off
 * again at `size_before` so the file never holds half a record. Returns 0 or
 * -1 with errno set. */
int pi_outfile_append(int fd, const void *buf, size_t len, uint64_t size_before);

/* Appends the first `len` bytes of from_fd to to_fd, whose size is
 * `to_size` (a forked child inheriting its parent's map lines). In bulk: one
 * copy_file_range (the kernel copies, or reflinks where the file system can),
 * else pread/write in large chunks; never a system call per record.
 * copy_file_range refuses an O_APPEND target, so O_APPEND is cleared for the
 * copy and restored. A failed copy is cut off again at `to_size`. Returns
 * the bytes copied by the kernel's copy (0 if all went through the buffer),
 * or -1 with errno set. Not for use with other writers of to_fd running. */
long long pi_outfile_append_copy(int from_fd, uint64_t len, int to_fd, uint64_t to_size);

/* The kernel copy the helper tries first (copy_file_range(2)'s signature);
 * unit tests replace it to reach the fallback. */
extern long (*pi_outfile_kernel_copy)(int fd_in, int64_t *off_in, int fd_out, int64_t *off_out,
                                      size_t len);

#endif
