/* Shared helpers for the libFuzzer targets in fuzz/ (see docs/reliability.md).
 *
 * Each target links the library's own objects (compiled with
 * -fsanitize=fuzzer,address,undefined) and checks invariants with
 * FUZZ_CHECK, which prints the broken rule and aborts so that libFuzzer
 * saves the input. */
#ifndef PI_FUZZ_COMMON_H
#define PI_FUZZ_COMMON_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define FUZZ_CHECK(cond, ...)                                                                 \
    do {                                                                                      \
        if (!(cond)) {                                                                        \
            fprintf(stderr, "%s:%d: invariant broken: %s: ", __FILE__, __LINE__, #cond);      \
            fprintf(stderr, __VA_ARGS__);                                                     \
            fputc('\n', stderr);                                                              \
            abort();                                                                          \
        }                                                                                     \
    } while (0)

/* Consumes the fuzz input from the front. Past the end every read is 0. */
struct fz {
    const uint8_t *p;
    size_t n;
};

static inline uint8_t fz_u8(struct fz *f)
{
    if (f->n == 0)
        return 0;
    f->n--;
    return *f->p++;
}

static inline uint32_t fz_u32(struct fz *f)
{
    uint32_t v = 0;
    for (int i = 0; i < 4; i++)
        v |= (uint32_t)fz_u8(f) << (8 * i);
    return v;
}

static inline uint64_t fz_u64(struct fz *f)
{
    return (uint64_t)fz_u32(f) | (uint64_t)fz_u32(f) << 32;
}

/* A byte string of length given by the next byte (or two: the top bit of
 * the first says "long"), at most what is left. Returns a pointer into the
 * input. */
static inline const uint8_t *fz_bytes(struct fz *f, size_t *len)
{
    size_t want = fz_u8(f);
    if (want & 0x80)
        want = ((want & 0x7f) << 8 | fz_u8(f)) * 4;
    if (want > f->n)
        want = f->n;
    const uint8_t *p = f->p;
    f->p += want;
    f->n -= want;
    *len = want;
    return p;
}

/* An exact-size heap copy (ASan then catches any read past its end). */
static inline uint8_t *fz_dup(const uint8_t *p, size_t len)
{
    uint8_t *d = malloc(len ? len : 1);
    if (d && len)
        memcpy(d, p, len);
    return d;
}

/* Strict UTF-8 (no overlong forms, no surrogates, <= U+10FFFF), written
 * independently of names.c. Returns the sequence length at s, or 0. */
static inline size_t fz_utf8_len(const uint8_t *s, size_t n)
{
    uint8_t c = s[0];
    if (c < 0x80)
        return 1;
    size_t len;
    uint32_t cp;
    if ((c & 0xe0) == 0xc0)
        len = 2, cp = c & 0x1f;
    else if ((c & 0xf0) == 0xe0)
        len = 3, cp = c & 0x0f;
    else if ((c & 0xf8) == 0xf0)
        len = 4, cp = c & 0x07;
    else
        return 0;
    if (n < len)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = cp << 6 | (s[i] & 0x3f);
    }
    static const uint32_t min_cp[5] = {0, 0, 0x80, 0x800, 0x10000};
    if (cp < min_cp[len] || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* 1 if s[0, n) is strict UTF-8 without C0 controls or DEL. */
static inline int fz_clean_text(const uint8_t *s, size_t n)
{
    for (size_t i = 0; i < n;) {
        size_t l = fz_utf8_len(s + i, n - i);
        if (l == 0 || (l == 1 && (s[i] < 0x20 || s[i] == 0x7f)))
            return 0;
        i += l;
    }
    return 1;
}

#endif
