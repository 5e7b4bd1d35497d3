/* Jitdump record encoders; see jitdump_records.h. Fixed parts are filled as
 * structs and copied with memcpy, so `out` needs no alignment. */
#include "jitdump_records.h"

#include "jitdump_format.h"

#include <string.h>

#define RECORD_ALIGN 8u /* UNWINDING_INFO padding, as perf's writers do */

/* Sums record parts; 0 on overflow of the 32-bit total_size. */
static size_t record_size(size_t fixed, uint64_t a, uint64_t b)
{
    uint64_t limit = UINT32_MAX;
    if (a > limit || b > limit || (uint64_t)fixed + a + b > limit)
        return 0;
    return (size_t)(fixed + a + b);
}

static struct pi_jr_prefix prefix(uint32_t id, size_t total, uint64_t timestamp)
{
    struct pi_jr_prefix p = { id, (uint32_t)total, timestamp };
    return p;
}

size_t pi_jr_code_load_size(const char *name, uint64_t code_size)
{
    return record_size(sizeof(struct pi_jr_code_load), strlen(name) + 1, code_size);
}

size_t pi_jr_debug_info_size(const char *filename, size_t pad)
{
    size_t name_len = strlen(filename) + 1;
    if (pad >= RECORD_ALIGN)
        return 0;
    return record_size(sizeof(struct pi_jr_debug_info) + 2 * sizeof(struct pi_jr_debug_entry),
                       2 * name_len, pad);
}

size_t pi_jr_unwinding_info_size(uint64_t unwinding_size)
{
    size_t n = record_size(sizeof(struct pi_jr_unwinding_info), unwinding_size, 0);
    size_t padded = (n + RECORD_ALIGN - 1) / RECORD_ALIGN * RECORD_ALIGN;
    return n && padded <= UINT32_MAX ? padded : 0;
}

size_t pi_jr_header(uint8_t *out, size_t cap, uint32_t elf_mach, uint32_t pid,
                    uint64_t timestamp)
{
    struct pi_jitdump_header h = {
        .magic = PI_JITDUMP_MAGIC,
        .version = PI_JITDUMP_VERSION,
        .total_size = sizeof h,
        .elf_mach = elf_mach,
        .pad1 = 0,
        .pid = pid,
        .timestamp = timestamp,
        .flags = 0,
    };
    if (cap < sizeof h)
        return 0;
    memcpy(out, &h, sizeof h);
    return sizeof h;
}

size_t pi_jr_unwinding_info(uint8_t *out, size_t cap, uint64_t timestamp, const uint8_t *unwind,
                            uint64_t total, uint64_t hdr_size, uint64_t mapped_size)
{
    size_t n = pi_jr_unwinding_info_size(total);
    struct pi_jr_unwinding_info r;

    if (n == 0 || cap < n || hdr_size > total)
        return 0;
    r.p = prefix(PI_JIT_CODE_UNWINDING_INFO, n, timestamp);
    r.unwinding_size = total;
    r.eh_frame_hdr_size = hdr_size;
    r.mapped_size = mapped_size;
    memcpy(out, &r, sizeof r);
    memcpy(out + sizeof r, unwind, (size_t)total);
    memset(out + sizeof r + total, 0, n - sizeof r - (size_t)total);
    return n;
}

size_t pi_jr_debug_info(uint8_t *out, size_t cap, uint64_t timestamp, uint64_t code_addr,
                        uint64_t code_size, int32_t lineno, const char *filename, size_t pad)
{
    size_t n = pi_jr_debug_info_size(filename, pad);
    size_t name_len = strlen(filename) + 1;
    struct pi_jr_debug_info r;
    /* Two rows with the same line: where the code starts and its last byte.
     * perf turns the entries into a DWARF line table whose last row ends
     * the sequence, so a single row would describe an empty range. */
    struct pi_jr_debug_entry rows[2] = {
        {code_addr, lineno, 0},
        {code_addr + (code_size > 0 ? code_size - 1 : 0), lineno, 0},
    };

    if (n == 0 || cap < n)
        return 0;
    r.p = prefix(PI_JIT_CODE_DEBUG_INFO, n, timestamp);
    r.code_addr = code_addr;
    r.nr_entry = 2;
    size_t off = 0;
    memcpy(out + off, &r, sizeof r);
    off += sizeof r;
    for (int i = 0; i < 2; i++) {
        memcpy(out + off, &rows[i], sizeof rows[i]);
        off += sizeof rows[i];
        memcpy(out + off, filename, name_len);
        off += name_len;
    }
    memset(out + off, 0, pad);
    return n;
}

size_t pi_jr_code_load(uint8_t *out, size_t cap, uint64_t timestamp, uint32_t pid, uint32_t tid,
                       uint64_t code_addr, const void *code, uint64_t code_size,
                       uint64_t code_index, const char *name)
{
    size_t n = pi_jr_code_load_size(name, code_size);
    size_t name_len = strlen(name) + 1;
    struct pi_jr_code_load r;

    if (n == 0 || cap < n)
        return 0;
    r.p = prefix(PI_JIT_CODE_LOAD, n, timestamp);
    r.pid = pid;
    r.tid = tid;
    r.vma = code_addr;
    r.code_addr = code_addr;
    r.code_size = code_size;
    r.code_index = code_index;
    memcpy(out, &r, sizeof r);
    memcpy(out + sizeof r, name, name_len);
    if (code != NULL)
        memcpy(out + sizeof r + name_len, code, (size_t)code_size);
    else
        memset(out + sizeof r + name_len, 0, (size_t)code_size);
    return n;
}

size_t pi_jr_code_close(uint8_t *out, size_t cap, uint64_t timestamp)
{
    struct pi_jr_code_close r = { prefix(PI_JIT_CODE_CLOSE, sizeof r, timestamp) };
    if (cap < sizeof r)
        return 0;
    memcpy(out, &r, sizeof r);
    return sizeof r;
}
