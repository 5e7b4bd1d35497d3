/* The trampolines this project emits, restated from tramp_x86_64.S and
 * tramp_aarch64.S: their bytes, recognised in a CODE_LOAD's code, and the
 * unwind rule each instruction boundary needs.
 *
 * Restated rather than shared with the builder or tramp_code.h, so that a
 * wrong byte there is caught here. Everything returned is static data or
 * lives in the caller's structs: nothing to free. Failures return false
 * with a one-line reason in why[whylen]. */
#ifndef PI_JDC_TEMPLATE_H
#define PI_JDC_TEMPLATE_H

#include "jitdump_check.h"

#define JDC_EM_X86_64 62u
#define JDC_EM_AARCH64 183u

/* Where execution is inside the frame-record protocol. */
enum jdc_frame_state {
    JDC_AT_ENTRY, /* nothing pushed: CFA = sp + entry_cfa */
    JDC_PUSHED,   /* frame record pushed, fp not yet set */
    JDC_FRAMED,   /* fp = sp: CFA = fp + 16 (or sp + 16, equivalent here) */
    JDC_POPPED,   /* frame record popped: back to the entry rule */
};

struct jdc_insn; /* one template instruction, private to jdc_template.c */

/* One architecture's template and the CIE fields its unwind data needs. */
struct jdc_arch {
    uint32_t elf_mach;
    const char *name;
    const struct jdc_insn *tmpl;
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

#define JDC_MAX_BOUNDARIES 8

struct jdc_boundary {
    uint32_t off;
    enum jdc_frame_state state;
    const char *next_insn; /* the instruction that starts there */
};

/* Each instruction boundary up to `ret`, with the frame state there. */
struct jdc_layout {
    size_t n;
    struct jdc_boundary b[JDC_MAX_BOUNDARIES];
};

/* The rules for elf_mach, or NULL if this project does not emit it. */
const struct jdc_arch *jdc_arch_for(uint32_t elf_mach);

/* Matches code[0, size) against a's template: the instructions (landing
 * pad optional), padding to 8, then the 8-byte tag, nothing else. Fills
 * *out on success. */
bool jdc_recognise(const struct jdc_arch *a, const uint8_t *code, uint64_t size,
                   struct jdc_layout *out, char *why, size_t whylen);

/* Is `row` a correct unwind rule in frame state `st`? */
bool jdc_row_ok(const struct jdc_arch *a, enum jdc_frame_state st, const struct pi_jdc_row *row,
                char *why, size_t whylen);

/* The CFA, fp and return-address rules of `row`, for a message. */
void jdc_describe_row(const struct pi_jdc_row *row, const struct jdc_arch *a, char *buf,
                      size_t len);

#endif
