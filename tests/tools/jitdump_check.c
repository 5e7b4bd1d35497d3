/* jitdump checker; see jitdump_check.h for what it verifies.
 *
 * It shares only vocabulary with the library (record structs, DW_CFA and
 * DW_EH_PE names); every expectation (template bytes, CFA rules, the slot
 * layout arithmetic) is restated here from the formats, so a mistake in
 * the builder is not mirrored by the checker. Fields are copied out with
 * memcpy (bytes.h, cur_take): records are unaligned in the file. */
#define _POSIX_C_SOURCE 200809L

#include "jitdump_check.h"

#include "bytes.h"
#include "ehframe.h"
#include "jitdump_format.h"

#include <fnmatch.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define EH_HDR_SIZE 20u
#define MAX_RECORD (16u << 20) /* beyond this a size field is garbage */
#define EM_X86_64 62u
#define EM_AARCH64 183u

/* ------------------------------------------------------------------ */
/* Reporting                                                           */

static const char *const issue_names[PI_JDC_ISSUE_COUNT] = {
    [PI_JDC_TRUNCATED] = "truncated",
    [PI_JDC_BAD_MAGIC] = "bad-magic",
    [PI_JDC_BAD_VERSION] = "bad-version",
    [PI_JDC_BAD_HEADER_SIZE] = "bad-header-size",
    [PI_JDC_BAD_ELF_MACH] = "bad-elf-mach",
    [PI_JDC_BAD_HEADER] = "bad-header",
    [PI_JDC_BAD_PID] = "bad-pid",
    [PI_JDC_BAD_RECORD_SIZE] = "bad-record-size",
    [PI_JDC_UNKNOWN_RECORD] = "unknown-record",
    [PI_JDC_UNSUPPORTED_RECORD] = "unsupported-record",
    [PI_JDC_AFTER_CLOSE] = "record-after-close",
    [PI_JDC_TIMESTAMP_ORDER] = "timestamp-order",
    [PI_JDC_CODE_INDEX_ORDER] = "code-index-order",
    [PI_JDC_BAD_LOAD] = "bad-load",
    [PI_JDC_UNKNOWN_TEMPLATE] = "unknown-template",
    [PI_JDC_DUPLICATE_CODE] = "duplicate-code",
    [PI_JDC_OVERLAP] = "overlap",
    [PI_JDC_LOAD_WITHOUT_UNWIND] = "load-without-unwind",
    [PI_JDC_UNWIND_NOT_BEFORE_LOAD] = "unwind-not-before-load",
    [PI_JDC_BAD_UNWIND_RECORD] = "bad-unwind-record",
    [PI_JDC_UNWIND_PADDING] = "unwind-padding",
    [PI_JDC_BAD_EH_FRAME] = "bad-eh-frame",
    [PI_JDC_BAD_CIE] = "bad-cie",
    [PI_JDC_BAD_FDE] = "bad-fde",
    [PI_JDC_FDE_LOCATION] = "fde-location",
    [PI_JDC_FDE_RANGE] = "fde-range",
    [PI_JDC_BAD_EH_HDR] = "bad-eh-hdr",
    [PI_JDC_EH_HDR_TABLE] = "eh-hdr-table",
    [PI_JDC_CFI_DECODE] = "cfi-decode",
    [PI_JDC_CFA_RULE] = "cfa-rule",
    [PI_JDC_BAD_DEBUG_INFO] = "bad-debug-info",
    [PI_JDC_DEBUG_ADDR] = "debug-addr",
    [PI_JDC_EXPECTED_MISSING] = "expected-missing",
};

const char *pi_jdc_issue_name(enum pi_jdc_issue issue)
{
    if ((unsigned)issue >= PI_JDC_ISSUE_COUNT)
        return "?";
    return issue_names[issue];
}

size_t pi_jdc_count(const struct pi_jdc_report *report, enum pi_jdc_issue issue)
{
    if ((unsigned)issue >= PI_JDC_ISSUE_COUNT)
        return 0;
    return report->count[issue];
}

void pi_jdc_report_free(struct pi_jdc_report *report)
{
    for (size_t i = 0; i < report->n_loads; i++)
        free(report->loads[i].name);
    free(report->loads);
    free(report->violations);
    memset(report, 0, sizeof *report);
}

/* Where a violation is attributed. */
struct where {
    size_t record;
    size_t offset;
};

static void violate(struct pi_jdc_report *r, struct where at, enum pi_jdc_issue issue,
                    const char *fmt, ...) __attribute__((format(printf, 4, 5)));

static void violate(struct pi_jdc_report *r, struct where at, enum pi_jdc_issue issue,
                    const char *fmt, ...)
{
    r->count[issue]++;
    if (r->n_violations >= PI_JDC_MAX_KEPT) {
        r->n_dropped++;
        return;
    }
    /* Grow by doubling; n_violations is a power of two exactly when full. */
    size_t n = r->n_violations;
    if ((n & (n - 1)) == 0) {
        size_t want = n ? 2 * n : 8;
        struct pi_jdc_violation *v = realloc(r->violations, want * sizeof *v);
        if (!v) {
            r->n_dropped++;
            return;
        }
        r->violations = v;
    }
    struct pi_jdc_violation *v = &r->violations[r->n_violations++];
    va_list ap;
    v->issue = issue;
    v->record = at.record;
    v->offset = at.offset;
    va_start(ap, fmt);
    vsnprintf(v->msg, sizeof v->msg, fmt, ap);
    va_end(ap);
}

/* ------------------------------------------------------------------ */
/* Byte access                                                         */

static uint64_t round8(uint64_t v)
{
    return (v + 7) & ~(uint64_t)7;
}

/* Bounded reader for DWARF data; `bad` latches on any overrun. */
struct cur {
    const uint8_t *p;
    size_t len;
    size_t off;
    bool bad;
};

static bool cur_take(struct cur *c, void *dst, size_t n)
{
    if (c->bad || n > c->len - c->off) {
        c->bad = true;
        memset(dst, 0, n);
        return false;
    }
    memcpy(dst, c->p + c->off, n);
    c->off += n;
    return true;
}

/* Fixed-size fields: each width is the same read through cur_take. */
#define CUR_FIXED(type, name)                                                                  \
    static type name(struct cur *c)                                                            \
    {                                                                                          \
        type v;                                                                                \
        cur_take(c, &v, sizeof v);                                                             \
        return v;                                                                              \
    }

CUR_FIXED(uint8_t, cur_u8)
CUR_FIXED(uint16_t, cur_u16)
CUR_FIXED(uint32_t, cur_u32)
CUR_FIXED(int32_t, cur_s32)

#undef CUR_FIXED

static uint64_t cur_uleb(struct cur *c)
{
    uint64_t v = 0;
    for (unsigned shift = 0;; shift += 7) {
        uint8_t b = cur_u8(c);
        if (c->bad)
            return 0;
        if (shift < 64)
            v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
        if (shift > 63) {
            c->bad = true;
            return 0;
        }
    }
}

static int64_t cur_sleb(struct cur *c)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b;
    do {
        b = cur_u8(c);
        if (c->bad || shift > 63) {
            c->bad = true;
            return 0;
        }
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* ------------------------------------------------------------------ */
/* .eh_frame / .eh_frame_hdr decoding                                  */

enum pi_jdc_issue pi_jdc_parse_eh_frame(const uint8_t *eh, size_t len, struct pi_jdc_eh *out,
                                        char *err, size_t errlen)
{
    struct cur c = { eh, len, 0, false };
    uint32_t length;

    memset(out, 0, sizeof *out);
    length = cur_u32(&c);
    if (c.bad || length == 0) {
        snprintf(err, errlen, "no CIE");
        return PI_JDC_BAD_EH_FRAME;
    }
    if (length == UINT32_MAX || length > len - 4) {
        snprintf(err, errlen, "CIE length %u overruns the %zu-byte .eh_frame", length, len);
        return PI_JDC_BAD_EH_FRAME;
    }
    out->cie_size = length + 4;
    c.len = out->cie_size; /* read the CIE within its own bounds */
    out->cie_id = cur_u32(&c);
    out->version = cur_u8(&c);
    size_t i = 0;
    for (;;) {
        char ch = (char)cur_u8(&c);
        if (c.bad || i + 1 >= sizeof out->augmentation) {
            snprintf(err, errlen, "CIE augmentation string unterminated or too long");
            return PI_JDC_BAD_CIE;
        }
        out->augmentation[i++] = ch;
        if (ch == '\0')
            break;
    }
    if (strcmp(out->augmentation, "zR") != 0) {
        /* Any other augmentation changes the layout that follows. */
        snprintf(err, errlen, "CIE augmentation \"%s\", expected \"zR\"", out->augmentation);
        return PI_JDC_BAD_CIE;
    }
    out->code_align = cur_uleb(&c);
    out->data_align = cur_sleb(&c);
    out->ra_column = out->version == 1 ? cur_u8(&c) : cur_uleb(&c);
    uint64_t aug_len = cur_uleb(&c);
    if (aug_len != 1) {
        snprintf(err, errlen, "CIE augmentation data length %llu, expected 1 (\"R\")",
                 (unsigned long long)aug_len);
        return PI_JDC_BAD_CIE;
    }
    out->fde_encoding = cur_u8(&c);
    if (c.bad) {
        snprintf(err, errlen, "CIE fields overrun its length");
        return PI_JDC_BAD_CIE;
    }
    if ((out->fde_encoding & 0x0f) != PI_DW_EH_PE_sdata4 &&
        (out->fde_encoding & 0x0f) != PI_DW_EH_PE_udata4) {
        snprintf(err, errlen, "FDE pointer encoding 0x%02x is not 4-byte", out->fde_encoding);
        return PI_JDC_BAD_CIE;
    }
    out->cie_insns = eh + c.off;
    out->cie_insns_len = out->cie_size - c.off;

    /* The FDE follows the CIE. */
    c.len = len;
    c.off = out->cie_size;
    out->fde_offset = out->cie_size;
    length = cur_u32(&c);
    if (c.bad || length == 0) {
        snprintf(err, errlen, "no FDE after the CIE");
        return PI_JDC_BAD_EH_FRAME;
    }
    if (length == UINT32_MAX || length > len - c.off) {
        snprintf(err, errlen, "FDE length %u overruns the .eh_frame", length);
        return PI_JDC_BAD_EH_FRAME;
    }
    out->fde_size = length + 4;
    c.len = out->fde_offset + out->fde_size;
    out->cie_pointer = cur_u32(&c);
    out->pc_begin = cur_s32(&c);
    out->pc_range = cur_u32(&c);
    out->fde_aug_len = cur_uleb(&c);
    if (!c.bad && out->fde_aug_len <= c.len - c.off)
        c.off += (size_t)out->fde_aug_len;
    else
        c.bad = true;
    if (c.bad) {
        snprintf(err, errlen, "FDE fields overrun its length");
        return PI_JDC_BAD_FDE;
    }
    out->fde_insns = eh + c.off;
    out->fde_insns_len = c.len - c.off;

    /* What follows: a zero terminator, possibly more. */
    size_t end = (size_t)out->fde_offset + out->fde_size;
    if (len - end >= 4 && u32_at(eh + end) == 0) {
        out->terminated = true;
        end += 4;
    }
    out->trailing = len - end;
    return PI_JDC_ISSUE_COUNT;
}

bool pi_jdc_parse_eh_hdr(const uint8_t *hdr, size_t len, struct pi_jdc_eh_hdr *out)
{
    memset(out, 0, sizeof *out);
    if (len < EH_HDR_SIZE)
        return false;
    out->version = hdr[0];
    out->eh_frame_ptr_enc = hdr[1];
    out->fde_count_enc = hdr[2];
    out->table_enc = hdr[3];
    out->eh_frame_ptr = s32_at(hdr + 4);
    out->fde_count = u32_at(hdr + 8);
    out->table_from = s32_at(hdr + 12);
    out->table_to = s32_at(hdr + 16);
    return true;
}

/* ------------------------------------------------------------------ */
/* CFI interpreter                                                     */

#define NO_CFA_REG UINT32_MAX
#define STATE_STACK 4

struct cfi_vm {
    const struct pi_jdc_eh *eh;
    struct pi_jdc_row row;
    struct pi_jdc_row initial; /* after the CIE: what DW_CFA_restore returns to */
    struct pi_jdc_row stack[STATE_STACK];
    int depth;
    uint64_t loc;
    char *err;
    size_t errlen;
};

static bool vm_fail(struct cfi_vm *vm, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

static bool vm_fail(struct cfi_vm *vm, const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(vm->err, vm->errlen, fmt, ap);
    va_end(ap);
    return false;
}

static bool vm_reg(struct cfi_vm *vm, uint64_t reg)
{
    if (reg >= PI_JDC_MAX_REG)
        return vm_fail(vm, "register %llu out of range", (unsigned long long)reg);
    return true;
}

/* Wrapping arithmetic: a garbage operand must give a wrong (and then
 * reported) offset, not undefined behaviour (found by fuzz_checker, for
 * register rules and for def_cfa_sf alike). */
static int64_t data_aligned(const struct cfi_vm *vm, int64_t factored)
{
    return (int64_t)((uint64_t)factored * (uint64_t)vm->eh->data_align);
}

static void set_offset(struct cfi_vm *vm, uint64_t reg, int64_t factored)
{
    vm->row.reg[reg].kind = PI_JDC_RULE_OFFSET;
    vm->row.reg[reg].off = data_aligned(vm, factored);
}

/* Runs one instruction list. In the FDE, stops (successfully) at the first
 * advance that would move past `pc`: the row then is the one at pc. */
static bool vm_run(struct cfi_vm *vm, const uint8_t *insns, size_t len, bool in_cie, uint64_t pc)
{
    struct cur c = { insns, len, 0, false };

    while (c.off < c.len) {
        size_t at = c.off;
        uint8_t op = cur_u8(&c);
        uint8_t primary = op & PI_DW_CFA_primary_mask;
        uint8_t low = op & PI_DW_CFA_operand_mask;
        uint64_t delta = 0, reg = 0;
        bool is_advance = false;

        if (primary == PI_DW_CFA_advance_loc) {
            delta = low;
            is_advance = true;
        } else if (primary == PI_DW_CFA_offset) {
            reg = low;
            int64_t f = (int64_t)cur_uleb(&c);
            if (!vm_reg(vm, reg))
                return false;
            set_offset(vm, reg, f);
        } else if (primary == PI_DW_CFA_restore) {
            reg = low;
            if (!vm_reg(vm, reg))
                return false;
            vm->row.reg[reg] = vm->initial.reg[reg];
        } else {
            switch (op) {
            case PI_DW_CFA_nop:
                break;
            case PI_DW_CFA_advance_loc1:
                delta = cur_u8(&c);
                is_advance = true;
                break;
            case PI_DW_CFA_advance_loc2:
                delta = cur_u16(&c);
                is_advance = true;
                break;
            case PI_DW_CFA_advance_loc4:
                delta = cur_u32(&c);
                is_advance = true;
                break;
            case PI_DW_CFA_def_cfa:
                vm->row.cfa_reg = (uint32_t)cur_uleb(&c);
                vm->row.cfa_off = (int64_t)cur_uleb(&c);
                break;
            case PI_DW_CFA_def_cfa_sf:
                vm->row.cfa_reg = (uint32_t)cur_uleb(&c);
                vm->row.cfa_off = data_aligned(vm, cur_sleb(&c));
                break;
            case PI_DW_CFA_def_cfa_register:
                if (vm->row.cfa_reg == NO_CFA_REG)
                    return vm_fail(vm, "def_cfa_register before any def_cfa (+%zu)", at);
                vm->row.cfa_reg = (uint32_t)cur_uleb(&c);
                break;
            case PI_DW_CFA_def_cfa_offset:
                if (vm->row.cfa_reg == NO_CFA_REG)
                    return vm_fail(vm, "def_cfa_offset before any def_cfa (+%zu)", at);
                vm->row.cfa_off = (int64_t)cur_uleb(&c);
                break;
            case PI_DW_CFA_def_cfa_offset_sf:
                if (vm->row.cfa_reg == NO_CFA_REG)
                    return vm_fail(vm, "def_cfa_offset_sf before any def_cfa (+%zu)", at);
                vm->row.cfa_off = data_aligned(vm, cur_sleb(&c));
                break;
            case PI_DW_CFA_offset_extended:
                reg = cur_uleb(&c);
                if (!vm_reg(vm, reg))
                    return false;
                set_offset(vm, reg, (int64_t)cur_uleb(&c));
                break;
            case PI_DW_CFA_offset_extended_sf:
                reg = cur_uleb(&c);
                if (!vm_reg(vm, reg))
                    return false;
                set_offset(vm, reg, cur_sleb(&c));
                break;
            case PI_DW_CFA_restore_extended:
                reg = cur_uleb(&c);
                if (!vm_reg(vm, reg))
                    return false;
                vm->row.reg[reg] = vm->initial.reg[reg];
                break;
            case PI_DW_CFA_same_value:
            case PI_DW_CFA_undefined:
                reg = cur_uleb(&c);
                if (!vm_reg(vm, reg))
                    return false;
                vm->row.reg[reg].kind =
                    op == PI_DW_CFA_undefined ? PI_JDC_RULE_UNDEFINED : PI_JDC_RULE_SAME;
                vm->row.reg[reg].off = 0;
                break;
            case PI_DW_CFA_register:
                reg = cur_uleb(&c);
                (void)cur_uleb(&c);
                if (!vm_reg(vm, reg))
                    return false;
                vm->row.reg[reg].kind = PI_JDC_RULE_OTHER;
                break;
            case PI_DW_CFA_remember_state:
                if (vm->depth == STATE_STACK)
                    return vm_fail(vm, "remember_state nested too deep (+%zu)", at);
                vm->stack[vm->depth++] = vm->row;
                break;
            case PI_DW_CFA_restore_state:
                if (vm->depth == 0)
                    return vm_fail(vm, "restore_state without remember_state (+%zu)", at);
                vm->row = vm->stack[--vm->depth]; /* CFA too, as libgcc does */
                break;
            default:
                return vm_fail(vm, "unsupported CFA opcode 0x%02x at +%zu", op, at);
            }
        }
        if (c.bad)
            return vm_fail(vm, "operand of opcode 0x%02x at +%zu runs past the end", op, at);
        if (is_advance) {
            if (in_cie)
                return vm_fail(vm, "advance in the CIE's initial instructions");
            uint64_t next = vm->loc + delta * vm->eh->code_align;
            if (next > vm->eh->pc_range)
                return vm_fail(vm, "advance to +%llu is outside address_range %u",
                               (unsigned long long)next, vm->eh->pc_range);
            if (next > pc)
                return true;
            vm->loc = next;
        }
    }
    return true;
}

bool pi_jdc_row_at(const struct pi_jdc_eh *eh, uint64_t pc, struct pi_jdc_row *row, char *err,
                   size_t errlen)
{
    struct cfi_vm vm;

    memset(&vm, 0, sizeof vm);
    vm.eh = eh;
    vm.err = err;
    vm.errlen = errlen;
    vm.row.cfa_reg = NO_CFA_REG;
    if (pc != UINT64_MAX && pc >= eh->pc_range)
        return vm_fail(&vm, "pc +%llu outside address_range %u", (unsigned long long)pc,
                       eh->pc_range);
    if (eh->code_align == 0)
        return vm_fail(&vm, "code alignment factor 0");
    if (!vm_run(&vm, eh->cie_insns, eh->cie_insns_len, true, pc))
        return false;
    if (vm.row.cfa_reg == NO_CFA_REG)
        return vm_fail(&vm, "CIE defines no CFA");
    vm.initial = vm.row;
    if (!vm_run(&vm, eh->fde_insns, eh->fde_insns_len, false, pc))
        return false;
    *row = vm.row;
    return true;
}

/* ------------------------------------------------------------------ */
/* Trampoline templates and the unwind rules they need                 */

/* Where execution is inside the frame-record protocol. */
enum frame_state {
    AT_ENTRY,  /* nothing pushed: CFA = sp + entry_cfa */
    PUSHED,    /* frame record pushed, fp not yet set */
    FRAMED,    /* fp = sp: CFA = fp + 16 (or sp + 16, equivalent here) */
    POPPED,    /* frame record popped: back to the entry rule */
};

struct insn {
    uint8_t bytes[4];
    uint8_t len;
    bool optional;          /* CET / BTI landing pad */
    enum frame_state after; /* state once it has executed */
    const char *text;
};

/* x86-64: [endbr64] push %rbp; mov %rsp,%rbp; call *%rcx; pop %rbp; ret */
static const struct insn x86_template[] = {
    { { 0xf3, 0x0f, 0x1e, 0xfa }, 4, true, AT_ENTRY, "endbr64" },
    { { 0x55 }, 1, false, PUSHED, "push %rbp" },
    { { 0x48, 0x89, 0xe5 }, 3, false, FRAMED, "mov %rsp,%rbp" },
    { { 0xff, 0xd1 }, 2, false, FRAMED, "call *%rcx" },
    { { 0x5d }, 1, false, POPPED, "pop %rbp" },
    { { 0xc3 }, 1, false, POPPED, "ret" },
};

/* aarch64 words: [bti c] stp x29,x30,[sp,#-16]!; mov x29,sp; blr x3;
 * ldp x29,x30,[sp],#16; ret. A64() lays a word out little-endian, as
 * instructions are stored whatever the data endianness. */
#define A64(w) { (uint8_t)(w), (uint8_t)((w) >> 8), (uint8_t)((w) >> 16), (uint8_t)((w) >> 24) }
static const struct insn a64_template[] = {
    { A64(0xd503245fu), 4, true, AT_ENTRY, "bti c" },
    { A64(0xa9bf7bfdu), 4, false, PUSHED, "stp x29, x30, [sp, #-16]!" },
    { A64(0x910003fdu), 4, false, FRAMED, "mov x29, sp" },
    { A64(0xd63f0060u), 4, false, FRAMED, "blr x3" },
    { A64(0xa8c17bfdu), 4, false, POPPED, "ldp x29, x30, [sp], #16" },
    { A64(0xd65f03c0u), 4, false, POPPED, "ret" },
};

struct arch_rules {
    uint32_t elf_mach;
    const char *name;
    const struct insn *tmpl;
    size_t tmpl_len;
    int pad_byte;         /* required padding byte, or -1 for any */
    uint64_t code_align;
    int64_t data_align;
    uint32_t ra_column;
    uint32_t sp, fp;
    int64_t entry_cfa;    /* CFA - sp on entry */
    bool ra_on_stack;     /* x86: the caller's call pushed it at CFA-8 */
    bool lr_in_record;    /* aarch64: the frame record holds x30 at CFA-8 */
};

static const struct arch_rules arch_rules[] = {
    { EM_X86_64, "x86_64", x86_template, sizeof x86_template / sizeof x86_template[0], 0xcc, 1,
      -8, 16, 7, 6, 8, true, false },
    { EM_AARCH64, "aarch64", a64_template, sizeof a64_template / sizeof a64_template[0], -1, 4,
      -8, 30, 31, 29, 0, false, true },
};

static const struct arch_rules *rules_for(uint32_t elf_mach)
{
    for (size_t i = 0; i < sizeof arch_rules / sizeof arch_rules[0]; i++)
        if (arch_rules[i].elf_mach == elf_mach)
            return &arch_rules[i];
    return NULL;
}

#define MAX_BOUNDARIES 8

struct boundary {
    uint32_t off;
    enum frame_state state;
    const char *next_insn;
};

struct layout {
    size_t n;
    struct boundary b[MAX_BOUNDARIES];
};

/* Matches the code against the template and lists every instruction
 * boundary up to `ret` with the frame state there. The code must be the
 * instructions, padding to 8, then the 8-byte tag, nothing else. */
static bool recognise(const struct arch_rules *a, const uint8_t *code, uint64_t size,
                      struct layout *out, char *why, size_t whylen)
{
    uint64_t off = 0;
    enum frame_state state = AT_ENTRY;

    out->n = 0;
    for (size_t i = 0; i < a->tmpl_len; i++) {
        const struct insn *in = &a->tmpl[i];
        bool match = size - off >= in->len && memcmp(code + off, in->bytes, in->len) == 0;
        if (!match) {
            if (in->optional)
                continue;
            snprintf(why, whylen, "%s code does not have `%s` at +%llu", a->name, in->text,
                     (unsigned long long)off);
            return false;
        }
        out->b[out->n++] = (struct boundary){ (uint32_t)off, state, in->text };
        state = in->after;
        off += in->len;
    }
    uint64_t tag = round8(off);
    if (size != tag + 8) {
        snprintf(why, whylen, "code_size %llu, expected %llu (insns %llu, pad to 8, 8-byte tag)",
                 (unsigned long long)size, (unsigned long long)(tag + 8),
                 (unsigned long long)off);
        return false;
    }
    for (uint64_t p = off; a->pad_byte >= 0 && p < tag; p++) {
        if (code[p] != a->pad_byte) {
            snprintf(why, whylen, "padding byte at +%llu is 0x%02x, expected 0x%02x",
                     (unsigned long long)p, code[p], a->pad_byte);
            return false;
        }
    }
    return true;
}

static void describe_row(const struct pi_jdc_row *row, const struct arch_rules *a, char *buf,
                         size_t len)
{
    const char *kinds[] = { "same", "undef", "off", "other" };
    snprintf(buf, len, "cfa=r%u%+lld fp=%s%+lld ra=%s%+lld", row->cfa_reg,
             (long long)row->cfa_off, kinds[row->reg[a->fp].kind], (long long)row->reg[a->fp].off,
             kinds[row->reg[a->ra_column].kind], (long long)row->reg[a->ra_column].off);
}

/* Is `row` a correct unwind rule for frame state `st`? */
static bool row_ok(const struct arch_rules *a, enum frame_state st, const struct pi_jdc_row *row,
                   char *why, size_t whylen)
{
    bool framed = st == PUSHED || st == FRAMED;
    int64_t cfa_off = framed ? 16 : a->entry_cfa;

    if (st == FRAMED) {
        /* sp == fp after the mov and across the call: either base works. */
        if (!((row->cfa_reg == a->fp || row->cfa_reg == a->sp) && row->cfa_off == 16)) {
            snprintf(why, whylen, "CFA must be r%u+16 or r%u+16", a->fp, a->sp);
            return false;
        }
    } else if (row->cfa_reg != a->sp || row->cfa_off != cfa_off) {
        snprintf(why, whylen, "CFA must be r%u%+lld", a->sp, (long long)cfa_off);
        return false;
    }
    for (uint32_t r = 0; r < PI_JDC_MAX_REG; r++) {
        int64_t want_off = 0;
        bool saved = false;
        if (r == a->fp && framed) {
            saved = true;
            want_off = -16;
        } else if (r == a->ra_column && (a->ra_on_stack || (a->lr_in_record && framed))) {
            saved = true;
            want_off = -8;
        }
        if (saved && !(row->reg[r].kind == PI_JDC_RULE_OFFSET && row->reg[r].off == want_off)) {
            snprintf(why, whylen, "r%u must be saved at CFA%+lld", r, (long long)want_off);
            return false;
        }
        if (!saved && row->reg[r].kind != PI_JDC_RULE_SAME) {
            snprintf(why, whylen, "r%u must be unchanged", r);
            return false;
        }
    }
    return true;
}

static void check_unwind_at(struct pi_jdc_report *r, struct where at, uint32_t elf_mach,
                            const uint8_t *code, uint64_t code_size, const uint8_t *unwind,
                            uint64_t unwinding_size, uint64_t hdr_size)
{
    const struct arch_rules *a = rules_for(elf_mach);
    struct layout lay;
    struct pi_jdc_eh eh;
    struct pi_jdc_eh_hdr hdr;
    char why[160];
    bool known_code;

    if (!a)
        return; /* reported on the header */
    known_code = recognise(a, code, code_size, &lay, why, sizeof why);
    if (!known_code)
        violate(r, at, PI_JDC_UNKNOWN_TEMPLATE, "%s", why);

    if (hdr_size != EH_HDR_SIZE || unwinding_size <= hdr_size) {
        violate(r, at, PI_JDC_BAD_UNWIND_RECORD,
                "eh_frame_hdr_size %llu of unwinding_size %llu, expected 20 after the .eh_frame",
                (unsigned long long)hdr_size, (unsigned long long)unwinding_size);
        return;
    }
    uint64_t eh_size = unwinding_size - hdr_size;
    int64_t code_off = (int64_t)round8(code_size); /* .eh_frame start - code start */
    if (eh_size % 4)
        violate(r, at, PI_JDC_BAD_EH_FRAME, ".eh_frame size %llu leaves the hdr unaligned",
                (unsigned long long)eh_size);

    enum pi_jdc_issue bad = pi_jdc_parse_eh_frame(unwind, (size_t)eh_size, &eh, why, sizeof why);
    if (bad != PI_JDC_ISSUE_COUNT) {
        violate(r, at, bad, "%s", why);
        return;
    }

    /* CIE: what every unwinder of this project's frames relies on. */
    if (eh.cie_id != 0)
        violate(r, at, PI_JDC_BAD_CIE, "CIE id %u, expected 0", eh.cie_id);
    if (eh.version != 1)
        violate(r, at, PI_JDC_BAD_CIE, "CIE version %u, expected 1", eh.version);
    if (eh.code_align != a->code_align)
        violate(r, at, PI_JDC_BAD_CIE, "code alignment %llu, expected %llu",
                (unsigned long long)eh.code_align, (unsigned long long)a->code_align);
    if (eh.data_align != a->data_align)
        violate(r, at, PI_JDC_BAD_CIE, "data alignment %lld, expected %lld",
                (long long)eh.data_align, (long long)a->data_align);
    if (eh.ra_column != a->ra_column)
        violate(r, at, PI_JDC_BAD_CIE, "return address column %llu, expected %u",
                (unsigned long long)eh.ra_column, a->ra_column);
    if (eh.fde_encoding != (PI_DW_EH_PE_pcrel | PI_DW_EH_PE_sdata4))
        violate(r, at, PI_JDC_BAD_CIE, "FDE encoding 0x%02x, expected 0x1b (pcrel|sdata4)",
                eh.fde_encoding);
    if (eh.cie_size % 4)
        violate(r, at, PI_JDC_BAD_EH_FRAME, "CIE size %u not a multiple of 4", eh.cie_size);

    /* FDE: must cover exactly this code, found from the slot layout. */
    if (eh.fde_size % 4)
        violate(r, at, PI_JDC_BAD_EH_FRAME, "FDE size %u not a multiple of 4", eh.fde_size);
    if (eh.cie_pointer != eh.fde_offset + 4)
        violate(r, at, PI_JDC_BAD_FDE, "CIE pointer %u does not lead back to the CIE (want %u)",
                eh.cie_pointer, eh.fde_offset + 4);
    if (eh.fde_aug_len != 0)
        violate(r, at, PI_JDC_BAD_FDE, "FDE augmentation length %llu, expected 0",
                (unsigned long long)eh.fde_aug_len);
    int64_t field = code_off + eh.fde_offset + 8; /* pc_begin field, from the code start */
    if (field + eh.pc_begin != 0)
        violate(r, at, PI_JDC_FDE_LOCATION,
                "initial_location %d reaches code%+lld, expected %lld (code_size %llu)",
                eh.pc_begin, (long long)(field + eh.pc_begin), (long long)-field,
                (unsigned long long)code_size);
    if (eh.pc_range != code_size)
        violate(r, at, PI_JDC_FDE_RANGE, "address_range %u, code_size %llu", eh.pc_range,
                (unsigned long long)code_size);
    if (!eh.terminated)
        violate(r, at, PI_JDC_BAD_EH_FRAME, "no zero terminator after the FDE");
    if (eh.trailing)
        violate(r, at, PI_JDC_BAD_EH_FRAME, "%zu unexpected bytes after the FDE%s", eh.trailing,
                eh.terminated ? " and terminator" : "");

    /* .eh_frame_hdr right after the .eh_frame. */
    pi_jdc_parse_eh_hdr(unwind + eh_size, (size_t)hdr_size, &hdr);
    if (hdr.version != 1 || hdr.eh_frame_ptr_enc != (PI_DW_EH_PE_pcrel | PI_DW_EH_PE_sdata4) ||
        hdr.fde_count_enc != PI_DW_EH_PE_udata4 ||
        hdr.table_enc != (PI_DW_EH_PE_datarel | PI_DW_EH_PE_sdata4))
        violate(r, at, PI_JDC_BAD_EH_HDR,
                "hdr version/encodings %u/0x%02x/0x%02x/0x%02x, expected 1/0x1b/0x03/0x3b",
                hdr.version, hdr.eh_frame_ptr_enc, hdr.fde_count_enc, hdr.table_enc);
    if ((int64_t)eh_size + 4 + hdr.eh_frame_ptr != 0)
        violate(r, at, PI_JDC_BAD_EH_HDR, "eh_frame_ptr %d, expected %lld", hdr.eh_frame_ptr,
                -(long long)(eh_size + 4));
    if (hdr.fde_count != 1)
        violate(r, at, PI_JDC_BAD_EH_HDR, "fde_count %u, expected 1", hdr.fde_count);
    if ((int64_t)eh_size + hdr.table_from != -code_off)
        violate(r, at, PI_JDC_EH_HDR_TABLE, "table initial location %d, expected %lld",
                hdr.table_from, -(long long)(code_off + (int64_t)eh_size));
    if ((int64_t)eh_size + hdr.table_to != (int64_t)eh.fde_offset)
        violate(r, at, PI_JDC_EH_HDR_TABLE, "table FDE address %d, expected %lld", hdr.table_to,
                (long long)eh.fde_offset - (long long)eh_size);

    /* The CFI program, then the rule at each instruction boundary. */
    struct pi_jdc_row row;
    if (!pi_jdc_row_at(&eh, UINT64_MAX, &row, why, sizeof why)) {
        violate(r, at, PI_JDC_CFI_DECODE, "%s", why);
        return;
    }
    if (!known_code)
        return;
    for (size_t i = 0; i < lay.n; i++) {
        const struct boundary *b = &lay.b[i];
        char got[120];
        if (b->off >= eh.pc_range)
            break; /* already reported as a range problem */
        if (!pi_jdc_row_at(&eh, b->off, &row, why, sizeof why)) {
            violate(r, at, PI_JDC_CFI_DECODE, "%s", why);
            return;
        }
        if (!row_ok(a, b->state, &row, why, sizeof why)) {
            describe_row(&row, a, got, sizeof got);
            violate(r, at, PI_JDC_CFA_RULE, "at +%u (before `%s`): %s; got %s", b->off,
                    b->next_insn, why, got);
        }
    }
}

void pi_jdc_check_unwind(uint32_t elf_mach, const uint8_t *code, uint64_t code_size,
                         const uint8_t *unwind, uint64_t unwinding_size, uint64_t hdr_size,
                         struct pi_jdc_report *report)
{
    struct where at = { 0, 0 };
    check_unwind_at(report, at, elf_mach, code, code_size, unwind, unwinding_size, hdr_size);
}

/* ------------------------------------------------------------------ */
/* The record stream                                                   */

/* A DEBUG_INFO or UNWINDING_INFO waiting for its CODE_LOAD. */
struct pending_debug {
    bool set;
    struct where at;
    uint64_t code_addr;
    uint64_t lo, hi; /* entry address range */
};

struct pending_unwind {
    bool set;
    struct where at;
    const uint8_t *data;
    uint64_t size, hdr_size, mapped_size;
};

/* Code bytes of every load, for the duplicate check. */
struct code_ref {
    const uint8_t *code;
    uint64_t size;
    size_t load;
};

struct scan {
    struct pi_jdc_report *r;
    const struct pi_jdc_options *o;
    const uint8_t *buf;
    size_t len;
    struct where at;
    uint64_t last_ts;
    bool have_index;
    uint64_t last_index;
    bool closed;
    struct pending_debug debug;
    struct pending_unwind unwind;
    struct code_ref *codes;
    size_t cap_loads;
};

static bool add_load(struct scan *s, const struct pi_jdc_load *l, const uint8_t *code)
{
    struct pi_jdc_report *r = s->r;
    if (r->n_loads == s->cap_loads) {
        size_t want = s->cap_loads ? 2 * s->cap_loads : 64;
        struct pi_jdc_load *nl = realloc(r->loads, want * sizeof *nl);
        if (!nl)
            return false;
        r->loads = nl;
        struct code_ref *nc = realloc(s->codes, want * sizeof *nc);
        if (!nc)
            return false;
        s->codes = nc;
        s->cap_loads = want;
    }
    r->loads[r->n_loads] = *l;
    s->codes[r->n_loads] = (struct code_ref){ code, l->code_size, r->n_loads };
    r->n_loads++;
    return true;
}

/* Copies a record's fixed-size head (len bytes) into dst, or reports the
 * record too short: it needs `need` bytes, the head and what must follow. */
static bool record_head(struct scan *s, const char *what, const uint8_t *rec, uint32_t size,
                        void *dst, size_t len, size_t need)
{
    if (size < need) {
        violate(s->r, s->at, PI_JDC_BAD_RECORD_SIZE, "%s of %u bytes", what, size);
        return false;
    }
    memcpy(dst, rec, len);
    return true;
}

static void on_debug_info(struct scan *s, const uint8_t *rec, uint32_t size)
{
    struct pi_jr_debug_info d;
    if (!record_head(s, "DEBUG_INFO", rec, size, &d, sizeof d, sizeof d))
        return;
    if (s->debug.set)
        violate(s->r, s->debug.at, PI_JDC_BAD_DEBUG_INFO,
                "DEBUG_INFO is not followed by a CODE_LOAD");
    s->r->debug_infos++;
    if (d.nr_entry == 0) {
        violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "DEBUG_INFO with no entries");
        return;
    }
    uint64_t lo = UINT64_MAX, hi = 0;
    size_t off = sizeof d;
    for (uint64_t i = 0; i < d.nr_entry; i++) {
        struct pi_jr_debug_entry e;
        if (size - off < sizeof e) {
            violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "entry %llu of %llu overruns the record",
                    (unsigned long long)i, (unsigned long long)d.nr_entry);
            return;
        }
        memcpy(&e, rec + off, sizeof e);
        off += sizeof e;
        const uint8_t *nul = memchr(rec + off, 0, size - off);
        if (!nul) {
            violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "entry %llu file name not terminated",
                    (unsigned long long)i);
            return;
        }
        if (nul == rec + off)
            violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "entry %llu has an empty file name",
                    (unsigned long long)i);
        off = (size_t)(nul - rec) + 1;
        if (e.lineno < 1)
            violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "entry %llu line %d (lines start at 1)",
                    (unsigned long long)i, e.lineno);
        lo = e.addr < lo ? e.addr : lo;
        hi = e.addr > hi ? e.addr : hi;
    }
    /* Writers may pad to 8; anything more is garbage perf would skip. */
    if (size - off >= 8)
        violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "%zu bytes after the entries", size - off);
    for (size_t i = off; i < size; i++) {
        if (rec[i]) {
            violate(s->r, s->at, PI_JDC_BAD_DEBUG_INFO, "non-zero padding after the entries");
            break;
        }
    }
    s->debug = (struct pending_debug){ true, s->at, d.code_addr, lo, hi };
}

static void on_unwinding_info(struct scan *s, const uint8_t *rec, uint32_t size)
{
    struct pi_jr_unwinding_info u;
    if (!record_head(s, "UNWINDING_INFO", rec, size, &u, sizeof u, sizeof u))
        return;
    s->r->unwinds++;
    if (u.unwinding_size > size - sizeof u) {
        violate(s->r, s->at, PI_JDC_BAD_UNWIND_RECORD,
                "unwinding_size %llu exceeds the record's %zu payload bytes",
                (unsigned long long)u.unwinding_size, size - sizeof u);
        return;
    }
    size_t pad = size - sizeof u - (size_t)u.unwinding_size;
    if (size % 8 || pad >= 8)
        violate(s->r, s->at, PI_JDC_UNWIND_PADDING,
                "total_size %u, expected round8(40 + %llu) = %llu", size,
                (unsigned long long)u.unwinding_size,
                (unsigned long long)round8(sizeof u + u.unwinding_size));
    for (size_t i = size - pad; i < size; i++) {
        if (rec[i]) {
            violate(s->r, s->at, PI_JDC_UNWIND_PADDING, "non-zero padding byte at +%zu", i);
            break;
        }
    }
    if (u.eh_frame_hdr_size == 0 || u.eh_frame_hdr_size >= u.unwinding_size) {
        violate(s->r, s->at, PI_JDC_BAD_UNWIND_RECORD,
                "eh_frame_hdr_size %llu of unwinding_size %llu",
                (unsigned long long)u.eh_frame_hdr_size, (unsigned long long)u.unwinding_size);
        return;
    }
    if (u.mapped_size < u.unwinding_size)
        violate(s->r, s->at, PI_JDC_BAD_UNWIND_RECORD,
                "mapped_size %llu smaller than unwinding_size %llu",
                (unsigned long long)u.mapped_size, (unsigned long long)u.unwinding_size);
    s->unwind = (struct pending_unwind){ true, s->at, rec + sizeof u, u.unwinding_size,
                                         u.eh_frame_hdr_size, u.mapped_size };
}

static void on_code_load(struct scan *s, const uint8_t *rec, uint32_t size)
{
    struct pi_jr_code_load l;
    struct pi_jdc_report *r = s->r;

    if (!record_head(s, "CODE_LOAD", rec, size, &l, sizeof l, sizeof l + 1)) /* + name's NUL */
        return;
    const uint8_t *name = rec + sizeof l;
    const uint8_t *nul = memchr(name, 0, size - sizeof l);
    if (!nul) {
        violate(r, s->at, PI_JDC_BAD_LOAD, "name not NUL-terminated");
        return;
    }
    size_t name_len = (size_t)(nul - name);
    if ((uint64_t)sizeof l + name_len + 1 + l.code_size != size) {
        violate(r, s->at, PI_JDC_BAD_RECORD_SIZE,
                "total_size %u != 56 + name %zu + 1 + code_size %llu", size, name_len,
                (unsigned long long)l.code_size);
        return;
    }
    const uint8_t *code = nul + 1;
    if (l.vma != l.code_addr)
        violate(r, s->at, PI_JDC_BAD_LOAD, "vma 0x%llx != code_addr 0x%llx",
                (unsigned long long)l.vma, (unsigned long long)l.code_addr);
    if (l.code_addr == 0 || l.code_size == 0 || l.tid == 0 || name_len == 0)
        violate(r, s->at, PI_JDC_BAD_LOAD, "zero code_addr, code_size, tid or name");
    if (l.pid != r->pid)
        violate(r, s->at, PI_JDC_BAD_PID, "load pid %u, header pid %u", l.pid, r->pid);
    if (s->have_index && l.code_index <= s->last_index)
        violate(r, s->at, PI_JDC_CODE_INDEX_ORDER, "code_index %llu after %llu",
                (unsigned long long)l.code_index, (unsigned long long)s->last_index);
    s->have_index = true;
    s->last_index = l.code_index;

    if (s->debug.set) {
        if (s->debug.code_addr != l.code_addr)
            violate(r, s->debug.at, PI_JDC_DEBUG_ADDR,
                    "DEBUG_INFO code_addr 0x%llx, next load at 0x%llx",
                    (unsigned long long)s->debug.code_addr, (unsigned long long)l.code_addr);
        if (s->debug.lo < l.code_addr || s->debug.hi - l.code_addr >= l.code_size)
            violate(r, s->debug.at, PI_JDC_DEBUG_ADDR,
                    "line entries [0x%llx, 0x%llx] outside the load [0x%llx, +%llu)",
                    (unsigned long long)s->debug.lo, (unsigned long long)s->debug.hi,
                    (unsigned long long)l.code_addr, (unsigned long long)l.code_size);
        s->debug.set = false;
    }

    struct pi_jdc_load load = { l.code_addr, l.code_size, l.code_index, l.code_size, NULL };
    if (s->unwind.set) {
        check_unwind_at(r, s->unwind.at, r->elf_mach, code, l.code_size, s->unwind.data,
                        s->unwind.size, s->unwind.hdr_size);
        load.span = round8(l.code_size) + s->unwind.mapped_size; /* what perf inject maps */
        s->unwind.set = false;
    } else {
        violate(r, s->at, PI_JDC_LOAD_WITHOUT_UNWIND, "CODE_LOAD '%.*s' has no UNWINDING_INFO",
                (int)(name_len > 80 ? 80 : name_len), (const char *)name);
    }
    load.name = malloc(name_len + 1);
    if (load.name)
        memcpy(load.name, name, name_len + 1);
    if (!load.name || !add_load(s, &load, code)) {
        free(load.name);
        violate(r, s->at, PI_JDC_BAD_LOAD, "out of memory recording the load");
    }
}

/* Returns false when the stream cannot be followed any further. */
static bool on_record(struct scan *s, size_t off)
{
    struct pi_jdc_report *r = s->r;
    struct pi_jr_prefix p;

    s->at = (struct where){ r->records + 1, off };
    if (s->len - off < sizeof p) {
        r->truncated = true;
        violate(r, s->at, PI_JDC_TRUNCATED, "file ends inside a record prefix (%zu of 16 bytes)",
                s->len - off);
        return false;
    }
    memcpy(&p, s->buf + off, sizeof p);
    if (p.total_size < sizeof p || p.total_size > MAX_RECORD) {
        violate(r, s->at, PI_JDC_BAD_RECORD_SIZE, "record id %u with total_size %u", p.id,
                p.total_size);
        return false;
    }
    if (p.total_size > s->len - off) {
        r->truncated = true;
        violate(r, s->at, PI_JDC_TRUNCATED, "file ends inside a %u-byte record (id %u), %zu read",
                p.total_size, p.id, s->len - off);
        return false;
    }
    r->records++;

    if (s->closed)
        violate(r, s->at, PI_JDC_AFTER_CLOSE, "record id %u after CODE_CLOSE", p.id);
    if (p.timestamp < s->last_ts)
        violate(r, s->at, PI_JDC_TIMESTAMP_ORDER, "timestamp %llu after %llu",
                (unsigned long long)p.timestamp, (unsigned long long)s->last_ts);
    else
        s->last_ts = p.timestamp;
    if (s->unwind.set && p.id != PI_JIT_CODE_LOAD) {
        violate(r, s->unwind.at, PI_JDC_UNWIND_NOT_BEFORE_LOAD,
                "UNWINDING_INFO followed by record id %u, not its CODE_LOAD", p.id);
        s->unwind.set = false;
    }
    if (s->debug.set && p.id != PI_JIT_CODE_LOAD && p.id != PI_JIT_CODE_UNWINDING_INFO &&
        p.id != PI_JIT_CODE_DEBUG_INFO) {
        violate(r, s->debug.at, PI_JDC_BAD_DEBUG_INFO,
                "DEBUG_INFO followed by record id %u, not its CODE_LOAD", p.id);
        s->debug.set = false;
    }

    const uint8_t *rec = s->buf + off;
    switch (p.id) {
    case PI_JIT_CODE_LOAD:
        on_code_load(s, rec, p.total_size);
        break;
    case PI_JIT_CODE_DEBUG_INFO:
        on_debug_info(s, rec, p.total_size);
        break;
    case PI_JIT_CODE_UNWINDING_INFO:
        on_unwinding_info(s, rec, p.total_size);
        break;
    case PI_JIT_CODE_CLOSE:
        if (p.total_size != sizeof(struct pi_jr_code_close))
            violate(r, s->at, PI_JDC_BAD_RECORD_SIZE, "CODE_CLOSE of %u bytes", p.total_size);
        s->closed = true;
        r->closes++;
        break;
    case PI_JIT_CODE_MOVE:
        violate(r, s->at, PI_JDC_UNSUPPORTED_RECORD, "CODE_MOVE: trampolines never move");
        break;
    default:
        violate(r, s->at, PI_JDC_UNKNOWN_RECORD, "unknown record id %u (%u bytes)", p.id,
                p.total_size);
        break;
    }
    return true;
}

static bool on_header(struct scan *s)
{
    struct pi_jdc_report *r = s->r;
    struct pi_jitdump_header h;
    struct where at = { 0, 0 };

    if (s->len < sizeof h) {
        r->truncated = true;
        violate(r, at, PI_JDC_TRUNCATED, "file of %zu bytes is shorter than the header", s->len);
        return false;
    }
    memcpy(&h, s->buf, sizeof h);
    if (h.magic == PI_JITDUMP_MAGIC_SWAPPED) {
        violate(r, at, PI_JDC_BAD_MAGIC, "magic is byte-swapped: written on another endianness");
        return false;
    }
    if (h.magic != PI_JITDUMP_MAGIC) {
        violate(r, at, PI_JDC_BAD_MAGIC, "magic 0x%08x, expected 0x%08x", h.magic,
                PI_JITDUMP_MAGIC);
        return false;
    }
    r->elf_mach = h.elf_mach;
    r->pid = h.pid;
    if (h.version != PI_JITDUMP_VERSION)
        violate(r, at, PI_JDC_BAD_VERSION, "version %u, expected %u", h.version,
                PI_JITDUMP_VERSION);
    if (!rules_for(h.elf_mach))
        violate(r, at, PI_JDC_BAD_ELF_MACH, "elf_mach %u, expected %u or %u", h.elf_mach,
                EM_X86_64, EM_AARCH64);
    if (h.pad1 != 0)
        violate(r, at, PI_JDC_BAD_HEADER, "pad1 %u, expected 0", h.pad1);
    if (h.flags & ~PI_JITDUMP_FLAGS_KNOWN)
        violate(r, at, PI_JDC_BAD_HEADER, "unknown flags 0x%llx", (unsigned long long)h.flags);
    if (h.pid == 0)
        violate(r, at, PI_JDC_BAD_PID, "header pid 0");
    else if (s->o->expect_pid && h.pid != s->o->expect_pid)
        violate(r, at, PI_JDC_BAD_PID, "header pid %u, expected %u", h.pid, s->o->expect_pid);
    if (h.total_size != sizeof h) {
        violate(r, at, PI_JDC_BAD_HEADER_SIZE, "header total_size %u, expected %zu",
                h.total_size, sizeof h);
        if (h.total_size < sizeof h || h.total_size > s->len)
            return false;
    }
    return true;
}

static int cmp_addr(const void *pa, const void *pb)
{
    const struct pi_jdc_load *a = pa, *b = pb;
    return a->addr < b->addr ? -1 : a->addr > b->addr;
}

static int cmp_code(const void *pa, const void *pb)
{
    const struct code_ref *a = pa, *b = pb;
    if (a->size != b->size)
        return a->size < b->size ? -1 : 1;
    int c = memcmp(a->code, b->code, (size_t)a->size);
    if (c)
        return c;
    return a->load < b->load ? -1 : a->load > b->load;
}

/* perf inject maps [addr, addr + span) per load: ranges must be disjoint. */
static void check_overlaps(struct scan *s)
{
    struct pi_jdc_report *r = s->r;
    size_t n = r->n_loads;
    struct pi_jdc_load *sorted = n > 1 ? malloc(n * sizeof *sorted) : NULL;
    struct where whole = { 0, 0 };

    if (!sorted)
        return; /* fewer than two loads, or no memory */
    memcpy(sorted, r->loads, n * sizeof *sorted);
    qsort(sorted, n, sizeof *sorted, cmp_addr);
    for (size_t i = 1, reach = 0; i < n; i++) {
        const struct pi_jdc_load *prev = &sorted[reach], *cur = &sorted[i];
        if (cur->addr < prev->addr + prev->span)
            violate(r, whole, PI_JDC_OVERLAP,
                    "'%s' at 0x%llx overlaps '%s' mapped over [0x%llx, 0x%llx)", cur->name,
                    (unsigned long long)cur->addr, prev->name, (unsigned long long)prev->addr,
                    (unsigned long long)(prev->addr + prev->span));
        if (cur->addr + cur->span > prev->addr + prev->span)
            reach = i;
    }
    free(sorted);
}

static void check_duplicates(struct scan *s)
{
    struct pi_jdc_report *r = s->r;
    struct where whole = { 0, 0 };

    if (r->n_loads < 2)
        return;
    qsort(s->codes, r->n_loads, sizeof *s->codes, cmp_code);
    for (size_t i = 1; i < r->n_loads; i++) {
        const struct code_ref *a = &s->codes[i - 1], *b = &s->codes[i];
        if (a->size == b->size && memcmp(a->code, b->code, (size_t)a->size) == 0)
            violate(r, whole, PI_JDC_DUPLICATE_CODE,
                    "'%s' and '%s' have identical code bytes (same perf build-id)",
                    r->loads[a->load].name, r->loads[b->load].name);
    }
}

static void check_expected(struct scan *s)
{
    struct where whole = { 0, 0 };
    for (size_t e = 0; e < s->o->n_expect; e++) {
        bool found = false;
        for (size_t i = 0; i < s->r->n_loads && !found; i++)
            found = s->r->loads[i].name && fnmatch(s->o->expect[e], s->r->loads[i].name, 0) == 0;
        if (!found)
            violate(s->r, whole, PI_JDC_EXPECTED_MISSING, "no CODE_LOAD named '%s'",
                    s->o->expect[e]);
    }
}

bool pi_jdc_check(const uint8_t *buf, size_t len, const struct pi_jdc_options *opts,
                  struct pi_jdc_report *report)
{
    static const struct pi_jdc_options defaults = { false, 0, NULL, 0 };
    struct scan s;

    memset(report, 0, sizeof *report);
    memset(&s, 0, sizeof s);
    s.r = report;
    s.o = opts ? opts : &defaults;
    s.buf = buf;
    s.len = len;

    if (on_header(&s)) {
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
            violate(report, s.unwind.set ? s.unwind.at : s.debug.at, PI_JDC_TRUNCATED,
                    "file ends before the CODE_LOAD of this %s record",
                    s.unwind.set ? "UNWINDING_INFO" : "DEBUG_INFO");
        }
        check_overlaps(&s);
        check_duplicates(&s);
    }
    check_expected(&s);
    free(s.codes);

    report->valid = true;
    for (int i = 0; i < PI_JDC_ISSUE_COUNT; i++) {
        if (report->count[i] && !(i == PI_JDC_TRUNCATED && s.o->allow_truncated))
            report->valid = false;
    }
    return report->valid;
}

bool pi_jdc_check_file(const char *path, const struct pi_jdc_options *opts,
                       struct pi_jdc_report *report, const char **err)
{
    FILE *f = fopen(path, "rb");
    uint8_t *buf = NULL;
    size_t len = 0, cap = 0;

    memset(report, 0, sizeof *report);
    if (err)
        *err = NULL;
    if (!f) {
        if (err)
            *err = "cannot open file";
        return false;
    }
    for (;;) {
        if (len == cap) {
            size_t want = cap ? 2 * cap : 1 << 16;
            uint8_t *nb = realloc(buf, want);
            if (!nb) {
                free(buf);
                fclose(f);
                if (err)
                    *err = "out of memory";
                return false;
            }
            buf = nb;
            cap = want;
        }
        size_t got = fread(buf + len, 1, cap - len, f);
        len += got;
        if (got == 0)
            break;
    }
    bool read_error = ferror(f) != 0;
    fclose(f);
    if (read_error) {
        free(buf);
        if (err)
            *err = "read error";
        return false;
    }
    bool ok = pi_jdc_check(buf, len, opts, report);
    free(buf);
    return ok;
}
