/* arena.c + slot.c + tramp_<arch>.S: slots are sealed, unique, callable. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>

#include <cmocka.h>

#include "arena.h"
#include "slot.h"

typedef void *(*tramp_fn)(void *, void *, void *, void *);

static void *seen[3];

static void *fake_evaluator(void *a, void *b, void *c)
{
    seen[0] = a, seen[1] = b, seen[2] = c;
    /* The trampoline keeps a frame record: our caller's frame pointer is
     * the trampoline's, whose saved return address points back into it. */
    return (void *)0x1234;
}

/* Permissions of the mapping holding addr, from /proc/self/maps. */
static void perms_of(const void *addr, char perms[5])
{
    FILE *f = fopen("/proc/self/maps", "r");
    assert_non_null(f);
    unsigned long lo, hi;
    char p[5];
    strcpy(perms, "----");
    while (fscanf(f, "%lx-%lx %4s %*[^\n]", &lo, &hi, p) == 3)
        if ((uintptr_t)addr >= lo && (uintptr_t)addr < hi) {
            memcpy(perms, p, 5);
            break;
        }
    fclose(f);
}

static void test_slot_image(void **state)
{
    (void)state;
    struct pi_slot_image image;
    struct pi_unwind_sizes unwind;
    assert_int_equal(pi_slot_image_build(&image, &unwind), 0);
    struct pi_tramp_shape shape = pi_slot_template_shape();
    assert_int_equal(image.code_size, shape.code_size);
    assert_int_equal(image.code_size % 8, 0);
    assert_int_equal(image.tag_offset + 8, image.code_size); /* the tag ends the code */
    assert_true(shape.after_push < shape.after_setfp && shape.after_setfp < shape.after_pop);
    /* perf inject maps round8(code)+mapped_size: it must fit the stride. */
    assert_true(((image.code_size + 7u) & ~7u) + unwind.mapped_size <= PI_SLOT_STRIDE);
    assert_int_equal(PI_SLOT_STRIDE % 16, 0);
}

static void test_slots_are_sealed_unique_and_callable(void **state)
{
    (void)state;
    struct pi_slot_image image;
    struct pi_unwind_sizes unwind;
    assert_int_equal(pi_slot_image_build(&image, &unwind), 0);
    struct pi_arena_pool pool = {.salt = 0x5eed};
    enum { N = PI_ARENA_BYTES / PI_SLOT_STRIDE + 10 }; /* spill into a second arena */
    static uint8_t *slots[N];
    for (int i = 0; i < N; i++) {
        slots[i] = pi_arena_alloc(&pool, &image);
        assert_non_null(slots[i]);
        assert_int_equal((uintptr_t)slots[i] % 16, 0);
    }
    assert_int_equal(pool.arenas, 2);
    assert_int_equal(pool.slots_made, N);
    for (int i = 0; i < N; i++) {
        uint64_t tag;
        memcpy(&tag, slots[i] + image.tag_offset, sizeof tag);
        assert_true(tag == pi_arena_tag(&pool, (uint64_t)i));
        if (i > 0)
            assert_memory_not_equal(slots[i], slots[i - 1], image.code_size);
        /* instructions and unwind info are the image's */
        assert_memory_equal(slots[i], image.bytes, image.tag_offset);
        assert_memory_equal(slots[i] + image.code_size, image.bytes + image.code_size,
                            image.length - image.code_size);
    }
    /* Never writable (and executable: the call below runs a slot). The
     * header in front of the slots is read-only data. qemu-user reports
     * guest execute permission unreliably, so only 'w' is checked here. */
    char perms[5];
    perms_of(slots[0], perms);
    assert_int_equal(perms[0], 'r');
    assert_int_equal(perms[1], '-');
    perms_of(slots[N - 1], perms);
    assert_int_equal(perms[1], '-');
    perms_of(slots[0] - PI_ARENA_HEADER_BYTES, perms);
    assert_int_equal(perms[1], '-');

    void *ret = ((tramp_fn)(void *)slots[N - 1])((void *)1, (void *)2, (void *)3,
                                                (void *)fake_evaluator);
    assert_ptr_equal(ret, (void *)0x1234);
    assert_ptr_equal(seen[0], (void *)1);
    assert_ptr_equal(seen[1], (void *)2);
    assert_ptr_equal(seen[2], (void *)3);
}

/* Stands for CPython's freed JIT code: the first `refuse` mappings offered
 * are said to overlap it, and each is remembered. */
struct taken_log {
    int refuse, asked;
    uintptr_t offered[16];
};

static int fake_taken(uintptr_t start, size_t len, void *ctx)
{
    struct taken_log *log = ctx;
    assert_int_equal(len, PI_ARENA_HEADER_BYTES + PI_ARENA_BYTES);
    log->offered[log->asked] = start;
    return log->asked++ < log->refuse;
}

static void test_arenas_pass_over_addresses_of_named_code(void **state)
{
    (void)state;
    struct pi_slot_image image;
    struct pi_unwind_sizes unwind;
    assert_int_equal(pi_slot_image_build(&image, &unwind), 0);
    struct taken_log log = {2, 0, {0}};
    struct pi_arena_pool pool = {.salt = 1, .taken = fake_taken, .taken_ctx = &log};
    uint8_t *slot = pi_arena_alloc(&pool, &image);
    assert_non_null(slot);
    assert_int_equal(log.asked, 3);
    uintptr_t header = (uintptr_t)slot - PI_ARENA_HEADER_BYTES;
    assert_int_equal(header, log.offered[2]); /* the third, which overlaps nothing */
    char perms[5];
    for (int i = 0; i < 2; i++) { /* the ones passed over were given back */
        assert_true(log.offered[i] != header);
        perms_of((void *)log.offered[i], perms);
        assert_true(strcmp(perms, "----") == 0 || log.offered[i] == header);
    }
    /* Something that overlaps everything: taken after the last try. */
    struct taken_log always = {1000, 0, {0}};
    struct pi_arena_pool stubborn = {.salt = 2, .taken = fake_taken, .taken_ctx = &always};
    assert_non_null(pi_arena_alloc(&stubborn, &image));
    assert_int_equal(always.asked, 8); /* and the ninth is not asked about */
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_slot_image),
        cmocka_unit_test(test_slots_are_sealed_unique_and_callable),
        cmocka_unit_test(test_arenas_pass_over_addresses_of_named_code),
    };
    return cmocka_run_group_tests_name("arena", tests, NULL, NULL);
}
