/* Pure encoders for jitdump header and records (formats: jitdump_format.h).
 *
 * Each encoder writes one complete header or record into the caller's buffer
 * and returns the bytes written, or 0 (writing nothing) if `cap` is too small
 * or the record would not fit the format's 32-bit total_size. They do no I/O,
 * read no clock and keep no state: timestamps, pids and code_index come from
 * the caller, so the writer decides ordering and locking.
 *
 * Per trampoline the writer emits DEBUG_INFO, UNWINDING_INFO, CODE_LOAD in
 * that order: perf inject attaches the last debug and unwinding records it
 * saw to the next load, so nothing may come between them and their load.
 */
#ifndef PI_JITDUMP_RECORDS_H
#define PI_JITDUMP_RECORDS_H

#include <stddef.h>
#include <stdint.h>

/* Record sizes, for sizing buffers; 0 if the record could not be encoded. */
size_t pi_jr_code_load_size(const char *name, uint64_t code_size);
size_t pi_jr_debug_info_size(const char *filename, size_t pad);
size_t pi_jr_unwinding_info_size(uint64_t unwinding_size);

/* File header (40 bytes). timestamp is informational (perf ignores it);
 * flags are 0: record timestamps are CLOCK_MONOTONIC. */
size_t pi_jr_header(uint8_t *out, size_t cap, uint32_t elf_mach, uint32_t pid,
                    uint64_t timestamp);

/* JIT_CODE_UNWINDING_INFO carrying `total` bytes of .eh_frame followed by a
 * hdr_size-byte .eh_frame_hdr (pi_ehframe_build's output and sizes), then
 * zero padding to a multiple of 8. */
size_t pi_jr_unwinding_info(uint8_t *out, size_t cap, uint64_t timestamp, const uint8_t *unwind,
                            uint64_t total, uint64_t hdr_size, uint64_t mapped_size);

/* JIT_CODE_DEBUG_INFO with two line entries, {code_addr} and
 * {code_addr + code_size - 1}, both at lineno in filename: the whole
 * trampoline maps to the function's first line. Then `pad` zero bytes
 * (0..7; readers count entries by nr_entry), with which a writer makes a
 * group of records a multiple of 8. */
size_t pi_jr_debug_info(uint8_t *out, size_t cap, uint64_t timestamp, uint64_t code_addr,
                        uint64_t code_size, int32_t lineno, const char *filename, size_t pad);

/* JIT_CODE_LOAD: vma = code_addr; the code bytes are copied from `code`
 * (the live trampoline, so dumped bytes equal executed bytes), or are zeros
 * when `code` is NULL (JIT code whose memory CPython gave back). */
size_t pi_jr_code_load(uint8_t *out, size_t cap, uint64_t timestamp, uint32_t pid, uint32_t tid,
                       uint64_t code_addr, const void *code, uint64_t code_size,
                       uint64_t code_index, const char *name);

/* JIT_CODE_CLOSE: the prefix alone. */
size_t pi_jr_code_close(uint8_t *out, size_t cap, uint64_t timestamp);

#endif
