/* Fuzz target: the name sanitiser (names.c).
 *
 * pi_sanitize_append, pi_format_symbol and pi_format_map_line get
 * arbitrary bytes, capacities and offsets. Invariants:
 *   - never write outside [0, cap) (exact-size heap buffers under ASan),
 *     always NUL-terminate, return strlen of the result;
 *   - the output is strict UTF-8 without control bytes;
 *   - it equals an independent reference escaping (printable UTF-8 kept,
 *     anything else as \xNN) when it fits, and is a prefix of it cut at a
 *     whole character/escape otherwise (pi_format_symbol then adds "...");
 *   - symbols are at most PI_SYMBOL_MAX bytes;
 *   - a map line is "<hex> <hex> <symbol>\n" with exactly one newline. */
#include "fuzz_common.h"
#include "names.h"

#include <inttypes.h>

/* Reference escaping: appends to ref (cap large enough: 4x + 1), records
 * each token's end offset in ends (one per token). */
static size_t reference(const uint8_t *s, size_t n, char *ref, size_t used, size_t *ends,
                        size_t *nends)
{
    static const char hex[] = "0123456789abcdef";
    for (size_t i = 0; i < n;) {
        size_t l = fz_utf8_len(s + i, n - i);
        if (l == 1 && s[i] >= 0x20 && s[i] != 0x7f) {
            ref[used++] = (char)s[i++];
        } else if (l > 1) {
            memcpy(ref + used, s + i, l);
            used += l;
            i += l;
        } else {
            ref[used++] = '\\';
            ref[used++] = 'x';
            ref[used++] = hex[s[i] >> 4];
            ref[used++] = hex[s[i] & 15];
            i++;
        }
        ends[(*nends)++] = used;
    }
    return used;
}

static int is_token_end(const size_t *ends, size_t nends, size_t start, size_t at)
{
    if (at == start)
        return 1;
    for (size_t i = 0; i < nends; i++)
        if (ends[i] == at)
            return 1;
    return 0;
}

static void fuzz_sanitize(struct fz *f)
{
    size_t cap = fz_u8(f) | (size_t)(fz_u8(f) & 3) << 8; /* 0..1023 */
    size_t used = fz_u8(f) % (cap + 3);                  /* may be >= cap */
    size_t len;
    const uint8_t *src = fz_bytes(f, &len);
    uint8_t *in = fz_dup(src, len);
    char *out = malloc(cap ? cap : 1);
    char *before = malloc(cap ? cap : 1);
    char *ref = malloc(used + 4 * len + 1);
    size_t *ends = malloc((len + 1) * sizeof *ends);
    size_t nends = 0;
    FUZZ_CHECK(in && out && before && ref && ends, "out of memory");
    for (size_t i = 0; i < cap; i++)
        out[i] = (char)('A' + i % 26);
    memcpy(before, out, cap);

    size_t r = pi_sanitize_append(out, used, cap, (const char *)in, len);
    if (cap == 0 || used >= cap) {
        FUZZ_CHECK(r == used, "returned %zu for used %zu cap %zu", r, used, cap);
        FUZZ_CHECK(memcmp(out, before, cap) == 0, "buffer changed although full");
    } else {
        FUZZ_CHECK(r >= used && r < cap, "length %zu outside [%zu, %zu)", r, used, cap);
        FUZZ_CHECK(out[r] == '\0', "not NUL-terminated");
        FUZZ_CHECK(memcmp(out, before, used) == 0, "bytes before `used` changed");
        FUZZ_CHECK(strlen(out + used) == r - used, "embedded NUL");
        FUZZ_CHECK(fz_clean_text((const uint8_t *)out + used, r - used), "unclean output");
        size_t full = reference(in, len, ref, used, ends, &nends);
        FUZZ_CHECK(memcmp(out + used, ref + used, r - used) == 0, "differs from reference");
        FUZZ_CHECK(is_token_end(ends, nends, used, r), "cut inside a character/escape at %zu",
                   r);
        if (full < cap)
            FUZZ_CHECK(r == full, "fits (%zu < cap %zu) but only %zu written", full, cap, r);
        else
            FUZZ_CHECK(r < full, "overflowed the reference");
    }
    free(in);
    free(out);
    free(before);
    free(ref);
    free(ends);
}

static void fuzz_symbol(struct fz *f)
{
    uint8_t flags = fz_u8(f);
    size_t cap = fz_u8(f) | (size_t)(fz_u8(f) & 7) << 8; /* 0..2047 */
    size_t qlen, flen;
    const uint8_t *q0 = fz_bytes(f, &qlen);
    const uint8_t *f0 = fz_bytes(f, &flen);
    uint8_t *q = (flags & 1) ? NULL : fz_dup(q0, qlen);
    uint8_t *fn = (flags & 2) ? NULL : fz_dup(f0, flen);
    char *out = malloc(cap ? cap : 1);
    size_t total = 4 + 4 * (qlen + flen) + 16;
    char *ref = malloc(total);
    size_t *ends = malloc((qlen + flen + 8) * sizeof *ends);
    size_t nends = 0;
    FUZZ_CHECK(out && ref && ends, "out of memory");

    size_t r = pi_format_symbol(out, cap, (const char *)q, q ? qlen : 0, (const char *)fn,
                                fn ? flen : 0);
    if (cap < 12) { /* too small to hold even "py::...": empty */
        FUZZ_CHECK(r == 0, "returned %zu for cap %zu", r, cap);
        if (cap)
            FUZZ_CHECK(out[0] == '\0', "not emptied");
    } else {
        size_t u = 0;
        memcpy(ref, "py::", 4);
        u = 4;
        ends[nends++] = 1, ends[nends++] = 2, ends[nends++] = 3, ends[nends++] = 4;
        u = q ? reference(q, qlen, ref, u, ends, &nends) : (ref[u] = '?', ends[nends++] = u + 1);
        ref[u++] = ':';
        ends[nends++] = u;
        u = fn ? reference(fn, flen, ref, u, ends, &nends)
               : (ref[u] = '?', ends[nends++] = u + 1);
        size_t limit = cap < PI_SYMBOL_MAX + 1 ? cap : PI_SYMBOL_MAX + 1;
        size_t body = limit - 3;
        FUZZ_CHECK(r < cap && out[r] == '\0' && strlen(out) == r, "length/NUL (%zu, cap %zu)",
                   r, cap);
        FUZZ_CHECK(r <= PI_SYMBOL_MAX, "symbol of %zu bytes", r);
        FUZZ_CHECK(fz_clean_text((const uint8_t *)out, r), "unclean symbol");
        if (u < body) {
            FUZZ_CHECK(r == u && memcmp(out, ref, u) == 0, "whole symbol differs from reference");
        } else {
            FUZZ_CHECK(r >= 3 && memcmp(out + r - 3, "...", 3) == 0, "cut symbol lacks ...");
            FUZZ_CHECK(r - 3 < body, "cut symbol longer than its budget");
            FUZZ_CHECK(memcmp(out, ref, r - 3) == 0, "cut symbol is not a prefix");
            FUZZ_CHECK(is_token_end(ends, nends, 0, r - 3), "cut inside a character/escape");
        }

        /* The map line built from it. */
        uintptr_t start = (uintptr_t)fz_u64(f);
        uint32_t size = fz_u32(f);
        size_t lcap = fz_u8(f) % 2 ? (size_t)fz_u8(f) : PI_SYMBOL_MAX + 64;
        char *line = malloc(lcap ? lcap : 1);
        FUZZ_CHECK(line, "out of memory");
        size_t n = pi_format_map_line(line, lcap, start, size, out, r);
        char want[PI_SYMBOL_MAX + 64];
        int wn = snprintf(want, sizeof want, "%" PRIxPTR " %" PRIx32 " %s\n", start, size, out);
        if (lcap < r + 36) { /* room for the longest numbers, whatever these are */
            FUZZ_CHECK(n == 0, "cap %zu below %zu but %zu returned", lcap, r + 36, n);
        } else {
            FUZZ_CHECK(n == (size_t)wn && memcmp(line, want, n + 1) == 0, "map line differs");
            FUZZ_CHECK(memchr(line, '\n', n) == line + n - 1, "newline inside the line");
        }
        free(line);
    }
    free(q);
    free(fn);
    free(out);
    free(ref);
    free(ends);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct fz f = {data, size};
    if (fz_u8(&f) & 1)
        fuzz_symbol(&f);
    else
        fuzz_sanitize(&f);
    return 0;
}
