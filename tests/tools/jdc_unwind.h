/* The unwind data of one trampoline checked against its code: the
 * .eh_frame and .eh_frame_hdr of an UNWINDING_INFO payload, decoded
 * independently of the builder, must describe exactly this code under the
 * slot layout (code, .eh_frame at round8(code_size), then the hdr), and give
 * the right CFA rule at every instruction boundary of the template. */
#ifndef PI_JDC_UNWIND_H
#define PI_JDC_UNWIND_H

#include "jdc_report.h"

/* Reports every violation to r, attributed to `at` (the UNWINDING_INFO
 * record); code and unwind are borrowed. An elf_mach without a template is
 * skipped: the header check reports it. code NULL: CPython's JIT code,
 * whose layout is checked but whose rules are CPython's. */
void jdc_check_unwind(struct pi_jdc_report *r, struct jdc_where at, uint32_t elf_mach,
                      const uint8_t *code, uint64_t code_size, const uint8_t *unwind,
                      uint64_t unwinding_size, uint64_t hdr_size);

#endif
