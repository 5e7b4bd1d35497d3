/* A file of records written through a shared mapping of it.
 *
 * No system call per record, and nothing lost when the process is killed: a
 * store into a MAP_SHARED mapping is in the page cache at once, where the
 * kernel writes it out whatever becomes of the process.
 *
 * The file grows in steps with fallocate(2), which allocates the blocks: a
 * store never meets a full disk or the file size limit (either would be
 * SIGBUS). Where a file system cannot allocate ahead (EOPNOTSUPP), start
 * fails and the caller writes with write(2) instead.
 *
 * The bytes after the last record hold the fill byte until trim (at exit):
 * - 0 for the jitdump: to a reader a record of size 0, where it stops (perf
 *   inject ends its walk at a total_size below the 16-byte prefix,
 *   silently);
 * - '\n' for the perf map: blank lines, which perf, bcc and hotspot skip,
 *   and after which another writer's O_APPEND lines still parse.
 *
 * A record is made visible in one store: its first eight bytes are zeroed
 * (one store, where the fill is not 0), the rest goes in, then the first
 * eight in one 8-byte store. A process killed before that leaves a record
 * that starts with zeros: a jitdump prefix of size 0, or a map line perf and
 * hotspot name nothing from (measured: docs/design.md). Jitdump records are
 * multiples of 8 bytes, so every one starts 8-aligned; map lines need not.
 *
 * Another writer may append to the same file (CPython's own perf map at run
 * time): before growing, the file's size must still be where this writer
 * left it, else it stops (the caller goes on with write(2)), and trim cuts
 * nothing.
 *
 * One writer at a time (the caller's lock). Only the part of the file from
 * the page holding the end on is mapped: growing moves the window, so
 * resident memory does not grow with the file. */
#ifndef PI_MMAPLOG_H
#define PI_MMAPLOG_H

#include "outfile.h"

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct pi_mmaplog {
    int fd;                      /* -1 while not in use */
    struct pi_file_id id;        /* what fd must still be when the file grows */
    uint8_t *window;             /* a mapping of [window_off, cap) */
    uint64_t window_off;         /* page-aligned */
    uint64_t cap;                /* the file's size: allocated up to here */
    uint64_t end;                /* bytes of whole records: where the next one goes */
    uint64_t step;               /* the next growth */
    uint8_t fill;                /* what the bytes after the records hold */
};

/* First growth and the largest one. A process that leaves with os._exit
 * (forked workers do) or is killed keeps what was allocated ahead: one page
 * for a short-lived one, PI_MMAPLOG_MAX_STEP at most. */
enum { PI_MMAPLOG_FIRST_STEP = 4 << 10, PI_MMAPLOG_MAX_STEP = 256 << 10 };

/* Starts writing fd (identity id) through a mapping after its first `end`
 * bytes (written otherwise), filling what it allocates ahead with `fill`.
 * 0, or -1 with errno, m unused: the file is not `end` bytes long, the file
 * system cannot allocate ahead, the space is short, or nothing can be
 * mapped. */
int pi_mmaplog_start(struct pi_mmaplog *m, int fd, const struct pi_file_id *id, uint64_t end,
                     uint8_t fill);

/* 1 while m writes a file. */
static inline int pi_mmaplog_active(const struct pi_mmaplog *m) { return m->fd >= 0; }

/* Appends rec (at least 8 bytes, starting with no 8 zero bytes), visible
 * at once and whole. 0, or -1 with errno (ENOSPC, EFBIG, EBADF when fd is no
 * longer the file, EBUSY when another writer appended to it, EINVAL for a
 * bad length); the file keeps its whole records. */
int pi_mmaplog_append(struct pi_mmaplog *m, const void *rec, size_t len);

/* At the end: cuts the fill off (ftruncate to the records' end, unless
 * another writer appended after it) and stops using the mapping. The
 * descriptor stays open. 0 or -1 with errno. */
int pi_mmaplog_trim(struct pi_mmaplog *m);

/* In a forked child: the file is the parent's. Unmaps the window (the
 * parent goes on writing it) and forgets it. Async-signal-safe. */
void pi_mmaplog_forget(struct pi_mmaplog *m);

/* The allocation used to grow (fallocate(2)'s signature, mode 0); unit
 * tests replace it to reach the failures. */
extern int (*pi_mmaplog_allocate)(int fd, off_t offset, off_t len);

#endif
