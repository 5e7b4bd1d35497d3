/* Symbol names and perf-map lines.
 *
 * Names come from the profiled program (function and file names) and must not
 * be able to break the line-oriented map format or confuse perf: control bytes
 * and invalid UTF-8 are written as \xNN, and lengths are bounded. Pure
 * functions; no allocation. */
#ifndef PI_NAMES_H
#define PI_NAMES_H

#include <stddef.h>
#include <stdint.h>

/* Longest symbol written (bytes, without the NUL); longer names are cut at a
 * UTF-8 boundary and end in "...". Keeps each map line one atomic write. */
#define PI_SYMBOL_MAX 1000

/* Appends `src[0..len)` to out (capacity cap, always NUL-terminated) with
 * control bytes and invalid UTF-8 escaped. Returns the new length. */
size_t pi_sanitize_append(char *out, size_t used, size_t cap, const char *src, size_t len);

/* Writes "py::<qualname>:<filename>" (sanitised, bounded by PI_SYMBOL_MAX and
 * cap) into out. NULL parts are written as "?". Returns the length. */
size_t pi_format_symbol(char *out, size_t cap, const char *qualname, size_t qualname_len,
                        const char *filename, size_t filename_len);

/* Writes one perf-map line "<start hex> <size hex> <symbol>\n" (no 0x, as
 * perf's jit-interface.txt specifies; symbol is symbol_len bytes), NUL-
 * terminated. Returns the length, or 0 if cap is smaller than symbol_len +
 * 36 (the longest numbers), whatever the numbers are. */
size_t pi_format_map_line(char *out, size_t cap, uintptr_t start, uint32_t size,
                          const char *symbol, size_t symbol_len);

#endif
