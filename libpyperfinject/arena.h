/* Executable arenas that hold the trampoline copies.
 *
 * An arena is mapped read-write, every slot is filled with the slot image
 * (code, its unique tag, its unwind info), and only then is the whole arena
 * made read+execute: memory is never writable and executable at once, and no
 * byte of a slot changes after the arena is sealed. Slots are handed out by a
 * bump pointer. Arenas are never unmapped: frames may still be returning
 * through a trampoline long after its code object died. */
#ifndef PI_ARENA_H
#define PI_ARENA_H

#include <stddef.h>
#include <stdint.h>

/* Slot stride: 16-byte aligned and just large enough for the code, the
 * eh_frame and eh_frame_hdr behind it, so the ranges perf inject maps for
 * consecutive trampolines (round8(code) + mapped unwind size) never overlap.
 * Per template (slot.c checks it): a byte more per slot is a byte more of
 * memory per function. */
#define PI_SLOT_STRIDE_X86_64 96u   /* 16 + 80 */
#define PI_SLOT_STRIDE_AARCH64 128u /* 32 + 96 */
#if defined(__aarch64__)
#define PI_SLOT_STRIDE PI_SLOT_STRIDE_AARCH64
#else
#define PI_SLOT_STRIDE PI_SLOT_STRIDE_X86_64
#endif
#define PI_ARENA_BYTES (128u * 1024u) /* slots per arena: PI_ARENA_BYTES / PI_SLOT_STRIDE */
#define PI_ARENA_SLOTS (PI_ARENA_BYTES / PI_SLOT_STRIDE)

/* What every slot starts as. `tag_offset` names 8 bytes inside the code that
 * the arena overwrites with (salt ^ slot number). */
struct pi_slot_image {
    uint8_t bytes[PI_SLOT_STRIDE];
    uint32_t length;     /* bytes used in `bytes` */
    uint32_t code_size;  /* instructions + padding + tag */
    uint32_t tag_offset;
};

/* Each arena mapping starts with PI_ARENA_HEADER_BYTES of read-only data
 * about its slots (unwind_registry.c puts an ELF-like description there),
 * filled by the pool's callback before the mapping is sealed. */
#define PI_ARENA_HEADER_BYTES (12u * 1024u)

typedef void (*pi_arena_header_fn)(uint8_t *header, const uint8_t *slots, void *ctx);

/* 1 when [start, start + len) held code that the outputs name already
 * (CPython's JIT code, whose memory CPython unmaps and the kernel hands out
 * again): trampolines there would share addresses with it in perf's map,
 * which has no time to tell them apart. */
typedef int (*pi_arena_taken_fn)(uintptr_t start, size_t len, void *ctx);

struct pi_arena_pool {
    pi_arena_header_fn fill_header; /* optional */
    void *header_ctx;
    pi_arena_taken_fn taken; /* optional: such mappings are passed over */
    void *taken_ctx;
    uint8_t *base;      /* current arena's slots, NULL before the first */
    uint32_t next_slot; /* next free slot in the current arena */
    uint64_t slots_made; /* slots handed out, all arenas: tags and code_index */
    uint64_t salt;      /* distinguishes this process's tags */
    uint64_t arenas;    /* arenas mapped so far */
};

/* Returns the address of a fresh slot (a copy of image whose tag is unique),
 * mapping and sealing a new arena when the current one is full; NULL if the
 * system refuses executable memory (errno set). Not thread-safe: the caller
 * serialises. */
void *pi_arena_alloc(struct pi_arena_pool *pool, const struct pi_slot_image *image);

/* The next slot comes from a fresh arena. For a forked child: perf names the
 * arenas mapped before the fork after the parent's map, where a slot left
 * free here may name what the parent puts in it later. Async-signal-safe. */
void pi_arena_retire_current(struct pi_arena_pool *pool);

/* The tag value of slot number n, as written into the code. Pure. */
uint64_t pi_arena_tag(const struct pi_arena_pool *pool, uint64_t n);

#endif
