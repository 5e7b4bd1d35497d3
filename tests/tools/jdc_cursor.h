/* A bounded reader of DWARF-encoded bytes, for the .eh_frame decoder and
 * the CFI interpreter.
 *
 * No read goes past len (off must start at or below it): an overrun latches
 * `bad`, and from then on every read returns 0, so a caller can read a run
 * of fields and test `bad` once. Fixed-width fields are memcpy'd (they are
 * unaligned in a dump), host byte order. The cursor borrows p. */
#ifndef PI_JDC_CURSOR_H
#define PI_JDC_CURSOR_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct jdc_cursor {
    const uint8_t *p;
    size_t len;
    size_t off;
    bool bad;
};

uint8_t jdc_read_u8(struct jdc_cursor *c);
uint16_t jdc_read_u16(struct jdc_cursor *c);
uint32_t jdc_read_u32(struct jdc_cursor *c);
int32_t jdc_read_s32(struct jdc_cursor *c);
/* LEB128, kept to its low 64 bits; an over-long encoding latches bad. */
uint64_t jdc_read_uleb(struct jdc_cursor *c);
int64_t jdc_read_sleb(struct jdc_cursor *c);

#endif
