/* The jitdump file format, as code (Linux tools/perf/util/jitdump.h and
 * tools/perf/Documentation/jitdump-specification.txt).
 *
 * A file is one header followed by records; everything is in the writer's
 * native byte order, and perf detects a swapped magic. Each record starts
 * with a prefix whose total_size counts the prefix itself and any trailing
 * variable part, so a reader can skip records it does not know. Records are
 * not aligned in the file; readers must copy fields out, not cast.
 *
 * Every struct below is the fixed part of a record, fields in file order,
 * with no implicit padding (checked at the end of this file).
 */
#ifndef PI_JITDUMP_FORMAT_H
#define PI_JITDUMP_FORMAT_H

#include <stddef.h>
#include <stdint.h>

#define PI_JITDUMP_MAGIC 0x4A695444u         /* "JiTD" read as a native u32 */
#define PI_JITDUMP_MAGIC_SWAPPED 0x4454694Au /* written on the other endianness */
#define PI_JITDUMP_VERSION 1u

/* Header flags. Without ARCH_TIMESTAMP, record timestamps are
 * CLOCK_MONOTONIC nanoseconds and perf record must run with -k mono. */
#define PI_JITDUMP_FLAG_ARCH_TIMESTAMP (UINT64_C(1) << 0)
#define PI_JITDUMP_FLAGS_KNOWN PI_JITDUMP_FLAG_ARCH_TIMESTAMP

enum pi_jitdump_record_id {
    PI_JIT_CODE_LOAD = 0,
    PI_JIT_CODE_MOVE = 1,
    PI_JIT_CODE_DEBUG_INFO = 2,
    PI_JIT_CODE_CLOSE = 3,
    PI_JIT_CODE_UNWINDING_INFO = 4,
    PI_JIT_CODE_MAX, /* first id perf does not know */
};

struct pi_jitdump_header {
    uint32_t magic;      /* PI_JITDUMP_MAGIC */
    uint32_t version;    /* PI_JITDUMP_VERSION */
    uint32_t total_size; /* sizeof(struct pi_jitdump_header) */
    uint32_t elf_mach;   /* ELF e_machine of the code: 62, 183 */
    uint32_t pad1;       /* reserved, 0 */
    uint32_t pid;        /* process that wrote the file */
    uint64_t timestamp;  /* creation time; perf ignores it */
    uint64_t flags;      /* PI_JITDUMP_FLAG_* */
};

/* Mandatory start of every record. */
struct pi_jr_prefix {
    uint32_t id;         /* enum pi_jitdump_record_id */
    uint32_t total_size; /* whole record, prefix included */
    uint64_t timestamp;  /* CLOCK_MONOTONIC ns, non-decreasing in the file */
};

/* Followed by the NUL-terminated symbol name, then code_size code bytes.
 * total_size = sizeof + strlen(name) + 1 + code_size, no padding. */
struct pi_jr_code_load {
    struct pi_jr_prefix p;
    uint32_t pid;
    uint32_t tid;
    uint64_t vma;        /* address the code runs at; == code_addr here */
    uint64_t code_addr;
    uint64_t code_size;
    uint64_t code_index; /* unique per file; names jitted-PID-INDEX.so */
};

/* Not written by this project; known so that readers can name it. */
struct pi_jr_code_move {
    struct pi_jr_prefix p;
    uint32_t pid;
    uint32_t tid;
    uint64_t vma;
    uint64_t old_code_addr;
    uint64_t new_code_addr;
    uint64_t code_size;
    uint64_t code_index;
};

/* Source lines for the CODE_LOAD that follows it (perf keeps it until then).
 * Followed by nr_entry entries. */
struct pi_jr_debug_info {
    struct pi_jr_prefix p;
    uint64_t code_addr; /* of the next CODE_LOAD */
    uint64_t nr_entry;
};

/* Followed by the NUL-terminated file name ("\xff" alone: same as before). */
struct pi_jr_debug_entry {
    uint64_t addr;   /* code address the line starts at */
    int32_t lineno;  /* from 1 */
    int32_t discrim; /* column discriminator, 0 by default */
};

/* Unwind info for the CODE_LOAD that follows it. The payload is the
 * .eh_frame immediately followed by the .eh_frame_hdr (that is the order
 * perf's genelf reads, whatever the spec text says); the record is
 * zero-padded to a multiple of 8 bytes. perf inject maps the ELF it builds
 * over [code_addr, code_addr + round8(code_size) + mapped_size). */
struct pi_jr_unwinding_info {
    struct pi_jr_prefix p;
    uint64_t unwinding_size;    /* .eh_frame + .eh_frame_hdr bytes */
    uint64_t eh_frame_hdr_size; /* the trailing .eh_frame_hdr part */
    uint64_t mapped_size;       /* bytes after the code the ELF claims */
};

struct pi_jr_code_close {
    struct pi_jr_prefix p;
};

/* The layout is the contract: these sizes and offsets are the spec's. */
_Static_assert(sizeof(struct pi_jitdump_header) == 40, "jitdump header");
_Static_assert(offsetof(struct pi_jitdump_header, timestamp) == 24, "header timestamp");
_Static_assert(sizeof(struct pi_jr_prefix) == 16, "record prefix");
_Static_assert(sizeof(struct pi_jr_code_load) == 56, "code load");
_Static_assert(offsetof(struct pi_jr_code_load, code_index) == 48, "code_index");
_Static_assert(sizeof(struct pi_jr_code_move) == 64, "code move");
_Static_assert(sizeof(struct pi_jr_debug_info) == 32, "debug info");
_Static_assert(sizeof(struct pi_jr_debug_entry) == 16, "debug entry");
_Static_assert(sizeof(struct pi_jr_unwinding_info) == 40, "unwinding info");
_Static_assert(sizeof(struct pi_jr_code_close) == 16, "code close");

#endif
