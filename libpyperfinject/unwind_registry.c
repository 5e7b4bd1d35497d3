#include "unwind_registry.h"

#include "ehframe.h"

#include <dlfcn.h>
#include <elf.h>
#include <link.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

/* What the header of every arena holds. */
struct arena_object {
    ElfW(Phdr) phdr[2]; /* PT_LOAD over the whole mapping, PT_GNU_EH_FRAME */
    uint8_t eh_frame_hdr[12 + 8 * PI_ARENA_SLOTS];
};
_Static_assert(sizeof(struct arena_object) <= PI_ARENA_HEADER_BYTES, "header too small");

/* Offset of the FDE inside a slot: after the code and the CIE. */
static uint32_t fde_offset(const struct pi_slot_image *image, uint32_t *eh_frame)
{
    *eh_frame = (image->code_size + 7u) & ~7u;
    uint32_t cie_length;
    memcpy(&cie_length, image->bytes + *eh_frame, sizeof cie_length);
    return *eh_frame + 4 + cie_length;
}

static void put32(uint8_t *p, int64_t v)
{
    int32_t x = (int32_t)v;
    memcpy(p, &x, sizeof x);
}

void pi_unwind_fill_header(uint8_t *header, const uint8_t *slots, void *ctx)
{
    const struct pi_slot_image *image = ctx;
    struct arena_object *o = (struct arena_object *)(void *)header;
    uint32_t eh_frame;
    uint32_t fde = fde_offset(image, &eh_frame);
    uint8_t *hdr = o->eh_frame_hdr;

    /* .eh_frame_hdr: version, encodings, eh_frame_ptr, fde_count, then the
     * sorted (initial location, FDE) table relative to the hdr itself. */
    hdr[0] = 1;
    hdr[1] = PI_DW_EH_PE_pcrel | PI_DW_EH_PE_sdata4;
    hdr[2] = PI_DW_EH_PE_udata4;
    hdr[3] = PI_DW_EH_PE_datarel | PI_DW_EH_PE_sdata4;
    put32(hdr + 4, (slots + eh_frame) - (hdr + 4));
    uint32_t count = PI_ARENA_SLOTS;
    memcpy(hdr + 8, &count, sizeof count);
    for (uint32_t i = 0; i < PI_ARENA_SLOTS; i++) {
        const uint8_t *slot = slots + (size_t)i * PI_SLOT_STRIDE;
        put32(hdr + 12 + 8 * i, slot - hdr);
        put32(hdr + 16 + 8 * i, slot + fde - hdr);
    }
    memset(o->phdr, 0, sizeof o->phdr);
    o->phdr[0].p_type = PT_LOAD;
    o->phdr[0].p_flags = PF_R | PF_X;
    o->phdr[0].p_vaddr = 0;
    o->phdr[0].p_memsz = o->phdr[0].p_filesz = PI_ARENA_HEADER_BYTES + PI_ARENA_BYTES;
    o->phdr[0].p_align = 4096;
    o->phdr[1].p_type = PT_GNU_EH_FRAME;
    o->phdr[1].p_flags = PF_R;
    o->phdr[1].p_vaddr = (ElfW(Addr))(hdr - header);
    o->phdr[1].p_memsz = o->phdr[1].p_filesz = sizeof o->eh_frame_hdr;
    o->phdr[1].p_align = 4;
}

/* The interposers run inside other code's unwinding, in signal handlers and,
 * in sanitizer builds, while the sanitizer runtime itself initialises (it
 * enumerates objects before its shadow memory exists): never instrumented. */
#define PI_UNINSTRUMENTED __attribute__((no_sanitize("address", "thread", "undefined")))

/* Arenas reported to unwinders: an append-only list, read without a lock (a
 * reader sees a prefix), entries never freed; [lo, hi) bounds every arena so
 * that lookups for other code leave after two compares. */
struct published {
    const uint8_t *header;
    struct published *next;
};
static _Atomic(struct published *) published_head;
static _Atomic unsigned long published_count;
static _Atomic uintptr_t published_lo = UINTPTR_MAX, published_hi;

typedef int (*phdr_callback)(struct dl_phdr_info *, size_t, void *);
typedef int (*dl_iterate_phdr_fn)(phdr_callback, void *);
typedef int (*dl_find_object_fn)(void *, struct dl_find_object *);

/* The definitions the interposers forward to. Resolved by the constructor
 * (pi_unwind_init), so that a lookup from a signal handler never calls
 * dlsym; resolved on first use if a call comes earlier (a sanitizer runtime
 * initialising before the library's constructor has run). */
static _Atomic(dl_iterate_phdr_fn) real_dl_iterate_phdr;
static _Atomic(dl_find_object_fn) real_dl_find_object;

PI_UNINSTRUMENTED static void *real_symbol(void *_Atomic *slot, const char *name)
{
    void *f = atomic_load_explicit(slot, memory_order_acquire);
    if (f == NULL) {
        f = dlsym(RTLD_NEXT, name);
        atomic_store_explicit(slot, f, memory_order_release);
    }
    return f;
}
#define REAL_DL_ITERATE_PHDR() \
    ((dl_iterate_phdr_fn)real_symbol((void *_Atomic *)&real_dl_iterate_phdr, "dl_iterate_phdr"))
#define REAL_DL_FIND_OBJECT() \
    ((dl_find_object_fn)real_symbol((void *_Atomic *)&real_dl_find_object, "_dl_find_object"))

void pi_unwind_init(void)
{
    (void)REAL_DL_ITERATE_PHDR();
    (void)REAL_DL_FIND_OBJECT();
}

/* libgcc (glibc backtrace(), C++ exceptions, pthread_exit/cancel) finds
 * unwind info through _dl_find_object when it was built against glibc 2.35+,
 * and through dl_iterate_phdr before. Only if the library's definitions are
 * not the process's (loaded with dlopen(RTLD_LOCAL) instead of preloaded)
 * does it fall back to registering each arena with libgcc: every libgcc
 * unwind of the process then takes libgcc's object_mutex (GCC < 13), and a
 * fork while some thread holds it leaves it locked in the child, whose
 * first unwind (a thread exit on 3.6-3.8) then never returns. */
static int interposition_effective(void)
{
    void *found = dlsym(RTLD_DEFAULT, "_dl_find_object");
    if (found == NULL)
        found = dlsym(RTLD_DEFAULT, "dl_iterate_phdr");
    Dl_info theirs, ours;
    return found != NULL && dladdr(found, &theirs) != 0 &&
           dladdr((void *)pi_unwind_init, &ours) != 0 && theirs.dli_fbase == ours.dli_fbase;
}

/* libgcc_s (GCC_3.0): registers a NULL-terminated array of FDE pointers,
 * which must stay valid for the life of the process. */
void __register_frame_table(void *begin);

int pi_unwind_register_arena(const uint8_t *slots, const struct pi_slot_image *image)
{
    static int registration_needed = -1;
    if (registration_needed < 0)
        registration_needed = !interposition_effective();

    struct published *p = malloc(sizeof *p);
    if (p != NULL) {
        p->header = slots - PI_ARENA_HEADER_BYTES;
        uintptr_t lo = (uintptr_t)p->header, hi = (uintptr_t)slots + PI_ARENA_BYTES;
        /* Bounds first: a reader that finds the entry must find it in bounds. */
        uintptr_t cur = atomic_load(&published_lo);
        while (lo < cur && !atomic_compare_exchange_weak(&published_lo, &cur, lo))
            ;
        cur = atomic_load(&published_hi);
        while (hi > cur && !atomic_compare_exchange_weak(&published_hi, &cur, hi))
            ;
        p->next = atomic_load(&published_head);
        while (!atomic_compare_exchange_weak(&published_head, &p->next, p))
            ;
        atomic_fetch_add(&published_count, 1);
    }
    if (!registration_needed)
        return p != NULL ? 0 : -1;
    uint32_t eh_frame;
    uint32_t fde = fde_offset(image, &eh_frame);
    const void **table = calloc(PI_ARENA_SLOTS + 1, sizeof *table);
    if (table == NULL)
        return -1;
    for (size_t i = 0; i < PI_ARENA_SLOTS; i++)
        table[i] = slots + i * PI_SLOT_STRIDE + fde;
    __register_frame_table(table);
    return 0;
}

/* --- _dl_find_object (documented interposition) ----------------------- */

/* glibc 2.35+: the object containing pc, with its PT_GNU_EH_FRAME data.
 * Arenas answer as objects of their own; everything else is glibc's. Lock
 * free and async-signal-safe, as glibc's is. */
__attribute__((visibility("default"))) PI_UNINSTRUMENTED int
_dl_find_object(void *pc, struct dl_find_object *result)
{
    uintptr_t a = (uintptr_t)pc;
    if (a >= atomic_load_explicit(&published_lo, memory_order_acquire) &&
        a < atomic_load_explicit(&published_hi, memory_order_acquire)) {
        struct published *p = atomic_load_explicit(&published_head, memory_order_acquire);
        for (; p != NULL; p = p->next) {
            uintptr_t start = (uintptr_t)p->header;
            if (a < start || a >= start + PI_ARENA_HEADER_BYTES + PI_ARENA_BYTES)
                continue;
            const struct arena_object *o = (const struct arena_object *)(const void *)p->header;
            memset(result, 0, sizeof *result);
            result->dlfo_map_start = (void *)start;
            result->dlfo_map_end = (void *)(start + PI_ARENA_HEADER_BYTES + PI_ARENA_BYTES);
            result->dlfo_link_map = NULL; /* no ELF object behind it */
            result->dlfo_eh_frame = (void *)o->eh_frame_hdr;
            return 0;
        }
    }
    dl_find_object_fn f = REAL_DL_FIND_OBJECT();
    return f != NULL ? f(pc, result) : -1;
}

/* --- dl_iterate_phdr (documented interposition) ----------------------- */

struct real_pass {
    phdr_callback callback;
    void *data;
    unsigned long long adds, subs;
};

/* Passes real objects through, noting glibc's load/unload counters. */
PI_UNINSTRUMENTED static int real_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct real_pass *pass = arg;
    if (size >= offsetof(struct dl_phdr_info, dlpi_subs) + sizeof info->dlpi_subs) {
        pass->adds = info->dlpi_adds;
        pass->subs = info->dlpi_subs;
    }
    return pass->callback(info, size, pass->data);
}

__attribute__((visibility("default"))) PI_UNINSTRUMENTED int
dl_iterate_phdr(phdr_callback callback, void *data)
{
    dl_iterate_phdr_fn f = REAL_DL_ITERATE_PHDR();
    if (f == NULL)
        return 0;
    struct published *p = atomic_load_explicit(&published_head, memory_order_acquire);
    if (p == NULL)
        return f(callback, data); /* not a profiled Python process: nothing added */
    struct real_pass pass = {callback, data, 0, 0};
    int rc = f(real_object, &pass);
    if (rc != 0)
        return rc;
    /* Caches keyed on the counters (libgcc's) must see arenas as loads. */
    unsigned long long adds = pass.adds + atomic_load(&published_count);
    for (; p != NULL; p = p->next) {
        const struct arena_object *o = (const struct arena_object *)(const void *)p->header;
        struct dl_phdr_info info;
        memset(&info, 0, sizeof info);
        info.dlpi_addr = (ElfW(Addr))p->header;
        info.dlpi_name = "[pyperfinject]";
        info.dlpi_phdr = o->phdr;
        info.dlpi_phnum = 2;
        info.dlpi_adds = adds;
        info.dlpi_subs = pass.subs;
        if ((rc = callback(&info, sizeof info, data)) != 0)
            return rc;
    }
    return 0;
}
