/* Field access at byte offsets, for the dump checker and the unit tests.
 *
 * Jitdump records and .eh_frame data put fields at unaligned offsets, so they
 * are copied with memcpy, never dereferenced. Host byte order, as the
 * library writes them (the dump's magic says which; the checker reports a
 * swapped one rather than following it). Header-only: nothing new to link. */
#ifndef PI_TEST_BYTES_H
#define PI_TEST_BYTES_H

#include <stdint.h>
#include <string.h>

/* One reader and one writer per field type; every type is the same code. */
#define PI_BYTES_FIELD(type, get, set)                                                         \
    static inline type get(const uint8_t *p)                                                   \
    {                                                                                          \
        type v;                                                                                \
        memcpy(&v, p, sizeof v);                                                               \
        return v;                                                                              \
    }                                                                                          \
    static inline void set(uint8_t *p, type v)                                                 \
    {                                                                                          \
        memcpy(p, &v, sizeof v);                                                               \
    }

PI_BYTES_FIELD(int32_t, s32_at, set_s32)
PI_BYTES_FIELD(uint32_t, u32_at, set_u32)
PI_BYTES_FIELD(uint64_t, u64_at, set_u64)

#undef PI_BYTES_FIELD

/* The 8-byte padding of UNWINDING_INFO records, and of code before a slot's .eh_frame. */
static inline uint64_t round8(uint64_t v)
{
    return (v + 7) & ~(uint64_t)7;
}

#endif
