/* .eh_frame / .eh_frame_hdr generation for trampoline slots; see ehframe.h.
 *
 * Formats: LSB 4.1 "Exception Frames" for .eh_frame (a DWARF .debug_frame
 * dialect: CIE id 0, pc-relative pointers, "z" augmentation) and
 * "Exception Frame Header" for .eh_frame_hdr.
 *
 * The output is built twice by the same code: once with no buffer to measure,
 * once for real, so there is a single description of the bytes. */
#include "ehframe.h"

#include <stdbool.h>
#include <string.h>

/* Per-architecture facts the CFI needs. The prologue of both templates
 * pushes a 16-byte frame record (saved fp, and on aarch64 the saved lr); the
 * two differ in where the return address lives on entry. */
struct arch_cfi {
    uint32_t elf_mach;
    uint8_t code_align;   /* instruction granule: advances are in these units */
    int8_t data_align;    /* every saved slot is 8-byte aligned */
    uint8_t ra_column;    /* return address column */
    uint8_t sp, fp;       /* stack and frame pointer registers */
    uint8_t entry_cfa;    /* CFA - sp on entry: 8 if `call` pushed the RA */
    bool ra_on_stack;     /* RA is at CFA-8 for the whole body (x86 call) */
    bool lr_saved;        /* the prologue also saves the RA register (stp) */
    uint8_t framed_cfa;   /* CFA - sp after the prologue's push */
};

static const struct arch_cfi arch_cfi[] = {
    [PI_ARCH_X86_64] = {
        .elf_mach = 62, .code_align = 1, .data_align = -8,
        .ra_column = PI_DW_X86_RIP, .sp = PI_DW_X86_RSP, .fp = PI_DW_X86_RBP,
        .entry_cfa = 8, .ra_on_stack = true, .lr_saved = false, .framed_cfa = 16,
    },
    [PI_ARCH_AARCH64] = {
        .elf_mach = 183, .code_align = 4, .data_align = -8,
        .ra_column = PI_DW_A64_X30, .sp = PI_DW_A64_SP, .fp = PI_DW_A64_X29,
        .entry_cfa = 0, .ra_on_stack = false, .lr_saved = true, .framed_cfa = 16,
    },
};

/* Where the frame record sits relative to the CFA once pushed. */
#define FP_SLOT 16 /* saved fp at CFA-16 */
#define LR_SLOT 8  /* saved lr at CFA-8 (aarch64) */

#define CIE_VERSION 1
#define EH_HDR_VERSION 1
#define EH_HDR_SIZE 20u
#define ENTRY_ALIGN 8u /* CIE and FDE are nop-padded to this */

static const struct arch_cfi *arch_of(enum pi_arch arch)
{
    if ((unsigned)arch >= sizeof arch_cfi / sizeof arch_cfi[0])
        return NULL;
    return &arch_cfi[arch];
}

uint32_t pi_arch_elf_mach(enum pi_arch arch)
{
    const struct arch_cfi *a = arch_of(arch);
    return a ? a->elf_mach : 0;
}

static uint32_t round_up(uint32_t v, uint32_t to)
{
    return (v + to - 1) / to * to;
}

/* Byte sink. With p == NULL it only counts, which is how sizes are known
 * before anything is written. The output starts with the .eh_frame, so len
 * is also the offset from the .eh_frame start that pcrel values need. */
struct cfi_writer {
    uint8_t *p;
    size_t cap;
    size_t len;
};

static void put_bytes(struct cfi_writer *w, const void *src, size_t n)
{
    if (w->p && w->len + n <= w->cap)
        memcpy(w->p + w->len, src, n);
    w->len += n;
}

static void put_u8(struct cfi_writer *w, uint8_t v)
{
    put_bytes(w, &v, 1);
}

static void put_u16(struct cfi_writer *w, uint16_t v)
{
    put_bytes(w, &v, sizeof v); /* native order, as the unwinder reads it */
}

static void put_u32(struct cfi_writer *w, uint32_t v)
{
    put_bytes(w, &v, sizeof v);
}

static void put_s32(struct cfi_writer *w, int32_t v)
{
    put_bytes(w, &v, sizeof v);
}

static void put_uleb(struct cfi_writer *w, uint64_t v)
{
    do {
        uint8_t b = v & 0x7f;
        v >>= 7;
        put_u8(w, v ? (uint8_t)(b | 0x80) : b);
    } while (v);
}

static void put_sleb(struct cfi_writer *w, int64_t v)
{
    for (;;) {
        uint8_t b = (uint8_t)((uint64_t)v & 0x7f);
        int64_t next = v < 0 ? ~(~v >> 7) : v >> 7; /* floor(v / 128), no UB */
        int done = (next == 0 && !(b & 0x40)) || (next == -1 && (b & 0x40));
        put_u8(w, done ? b : (uint8_t)(b | 0x80));
        if (done)
            return;
        v = next;
    }
}

static void patch_u32(struct cfi_writer *w, size_t at, uint32_t v)
{
    if (w->p && at + sizeof v <= w->cap)
        memcpy(w->p + at, &v, sizeof v);
}

/* --- Call frame instructions, one helper per DW_CFA operation. --- */

/* Moves the location forward by `units` code-alignment units, using the
 * shortest encoding that holds it. */
static void cfa_advance(struct cfi_writer *w, uint32_t units)
{
    if (units == 0)
        return;
    if (units <= PI_DW_CFA_operand_mask) {
        put_u8(w, (uint8_t)(PI_DW_CFA_advance_loc | units));
    } else if (units <= UINT8_MAX) {
        put_u8(w, PI_DW_CFA_advance_loc1);
        put_u8(w, (uint8_t)units);
    } else if (units <= UINT16_MAX) {
        put_u8(w, PI_DW_CFA_advance_loc2);
        put_u16(w, (uint16_t)units);
    } else {
        put_u8(w, PI_DW_CFA_advance_loc4);
        put_u32(w, units);
    }
}

static void cfa_def_cfa(struct cfi_writer *w, uint8_t reg, uint32_t off)
{
    put_u8(w, PI_DW_CFA_def_cfa);
    put_uleb(w, reg);
    put_uleb(w, off);
}

static void cfa_def_cfa_offset(struct cfi_writer *w, uint32_t off)
{
    put_u8(w, PI_DW_CFA_def_cfa_offset);
    put_uleb(w, off);
}

static void cfa_def_cfa_register(struct cfi_writer *w, uint8_t reg)
{
    put_u8(w, PI_DW_CFA_def_cfa_register);
    put_uleb(w, reg);
}

/* Register `reg` is saved at CFA + factored * data_align. */
static void cfa_offset(struct cfi_writer *w, uint8_t reg, uint32_t factored)
{
    if (reg <= PI_DW_CFA_operand_mask) {
        put_u8(w, (uint8_t)(PI_DW_CFA_offset | reg));
    } else {
        put_u8(w, PI_DW_CFA_offset_extended);
        put_uleb(w, reg);
    }
    put_uleb(w, factored);
}

/* Register `reg` goes back to its rule from the CIE (unchanged). */
static void cfa_restore(struct cfi_writer *w, uint8_t reg)
{
    if (reg <= PI_DW_CFA_operand_mask) {
        put_u8(w, (uint8_t)(PI_DW_CFA_restore | reg));
    } else {
        put_u8(w, PI_DW_CFA_restore_extended);
        put_uleb(w, reg);
    }
}

/* CIE and FDE lengths must keep the next entry aligned. */
static void cfa_pad(struct cfi_writer *w, size_t entry_start)
{
    while ((w->len - entry_start) % ENTRY_ALIGN)
        put_u8(w, PI_DW_CFA_nop);
}

/* Fills in an entry's length word now that its end is known. */
static void end_entry(struct cfi_writer *w, size_t entry_start)
{
    cfa_pad(w, entry_start);
    patch_u32(w, entry_start, (uint32_t)(w->len - entry_start - sizeof(uint32_t)));
}

/* The CIE holds what is true at the first instruction. */
static void emit_cie(struct cfi_writer *w, const struct arch_cfi *a, uint8_t pointer_encoding)
{
    static const char augmentation[] = "zR"; /* z: has aug data; R: FDE enc */
    size_t start = w->len;

    put_u32(w, 0); /* length, patched */
    put_u32(w, 0); /* CIE id: 0 marks a CIE in .eh_frame */
    put_u8(w, CIE_VERSION);
    put_bytes(w, augmentation, sizeof augmentation);
    put_uleb(w, a->code_align);
    put_sleb(w, a->data_align);
    put_u8(w, a->ra_column); /* version 1: a single byte */
    put_uleb(w, 1);          /* augmentation data length */
    put_u8(w, pointer_encoding);

    cfa_def_cfa(w, a->sp, a->entry_cfa);
    if (a->ra_on_stack)
        cfa_offset(w, a->ra_column, (uint32_t)(a->entry_cfa / -a->data_align));
    end_entry(w, start);
}

/* Field offsets of an absolute-form FDE (emit_fde): length, CIE pointer,
 * pc_begin, address_range. */
enum { ABS_FDE_CIE_POINTER = 4, ABS_FDE_PC_BEGIN = 8 };

/* Where an FDE's code is, in the CIE's pointer encoding: pc-relative (a
 * slot: the code begins code_off bytes before the .eh_frame, which starts
 * with the CIE) or absolute (a symbol file: the FDE sits at section offset
 * fde_offset, the CIE at 0). */
struct fde_place {
    bool absolute;
    uint32_t code_off;
    uint64_t code_addr;
    uint32_t fde_offset;
};

/* The FDE walks the prologue and epilogue: frame record pushed, frame
 * pointer set, frame record popped (back to the entry rule for `ret`).
 * Where its code is: `at`. */
static void emit_fde(struct cfi_writer *w, const struct arch_cfi *a,
                     const struct pi_tramp_shape *s, const struct fde_place *at)
{
    size_t start = w->len;
    uint32_t caf = a->code_align;

    put_u32(w, 0); /* length, patched */
    if (at->absolute) {
        /* CIE pointer: distance back from this field to the CIE at 0 */
        put_u32(w, at->fde_offset + ABS_FDE_CIE_POINTER);
        put_bytes(w, &at->code_addr, sizeof at->code_addr); /* absptr code start */
        uint64_t range = s->code_size;
        put_bytes(w, &range, sizeof range); /* address_range, same width */
    } else {
        put_u32(w, (uint32_t)w->len); /* CIE pointer: distance back to the CIE at 0 */
        put_s32(w, -(int32_t)(at->code_off + (uint32_t)w->len)); /* pcrel code start */
        put_s32(w, (int32_t)s->code_size); /* address_range */
    }
    put_uleb(w, 0); /* augmentation data length */

    cfa_advance(w, s->after_push / caf);
    cfa_def_cfa_offset(w, a->framed_cfa);
    cfa_offset(w, a->fp, FP_SLOT / (uint32_t)-a->data_align);
    if (a->lr_saved)
        cfa_offset(w, a->ra_column, LR_SLOT / (uint32_t)-a->data_align);

    cfa_advance(w, (s->after_setfp - s->after_push) / caf);
    cfa_def_cfa_register(w, a->fp); /* holds whatever the callee does to sp */

    cfa_advance(w, (s->after_pop - s->after_setfp) / caf);
    cfa_def_cfa(w, a->sp, a->entry_cfa);
    cfa_restore(w, a->fp);
    if (a->lr_saved)
        cfa_restore(w, a->ra_column);
    end_entry(w, start);
}

/* One-entry search table. eh_frame_ptr is pcrel (from its own field), the
 * table is datarel (from the hdr start); the hdr sits at eh_size. */
static void emit_hdr(struct cfi_writer *w, uint32_t code_off, uint32_t eh_size, uint32_t fde_off)
{
    put_u8(w, EH_HDR_VERSION);
    put_u8(w, PI_DW_EH_PE_pcrel | PI_DW_EH_PE_sdata4);   /* eh_frame_ptr */
    put_u8(w, PI_DW_EH_PE_udata4);                       /* fde_count */
    put_u8(w, PI_DW_EH_PE_datarel | PI_DW_EH_PE_sdata4); /* table */
    put_s32(w, -(int32_t)w->len);                        /* back to offset 0 */
    put_u32(w, 1);
    put_s32(w, -(int32_t)(code_off + eh_size));      /* initial location */
    put_s32(w, (int32_t)fde_off - (int32_t)eh_size); /* FDE address */
}

/* The whole unwind blob; returns the .eh_frame size via *eh_size. */
static void emit_unwind(struct cfi_writer *w, const struct arch_cfi *a,
                        const struct pi_tramp_shape *s, uint32_t *eh_size)
{
    uint32_t code_off = round_up(s->code_size, 8);
    size_t fde_off;

    emit_cie(w, a, PI_DW_EH_PE_pcrel | PI_DW_EH_PE_sdata4);
    fde_off = w->len;
    struct fde_place at = { .absolute = false, .code_off = code_off };
    emit_fde(w, a, s, &at);
    put_u32(w, 0); /* terminator for __register_frame */
    *eh_size = (uint32_t)w->len;
    emit_hdr(w, code_off, *eh_size, (uint32_t)fde_off);
}

static bool shape_ok(const struct pi_tramp_shape *s, const struct arch_cfi *a)
{
    if (!a || s->code_size == 0 || s->code_size > PI_EHFRAME_MAX_CODE)
        return false;
    if (!(0 < s->after_push && s->after_push < s->after_setfp &&
          s->after_setfp < s->after_pop && s->after_pop < s->code_size))
        return false;
    /* The CFI can only name instruction boundaries. */
    return s->after_push % a->code_align == 0 && s->after_setfp % a->code_align == 0 &&
           s->after_pop % a->code_align == 0;
}

/* What an emitter writes: the unwind data of one region, reporting the
 * .eh_frame's size. */
typedef void (*unwind_emitter)(struct cfi_writer *w, const void *arg, uint32_t *eh_size);

/* Measures into a NULL writer first, so a short buffer writes nothing;
 * `sizes` is told in every case. */
static size_t measure_then_emit(unwind_emitter emit, const void *arg, uint8_t *out, size_t cap,
                                struct pi_unwind_sizes *sizes)
{
    struct cfi_writer measure = { NULL, 0, 0 };
    uint32_t eh_size = 0;
    emit(&measure, arg, &eh_size);
    struct pi_unwind_sizes sz = { eh_size, EH_HDR_SIZE, (uint32_t)measure.len,
                                  round_up((uint32_t)measure.len, 16) };
    if (sizes)
        *sizes = sz;
    if (!out || cap < sz.total)
        return 0;
    struct cfi_writer w = { out, cap, 0 };
    emit(&w, arg, &eh_size);
    return w.len;
}

static void emit_shape(struct cfi_writer *w, const void *arg, uint32_t *eh_size)
{
    const struct pi_tramp_shape *shape = arg;
    emit_unwind(w, arch_of(shape->arch), shape, eh_size);
}

size_t pi_ehframe_build(const struct pi_tramp_shape *shape, uint8_t *out, size_t cap,
                        struct pi_unwind_sizes *sizes)
{
    if (sizes)
        *sizes = (struct pi_unwind_sizes){ 0, 0, 0, 0 };
    if (!shape || !shape_ok(shape, arch_of(shape->arch)))
        return 0;
    return measure_then_emit(emit_shape, shape, out, cap, sizes);
}

/* Measures into a NULL writer first, so a short buffer writes nothing. */
static size_t finish(struct cfi_writer *measure, uint8_t *out, size_t cap,
                     void (*emit)(struct cfi_writer *, const void *), const void *arg)
{
    emit(measure, arg);
    if (out == NULL)
        return measure->len;
    if (cap < measure->len)
        return 0;
    struct cfi_writer w = { out, cap, 0 };
    emit(&w, arg);
    return w.len;
}

struct abs_args {
    const struct arch_cfi *a;
    const struct pi_tramp_shape *shape;
    struct fde_place at;
};

static void emit_abs_cie(struct cfi_writer *w, const void *arg)
{
    const struct abs_args *x = arg;
    emit_cie(w, x->a, PI_DW_EH_PE_absptr);
}

static void emit_abs_fde(struct cfi_writer *w, const void *arg)
{
    const struct abs_args *x = arg;
    emit_fde(w, x->a, x->shape, &x->at);
}

size_t pi_ehframe_abs_cie(const struct pi_tramp_shape *shape, uint8_t *out, size_t cap)
{
    const struct arch_cfi *a = shape ? arch_of(shape->arch) : NULL;
    if (!shape || !shape_ok(shape, a))
        return 0;
    struct cfi_writer measure = { NULL, 0, 0 };
    struct abs_args x = { a, shape, { .absolute = true } };
    return finish(&measure, out, cap, emit_abs_cie, &x);
}

size_t pi_ehframe_abs_fde(const struct pi_tramp_shape *shape, uint64_t code_addr,
                          uint32_t fde_offset, uint8_t *out, size_t cap)
{
    const struct arch_cfi *a = shape ? arch_of(shape->arch) : NULL;
    if (!shape || !shape_ok(shape, a))
        return 0;
    struct cfi_writer measure = { NULL, 0, 0 };
    struct abs_args x = { a, shape, { .absolute = true, .code_addr = code_addr,
                                      .fde_offset = fde_offset } };
    return finish(&measure, out, cap, emit_abs_fde, &x);
}

void pi_ehframe_abs_fde_move(uint8_t *fde, uint64_t code_addr, uint32_t fde_offset)
{
    uint32_t back = fde_offset + ABS_FDE_CIE_POINTER;
    memcpy(fde + ABS_FDE_CIE_POINTER, &back, sizeof back);
    memcpy(fde + ABS_FDE_PC_BEGIN, &code_addr, sizeof code_addr);
}

/* --- Borrowed rules (pi_ehframe_build_rules) --- */

enum { RULES_MAX_INSNS = 256 };

static void emit_rules_unwind(struct cfi_writer *w, const struct pi_cfi_rules *r,
                              uint32_t code_size, uint32_t *eh_size)
{
    static const char augmentation[] = "zR";
    uint32_t code_off = round_up(code_size, 8);

    size_t cie = w->len;
    put_u32(w, 0); /* length, patched */
    put_u32(w, 0); /* CIE id */
    put_u8(w, CIE_VERSION);
    put_bytes(w, augmentation, sizeof augmentation);
    put_uleb(w, r->code_align);
    put_sleb(w, r->data_align);
    put_u8(w, r->ra_column);
    put_uleb(w, 1);
    put_u8(w, PI_DW_EH_PE_pcrel | PI_DW_EH_PE_sdata4);
    put_bytes(w, r->cie_insns, r->cie_len);
    end_entry(w, cie);

    size_t fde = w->len;
    put_u32(w, 0);
    put_u32(w, (uint32_t)w->len);                          /* back to the CIE at 0 */
    put_s32(w, -(int32_t)(code_off + (uint32_t)w->len));  /* pcrel code start */
    put_s32(w, (int32_t)code_size);
    put_uleb(w, 0);
    put_bytes(w, r->fde_insns, r->fde_len);
    end_entry(w, fde);
    put_u32(w, 0);
    *eh_size = (uint32_t)w->len;
    emit_hdr(w, code_off, *eh_size, (uint32_t)fde);
}

struct rules_arg {
    const struct pi_cfi_rules *rules;
    uint32_t code_size;
};

static void emit_rules(struct cfi_writer *w, const void *arg, uint32_t *eh_size)
{
    const struct rules_arg *r = arg;
    emit_rules_unwind(w, r->rules, r->code_size, eh_size);
}

size_t pi_ehframe_build_rules(const struct pi_cfi_rules *r, uint32_t code_size, uint8_t *out,
                              size_t cap, struct pi_unwind_sizes *sizes)
{
    if (sizes)
        *sizes = (struct pi_unwind_sizes){ 0, 0, 0, 0 };
    if (r == NULL || code_size == 0 || code_size > PI_EHFRAME_MAX_CODE || r->code_align == 0 ||
        r->cie_len > RULES_MAX_INSNS || r->fde_len > RULES_MAX_INSNS ||
        (r->cie_len && !r->cie_insns) || (r->fde_len && !r->fde_insns) ||
        !pi_cfi_insns_portable(r->cie_insns, r->cie_len) ||
        !pi_cfi_insns_portable(r->fde_insns, r->fde_len))
        return 0;
    struct rules_arg arg = { r, code_size };
    return measure_then_emit(emit_rules, &arg, out, cap, sizes);
}

/* Skips one LEB128 number; 0 when it runs past the end. */
static size_t skip_leb(const uint8_t *p, size_t len, size_t at)
{
    while (at < len)
        if ((p[at++] & 0x80) == 0)
            return at;
    return 0;
}

int pi_cfi_insns_portable(const uint8_t *p, size_t len)
{
    size_t at = 0;
    while (at < len) {
        uint8_t op = p[at++];
        uint8_t primary = op & PI_DW_CFA_primary_mask;
        int lebs = 0;        /* LEB128 operands that follow */
        size_t fixed = 0;    /* then fixed-size bytes */
        if (primary == PI_DW_CFA_advance_loc || primary == PI_DW_CFA_restore)
            continue;
        if (primary == PI_DW_CFA_offset) {
            lebs = 1;
        } else {
            switch (op) {
            case PI_DW_CFA_nop: case PI_DW_CFA_remember_state: case PI_DW_CFA_restore_state:
                break;
            case PI_DW_CFA_advance_loc1: fixed = 1; break;
            case PI_DW_CFA_advance_loc2: fixed = 2; break;
            case PI_DW_CFA_advance_loc4: fixed = 4; break;
            case PI_DW_CFA_restore_extended: case PI_DW_CFA_undefined:
            case PI_DW_CFA_same_value: case PI_DW_CFA_def_cfa_register:
            case PI_DW_CFA_def_cfa_offset: case PI_DW_CFA_def_cfa_offset_sf:
                lebs = 1;
                break;
            case PI_DW_CFA_offset_extended: case PI_DW_CFA_register: case PI_DW_CFA_def_cfa:
            case PI_DW_CFA_offset_extended_sf: case PI_DW_CFA_def_cfa_sf:
                lebs = 2;
                break;
            default: /* set_loc (an address), expressions, vendor operations */
                return 0;
            }
        }
        for (int i = 0; i < lebs; i++)
            if ((at = skip_leb(p, len, at)) == 0)
                return 0;
        if (fixed > len - at)
            return 0;
        at += fixed;
    }
    return 1;
}
