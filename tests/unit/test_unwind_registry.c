/* unwind_registry.c: arenas answer _dl_find_object and dl_iterate_phdr as
 * objects of their own, libgcc finds a slot's FDE through them, and every
 * other address is glibc's answer, unchanged. The interposers are linked
 * into this program, so they are the process's definitions, as under
 * LD_PRELOAD. */
#include <dlfcn.h>
#include <link.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>
#include <unwind.h>

#include <cmocka.h>

#include "arena.h"
#include "slot.h"
#include "unwind_registry.h"

/* libgcc_s (GCC_3.0): the FDE covering pc, as its unwinder looks it up. */
struct dwarf_eh_bases {
    void *tbase, *dbase, *func;
};
const void *_Unwind_Find_FDE(void *pc, struct dwarf_eh_bases *bases);

typedef int (*find_fn)(void *, struct dl_find_object *);

static struct pi_slot_image image;
static struct pi_arena_pool pool;
static uint8_t *slots[PI_ARENA_SLOTS + 2];

/* Two arenas' worth of slots plus one, registered as inject.c does. */
static int setup(void **state)
{
    (void)state;
    struct pi_unwind_sizes sizes;
    pi_unwind_init();
    if (pi_slot_image_build(&image, &sizes) != 0)
        return -1;
    pool.fill_header = pi_unwind_fill_header;
    pool.header_ctx = &image;
    pool.salt = 42;
    for (size_t i = 0; i < sizeof slots / sizeof *slots; i++) {
        uint64_t arenas = pool.arenas;
        slots[i] = pi_arena_alloc(&pool, &image);
        if (slots[i] == NULL)
            return -1;
        if (pool.arenas != arenas && pi_unwind_register_arena(pool.base, &image) != 0)
            return -1;
    }
    return 0;
}

static void test_other_addresses_get_glibcs_answer(void **state)
{
    (void)state;
    find_fn real = (find_fn)dlsym(RTLD_NEXT, "_dl_find_object");
    if (real == NULL)
        skip(); /* glibc < 2.35: nothing to forward to */
    void *getpid_addr = dlsym(RTLD_DEFAULT, "getpid");
    struct dl_find_object ours, theirs;
    memset(&ours, 0xa5, sizeof ours);
    memset(&theirs, 0xa5, sizeof theirs);
    assert_int_equal(_dl_find_object(getpid_addr, &ours), 0);
    assert_int_equal(real(getpid_addr, &theirs), 0);
    assert_memory_equal(&ours, &theirs, sizeof ours);
    assert_non_null(ours.dlfo_eh_frame);
    /* An address nothing maps: both refuse. */
    assert_int_equal(_dl_find_object((void *)16, &ours), real((void *)16, &theirs));
}

static void test_slots_are_found_as_arena_objects(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof slots / sizeof *slots; i++) {
        struct dl_find_object found;
        void *pc = slots[i] + 5; /* inside the code */
        assert_int_equal(_dl_find_object(pc, &found), 0);
        uint8_t *start = found.dlfo_map_start, *end = found.dlfo_map_end;
        assert_true(start <= (uint8_t *)pc && (uint8_t *)pc < end);
        assert_int_equal(end - start, PI_ARENA_HEADER_BYTES + PI_ARENA_BYTES);
        assert_null(found.dlfo_link_map);
        const uint8_t *hdr = found.dlfo_eh_frame;
        assert_true(hdr > start && hdr < start + PI_ARENA_HEADER_BYTES);
        assert_int_equal(hdr[0], 1); /* .eh_frame_hdr version */
    }
}

static void test_libgcc_finds_every_slots_fde(void **state)
{
    (void)state;
    for (size_t i = 0; i < sizeof slots / sizeof *slots; i++) {
        struct dwarf_eh_bases bases;
        const void *fde = _Unwind_Find_FDE(slots[i] + 5, &bases);
        assert_non_null(fde);
        assert_ptr_equal(bases.func, slots[i]); /* the FDE starts at the slot */
        assert_true((const uint8_t *)fde > slots[i] &&
                    (const uint8_t *)fde < slots[i] + PI_SLOT_STRIDE);
    }
}

struct seen {
    int arenas, real_objects;
    const void *pc;
    int covering;
};

static int count_objects(struct dl_phdr_info *info, size_t size, void *arg)
{
    struct seen *seen = arg;
    (void)size;
    if (info->dlpi_name != NULL && strcmp(info->dlpi_name, "[pyperfinject]") == 0) {
        seen->arenas++;
        int has_eh_frame = 0;
        for (int i = 0; i < info->dlpi_phnum; i++) {
            const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
            uintptr_t lo = info->dlpi_addr + ph->p_vaddr;
            if (ph->p_type == PT_LOAD && (uintptr_t)seen->pc >= lo &&
                (uintptr_t)seen->pc < lo + ph->p_memsz)
                seen->covering++;
            has_eh_frame |= ph->p_type == PT_GNU_EH_FRAME;
        }
        assert_true(has_eh_frame);
    } else {
        seen->real_objects++;
    }
    return 0;
}

static void test_dl_iterate_phdr_adds_arenas_after_real_objects(void **state)
{
    (void)state;
    struct seen seen = {0, 0, slots[PI_ARENA_SLOTS] + 5, 0};
    assert_int_equal(dl_iterate_phdr(count_objects, &seen), 0);
    assert_int_equal(seen.arenas, 2);
    assert_int_equal(seen.covering, 1);
    assert_true(seen.real_objects >= 2); /* this program, libc, ... */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_other_addresses_get_glibcs_answer),
        cmocka_unit_test(test_slots_are_found_as_arena_objects),
        cmocka_unit_test(test_libgcc_finds_every_slots_fde),
        cmocka_unit_test(test_dl_iterate_phdr_adds_arenas_after_real_objects),
    };
    return cmocka_run_group_tests(tests, setup, NULL);
}
