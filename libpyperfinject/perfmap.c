/* The perf-map backend: /tmp/perf-PID.map, one line per trampoline, in the
 * format of perf's jit-interface.txt ("START SIZE name", hex without 0x).
 *
 * Lines go into a shared mapping of the file (mmaplog.h), grown ahead and
 * filled with newlines: no system call per line, and a line is in the page
 * cache (safe from SIGKILL) before the function it names first runs; a line
 * a kill cut short starts with zeros, from which readers name nothing. At
 * exit the newlines are cut off. Where the file cannot be mapped, or another
 * writer in the process appends to it (CPython's perf map at run time), each
 * line is one write(2) on the O_APPEND descriptor instead. A forked child
 * writes a file of its own. */
#include "backend.h"
#include "names.h"
#include "outfile.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>
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
    m->log = (struct pi_mmaplog){.fd = -1};
    if (m->fd >= 0 && pi_outfile_identify(m->fd, &m->id) != 0) {
        close(m->fd);
        m->fd = -1;
    }
    if (m->fd < 0)
        return -1;
    if (pi_mmaplog_start(&m->log, m->fd, &m->id, 0, '\n') != 0)
        m->log.fd = -1; /* no allocating ahead here: one write(2) per line */
    return 0;
}

/* Appends whole lines: into the mapping, or with write(2) (also once
 * another writer has appended to the file: its lines follow the fill). */
static int append(struct pi_perfmap *m, const char *buf, size_t len)
{
    if (pi_mmaplog_active(&m->log)) {
        if (pi_mmaplog_append(&m->log, buf, len) == 0) {
            m->size += len;
            return 0;
        }
        if (errno != EBUSY) { /* the map stops here: its fill is cut off now */
            int e = errno;
            pi_mmaplog_trim(&m->log);
            return errno = e, -1;
        }
        pi_mmaplog_trim(&m->log); /* stops mapping; cuts nothing */
        struct stat st;
        if (fstat(m->fd, &st) != 0)
            return -1;
        m->size = (uint64_t)st.st_size;
    }
    if (!pi_outfile_still_ours(m->fd, &m->id))
        return errno = EBADF, -1; /* the program closed it and reused the number */
    if (pi_outfile_append(m->fd, buf, len, m->size) != 0)
        return -1;
    m->size += len;
    return 0;
}

static int perfmap_write(void *self, const struct pi_tramp_info *t)
{
    struct pi_perfmap *m = self;
    char line[PI_SYMBOL_MAX + 64];
    if (t->map_skip)
        return 0;
    size_t len = t->map_symbol ? pi_format_map_line(line, sizeof line, t->map_addr, t->map_size,
                                                    t->map_symbol, t->map_symbol_len)
                               : pi_format_map_line(line, sizeof line, t->addr, t->code_size,
                                                    t->symbol, t->symbol_len);
    if (len == 0)
        return errno = EOVERFLOW, -1;
    return append(m, line, len);
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
    pi_mmaplog_forget(&m->log); /* the parent goes on writing it */
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
    /* The copy appends at the file's end: the fill is cut off first, and
     * the mapping starts again after the copied lines. */
    int mapped = pi_mmaplog_active(&m->log);
    if (mapped)
        pi_mmaplog_trim(&m->log);
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
    if (mapped && rc >= 0 && pi_mmaplog_start(&m->log, m->fd, &m->id, m->size, '\n') != 0)
        m->log.fd = -1;
    return rc;
}

/* At exit: the newlines after the lines are cut off. The descriptor stays
 * open to the end, because a daemon thread may still create a trampoline
 * during exit (its line then goes out with write(2)), and a closed and
 * reused descriptor number would send its line into someone else's file. */
static void perfmap_close(void *self)
{
    struct pi_perfmap *m = self;
    pi_mmaplog_trim(&m->log);
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
    .close = perfmap_close,
    .flush = perfmap_flush,
    .describe = perfmap_describe,
    /* CPython's perf backend appends whole lines too, at other addresses:
     * both write the same map without harm (append() then writes with
     * write(2) too). */
    .cpython_rival = NULL,
};
