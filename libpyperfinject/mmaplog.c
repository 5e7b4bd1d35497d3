/* A file of records written through a shared mapping of it: grown ahead,
 * filled with what readers skip, each record made visible by one store
 * (mmaplog.h). */
#include "mmaplog.h"

#include <errno.h>
#include <fcntl.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

/* fallocate through syscall(2): the glibc wrapper is fine, but a raw call
 * keeps the library free of _FILE_OFFSET_BITS questions on any libc. */
static int allocate(int fd, off_t offset, off_t len)
{
#ifdef SYS_fallocate
    return (int)syscall(SYS_fallocate, fd, 0, offset, len);
#else
    (void)fd, (void)offset, (void)len;
    return errno = EOPNOTSUPP, -1;
#endif
}

int (*pi_mmaplog_allocate)(int, off_t, off_t) = allocate;

static uint64_t page_size(void)
{
    long p = sysconf(_SC_PAGESIZE);
    return p > 0 ? (uint64_t)p : 4096u;
}

/* 0 if fd is still the file and still m->cap bytes long: EBADF when the
 * program closed it and reused the number, EBUSY when another writer
 * appended to it. */
static int still_alone(const struct pi_mmaplog *m)
{
    struct stat st;
    if (fstat(m->fd, &st) != 0 || (uint64_t)st.st_dev != m->id.dev ||
        (uint64_t)st.st_ino != m->id.ino)
        return errno = EBADF, -1;
    if ((uint64_t)st.st_size != m->cap)
        return errno = EBUSY, -1;
    return 0;
}

/* Allocates the file up to at least `need` (preferably `want`), then maps
 * it from the page holding m->end and fills what is new. On failure m is as
 * it was. */
static int grow(struct pi_mmaplog *m, uint64_t need, uint64_t want)
{
    uint64_t page = page_size();
    if (still_alone(m) != 0)
        return -1;
    uint64_t cap = (want + page - 1) / page * page;
    if (pi_mmaplog_allocate(m->fd, (off_t)m->cap, (off_t)(cap - m->cap)) != 0) {
        /* Near a full disk or RLIMIT_FSIZE: only what this record needs
         * (CPython ignores SIGXFSZ, so the limit is an EFBIG here). */
        int e = errno;
        if ((e != ENOSPC && e != EFBIG) || need <= m->cap || need >= cap)
            return errno = e, -1;
        cap = need;
        if (pi_mmaplog_allocate(m->fd, (off_t)m->cap, (off_t)(cap - m->cap)) != 0)
            return -1;
    }
    uint64_t off = m->end / page * page;
    void *w = mmap(NULL, (size_t)(cap - off), PROT_READ | PROT_WRITE, MAP_SHARED, m->fd, (off_t)off);
    if (w == MAP_FAILED)
        return -1; /* the allocated zeros stay: readers stop at them */
    if (m->fill != 0) /* the allocated bytes read as zeros */
        memset((uint8_t *)w + (m->cap - off), m->fill, (size_t)(cap - m->cap));
    if (m->window != NULL)
        munmap(m->window, (size_t)(m->cap - m->window_off));
    m->window = w;
    m->window_off = off;
    m->cap = cap;
    m->step = m->step * 2 < PI_MMAPLOG_MAX_STEP ? m->step * 2 : PI_MMAPLOG_MAX_STEP;
    return 0;
}

int pi_mmaplog_start(struct pi_mmaplog *m, int fd, const struct pi_file_id *id, uint64_t end,
                     uint8_t fill)
{
    *m = (struct pi_mmaplog){.fd = fd, .id = *id, .cap = end, .end = end,
                             .step = PI_MMAPLOG_FIRST_STEP, .fill = fill};
    if (grow(m, end, end + m->step) != 0) {
        int e = errno;
        m->fd = -1;
        return errno = e, -1;
    }
    return 0;
}

/* The first eight bytes of a record, in one store: a kill lands before or
 * after it, never inside. Map lines start anywhere, so the store may be
 * unaligned (one instruction on x86-64 and AArch64 all the same). */
typedef uint64_t unaligned_u64 __attribute__((aligned(1), may_alias));

static void store_head(uint8_t *at, uint64_t head)
{
    if (((uintptr_t)at & 7u) == 0)
        __atomic_store_n((uint64_t *)(void *)at, head, __ATOMIC_RELEASE);
    else
        *(volatile unaligned_u64 *)(void *)at = head;
}

int pi_mmaplog_append(struct pi_mmaplog *m, const void *rec, size_t len)
{
    if (m->fd < 0)
        return errno = EBADF, -1;
    if (len < 8)
        return errno = EINVAL, -1;
    if (len > m->cap - m->end) {
        uint64_t need = m->end + len;
        uint64_t want = need > m->cap + m->step ? need : m->cap + m->step;
        if (grow(m, need, want) != 0)
            return -1;
    }
    uint8_t *at = m->window + (m->end - m->window_off);
    if (m->fill != 0)
        store_head(at, 0); /* the record reads as unfinished until its head is in */
    memcpy(at + 8, (const uint8_t *)rec + 8, len - 8);
    uint64_t head;
    memcpy(&head, rec, 8);
    store_head(at, head); /* the record's rest is in before its head */
    m->end += len;
    return 0;
}

int pi_mmaplog_trim(struct pi_mmaplog *m)
{
    if (m->fd < 0)
        return 0;
    /* Unmapped first: past the cut, a store would be SIGBUS. */
    munmap(m->window, (size_t)(m->cap - m->window_off));
    int rc = 0;
    if (still_alone(m) == 0) /* another writer's lines after the fill stay */
        rc = ftruncate(m->fd, (off_t)m->end);
    *m = (struct pi_mmaplog){.fd = -1};
    return rc;
}

void pi_mmaplog_forget(struct pi_mmaplog *m)
{
    if (m->fd >= 0 && m->window != NULL)
        munmap(m->window, (size_t)(m->cap - m->window_off));
    *m = (struct pi_mmaplog){.fd = -1};
}
