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
#include <unistd.h>

static int perfmap_open(void *self, const char *dir, long pid, char *err, size_t errlen)
{
    struct pi_perfmap *m = self;
    if (pi_outfile_path(m->path, sizeof m->path, dir, "perf-", pid, ".map") != 0)
        return errno = ENAMETOOLONG, -1;
    /* O_RDWR: a forked child reads the inherited lines back from this fd. */
    m->fd = pi_outfile_open(m->path, O_RDWR | O_APPEND, err, errlen);
    m->size = 0;
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
    size_t len = pi_format_map_line(line, sizeof line, t->addr, t->code_size, t->symbol);
    if (len == 0)
        return errno = EOVERFLOW, -1;
    if (!pi_outfile_still_ours(m->fd, &m->id))
        return errno = EBADF, -1; /* the program closed it and reused the number */
    if (pi_outfile_append(m->fd, line, len, m->size) != 0)
        return -1;
    m->size += len;
    return 0;
}

static int perfmap_after_fork_child(void *self, const char *dir, long pid, int inherit,
                                    char *err, size_t errlen)
{
    struct pi_perfmap *m = self;
    int parent_fd = m->fd;
    uint64_t parent_size = m->size;
    int rc = perfmap_open(m, dir, pid, err, errlen);
    if (rc == 0 && inherit && parent_size > 0) {
        if (pi_outfile_copy_prefix(parent_fd, m->fd, parent_size) != 0)
            rc = -1;
        else
            m->size = parent_size;
    }
    if (parent_fd >= 0)
        close(parent_fd); /* our copy of the parent's descriptor only */
    return rc;
}

const struct pi_backend_ops pi_perfmap_ops = {
    .name = "perf map",
    .open = perfmap_open,
    .write = perfmap_write,
    .after_fork_child = perfmap_after_fork_child,
    /* No close: the descriptor stays open to the end, because a daemon
     * thread may still create a trampoline during exit, and a closed and
     * reused descriptor number would send its line into someone else's file. */
    .close = NULL,
};
