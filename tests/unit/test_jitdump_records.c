/* Unit tests for jitdump_records.c, and for the checker that the shell tests
 * run on real dumps (tests/tools/jitdump_check.c).
 *
 * Layout tests read fields back at the byte offsets the jitdump spec gives,
 * not through the library's structs. Round trips build whole dumps the way
 * the writer does (DEBUG_INFO, UNWINDING_INFO, CODE_LOAD per trampoline) and
 * require the checker to accept them; negative tests break one field or one
 * rule at a time and require the checker to name exactly that problem. */

#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bytes.h"
#include "ehframe.h"
#include "jitdump_check.h"
#include "jitdump_format.h"
#include "jitdump_records.h"
#include "tramp_code.h"

/* ---- Encoders: fields at the spec's offsets. ---- */

static void test_header_layout(void **state)
{
    (void)state;
    uint8_t b[64];

    memset(b, 0xa5, sizeof b);
    assert_int_equal(pi_jr_header(b, 39, 62, 4242, 123456789), 0);
    assert_int_equal(b[0], 0xa5);
    assert_int_equal(pi_jr_header(b, sizeof b, 62, 4242, 123456789), 40);
    assert_int_equal(u32_at(b + 0), 0x4A695444);
    assert_memory_equal(b, "DTiJ", 4); /* "JiTD" as a little-endian u32 */
    assert_int_equal(u32_at(b + 4), 1);
    assert_int_equal(u32_at(b + 8), 40);
    assert_int_equal(u32_at(b + 12), 62);
    assert_int_equal(u32_at(b + 16), 0);
    assert_int_equal(u32_at(b + 20), 4242);
    assert_int_equal(u64_at(b + 24), 123456789);
    assert_int_equal(u64_at(b + 32), 0);
    assert_int_equal(b[40], 0xa5);
}

static void test_code_load_layout(void **state)
{
    (void)state;
    uint8_t b[256];
    const uint8_t code[16] = { 0x55, 0x48, 0x89, 0xe5, 0xff, 0xd1, 0x5d, 0xc3,
                               1, 2, 3, 4, 5, 6, 7, 8 };
    const char *name = "py::f:/t.py";
    size_t want = 56 + strlen(name) + 1 + sizeof code; /* unpadded */

    assert_int_equal(pi_jr_code_load_size(name, sizeof code), want);
    memset(b, 0xa5, sizeof b);
    assert_int_equal(pi_jr_code_load(b, want - 1, 7, 1, 2, 0x1000, code, sizeof code, 3, name), 0);
    assert_int_equal(b[0], 0xa5);
    assert_int_equal(pi_jr_code_load(b, sizeof b, 7, 100, 101, 0x7f0000001000, code, sizeof code,
                                     5, name),
                     want);
    assert_int_equal(u32_at(b + 0), 0);
    assert_int_equal(u32_at(b + 4), want);
    assert_int_equal(u64_at(b + 8), 7);
    assert_int_equal(u32_at(b + 16), 100);
    assert_int_equal(u32_at(b + 20), 101);
    assert_int_equal(u64_at(b + 24), 0x7f0000001000);
    assert_int_equal(u64_at(b + 32), 0x7f0000001000);
    assert_int_equal(u64_at(b + 40), sizeof code);
    assert_int_equal(u64_at(b + 48), 5);
    assert_string_equal((const char *)b + 56, name);
    assert_memory_equal(b + 56 + strlen(name) + 1, code, sizeof code);
    assert_int_equal(b[want], 0xa5);
    /* Code whose memory is gone (CPython's JIT, unregistered): zeros. */
    memset(b, 0xa5, sizeof b);
    assert_int_equal(pi_jr_code_load(b, sizeof b, 7, 100, 101, 0x7f0000001000, NULL, sizeof code,
                                     5, name),
                     want);
    for (size_t i = 56 + strlen(name) + 1; i < want; i++)
        assert_int_equal(b[i], 0);
    assert_int_equal(b[want], 0xa5);
}

static void test_unwinding_layout_and_padding(void **state)
{
    (void)state;
    uint8_t payload[96], b[256];
    for (size_t i = 0; i < sizeof payload; i++)
        payload[i] = (uint8_t)(i * 7 + 1);

    for (uint64_t n = 60; n <= 96; n++) {
        size_t want = (40 + n + 7) / 8 * 8;
        assert_int_equal(pi_jr_unwinding_info_size(n), want);
        memset(b, 0xa5, sizeof b);
        assert_int_equal(pi_jr_unwinding_info(b, want - 1, 9, payload, n, 20, 96), 0);
        assert_int_equal(b[0], 0xa5);
        assert_int_equal(pi_jr_unwinding_info(b, sizeof b, 9, payload, n, 20, 96), want);
        assert_int_equal(u32_at(b + 0), 4);
        assert_int_equal(u32_at(b + 4), want);
        assert_int_equal(u64_at(b + 8), 9);
        assert_int_equal(u64_at(b + 16), n);
        assert_int_equal(u64_at(b + 24), 20);
        assert_int_equal(u64_at(b + 32), 96);
        assert_memory_equal(b + 40, payload, (size_t)n);
        for (size_t k = 40 + (size_t)n; k < want; k++)
            assert_int_equal(b[k], 0); /* zero padding */
        assert_int_equal(b[want], 0xa5);
    }
    /* hdr larger than the whole payload is refused */
    assert_int_equal(pi_jr_unwinding_info(b, sizeof b, 9, payload, 16, 20, 32), 0);
}

/* Padding goes after the entries, zeroed, and counts in total_size; 8 or
 * more bytes of it are refused. */
static void test_debug_info_padding(void **state)
{
    (void)state;
    uint8_t b[128];
    const char *file = "/a.py";
    size_t want = 32 + 2 * (16 + strlen(file) + 1);
    memset(b, 0xa5, sizeof b);
    assert_int_equal(pi_jr_debug_info(b, sizeof b, 3, 0x5000, 16, 12, file, 5), want + 5);
    assert_int_equal(u32_at(b + 4), want + 5);
    for (size_t i = want; i < want + 5; i++)
        assert_int_equal(b[i], 0);
    assert_int_equal(b[want + 5], 0xa5); /* nothing beyond */
    assert_int_equal(pi_jr_debug_info_size(file, 8), 0);
    assert_int_equal(pi_jr_debug_info(b, sizeof b, 3, 0x5000, 16, 12, file, 8), 0);
}

static void test_debug_info_layout(void **state)
{
    (void)state;
    uint8_t b[128];
    const char *file = "/srv/app/main.py";
    size_t name = strlen(file) + 1;
    size_t want = 32 + 2 * (16 + name);

    assert_int_equal(pi_jr_debug_info_size(file, 0), want);
    memset(b, 0xa5, sizeof b);
    assert_int_equal(pi_jr_debug_info(b, want - 1, 3, 0x5000, 16, 12, file, 0), 0);
    assert_int_equal(pi_jr_debug_info(b, sizeof b, 3, 0x5000, 16, 12, file, 0), want);
    assert_int_equal(u32_at(b + 0), 2);
    assert_int_equal(u32_at(b + 4), want);
    assert_int_equal(u64_at(b + 8), 3);
    assert_int_equal(u64_at(b + 16), 0x5000); /* code_addr */
    assert_int_equal(u64_at(b + 24), 2);      /* nr_entry: first and last byte */
    assert_int_equal(u64_at(b + 32), 0x5000); /* entry addr */
    assert_int_equal(u32_at(b + 40), 12);     /* lineno */
    assert_int_equal(u32_at(b + 44), 0);      /* discrim */
    assert_string_equal((const char *)b + 48, file);
    assert_int_equal(u64_at(b + 48 + name), 0x500f); /* last byte of the code */
    assert_int_equal(u32_at(b + 56 + name), 12);
    assert_string_equal((const char *)b + 64 + name, file);
    assert_int_equal(b[want], 0xa5);
}

static void test_close_layout(void **state)
{
    (void)state;
    uint8_t b[32];
    memset(b, 0xa5, sizeof b);
    assert_int_equal(pi_jr_code_close(b, 15, 77), 0);
    assert_int_equal(pi_jr_code_close(b, sizeof b, 77), 16);
    assert_int_equal(u32_at(b), 3);
    assert_int_equal(u32_at(b + 4), 16);
    assert_int_equal(u64_at(b + 8), 77);
    assert_int_equal(b[16], 0xa5);
}

/* total_size is 32 bits: larger records cannot be encoded. */
static void test_size_limits(void **state)
{
    (void)state;
    assert_int_equal(pi_jr_unwinding_info_size(UINT32_MAX), 0);
    assert_int_equal(pi_jr_unwinding_info_size(UINT32_MAX - 40 - 3), 0); /* pad overflows */
    assert_int_equal(pi_jr_code_load_size("x", (uint64_t)1 << 32), 0);
    assert_int_equal(pi_jr_code_load_size("x", UINT32_MAX - 58), UINT32_MAX);
}

/* ---- Whole dumps ---- */

struct variant {
    enum pi_arch arch;
    int landing_pad;
};

static struct pi_tramp_shape make_code(struct variant v, uint8_t *code, uint64_t tag)
{
    return make_tramp_code(v.arch, v.landing_pad, code, tag);
}

enum order { DEBUG_UNWIND_LOAD, UNWIND_DEBUG_LOAD, NO_UNWIND };

struct spec {
    struct variant v;
    size_t n;              /* trampolines */
    uint64_t stride;       /* between code addresses */
    int same_tag;          /* every copy gets the same tag */
    enum order order;
    int close;
    int group_after_close;
    int unwind_extra_pad;  /* 4: misaligned record, 8: 8 extra 0xff bytes */
    int debug_then_close;  /* a DEBUG_INFO with no load before the CLOSE */
};

#define MAX_RECORDS 256

struct dump {
    uint8_t buf[1 << 16];
    size_t len;
    size_t nrec;
    size_t off[MAX_RECORDS]; /* record start offsets */
    uint32_t id[MAX_RECORDS];
    size_t load_end[MAX_RECORDS]; /* offsets right after each CODE_LOAD / CLOSE */
    size_t n_clean;
};

#define PID 4242u
#define BASE 0x7f1200000000ull

static void note(struct dump *d, size_t n, uint32_t id)
{
    assert_true(n > 0);
    assert_true(d->nrec < MAX_RECORDS);
    d->off[d->nrec] = d->len;
    d->id[d->nrec++] = id;
    d->len += n;
    if (id == PI_JIT_CODE_LOAD || id == PI_JIT_CODE_CLOSE)
        d->load_end[d->n_clean++] = d->len;
}

static void add_group(struct dump *d, const struct spec *sp, size_t i, uint64_t *ts)
{
    uint8_t code[64], unwind[256];
    struct pi_unwind_sizes sz;
    struct pi_tramp_shape s = make_code(sp->v, code, sp->same_tag ? 99 : 0xabc000 + i);
    uint64_t addr = BASE + i * sp->stride;
    char name[64];

    snprintf(name, sizeof name, "py::f%zu:/srv/t.py", i);
    assert_true(pi_ehframe_build(&s, unwind, sizeof unwind, &sz) > 0);

    for (int step = 0; step < 3; step++) {
        /* 0 debug, 1 unwinding, 2 load */
        int what = sp->order == UNWIND_DEBUG_LOAD ? (int[]){ 1, 0, 2 }[step] : step;
        uint8_t *out = d->buf + d->len;
        size_t cap = sizeof d->buf - d->len;
        if (what == 0) {
            note(d, pi_jr_debug_info(out, cap, (*ts)++, addr, s.code_size, (int32_t)(10 + i),
                                     "/srv/t.py", 0),
                 PI_JIT_CODE_DEBUG_INFO);
        } else if (what == 1 && sp->order != NO_UNWIND) {
            size_t n = pi_jr_unwinding_info(out, cap, (*ts)++, unwind, sz.total, sz.hdr_size,
                                            sz.mapped_size);
            if (sp->unwind_extra_pad) {
                memset(out + n, sp->unwind_extra_pad == 8 ? 0xff : 0, 8);
                n += (size_t)sp->unwind_extra_pad;
                set_u32(out + 4, (uint32_t)n);
            }
            note(d, n, PI_JIT_CODE_UNWINDING_INFO);
        } else if (what == 2) {
            note(d,
                 pi_jr_code_load(out, cap, (*ts)++, PID, PID + 1, addr, code, s.code_size, i + 1,
                                 name),
                 PI_JIT_CODE_LOAD);
        }
    }
}

static void build(struct dump *d, const struct spec *sp)
{
    uint64_t ts = 1000;
    memset(d, 0, sizeof *d);
    d->len = pi_jr_header(d->buf, sizeof d->buf, pi_arch_elf_mach(sp->v.arch), PID, 5);
    d->load_end[d->n_clean++] = d->len;
    for (size_t i = 0; i < sp->n; i++)
        add_group(d, sp, i, &ts);
    if (sp->debug_then_close)
        note(d, pi_jr_debug_info(d->buf + d->len, sizeof d->buf - d->len, ts++, BASE, 16, 1, "x.py", 0),
             PI_JIT_CODE_DEBUG_INFO);
    if (sp->close)
        note(d, pi_jr_code_close(d->buf + d->len, sizeof d->buf - d->len, ts++),
             PI_JIT_CODE_CLOSE);
    if (sp->group_after_close)
        add_group(d, sp, sp->n, &ts);
}

static const struct spec good_x86 = { { PI_ARCH_X86_64, 0 }, 12, 128, 0, DEBUG_UNWIND_LOAD, 1,
                                      0, 0, 0 };

static void print_report(const struct pi_jdc_report *r)
{
    for (size_t i = 0; i < r->n_violations; i++)
        print_error("  record %zu @%zu %s: %s\n", r->violations[i].record,
                    r->violations[i].offset, pi_jdc_issue_name(r->violations[i].issue),
                    r->violations[i].msg);
}

static void expect_valid(const uint8_t *buf, size_t len, const struct pi_jdc_options *o,
                         struct pi_jdc_report *r)
{
    if (!pi_jdc_check(buf, len, o, r)) {
        print_report(r);
        fail_msg("checker rejected a good dump");
    }
}

static void round_trip(struct variant v)
{
    struct dump *d = malloc(sizeof *d);
    struct spec sp = good_x86;
    struct pi_jdc_report r;
    const char *expect[] = { "py::f0:/srv/t.py", "py::f1[0-9]:*" };
    struct pi_jdc_options o = { false, PID, expect, 2, false };

    assert_non_null(d);
    sp.v = v;
    build(d, &sp);
    expect_valid(d->buf, d->len, &o, &r);
    assert_int_equal(r.pid, PID);
    assert_int_equal(r.elf_mach, pi_arch_elf_mach(v.arch));
    assert_int_equal(r.records, 3 * sp.n + 1);
    assert_int_equal(r.unwinds, sp.n);
    assert_int_equal(r.debug_infos, sp.n);
    assert_int_equal(r.closes, 1);
    assert_false(r.truncated);
    assert_int_equal(r.n_loads, sp.n);
    for (size_t i = 0; i < sp.n; i++) {
        char name[64];
        uint8_t code[64];
        struct pi_unwind_sizes sz;
        struct pi_tramp_shape s = make_code(v, code, 0);
        pi_ehframe_build(&s, NULL, 0, &sz);
        snprintf(name, sizeof name, "py::f%zu:/srv/t.py", i);
        assert_string_equal(r.loads[i].name, name);
        assert_int_equal(r.loads[i].addr, BASE + i * sp.stride);
        assert_int_equal(r.loads[i].code_index, i + 1);
        assert_int_equal(r.loads[i].code_size, s.code_size);
        assert_int_equal(r.loads[i].span, (s.code_size + 7) / 8 * 8 + sz.mapped_size);
    }
    pi_jdc_report_free(&r);

    /* A pattern nothing matches makes it invalid, for that reason only. */
    const char *missing[] = { "py::f0:*", "py::nope:*" };
    struct pi_jdc_options o2 = { false, 0, missing, 2, false };
    assert_false(pi_jdc_check(d->buf, d->len, &o2, &r));
    assert_int_equal(r.n_violations, 1);
    assert_int_equal(pi_jdc_count(&r, PI_JDC_EXPECTED_MISSING), 1);
    pi_jdc_report_free(&r);
    free(d);
}

static void test_round_trip_x86(void **state)
{
    (void)state;
    round_trip((struct variant){ PI_ARCH_X86_64, 0 });
}

static void test_round_trip_x86_cet(void **state)
{
    (void)state;
    round_trip((struct variant){ PI_ARCH_X86_64, 1 });
}

static void test_round_trip_a64(void **state)
{
    (void)state;
    round_trip((struct variant){ PI_ARCH_AARCH64, 0 });
}

static void test_round_trip_a64_bti(void **state)
{
    (void)state;
    round_trip((struct variant){ PI_ARCH_AARCH64, 1 });
}

/* Tightest legal packing: each load starts where the previous map ends. */
static void test_adjacent_spans_do_not_overlap(void **state)
{
    (void)state;
    struct dump *d = malloc(sizeof *d);
    struct spec sp = good_x86;
    struct pi_jdc_report r;

    sp.stride = 16 + 80; /* round8(code 16) + mapped 80 */
    build(d, &sp);
    expect_valid(d->buf, d->len, NULL, &r);
    pi_jdc_report_free(&r);
    free(d);
}

static void test_check_file(void **state)
{
    (void)state;
    struct dump *d = malloc(sizeof *d);
    char path[] = "/tmp/test-jitdump-XXXXXX";
    struct pi_jdc_report r;
    const char *err = NULL;
    int fd = mkstemp(path);

    assert_true(fd >= 0);
    build(d, &good_x86);
    assert_int_equal(write(fd, d->buf, d->len), (ssize_t)d->len);
    close(fd);
    assert_true(pi_jdc_check_file(path, NULL, &r, &err));
    assert_null(err);
    assert_int_equal(r.n_loads, good_x86.n);
    pi_jdc_report_free(&r);
    unlink(path);
    assert_false(pi_jdc_check_file(path, NULL, &r, &err));
    assert_non_null(err);
    pi_jdc_report_free(&r);
    free(d);
}

/* ---- One broken field at a time ---- */

enum op { SET8, SET32, SET64, ADD32, ADD64 };

/* Which record to break: the header, or the k-th record of a kind. */
enum target { HEADER, DEBUG, UNWIND, LOAD };

struct corruption {
    const char *what;
    enum target target;
    size_t nth;
    size_t at; /* offset inside the record */
    enum op op;
    int64_t value;
    enum pi_jdc_issue expect;
};

/* x86_64 unwinding record, by offset: prefix 0, sizes 16/24/32, payload 40:
 * CIE 40 (len 40, id 44, version 48, "zR" 49, caf 52, daf 53, ra 54,
 * aug len 55, enc 56, def_cfa 57, offset rip 60, nops 62);
 * FDE 64 (len 64, cie ptr 68, pc_begin 72, range 76, aug len 80,
 * advance 81, def_cfa_offset 82/83, offset rbp 84/85, advance 86,
 * def_cfa_register 87/88, advance 89, def_cfa 90..92, restore rbp 93);
 * terminator 96; hdr 100 (version, 3 encodings, eh_frame_ptr 104,
 * fde_count 108, table from 112, to 116). Load: pid 16, tid 20, vma 24,
 * code_addr 32, code_size 40, code_index 48, name 56. */
static const struct corruption corruptions[] = {
    { "magic", HEADER, 0, 0, SET32, 0x12345678, PI_JDC_BAD_MAGIC },
    { "swapped magic", HEADER, 0, 0, SET32, 0x4454694A, PI_JDC_BAD_MAGIC },
    { "version", HEADER, 0, 4, SET32, 2, PI_JDC_BAD_VERSION },
    { "header size", HEADER, 0, 8, SET32, 48, PI_JDC_BAD_HEADER_SIZE },
    { "elf_mach", HEADER, 0, 12, SET32, 3, PI_JDC_BAD_ELF_MACH },
    { "elf_mach of the other arch", HEADER, 0, 12, SET32, 183, PI_JDC_UNKNOWN_TEMPLATE },
    { "pad1", HEADER, 0, 16, SET32, 1, PI_JDC_BAD_HEADER },
    { "flags", HEADER, 0, 32, SET64, 4, PI_JDC_BAD_HEADER },
    { "header pid", HEADER, 0, 20, SET32, 0, PI_JDC_BAD_PID },
    { "load pid", LOAD, 2, 16, ADD32, 1, PI_JDC_BAD_PID },
    { "load tid", LOAD, 2, 20, SET32, 0, PI_JDC_BAD_LOAD },
    { "load vma", LOAD, 2, 24, ADD64, 16, PI_JDC_BAD_LOAD },
    { "load code_size", LOAD, 2, 40, ADD64, 1, PI_JDC_BAD_RECORD_SIZE },
    { "load code_index", LOAD, 2, 48, SET64, 2, PI_JDC_CODE_INDEX_ORDER },
    /* "py::f2:/srv/t.py" is 16 bytes: NUL at 56+16, code from 56+17 */
    { "load name NUL", LOAD, 2, 56 + 16, SET8, 'x', PI_JDC_BAD_RECORD_SIZE },
    { "load push byte", LOAD, 2, 56 + 17, SET8, 0x90, PI_JDC_UNKNOWN_TEMPLATE },
    { "load ret byte", LOAD, 2, 56 + 17 + 7, SET8, 0x90, PI_JDC_UNKNOWN_TEMPLATE },
    { "load tag = previous tag", LOAD, 2, 56 + 17 + 8, SET8, 0x01, PI_JDC_DUPLICATE_CODE },
    { "load timestamp", LOAD, 2, 8, SET64, 0, PI_JDC_TIMESTAMP_ORDER },
    { "load total_size", LOAD, 2, 4, SET32, 8, PI_JDC_BAD_RECORD_SIZE },
    { "record id unknown", UNWIND, 1, 0, SET32, 9, PI_JDC_UNKNOWN_RECORD },
    { "record id CODE_MOVE", UNWIND, 1, 0, SET32, 1, PI_JDC_UNSUPPORTED_RECORD },
    { "record id DEBUG for unwind", UNWIND, 1, 0, SET32, 2, PI_JDC_LOAD_WITHOUT_UNWIND },
    { "unwinding_size", UNWIND, 1, 16, SET64, 1000, PI_JDC_BAD_UNWIND_RECORD },
    { "eh_frame_hdr_size", UNWIND, 1, 24, SET64, 24, PI_JDC_BAD_UNWIND_RECORD },
    { "mapped_size", UNWIND, 1, 32, SET64, 40, PI_JDC_BAD_UNWIND_RECORD },
    { "CIE length", UNWIND, 1, 40, SET32, 0x1000, PI_JDC_BAD_EH_FRAME },
    { "CIE id", UNWIND, 1, 44, SET32, 1, PI_JDC_BAD_CIE },
    { "CIE version", UNWIND, 1, 48, SET8, 3, PI_JDC_BAD_CIE },
    { "CIE augmentation", UNWIND, 1, 50, SET8, 'P', PI_JDC_BAD_CIE },
    { "CIE code align", UNWIND, 1, 52, SET8, 2, PI_JDC_BAD_CIE },
    { "CIE data align", UNWIND, 1, 53, SET8, 0x7c, PI_JDC_BAD_CIE },
    { "CIE RA column", UNWIND, 1, 54, SET8, 17, PI_JDC_BAD_CIE },
    { "CIE FDE encoding", UNWIND, 1, 56, SET8, 0x03, PI_JDC_BAD_CIE },
    { "CIE initial CFA offset", UNWIND, 1, 59, SET8, 16, PI_JDC_CFA_RULE },
    { "CIE rip save slot", UNWIND, 1, 61, SET8, 2, PI_JDC_CFA_RULE },
    { "FDE length", UNWIND, 1, 64, SET32, 0x1000, PI_JDC_BAD_EH_FRAME },
    { "FDE CIE pointer", UNWIND, 1, 68, SET32, 0x20, PI_JDC_BAD_FDE },
    { "FDE initial_location", UNWIND, 1, 72, ADD32, 1, PI_JDC_FDE_LOCATION },
    { "FDE address_range", UNWIND, 1, 76, SET32, 15, PI_JDC_FDE_RANGE },
    { "FDE augmentation length", UNWIND, 1, 80, SET8, 1, PI_JDC_BAD_FDE },
    { "first advance", UNWIND, 1, 81, SET8, 0x42, PI_JDC_CFA_RULE },
    { "def_cfa_offset operand", UNWIND, 1, 83, SET8, 0x18, PI_JDC_CFA_RULE },
    { "rbp save slot", UNWIND, 1, 85, SET8, 3, PI_JDC_CFA_RULE },
    { "saved register", UNWIND, 1, 84, SET8, 0x83, PI_JDC_CFA_RULE },
    { "def_cfa_register operand", UNWIND, 1, 88, SET8, 3, PI_JDC_CFA_RULE },
    { "epilogue advance", UNWIND, 1, 89, SET8, 0x44, PI_JDC_CFA_RULE },
    { "restore rbp", UNWIND, 1, 93, SET8, 0x00, PI_JDC_CFA_RULE },
    { "unknown CFA opcode", UNWIND, 1, 81, SET8, 0x3f, PI_JDC_CFI_DECODE },
    { "advance past the range", UNWIND, 1, 86, SET8, 0x7f, PI_JDC_CFI_DECODE },
    { "terminator", UNWIND, 1, 96, SET32, 1, PI_JDC_BAD_EH_FRAME },
    { "hdr version", UNWIND, 1, 100, SET8, 2, PI_JDC_BAD_EH_HDR },
    { "hdr eh_frame_ptr encoding", UNWIND, 1, 101, SET8, 0x1c, PI_JDC_BAD_EH_HDR },
    { "hdr table encoding", UNWIND, 1, 103, SET8, 0x1b, PI_JDC_BAD_EH_HDR },
    { "hdr eh_frame_ptr", UNWIND, 1, 104, ADD32, 4, PI_JDC_BAD_EH_HDR },
    { "hdr fde_count", UNWIND, 1, 108, SET32, 2, PI_JDC_BAD_EH_HDR },
    { "hdr table from", UNWIND, 1, 112, ADD32, 8, PI_JDC_EH_HDR_TABLE },
    { "hdr table to", UNWIND, 1, 116, ADD32, -4, PI_JDC_EH_HDR_TABLE },
    { "debug code_addr", DEBUG, 1, 16, ADD64, 16, PI_JDC_DEBUG_ADDR },
    { "debug entry addr", DEBUG, 1, 32, ADD64, 100, PI_JDC_DEBUG_ADDR },
    { "debug nr_entry", DEBUG, 1, 24, SET64, 0, PI_JDC_BAD_DEBUG_INFO },
    { "debug lineno", DEBUG, 1, 40, SET32, 0, PI_JDC_BAD_DEBUG_INFO },
    { "debug three entries", DEBUG, 1, 24, SET64, 3, PI_JDC_BAD_DEBUG_INFO },
};

static uint8_t *locate(struct dump *d, enum target t, size_t nth)
{
    static const uint32_t ids[] = { 0, PI_JIT_CODE_DEBUG_INFO, PI_JIT_CODE_UNWINDING_INFO,
                                    PI_JIT_CODE_LOAD };
    if (t == HEADER)
        return d->buf;
    for (size_t i = 0, seen = 0; i < d->nrec; i++)
        if (d->id[i] == ids[t] && seen++ == nth)
            return d->buf + d->off[i];
    fail_msg("no such record");
    return NULL;
}

static void apply(uint8_t *p, enum op op, int64_t value)
{
    switch (op) {
    case SET8:
        *p = (uint8_t)value;
        break;
    case SET32:
        set_u32(p, (uint32_t)value);
        break;
    case SET64:
        set_u64(p, (uint64_t)value);
        break;
    case ADD32:
        set_u32(p, u32_at(p) + (uint32_t)value);
        break;
    case ADD64:
        set_u64(p, u64_at(p) + (uint64_t)value);
        break;
    }
}

static void test_each_corruption_is_reported(void **state)
{
    (void)state;
    struct dump *d = malloc(sizeof *d);
    struct pi_jdc_report r;

    for (size_t i = 0; i < sizeof corruptions / sizeof corruptions[0]; i++) {
        const struct corruption *c = &corruptions[i];
        build(d, &good_x86);
        apply(locate(d, c->target, c->nth) + c->at, c->op, c->value);
        bool ok = pi_jdc_check(d->buf, d->len, NULL, &r);
        if (ok || pi_jdc_count(&r, c->expect) == 0) {
            print_error("corruption '%s': valid=%d, wanted %s, got:\n", c->what, ok,
                        pi_jdc_issue_name(c->expect));
            print_report(&r);
            fail_msg("corruption '%s' not reported as %s", c->what, pi_jdc_issue_name(c->expect));
        }
        pi_jdc_report_free(&r);
    }
    free(d);
}

/* Rules that span records, broken through the dump's construction. */
static void test_each_rule_violation_is_reported(void **state)
{
    (void)state;
    struct {
        const char *what;
        struct spec sp;
        enum pi_jdc_issue expect;
    } cases[] = {
        { "overlapping maps", good_x86, PI_JDC_OVERLAP },
        { "identical code", good_x86, PI_JDC_DUPLICATE_CODE },
        { "unwind before debug", good_x86, PI_JDC_UNWIND_NOT_BEFORE_LOAD },
        { "no unwind records", good_x86, PI_JDC_LOAD_WITHOUT_UNWIND },
        { "group after close", good_x86, PI_JDC_AFTER_CLOSE },
        { "unwind record misaligned", good_x86, PI_JDC_UNWIND_PADDING },
        { "unwind record padded with garbage", good_x86, PI_JDC_UNWIND_PADDING },
        { "debug info without load", good_x86, PI_JDC_BAD_DEBUG_INFO },
    };
    cases[0].sp.stride = 16 + 80 - 8;
    cases[1].sp.same_tag = 1;
    cases[2].sp.order = UNWIND_DEBUG_LOAD;
    cases[3].sp.order = NO_UNWIND;
    cases[4].sp.group_after_close = 1;
    cases[5].sp.unwind_extra_pad = 4;
    cases[6].sp.unwind_extra_pad = 8;
    cases[7].sp.debug_then_close = 1;

    struct dump *d = malloc(sizeof *d);
    for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
        struct pi_jdc_report r;
        build(d, &cases[i].sp);
        bool ok = pi_jdc_check(d->buf, d->len, NULL, &r);
        if (ok || pi_jdc_count(&r, cases[i].expect) == 0) {
            print_report(&r);
            fail_msg("'%s' not reported as %s", cases[i].what,
                     pi_jdc_issue_name(cases[i].expect));
        }
        pi_jdc_report_free(&r);
    }

    /* The expected pid is enforced when given. */
    struct pi_jdc_report r;
    struct pi_jdc_options o = { false, PID + 1, NULL, 0, false };
    build(d, &good_x86);
    assert_false(pi_jdc_check(d->buf, d->len, &o, &r));
    assert_int_equal(pi_jdc_count(&r, PI_JDC_BAD_PID), 1);
    pi_jdc_report_free(&r);
    free(d);
}

/* Cut the file at every length: a cut between groups is a valid dump; any
 * other cut is reported as truncation and nothing else, and is accepted
 * with allow_truncated (a killed process). */
static void test_truncation_at_every_length(void **state)
{
    (void)state;
    struct dump *d = malloc(sizeof *d);
    struct spec sp = good_x86;
    struct pi_jdc_options strict = { false, 0, NULL, 0, false }, lenient = { true, 0, NULL, 0, false };

    sp.n = 3;
    build(d, &sp);
    for (size_t len = 0; len < d->len; len++) {
        struct pi_jdc_report r;
        bool clean = false;
        for (size_t k = 0; k < d->n_clean; k++)
            clean |= d->load_end[k] == len;

        bool ok = pi_jdc_check(d->buf, len, &strict, &r);
        if (ok != clean || r.n_violations != (clean ? 0u : 1u) ||
            (!clean && pi_jdc_count(&r, PI_JDC_TRUNCATED) != 1)) {
            print_report(&r);
            fail_msg("cut at %zu: valid=%d clean=%d", len, ok, clean);
        }
        assert_int_equal(r.truncated, !clean);
        pi_jdc_report_free(&r);

        if (!pi_jdc_check(d->buf, len, &lenient, &r)) {
            print_report(&r);
            fail_msg("cut at %zu rejected with allow_truncated", len);
        }
        pi_jdc_report_free(&r);
    }
    free(d);
}

/* The library's zeros after the records (mmaplog.h): a size-0 prefix ends
 * them, with at most one group whose head was never stored before more
 * zeros; a file that exited normally has none (require_trimmed). */
static void test_untrimmed_zeros_end_the_records(void **state)
{
    (void)state;
    struct dump *d = malloc(sizeof *d), *four = malloc(sizeof *four);
    struct spec sp = good_x86;
    sp.close = 0;
    sp.n = 4;
    build(four, &sp);
    sp.n = 3;
    build(d, &sp);
    size_t end = d->len, group = four->len - d->len;
    struct pi_jdc_options plain = { false, 0, NULL, 0, false }, trimmed = { false, 0, NULL, 0, true };
    struct pi_jdc_report r;

    memset(d->buf + end, 0, 16384);
    expect_valid(d->buf, end + 16384, &plain, &r);
    assert_int_equal(r.untrimmed, 16384);
    assert_false(r.unfinished);
    assert_int_equal(r.n_loads, 3);
    pi_jdc_report_free(&r);
    assert_false(pi_jdc_check(d->buf, end + 16384, &trimmed, &r));
    assert_int_equal(pi_jdc_count(&r, PI_JDC_UNTRIMMED), 1);
    pi_jdc_report_free(&r);
    expect_valid(d->buf, end + 7, &plain, &r); /* zeros short of a prefix */
    assert_int_equal(r.untrimmed, 7);
    pi_jdc_report_free(&r);

    /* Killed between a group's body and its head. */
    memcpy(d->buf + end, four->buf + end, group);
    memset(d->buf + end, 0, 8);
    expect_valid(d->buf, end + 16384, &plain, &r);
    assert_true(r.unfinished);
    assert_int_equal(r.n_loads, 3);
    pi_jdc_report_free(&r);

    /* Anything further is not the library's. */
    d->buf[end + 12000] = 1;
    assert_false(pi_jdc_check(d->buf, end + 16384, &plain, &r));
    assert_int_equal(pi_jdc_count(&r, PI_JDC_AFTER_END), 1);
    pi_jdc_report_free(&r);
    free(d);
    free(four);
}

/* Garbage must be reported, never crash or loop (run under ASan too). */
static void test_garbage_is_rejected(void **state)
{
    (void)state;
    struct dump *d = malloc(sizeof *d);
    uint32_t seed = 12345;

    build(d, &good_x86);
    for (int round = 0; round < 2000; round++) {
        struct pi_jdc_report r;
        uint8_t saved[8];
        seed = seed * 1103515245u + 12345u;
        size_t at = 40 + (seed >> 8) % (d->len - 48);
        memcpy(saved, d->buf + at, 8);
        for (int k = 0; k < 8; k++) {
            seed = seed * 1103515245u + 12345u;
            d->buf[at + (size_t)k] = (uint8_t)(seed >> 16);
        }
        pi_jdc_check(d->buf, d->len, NULL, &r);
        pi_jdc_report_free(&r);
        memcpy(d->buf + at, saved, 8);
    }
    struct pi_jdc_report r;
    expect_valid(d->buf, d->len, NULL, &r); /* restored: valid again */
    pi_jdc_report_free(&r);
    free(d);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_header_layout),
        cmocka_unit_test(test_code_load_layout),
        cmocka_unit_test(test_unwinding_layout_and_padding),
        cmocka_unit_test(test_debug_info_layout),
        cmocka_unit_test(test_debug_info_padding),
        cmocka_unit_test(test_close_layout),
        cmocka_unit_test(test_size_limits),
        cmocka_unit_test(test_round_trip_x86),
        cmocka_unit_test(test_round_trip_x86_cet),
        cmocka_unit_test(test_round_trip_a64),
        cmocka_unit_test(test_round_trip_a64_bti),
        cmocka_unit_test(test_adjacent_spans_do_not_overlap),
        cmocka_unit_test(test_check_file),
        cmocka_unit_test(test_each_corruption_is_reported),
        cmocka_unit_test(test_each_rule_violation_is_reported),
        cmocka_unit_test(test_truncation_at_every_length),
        cmocka_unit_test(test_untrimmed_zeros_end_the_records),
        cmocka_unit_test(test_garbage_is_rejected),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
