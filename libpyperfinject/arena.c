#include "arena.h"

#include <string.h>
#include <sys/mman.h>

enum { SLOTS_PER_ARENA = PI_ARENA_SLOTS };

uint64_t pi_arena_tag(const struct pi_arena_pool *pool, uint64_t n)
{
    return pool->salt ^ (n * 0x9e3779b97f4a7c15ull);
}

enum { MAX_PASSED_OVER = 8 };

/* A fresh read-write mapping where no named code was. Mappings passed over
 * are held until the search ends (so the kernel offers others), then given
 * back: they never held a trampoline. After MAX_PASSED_OVER the next one is
 * taken whatever it overlaps. */
static void *map_fresh(const struct pi_arena_pool *pool, size_t bytes)
{
    void *passed[MAX_PASSED_OVER];
    int n = 0;
    void *mem;
    for (;;) {
        mem = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
        if (mem == MAP_FAILED || pool->taken == NULL || n == MAX_PASSED_OVER ||
            !pool->taken((uintptr_t)mem, bytes, pool->taken_ctx))
            break;
        passed[n++] = mem;
    }
    while (n > 0)
        munmap(passed[--n], bytes);
    return mem;
}

static uint8_t *map_arena(struct pi_arena_pool *pool, const struct pi_slot_image *image)
{
    size_t bytes = PI_ARENA_HEADER_BYTES + PI_ARENA_BYTES;
    void *mem = map_fresh(pool, bytes);
    if (mem == MAP_FAILED)
        return NULL;
    uint8_t *header = mem;
    uint8_t *base = header + PI_ARENA_HEADER_BYTES;
    uint64_t first = pool->slots_made;
    for (uint32_t i = 0; i < SLOTS_PER_ARENA; i++) {
        uint8_t *slot = base + (size_t)i * PI_SLOT_STRIDE;
        uint64_t tag = pi_arena_tag(pool, first + i);
        memcpy(slot, image->bytes, image->length);
        memcpy(slot + image->tag_offset, &tag, sizeof tag);
    }
    if (pool->fill_header != NULL)
        pool->fill_header(header, base, pool->header_ctx);
    if (mprotect(base, PI_ARENA_BYTES, PROT_READ | PROT_EXEC) != 0 ||
        mprotect(header, PI_ARENA_HEADER_BYTES, PROT_READ) != 0) {
        /* W^X policy (SELinux execmem, PaX) refused: keep the mapping
         * inaccessible rather than unmapping, the address stays reserved. */
        mprotect(mem, bytes, PROT_NONE);
        return NULL;
    }
    __builtin___clear_cache((char *)base, (char *)base + PI_ARENA_BYTES);
    pool->arenas++;
    return base;
}

void *pi_arena_alloc(struct pi_arena_pool *pool, const struct pi_slot_image *image)
{
    if (pool->base == NULL || pool->next_slot == SLOTS_PER_ARENA) {
        uint8_t *base = map_arena(pool, image);
        if (base == NULL)
            return NULL;
        pool->base = base;
        pool->next_slot = 0;
    }
    void *slot = pool->base + (size_t)pool->next_slot * PI_SLOT_STRIDE;
    pool->next_slot++;
    pool->slots_made++;
    return slot;
}

void pi_arena_retire_current(struct pi_arena_pool *pool)
{
    pool->next_slot = SLOTS_PER_ARENA;
}
