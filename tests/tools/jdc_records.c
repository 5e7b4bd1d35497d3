/* DEBUG_INFO, UNWINDING_INFO and CODE_LOAD records; see jdc_records.h. */
#include "jdc_records.h"

#include "bytes.h"
#include "jdc_unwind.h"
#include "jitdump_format.h"

#include <stdlib.h>
#include <string.h>

/* Copies a record's fixed-size head (len bytes) into dst, or reports the
 * record too short: it needs `need` bytes, the head and what must follow. */
static bool record_head(struct jdc_scan *s, const char *what, const uint8_t *rec, uint32_t size,
                        void *dst, size_t len, size_t need)
{
    if (size < need) {
        jdc_violate(s->r, s->at, PI_JDC_BAD_RECORD_SIZE, "%s of %u bytes", what, size);
        return false;
    }
    memcpy(dst, rec, len);
    return true;
}

void jdc_check_debug_info(struct jdc_scan *s, const uint8_t *rec, uint32_t size)
{
    struct pi_jr_debug_info d;
    if (!record_head(s, "DEBUG_INFO", rec, size, &d, sizeof d, sizeof d))
        return;
    if (s->debug.set)
        jdc_violate(s->r, s->debug.at, PI_JDC_BAD_DEBUG_INFO,
                    "DEBUG_INFO is not followed by a CODE_LOAD");
    s->r->debug_infos++;
    if (d.nr_entry == 0) {
        jdc_violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "DEBUG_INFO with no entries");
        return;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t off = sizeof d;
    for (uint64_t i = 0; i < d.nr_entry; i++) {
        struct pi_jr_debug_entry e;
        if (size - off < sizeof e) {
            jdc_violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO,
                        "entry %llu of %llu overruns the record", (unsigned long long)i,
                        (unsigned long long)d.nr_entry);
            return;
        }
        memcpy(&e, rec + off, sizeof e);
        off += sizeof e;
        const uint8_t *nul = memchr(rec + off, 0, size - off);
        if (!nul) {
            jdc_violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "entry %llu file name not terminated",
                        (unsigned long long)i);
            return;
        }
        if (nul == rec + off)
            jdc_violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "entry %llu has an empty file name",
                        (unsigned long long)i);
        off = (size_t)(nul - rec) + 1;
        if (e.lineno < 1)
            jdc_violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "entry %llu line %d (lines start at 1)",
                        (unsigned long long)i, e.lineno);
        lo = e.addr < lo ? e.addr : lo;
        hi = e.addr > hi ? e.addr : hi;
    }
    /* Writers may pad to 8; anything more is garbage perf would skip. */
    if (size - off >= 8)
        jdc_violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "%zu bytes after the entries", size - off);
    for (size_t i = off; i < size; i++) {
        if (rec[i]) {
            jdc_violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "non-zero padding after the entries");
            break;
        }
    }
    s->debug = (struct jdc_pending_debug){ true, s->at, d.code_addr, lo, hi };
}

void jdc_check_unwinding_info(struct jdc_scan *s, const uint8_t *rec, uint32_t size)
{
    struct pi_jr_unwinding_info u;
    if (!record_head(s, "UNWINDING_INFO", rec, size, &u, sizeof u, sizeof u))
        return;
    s->r->unwinds++;
    if (u.unwinding_size > size - sizeof u) {
        jdc_violate(s->r, s->at, PI_JDC_BAD_UNWIND_RECORD,
                    "unwinding_size %llu exceeds the record's %zu payload bytes",
                    (unsigned long long)u.unwinding_size, size - sizeof u);
        return;
    }
    size_t pad = size - sizeof u - (size_t)u.unwinding_size;
    if (size % 8 || pad >= 8)
        jdc_violate(s->r, s->at, PI_JDC_UNWIND_PADDING,
                    "total_size %u, expected round8(40 + %llu) = %llu", size,
                    (unsigned long long)u.unwinding_size,
                    (unsigned long long)round8(sizeof u + u.unwinding_size));
    for (size_t i = size - pad; i < size; i++) {
        if (rec[i]) {
            jdc_violate(s->r, s->at, PI_JDC_UNWIND_PADDING, "non-zero padding byte at +%zu", i);
            break;
        }
    }
    if (u.eh_frame_hdr_size == 0 || u.eh_frame_hdr_size >= u.unwinding_size) {
        jdc_violate(s->r, s->at, PI_JDC_BAD_UNWIND_RECORD,
                    "eh_frame_hdr_size %llu of unwinding_size %llu",
                    (unsigned long long)u.eh_frame_hdr_size, (unsigned long long)u.unwinding_size);
        return;
    }
    if (u.mapped_size < u.unwinding_size)
        jdc_violate(s->r, s->at, PI_JDC_BAD_UNWIND_RECORD,
                    "mapped_size %llu smaller than unwinding_size %llu",
                    (unsigned long long)u.mapped_size, (unsigned long long)u.unwinding_size);
    s->unwind = (struct jdc_pending_unwind){ true, s->at, rec + sizeof u, u.unwinding_size,
                                             u.eh_frame_hdr_size, u.mapped_size };
}

void jdc_check_code_load(struct jdc_scan *s, const uint8_t *rec, uint32_t size)
{
    struct pi_jr_code_load l;
    struct pi_jdc_report *r = s->r;

    if (!record_head(s, "CODE_LOAD", rec, size, &l, sizeof l, sizeof l + 1)) /* + name's NUL */
        return;
    const uint8_t *name = rec + sizeof l;
    const uint8_t *nul = memchr(name, 0, size - sizeof l);
    if (!nul) {
        jdc_violate(r, s->at, PI_JDC_BAD_LOAD, "name not NUL-terminated");
        return;
    }
    size_t name_len = (size_t)(nul - name);
    if ((uint64_t)sizeof l + name_len + 1 + l.code_size != size) {
        jdc_violate(r, s->at, PI_JDC_BAD_RECORD_SIZE,
                    "total_size %u != 56 + name %zu + 1 + code_size %llu", size, name_len,
                    (unsigned long long)l.code_size);
        return;
    }
    const uint8_t *code = nul + 1;
    if (l.vma != l.code_addr)
        jdc_violate(r, s->at, PI_JDC_BAD_LOAD, "vma 0x%llx != code_addr 0x%llx",
                    (unsigned long long)l.vma, (unsigned long long)l.code_addr);
    if (l.code_addr == 0 || l.code_size == 0 || l.tid == 0 || name_len == 0)
        jdc_violate(r, s->at, PI_JDC_BAD_LOAD, "zero code_addr, code_size, tid or name");
    if (l.pid != r->pid)
        jdc_violate(r, s->at, PI_JDC_BAD_PID, "load pid %u, header pid %u", l.pid, r->pid);
    int foreign = l.code_index >= PI_JDC_FOREIGN_INDEX;
    if (s->have_index[foreign] && l.code_index <= s->last_index[foreign])
        jdc_violate(r, s->at, PI_JDC_CODE_INDEX_ORDER, "code_index %llu after %llu",
                    (unsigned long long)l.code_index,
                    (unsigned long long)s->last_index[foreign]);
    s->have_index[foreign] = true;
    s->last_index[foreign] = l.code_index;

    if (s->debug.set) {
        if (s->debug.code_addr != l.code_addr)
            jdc_violate(r, s->debug.at, PI_JDC_DEBUG_ADDR,
                        "DEBUG_INFO code_addr 0x%llx, next load at 0x%llx",
                        (unsigned long long)s->debug.code_addr, (unsigned long long)l.code_addr);
        if (s->debug.lo < l.code_addr || s->debug.hi - l.code_addr >= l.code_size)
            jdc_violate(r, s->debug.at, PI_JDC_DEBUG_ADDR,
                        "line entries [0x%llx, 0x%llx] outside the load [0x%llx, +%llu)",
                        (unsigned long long)s->debug.lo, (unsigned long long)s->debug.hi,
                        (unsigned long long)l.code_addr, (unsigned long long)l.code_size);
        s->debug.set = false;
    }

    struct pi_jdc_load load = { l.code_addr, l.code_size, l.code_index, l.code_size, NULL };
    if (s->unwind.set) {
        jdc_check_unwind(r, s->unwind.at, r->elf_mach, foreign ? NULL : code, l.code_size,
                         s->unwind.data, s->unwind.size, s->unwind.hdr_size);
        load.span = round8(l.code_size) + s->unwind.mapped_size; /* what perf inject maps */
        s->unwind.set = false;
    } else {
        jdc_violate(r, s->at, PI_JDC_LOAD_WITHOUT_UNWIND, "CODE_LOAD '%.*s' has no UNWINDING_INFO",
                    (int)(name_len > 80 ? 80 : name_len), (const char *)name);
    }
    load.name = malloc(name_len + 1);
    if (load.name)
        memcpy(load.name, name, name_len + 1);
    if (!load.name || !jdc_add_load(r, s->codes, &load, code)) {
        free(load.name);
        jdc_violate(r, s->at, PI_JDC_BAD_LOAD, "out of memory recording the load");
    }
}
