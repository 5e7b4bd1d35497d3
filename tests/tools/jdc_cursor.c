/* The bounded DWARF reader; see jdc_cursor.h. */
#include "jdc_cursor.h"

#include <string.h>

static void take(struct jdc_cursor *c, void *dst, size_t n)
{
    if (c->bad || n > c->len - c->off) {
        c->bad = true;
        memset(dst, 0, n);
        return;
    }
    memcpy(dst, c->p + c->off, n);
    c->off += n;
}

/* Fixed-size fields: each width is the same read through take. */
#define READ_FIXED(type, name)                                                                 \
    type name(struct jdc_cursor *c)                                                            \
    {                                                                                          \
        type v;                                                                                \
        take(c, &v, sizeof v);                                                                 \
        return v;                                                                              \
    }

READ_FIXED(uint8_t, jdc_read_u8)
READ_FIXED(uint16_t, jdc_read_u16)
READ_FIXED(uint32_t, jdc_read_u32)
READ_FIXED(int32_t, jdc_read_s32)

#undef READ_FIXED

uint64_t jdc_read_uleb(struct jdc_cursor *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = jdc_read_u8(c);
        if (c->bad)
            return 0;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
        if (shift > 63) {
            c->bad = true;
            return 0;
        }
    }
}

int64_t jdc_read_sleb(struct jdc_cursor *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = jdc_read_u8(c);
        if (c->bad || shift > 63) {
            c->bad = true;
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}
