/* Unwind data against its code; see jdc_unwind.h. */
#include "jdc_unwind.h"

#include "bytes.h"
#include "ehframe.h"
#include "jdc_template.h"

void jdc_check_unwind(struct pi_jdc_report *r, struct jdc_where at, uint32_t elf_mach,
                      const uint8_t *code, uint64_t code_size, const uint8_t *unwind,
                      uint64_t unwinding_size, uint64_t hdr_size)
{
    const struct jdc_arch *a = jdc_arch_for(elf_mach);
    struct jdc_layout lay;
    struct pi_jdc_eh eh;
    struct pi_jdc_eh_hdr hdr;
    char why[160];
    bool known_code;

    if (!a)
        return; /* reported on the header */
    /* NULL code: CPython's, whose rules are its own (the structure is
     * checked, the rule at each instruction is not). */
    known_code = code != NULL && jdc_recognise(a, code, code_size, &lay, why, sizeof why);
    if (code != NULL && !known_code)
        jdc_violate(r, at, PI_JDC_UNKNOWN_TEMPLATE, "%s", why);

    if (hdr_size != PI_JDC_EH_HDR_SIZE || unwinding_size <= hdr_size) {
        jdc_violate(r, at, PI_JDC_BAD_UNWIND_RECORD,
                    "eh_frame_hdr_size %llu of unwinding_size %llu, expected 20 after the "
                    ".eh_frame",
                    (unsigned long long)hdr_size, (unsigned long long)unwinding_size);
        return;
    }
    uint64_t eh_size = unwinding_size - hdr_size;
    int64_t code_off = (int64_t)round8(code_size); /* .eh_frame start - code start */
    if (eh_size % 4)
        jdc_violate(r, at, PI_JDC_BAD_EH_FRAME, ".eh_frame size %llu leaves the hdr unaligned",
                    (unsigned long long)eh_size);

    enum pi_jdc_issue bad = pi_jdc_parse_eh_frame(unwind, (size_t)eh_size, &eh, why, sizeof why);
    if (bad != PI_JDC_ISSUE_COUNT) {
        jdc_violate(r, at, bad, "%s", why);
        return;
    }

    /* CIE: what every unwinder of this project's frames relies on. */
    if (eh.cie_id != 0)
        jdc_violate(r, at, PI_JDC_BAD_CIE, "CIE id %u, expected 0", eh.cie_id);
    if (eh.version != 1)
        jdc_violate(r, at, PI_JDC_BAD_CIE, "CIE version %u, expected 1", eh.version);
    if (eh.code_align != a->code_align)
        jdc_violate(r, at, PI_JDC_BAD_CIE, "code alignment %llu, expected %llu",
                    (unsigned long long)eh.code_align, (unsigned long long)a->code_align);
    if (eh.data_align != a->data_align)
        jdc_violate(r, at, PI_JDC_BAD_CIE, "data alignment %lld, expected %lld",
                    (long long)eh.data_align, (long long)a->data_align);
    if (eh.ra_column != a->ra_column)
        jdc_violate(r, at, PI_JDC_BAD_CIE, "return address column %llu, expected %u",
                    (unsigned long long)eh.ra_column, a->ra_column);
    if (eh.fde_encoding != (PI_DW_EH_PE_pcrel | PI_DW_EH_PE_sdata4))
        jdc_violate(r, at, PI_JDC_BAD_CIE, "FDE encoding 0x%02x, expected 0x1b (pcrel|sdata4)",
                    eh.fde_encoding);
    if (eh.cie_size % 4)
        jdc_violate(r, at, PI_JDC_BAD_EH_FRAME, "CIE size %u not a multiple of 4", eh.cie_size);

    /* FDE: must cover exactly this code, found from the slot layout. */
    if (eh.fde_size % 4)
        jdc_violate(r, at, PI_JDC_BAD_EH_FRAME, "FDE size %u not a multiple of 4", eh.fde_size);
    if (eh.cie_pointer != eh.fde_offset + 4)
        jdc_violate(r, at, PI_JDC_BAD_FDE, "CIE pointer %u does not lead back to the CIE (want %u)",
                    eh.cie_pointer, eh.fde_offset + 4);
    if (eh.fde_aug_len != 0)
        jdc_violate(r, at, PI_JDC_BAD_FDE, "FDE augmentation length %llu, expected 0",
                    (unsigned long long)eh.fde_aug_len);
    int64_t field = code_off + eh.fde_offset + 8; /* pc_begin field, from the code start */
    if (field + eh.pc_begin != 0)
        jdc_violate(r, at, PI_JDC_FDE_LOCATION,
                    "initial_location %d reaches code%+lld, expected %lld (code_size %llu)",
                    eh.pc_begin, (long long)(field + eh.pc_begin), (long long)-field,
                    (unsigned long long)code_size);
    if (eh.pc_range != code_size)
        jdc_violate(r, at, PI_JDC_FDE_RANGE, "address_range %u, code_size %llu", eh.pc_range,
                    (unsigned long long)code_size);
    if (!eh.terminated)
        jdc_violate(r, at, PI_JDC_BAD_EH_FRAME, "no zero terminator after the FDE");
    if (eh.trailing)
        jdc_violate(r, at, PI_JDC_BAD_EH_FRAME, "%zu unexpected bytes after the FDE%s", eh.trailing,
                    eh.terminated ? " and terminator" : "");

    /* .eh_frame_hdr right after the .eh_frame. */
    pi_jdc_parse_eh_hdr(unwind + eh_size, (size_t)hdr_size, &hdr);
    if (hdr.version != 1 || hdr.eh_frame_ptr_enc != (PI_DW_EH_PE_pcrel | PI_DW_EH_PE_sdata4) ||
        hdr.fde_count_enc != PI_DW_EH_PE_udata4 ||
        hdr.table_enc != (PI_DW_EH_PE_datarel | PI_DW_EH_PE_sdata4))
        jdc_violate(r, at, PI_JDC_BAD_EH_HDR,
                    "hdr version/encodings %u/0x%02x/0x%02x/0x%02x, expected 1/0x1b/0x03/0x3b",
                    hdr.version, hdr.eh_frame_ptr_enc, hdr.fde_count_enc, hdr.table_enc);
    if ((int64_t)eh_size + 4 + hdr.eh_frame_ptr != 0)
        jdc_violate(r, at, PI_JDC_BAD_EH_HDR, "eh_frame_ptr %d, expected %lld", hdr.eh_frame_ptr,
                    -(long long)(eh_size + 4));
    if (hdr.fde_count != 1)
        jdc_violate(r, at, PI_JDC_BAD_EH_HDR, "fde_count %u, expected 1", hdr.fde_count);
    if ((int64_t)eh_size + hdr.table_from != -code_off)
        jdc_violate(r, at, PI_JDC_EH_HDR_TABLE, "table initial location %d, expected %lld",
                    hdr.table_from, -(long long)(code_off + (int64_t)eh_size));
    if ((int64_t)eh_size + hdr.table_to != (int64_t)eh.fde_offset)
        jdc_violate(r, at, PI_JDC_EH_HDR_TABLE, "table FDE address %d, expected %lld", hdr.table_to,
                    (long long)eh.fde_offset - (long long)eh_size);

    /* The CFI program, then the rule at each instruction boundary. */
    struct pi_jdc_row row;
    if (!pi_jdc_row_at(&eh, UINT64_MAX, &row, why, sizeof why)) {
        jdc_violate(r, at, PI_JDC_CFI_DECODE, "%s", why);
        return;
    }
    if (!known_code)
        return;
    for (size_t i = 0; i < lay.n; i++) {
        const struct jdc_boundary *b = &lay.b[i];
        char got[120];
        if (b->off >= eh.pc_range)
            break; /* already reported as a range problem */
        if (!pi_jdc_row_at(&eh, b->off, &row, why, sizeof why)) {
            jdc_violate(r, at, PI_JDC_CFI_DECODE, "%s", why);
            return;
        }
        if (!jdc_row_ok(a, b->state, &row, why, sizeof why)) {
            jdc_describe_row(&row, a, got, sizeof got);
            jdc_violate(r, at, PI_JDC_CFA_RULE, "at +%u (before `%s`): %s; got %s", b->off,
                        b->next_insn, why, got);
        }
    }
}

void pi_jdc_check_unwind(uint32_t elf_mach, const uint8_t *code, uint64_t code_size,
                         const uint8_t *unwind, uint64_t unwinding_size, uint64_t hdr_size,
                         struct pi_jdc_report *report)
{
    jdc_check_unwind(report, JDC_NO_RECORD, elf_mach, code, code_size, unwind, unwinding_size,
                     hdr_size);
}
