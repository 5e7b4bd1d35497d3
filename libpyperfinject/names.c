#include "names.h"

#include <string.h>

/* Length of the valid UTF-8 sequence at s (at most n bytes), or 0. Rejects
 * overlong forms, surrogates and code points above U+10FFFF. */
static size_t utf8_sequence(const unsigned char *s, size_t n)
{
    unsigned char c = s[0];
    size_t len;
    unsigned min_cp;
    unsigned cp;
    if (c < 0x80)
        return 1;
    if (c >= 0xc2 && c <= 0xdf)
        len = 2, min_cp = 0x80, cp = c & 0x1f;
    else if (c >= 0xe0 && c <= 0xef)
        len = 3, min_cp = 0x800, cp = c & 0x0f;
    else if (c >= 0xf0 && c <= 0xf4)
        len = 4, min_cp = 0x10000, cp = c & 0x07;
    else
        return 0;
    if (len > n)
        return 0;
    for (size_t i = 1; i < len; i++) {
        if ((s[i] & 0xc0) != 0x80)
            return 0;
        cp = (cp << 6) | (s[i] & 0x3f);
    }
    if (cp < min_cp || cp > 0x10ffff || (cp >= 0xd800 && cp <= 0xdfff))
        return 0;
    return len;
}

/* 1 if all eight bytes of w are printable ASCII (0x20..0x7e): no byte
 * below 0x20 and none above 0x7e, tested on the whole word at once. */
static int printable8(uint64_t w)
{
    const uint64_t ones = 0x0101010101010101u, highs = 0x8080808080808080u;
    uint64_t below = (w - ones * 0x20) & ~w;  /* high bit set in bytes < 0x20 */
    uint64_t above = (w + ones * (0x7f - 0x7e)) | w; /* ... in bytes > 0x7e */
    return ((below | above) & highs) == 0;
}

/* Length of the run of printable ASCII at s[0..len): eight bytes a step,
 * then byte by byte. */
static size_t printable_run(const unsigned char *s, size_t len)
{
    size_t run = 0;
    for (uint64_t w; run + 8 <= len && (memcpy(&w, s + run, 8), printable8(w));)
        run += 8;
    while (run < len && s[run] >= 0x20 && s[run] < 0x7f)
        run++;
    return run;
}

/* 1 if all of s[0..len) is printable ASCII: word by word, the last word
 * overlapping the one before it; under eight bytes, byte by byte. */
static int all_printable(const unsigned char *s, size_t len)
{
    uint64_t w;
    if (len < 8) {
        for (size_t i = 0; i < len; i++)
            if (s[i] < 0x20 || s[i] >= 0x7f)
                return 0;
        return 1;
    }
    for (size_t i = 0; i + 8 <= len; i += 8)
        if (memcpy(&w, s + i, 8), !printable8(w))
            return 0;
    return memcpy(&w, s + len - 8, 8), printable8(w);
}

/* Appends src with escaping; returns 1 if all of it fitted. */
static int append(char *out, size_t *used, size_t cap, const char *src, size_t len)
{
    static const char hex[] = "0123456789abcdef";
    const unsigned char *s = (const unsigned char *)src;
    size_t u = *used;
    size_t i = 0;
    while (i < len) {
        /* Runs of printable ASCII (nearly every name) are copied whole. */
        size_t run = printable_run(s + i, len - i);
        if (run > 0) {
            size_t room = cap - 1 - u;
            size_t n = run < room ? run : room;
            memcpy(out + u, s + i, n);
            u += n;
            i += n;
            if (n < run)
                break; /* out of room */
            continue;
        }
        size_t seq = utf8_sequence(s + i, len - i);
        if (seq == 1 && s[i] >= 0x20 && s[i] != 0x7f) {
            if (u + 1 >= cap)
                break;
            out[u++] = (char)s[i++];
        } else if (seq > 1) {
            if (u + seq >= cap)
                break;
            memcpy(out + u, s + i, seq);
            u += seq;
            i += seq;
        } else { /* control byte or a byte that starts no valid sequence */
            if (u + 4 >= cap)
                break;
            out[u++] = '\\';
            out[u++] = 'x';
            out[u++] = hex[s[i] >> 4];
            out[u++] = hex[s[i] & 15];
            i++;
        }
    }
    out[u] = '\0';
    *used = u;
    return i == len;
}

size_t pi_sanitize_append(char *out, size_t used, size_t cap, const char *src, size_t len)
{
    if (cap == 0 || used >= cap)
        return used;
    if (len < cap - used && all_printable((const unsigned char *)src, len)) {
        memcpy(out + used, src, len);
        out[used + len] = '\0';
        return used + len;
    }
    append(out, &used, cap, src, len);
    return used;
}

size_t pi_format_symbol(char *out, size_t cap, const char *qualname, size_t qualname_len,
                        const char *filename, size_t filename_len)
{
    static const char ellipsis[] = "...";
    if (cap < sizeof ellipsis + 8)
        return cap ? (out[0] = '\0', 0) : 0;
    /* Work within PI_SYMBOL_MAX, keeping room for the ellipsis. */
    size_t limit = cap < PI_SYMBOL_MAX + 1 ? cap : PI_SYMBOL_MAX + 1;
    size_t body = limit - (sizeof ellipsis - 1);
    /* Nearly every name: printable and short. Copied whole, as the escaping
     * loop below would copy it (it runs once per new function). */
    size_t total = 4 + qualname_len + 1 + filename_len;
    if (qualname != NULL && filename != NULL && total < body &&
        all_printable((const unsigned char *)qualname, qualname_len) &&
        all_printable((const unsigned char *)filename, filename_len)) {
        memcpy(out, "py::", 4);
        memcpy(out + 4, qualname, qualname_len);
        out[4 + qualname_len] = ':';
        memcpy(out + 5 + qualname_len, filename, filename_len);
        out[total] = '\0';
        return total;
    }
    size_t used = 0;
    int whole = append(out, &used, body, "py::", 4) &&
                (qualname ? append(out, &used, body, qualname, qualname_len)
                          : append(out, &used, body, "?", 1)) &&
                append(out, &used, body, ":", 1) &&
                (filename ? append(out, &used, body, filename, filename_len)
                          : append(out, &used, body, "?", 1));
    if (!whole) {
        memcpy(out + used, ellipsis, sizeof ellipsis);
        used += sizeof ellipsis - 1;
    }
    return used;
}

/* Writes v in lowercase hex without leading zeros (at least one digit).
 * Returns the digits written (at most 16). */
static size_t put_hex(char *out, uint64_t v)
{
    static const char hex[] = "0123456789abcdef";
    size_t n = v == 0 ? 1 : (size_t)(64 - __builtin_clzll(v) + 3) / 4;
    for (size_t i = n; i-- > 0; v >>= 4)
        out[i] = hex[v & 15];
    return n;
}

size_t pi_format_map_line(char *out, size_t cap, uintptr_t start, uint32_t size,
                          const char *symbol, size_t symbol_len)
{
    /* Two numbers of at most 16 digits, two spaces, the newline and a NUL. */
    if (cap < symbol_len + 2 * 16 + 4)
        return 0;
    size_t n = put_hex(out, start);
    out[n++] = ' ';
    n += put_hex(out + n, size);
    out[n++] = ' ';
    memcpy(out + n, symbol, symbol_len);
    n += symbol_len;
    out[n++] = '\n';
    out[n] = '\0';
    return n;
}
