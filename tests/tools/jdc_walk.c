/* The record walk; see jdc_walk.h. */
#include "jdc_walk.h"

#include "jdc_records.h"
#include "jdc_template.h"
#include "jitdump_format.h"

#include <string.h>

#define MAX_RECORD (16u << 20) /* beyond this a size field is garbage */
/* The largest group of one trampoline (two names of PI_SYMBOL_MAX, code,
 * unwind info): an unfinished one fits in this. */
#define MAX_GROUP (8u << 10)

/* The records end at a size-0 prefix at off (mmaplog.h): zeros, after at
 * most one group whose head was never stored. */
static void on_untrimmed(struct jdc_scan *s, size_t off)
{
    struct pi_jdc_report *r = s->r;
    size_t last = s->len;
    while (last > off && s->buf[last - 1] == 0)
        last--;
    r->untrimmed = s->len - off;
    r->unfinished = last > off;
    if (last > off + MAX_GROUP)
        jdc_violate(r, s->at, PI_JDC_AFTER_END,
                    "non-zero byte at %zu, %zu bytes past the records' end at %zu", last - 1,
                    last - 1 - off, off);
    if (s->o->require_trimmed)
        jdc_violate(r, s->at, PI_JDC_UNTRIMMED,
                    "%zu bytes after the records' end were not cut off%s", s->len - off,
                    r->unfinished ? " (among them an unfinished group)" : "");
}

static bool on_header(struct jdc_scan *s)
{
    struct pi_jdc_report *r = s->r;
    struct pi_jitdump_header h;
    struct jdc_where at = JDC_NO_RECORD;

    if (s->len < sizeof h) {
        r->truncated = true;
        jdc_violate(r, at, PI_JDC_TRUNCATED, "file of %zu bytes is shorter than the header",
                    s->len);
        return false;
    }
    memcpy(&h, s->buf, sizeof h);
    if (h.magic == PI_JITDUMP_MAGIC_SWAPPED) {
        jdc_violate(r, at, PI_JDC_BAD_MAGIC,
                    "magic is byte-swapped: written on another endianness");
        return false;
    }
    if (h.magic != PI_JITDUMP_MAGIC) {
        jdc_violate(r, at, PI_JDC_BAD_MAGIC, "magic 0x%08x, expected 0x%08x", h.magic,
                    PI_JITDUMP_MAGIC);
        return false;
    }
    r->elf_mach = h.elf_mach;
    r->pid = h.pid;
    if (h.version != PI_JITDUMP_VERSION)
        jdc_violate(r, at, PI_JDC_BAD_VERSION, "version %u, expected %u", h.version,
                    PI_JITDUMP_VERSION);
    if (!jdc_arch_for(h.elf_mach))
        jdc_violate(r, at, PI_JDC_BAD_ELF_MACH, "elf_mach %u, expected %u or %u", h.elf_mach,
                    JDC_EM_X86_64, JDC_EM_AARCH64);
    if (h.pad1 != 0)
        jdc_violate(r, at, PI_JDC_BAD_HEADER, "pad1 %u, expected 0", h.pad1);
    if (h.flags & ~PI_JITDUMP_FLAGS_KNOWN)
        jdc_violate(r, at, PI_JDC_BAD_HEADER, "unknown flags 0x%llx", (unsigned long long)h.flags);
    if (h.pid == 0)
        jdc_violate(r, at, PI_JDC_BAD_PID, "header pid 0");
    else if (s->o->expect_pid && h.pid != s->o->expect_pid)
        jdc_violate(r, at, PI_JDC_BAD_PID, "header pid %u, expected %u", h.pid, s->o->expect_pid);
    if (h.total_size != sizeof h) {
        jdc_violate(r, at, PI_JDC_BAD_HEADER_SIZE, "header total_size %u, expected %zu",
                    h.total_size, sizeof h);
        if (h.total_size < sizeof h || h.total_size > s->len)
            return false;
    }
    return true;
}

/* Returns false when the stream cannot be followed any further. */
static bool on_record(struct jdc_scan *s, size_t off)
{
    struct pi_jdc_report *r = s->r;
    struct pi_jr_prefix p;

    s->at = (struct jdc_where){ r->records + 1, off };
    if (s->len - off < sizeof p) {
        size_t i = off;
        while (i < s->len && s->buf[i] == 0)
            i++;
        if (i == s->len) { /* zeros short of a prefix: the records' end too */
            on_untrimmed(s, off);
            return false;
        }
        r->truncated = true;
        jdc_violate(r, s->at, PI_JDC_TRUNCATED,
                    "file ends inside a record prefix (%zu of 16 bytes)", s->len - off);
        return false;
    }
    memcpy(&p, s->buf + off, sizeof p);
    if (p.id == 0 && p.total_size == 0) {
        on_untrimmed(s, off);
        return false;
    }
    if (p.total_size < sizeof p || p.total_size > MAX_RECORD) {
        jdc_violate(r, s->at, PI_JDC_BAD_RECORD_SIZE, "record id %u with total_size %u", p.id,
                    p.total_size);
        return false;
    }
    if (p.total_size > s->len - off) {
        r->truncated = true;
        jdc_violate(r, s->at, PI_JDC_TRUNCATED,
                    "file ends inside a %u-byte record (id %u), %zu read", p.total_size, p.id,
                    s->len - off);
        return false;
    }
    r->records++;

    if (s->closed)
        jdc_violate(r, s->at, PI_JDC_AFTER_CLOSE, "record id %u after CODE_CLOSE", p.id);
    if (p.timestamp < s->last_ts)
        jdc_violate(r, s->at, PI_JDC_TIMESTAMP_ORDER, "timestamp %llu after %llu",
                    (unsigned long long)p.timestamp, (unsigned long long)s->last_ts);
    else
        s->last_ts = p.timestamp;
    if (s->unwind.set && p.id != PI_JIT_CODE_LOAD) {
        jdc_violate(r, s->unwind.at, PI_JDC_UNWIND_NOT_BEFORE_LOAD,
                    "UNWINDING_INFO followed by record id %u, not its CODE_LOAD", p.id);
        s->unwind.set = false;
    }
    if (s->debug.set && p.id != PI_JIT_CODE_LOAD && p.id != PI_JIT_CODE_UNWINDING_INFO &&
        p.id != PI_JIT_CODE_DEBUG_INFO) {
        jdc_violate(r, s->debug.at, PI_JDC_BAD_DEBUG_INFO,
                    "DEBUG_INFO followed by record id %u, not its CODE_LOAD", p.id);
        s->debug.set = false;
    }

    const uint8_t *rec = s->buf + off;
    switch (p.id) {
    case PI_JIT_CODE_LOAD:
        jdc_check_code_load(s, rec, p.total_size);
        break;
    case PI_JIT_CODE_DEBUG_INFO:
        jdc_check_debug_info(s, rec, p.total_size);
        break;
    case PI_JIT_CODE_UNWINDING_INFO:
        jdc_check_unwinding_info(s, rec, p.total_size);
        break;
    case PI_JIT_CODE_CLOSE:
        if (p.total_size != sizeof(struct pi_jr_code_close))
            jdc_violate(r, s->at, PI_JDC_BAD_RECORD_SIZE, "CODE_CLOSE of %u bytes", p.total_size);
        s->closed = true;
        r->closes++;
        break;
    case PI_JIT_CODE_MOVE:
        jdc_violate(r, s->at, PI_JDC_UNSUPPORTED_RECORD, "CODE_MOVE: trampolines never move");
        break;
    default:
        jdc_violate(r, s->at, PI_JDC_UNKNOWN_RECORD, "unknown record id %u (%u bytes)", p.id,
                    p.total_size);
        break;
    }
    return true;
}

void jdc_walk(const uint8_t *buf, size_t len, const struct pi_jdc_options *o,
              struct pi_jdc_report *report, struct jdc_codes *codes)
{
    struct jdc_scan s;

    memset(&s, 0, sizeof s);
    s.r = report;
    s.o = o;
    s.buf = buf;
    s.len = len;
    s.codes = codes;
    if (!on_header(&s))
        return;
    uint32_t off32;
    memcpy(&off32, buf + offsetof(struct pi_jitdump_header, total_size), sizeof off32);
    size_t off = off32; /* records start after the header, whatever its size */
    while (off < len && on_record(&s, off)) {
        uint32_t size;
        memcpy(&size, buf + off + offsetof(struct pi_jr_prefix, total_size), sizeof size);
        off += size;
    }
    /* A group whose CODE_LOAD never came: the writer died mid-group. */
    if ((s.unwind.set || s.debug.set) && !report->truncated) {
        report->truncated = true;
        jdc_violate(report, s.unwind.set ? s.unwind.at : s.debug.at, PI_JDC_TRUNCATED,
                    "file ends before the CODE_LOAD of this %s record",
                    s.unwind.set ? "UNWINDING_INFO" : "DEBUG_INFO");
    }
}
