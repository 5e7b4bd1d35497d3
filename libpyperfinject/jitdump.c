/* The jitdump backend: jit-PID.dump for `perf inject --jit`.
 *
 * perf finds the file through an executable mmap of it in the recorded
 * process (the marker below), then builds one small ELF per CODE_LOAD with
 * the code, the unwinding info that preceded it (so `--call-graph dwarf`
 * unwinds through the trampoline) and a line table from the DEBUG_INFO
 * record (so srcline shows script.py:LINE).
 *
 * Records of one trampoline (DEBUG_INFO, UNWINDING_INFO, CODE_LOAD) go into
 * a shared mapping of the file as one group, visible at once (mmaplog.h):
 * no system call per trampoline, and a killed process leaves a dump that is
 * valid up to its last trampoline, then zeros, where readers stop. At exit
 * the zeros are cut off. Where the file system cannot allocate ahead, each
 * group is one write(2) on an O_APPEND descriptor instead. */
#include "backend.h"
#include "ehframe.h"
#include "jitdump_format.h"
#include "jitdump_records.h"
#include "names.h"
#include "outfile.h"
#include "slot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

/* This thread's id for CODE_LOAD records, asked of the kernel once per
 * thread and again after a fork (the child's thread has another id). */
static __thread uint32_t cached_tid;
static __thread uint32_t cached_tid_forks;

static uint32_t thread_id(const struct pi_jitdump *j)
{
    if (cached_tid == 0 || cached_tid_forks != j->forks) {
        cached_tid = (uint32_t)syscall(SYS_gettid);
        cached_tid_forks = j->forks;
    }
    return cached_tid;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* what `perf record -k 1` uses */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* perf recognises the dump by an executable mapping of it; the mapping is
 * never touched again and, like the arenas, never unmapped. */
static int map_marker(struct pi_jitdump *j, char *err, size_t errlen)
{
    long page = sysconf(_SC_PAGESIZE);
    j->marker = mmap(NULL, (size_t)(page > 0 ? page : 4096), PROT_READ | PROT_EXEC, MAP_PRIVATE,
                     j->fd, 0);
    if (j->marker != MAP_FAILED)
        return 0;
    int e = errno;
    j->marker = NULL;
    snprintf(err, errlen,
             "cannot map %s executable (%s%s); perf inject could not find it, so only the perf "
             "map is written (set PYPERFINJECT_DIR to a directory mounted without noexec for "
             "DWARF unwinding)",
             j->path, strerror(e), e == EPERM || e == EACCES ? ": noexec mount?" : "");
    /* A dump perf cannot find is only clutter: remove the file we made. */
    unlink(j->path);
    close(j->fd);
    j->fd = -1;
    return -1;
}

static int start_file(struct pi_jitdump *j, const char *dir, long pid, char *err, size_t errlen)
{
    if (pi_outfile_path(j->path, sizeof j->path, dir, "jit-", pid, ".dump") != 0)
        return snprintf(err, errlen, "output path too long"), -1;
    /* O_RDWR: mmap needs read access, and a forked child reads back records. */
    j->fd = pi_outfile_open(j->path, O_RDWR | O_APPEND, err, errlen);
    j->size = 0;
    if (j->fd < 0)
        return -1;
    if (pi_outfile_identify(j->fd, &j->id) != 0) {
        snprintf(err, errlen, "cannot stat %s: %s", j->path, strerror(errno));
        close(j->fd);
        j->fd = -1;
        return -1;
    }
    uint8_t header[sizeof(struct pi_jitdump_header)];
    size_t n = pi_jr_header(header, sizeof header, j->elf_mach, (uint32_t)pid, now_ns());
    if (n == 0 || pi_outfile_append(j->fd, header, n, 0) != 0) {
        snprintf(err, errlen, "cannot write %s: %s", j->path, strerror(errno));
        unlink(j->path); /* an empty dump would only mislead perf inject */
        close(j->fd);
        j->fd = -1;
        return -1;
    }
    j->size = n;
    if (map_marker(j, err, errlen) != 0)
        return -1;
    if (pi_mmaplog_start(&j->log, j->fd, &j->id, j->size, 0) != 0)
        j->log.fd = -1; /* no allocating ahead here: one write(2) per group */
    return 0;
}

/* Appends a group of whole records: into the mapping, or with write(2). */
static int append(struct pi_jitdump *j, const uint8_t *buf, size_t len)
{
    if (pi_mmaplog_active(&j->log)) {
        if (pi_mmaplog_append(&j->log, buf, len) != 0) {
            int e = errno; /* the dump stops here: its zeros are cut off now */
            pi_mmaplog_trim(&j->log);
            return errno = e, -1;
        }
    } else {
        if (!pi_outfile_still_ours(j->fd, &j->id))
            return errno = EBADF, -1; /* the program closed it and reused the number */
        if (pi_outfile_append(j->fd, buf, len, j->size) != 0)
            return -1;
    }
    j->size += len;
    return 0;
}

static int jitdump_open(void *self, const char *dir, long pid, char *err, size_t errlen)
{
    struct pi_jitdump *j = self;
    j->pid = (uint32_t)pid;
    j->elf_mach = pi_arch_elf_mach(pi_slot_template_shape().arch);
    j->parent_fd = -1;
    j->closed = 0;
    j->log = (struct pi_mmaplog){.fd = -1};
    return start_file(j, dir, pid, err, errlen);
}

static int jitdump_write(void *self, const struct pi_tramp_info *t)
{
    struct pi_jitdump *j = self;
    if (j->closed)
        return 0;
    /* A name and a file name of at most PI_SYMBOL_MAX each, the code and the
     * unwind info of one slot: a bounded stack buffer. JIT regions are
     * larger: theirs comes from the heap (never in a signal handler). */
    uint8_t small[3 * (PI_SYMBOL_MAX + 1) + 4 * 64 + 2 * 256];
    uint64_t ts = t->appeared_ns == 0 ? now_ns()
                  : t->appeared_ns > j->last_ns ? t->appeared_ns
                                                : j->last_ns;
    int32_t line = t->firstlineno > 0 ? (int32_t)t->firstlineno : 1; /* lines start at 1 */
    /* The group is padded to a multiple of 8 inside its DEBUG_INFO, so that
     * every group starts 8-aligned (mmaplog.h). */
    size_t unwinding = t->unwind_size ? pi_jr_unwinding_info_size(t->unwind_size) : 0;
    size_t group = pi_jr_debug_info_size(t->filename, 0) + unwinding +
                   pi_jr_code_load_size(t->symbol, t->code_size);
    size_t cap = group + 8;
    uint8_t *buf = cap <= sizeof small ? small : malloc(cap);
    if (buf == NULL)
        return -1;
    size_t used = 0, n;
    int rc = -1;
    n = pi_jr_debug_info(buf, cap, ts, t->addr, t->code_size, line, t->filename,
                         (8 - group % 8) % 8);
    if (n == 0)
        goto overflow;
    used += n;
    if (unwinding) { /* none for JIT code whose CFI was not understood */
        n = pi_jr_unwinding_info(buf + used, cap - used, ts, t->unwind, t->unwind_size,
                                 t->unwind_hdr_size, t->unwind_mapped_size);
        if (n == 0)
            goto overflow;
        used += n;
    }
    n = pi_jr_code_load(buf + used, cap - used, ts, j->pid, thread_id(j), t->addr,
                        t->code_gone ? NULL : (const void *)t->addr, t->code_size, t->code_index,
                        t->symbol);
    if (n == 0)
        goto overflow;
    used += n;
    rc = append(j, buf, used);
    if (rc == 0)
        j->last_ns = ts;
    goto done;
overflow:
    errno = EOVERFLOW;
done:
    if (buf != small) {
        int saved = errno;
        free(buf);
        errno = saved;
    }
    return rc;
}

/* Fork handler: the child's dump will hold its own records only. perf
 * resolves the trampolines it inherited through its fork model: the child
 * starts with the parent's maps, the jitted code perf inject made from the
 * parent's dump included. */
static void jitdump_forked(void *self, int inherit)
{
    struct pi_jitdump *j = self;
    (void)inherit;
    if (j->fd >= 0) { /* else: still the grandparent's, from an earlier fork */
        j->parent_fd = j->fd;
        j->parent_id = j->id;
    }
    pi_mmaplog_forget(&j->log); /* the parent goes on writing it */
    j->fd = -1;
    j->size = 0;
    j->closed = 0;
    j->forks++;
}

static int jitdump_start_child(void *self, const char *dir, long pid, char *err, size_t errlen)
{
    struct pi_jitdump *j = self;
    /* Our copy of the parent's descriptor, unless the program closed it and
     * reused the number. */
    if (j->parent_fd >= 0 && pi_outfile_still_ours(j->parent_fd, &j->parent_id))
        close(j->parent_fd);
    j->parent_fd = -1;
    return jitdump_open(j, dir, pid, err, errlen);
}

static void jitdump_close(void *self)
{
    struct pi_jitdump *j = self;
    uint8_t rec[sizeof(struct pi_jr_prefix)];
    size_t n = pi_jr_code_close(rec, sizeof rec, now_ns());
    if (j->closed || j->fd < 0 || n == 0)
        return;
    if (pi_mmaplog_active(&j->log) || pi_outfile_still_ours(j->fd, &j->id))
        append(j, rec, n);
    pi_mmaplog_trim(&j->log); /* the zeros after the records */
    j->closed = 1; /* later trampolines (daemon threads at exit) go unrecorded */
}

static int jitdump_flush(void *self)
{
    const struct pi_jitdump *j = self;
    return j->fd >= 0 ? fdatasync(j->fd) : 0;
}

static const char *jitdump_describe(const void *self)
{
    const struct pi_jitdump *j = self;
    return j->fd >= 0 ? j->path : NULL;
}

const struct pi_backend_ops pi_jitdump_ops = {
    .name = "jitdump",
    .open = jitdump_open,
    .write = jitdump_write,
    .forked = jitdump_forked,
    .start_child = jitdump_start_child,
    .close = jitdump_close,
    .flush = jitdump_flush,
    .describe = jitdump_describe,
    .cpython_rival = "perf_jit", /* it truncates and rewrites /tmp/jit-PID.dump */
};
