/* The perf-map backend: /tmp/perf-PID.map, one line per trampoline, in the
 * format of perf's jit-interface.txt ("START SIZE name", hex without 0x).
 *
 * Each line is one write(2) on an O_APPEND descriptor, so lines are whole
 * even when a forked child and its parent, or several threads, write at once,
 * and a line is in the kernel (safe from SIGKILL) before the function it
 * names first runs. */
#include "backend.h"
#include "names.h"
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

static int perfmap_open(void *self, const char *dir, long pid, char *err, size_t errlen)
{
    struct pi_perfmap *m = self;
    if (pi_outfile_path(m->path, sizeof m->path, dir, "perf-", pid, ".map") != 0)
        return errno = ENAMETOOLONG, -1;
    /* O_RDWR: a forked child copies the inherited lines from this fd. */
    m->fd = pi_outfile_open(m->path, O_RDWR | O_APPEND, err, errlen);
    m->size = 0;
    m->pid = pid;
    m->parent_fd = -1;
    if (m->fd >= 0 && pi_outfile_identify(m->fd, &m->id) != 0) {
        close(m->fd);
        m->fd = -1;
    }
    return m->fd < 0 ? -1 : 0;
}

static int perfmap_write(void *self, const struct pi_tramp_info *t)
{
    struct pi_perfmap *m = self;
    char line[PI_SYMBOL_MAX + 64];
    size_t len = pi_format_map_line(line, sizeof line, t->addr, t->code_size, t->symbol,
                                    t->symbol_len);
    if (len == 0)
        return errno = EOVERFLOW, -1;
    if (!pi_outfile_still_ours(m->fd, &m->id))
        return errno = EBADF, -1; /* the program closed it and reused the number */
    if (pi_outfile_append(m->fd, line, len, m->size) != 0)
        return -1;
    m->size += len;
    return 0;
}

/* Fork handler: the descriptor now is the parent's. Its lines up to here
 * join the ancestors' not copied yet (a parent that never made its own
 * file, fd -1, has none of its own to add). */
static void perfmap_forked(void *self, int inherit)
{
    struct pi_perfmap *m = self;
    if (!inherit)
        m->nsources = 0;
    if (m->fd >= 0 && inherit && m->size > 0 && m->nsources < PI_MAP_SOURCES) {
        m->sources[m->nsources++] = (struct pi_map_source){m->fd, m->id, m->pid, m->size};
    } else if (m->fd >= 0) {
        m->parent_fd = m->fd; /* nothing to take from it: closed at start_child */
        m->parent_id = m->id;
    }
    m->fd = -1;
    m->size = 0;
}

static int perfmap_start_child(void *self, const char *dir, long pid, char *err, size_t errlen)
{
    struct pi_perfmap *m = self;
    /* Unless the program closed it and reused the number. */
    if (m->parent_fd >= 0 && pi_outfile_still_ours(m->parent_fd, &m->parent_id))
        close(m->parent_fd);
    return perfmap_open(m, dir, pid, err, errlen);
}

static uint64_t perfmap_inheritable(const void *self)
{
    const struct pi_perfmap *m = self;
    uint64_t total = 0;
    for (unsigned i = 0; i < m->nsources; i++)
        total += m->sources[i].len;
    return total;
}

/* The ancestor's file: through the inherited descriptor, or, if the program
 * closed it (daemons close every descriptor), by its path, provided it is
 * still the same file. -1 if gone. Either way the caller closes it. */
static int source_fd(const struct pi_map_source *src, const char *dir)
{
    if (pi_outfile_still_ours(src->fd, &src->id))
        return src->fd;
    char path[4096];
    if (pi_outfile_path(path, sizeof path, dir, "perf-", src->pid, ".map") != 0)
        return -1;
    int fd = open(path, O_RDONLY | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY);
    if (fd >= 0 && !pi_outfile_still_ours(fd, &src->id)) {
        close(fd);
        fd = -1;
    }
    return fd;
}

static int perfmap_inherit(void *self, const char *dir, char *err, size_t errlen)
{
    struct pi_perfmap *m = self;
    int rc = 0;
    for (unsigned i = 0; i < m->nsources; i++) {
        const struct pi_map_source *src = &m->sources[i];
        int fd = source_fd(src, dir);
        if (rc >= 0 && !pi_outfile_still_ours(m->fd, &m->id)) {
            snprintf(err, errlen, "the program closed its descriptor");
            errno = EBADF;
            rc = -1;
        }
        if (rc < 0) {
            /* Nothing more is written to this file. */
        } else if (fd < 0) { /* removed meanwhile: nothing left to inherit from it */
            if (rc == 0)
                snprintf(err, errlen, "perf-%ld.map, whose lines %s inherits, is gone", src->pid,
                         m->path);
            rc = 1;
        } else if (pi_outfile_append_copy(fd, src->len, m->fd, m->size) >= 0) {
            m->size += src->len;
        } else {
            int e = errno, flags = fcntl(m->fd, F_GETFL);
            snprintf(err, errlen, "cannot copy the lines of perf-%ld.map into %s: %s", src->pid,
                     m->path, strerror(e));
            /* Without O_APPEND back, later lines would land at offset 0. */
            rc = flags >= 0 && (flags & O_APPEND) ? 1 : -1;
            errno = e;
        }
        if (fd >= 0) /* our copy of the ancestor's descriptor, or the one we opened */
            close(fd);
    }
    m->nsources = 0;
    return rc;
}

static int perfmap_flush(void *self)
{
    const struct pi_perfmap *m = self;
    return m->fd >= 0 ? fdatasync(m->fd) : 0;
}

static const char *perfmap_describe(const void *self)
{
    const struct pi_perfmap *m = self;
    return m->fd >= 0 ? m->path : NULL;
}

const struct pi_backend_ops pi_perfmap_ops = {
    .name = "perf map",
    .open = perfmap_open,
    .write = perfmap_write,
    .forked = perfmap_forked,
    .start_child = perfmap_start_child,
    .inheritable = perfmap_inheritable,
    .inherit = perfmap_inherit,
    /* No close: the descriptor stays open to the end, because a daemon
     * thread may still create a trampoline during exit, and a closed and
     * reused descriptor number would send its line into someone else's file. */
    .close = NULL,
    .flush = perfmap_flush,
    .describe = perfmap_describe,
    /* CPython's perf backend appends whole lines too, at other addresses:
     * both write the same map without harm. */
    .cpython_rival = NULL,
};
