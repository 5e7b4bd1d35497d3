/* Structural decoding of .eh_frame (one CIE, one FDE, a terminator) and
 * .eh_frame_hdr, as pi_jdc_parse_eh_frame / pi_jdc_parse_eh_hdr in
 * jitdump_check.h promise. Only the layout is decoded here; whether the
 * values are right for a trampoline is jdc_unwind.c's business. */
#include "jitdump_check.h"

#include "bytes.h"
#include "ehframe.h"
#include "jdc_cursor.h"

#include <stdio.h>
#include <string.h>

enum pi_jdc_issue pi_jdc_parse_eh_frame(const uint8_t *eh, size_t len, struct pi_jdc_eh *out,
                                        char *err, size_t errlen)
{
    struct jdc_cursor c = { eh, len, 0, false };
    uint32_t length;

    memset(out, 0, sizeof *out);
    length = jdc_read_u32(&c);
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
    out->cie_id = jdc_read_u32(&c);
    out->version = jdc_read_u8(&c);
    size_t i = 0;
    for (;;) {
        char ch = (char)jdc_read_u8(&c);
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
    out->code_align = jdc_read_uleb(&c);
    out->data_align = jdc_read_sleb(&c);
    out->ra_column = out->version == 1 ? jdc_read_u8(&c) : jdc_read_uleb(&c);
    uint64_t aug_len = jdc_read_uleb(&c);
    if (aug_len != 1) {
        snprintf(err, errlen, "CIE augmentation data length %llu, expected 1 (\"R\")",
                 (unsigned long long)aug_len);
        return PI_JDC_BAD_CIE;
    }
    out->fde_encoding = jdc_read_u8(&c);
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
    length = jdc_read_u32(&c);
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
    out->cie_pointer = jdc_read_u32(&c);
    out->pc_begin = jdc_read_s32(&c);
    out->pc_range = jdc_read_u32(&c);
    out->fde_aug_len = jdc_read_uleb(&c);
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
    if (len < PI_JDC_EH_HDR_SIZE)
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
