#include "slot.h"

#include <string.h>

/* Labels exported by tramp_<arch>.S: the CFI offsets come from the assembler,
 * so the unwind info can never drift from the instructions. */
extern const uint8_t pi_tramp_start[], pi_tramp_after_push[], pi_tramp_after_setfp[];
extern const uint8_t pi_tramp_after_pop[], pi_tramp_tag[], pi_tramp_end[];

struct pi_tramp_shape pi_slot_template_shape(void)
{
    struct pi_tramp_shape shape = {
#if defined(__x86_64__)
        .arch = PI_ARCH_X86_64,
#elif defined(__aarch64__)
        .arch = PI_ARCH_AARCH64,
#else
#error "libpyperfinject supports x86_64 and aarch64"
#endif
        .code_size = (uint32_t)(pi_tramp_end - pi_tramp_start),
        .after_push = (uint32_t)(pi_tramp_after_push - pi_tramp_start),
        .after_setfp = (uint32_t)(pi_tramp_after_setfp - pi_tramp_start),
        .after_pop = (uint32_t)(pi_tramp_after_pop - pi_tramp_start),
    };
    return shape;
}

int pi_slot_image_build(struct pi_slot_image *image, struct pi_unwind_sizes *unwind)
{
    struct pi_tramp_shape shape = pi_slot_template_shape();
    uint32_t unwind_at = (shape.code_size + 7u) & ~7u;
    memset(image, 0, sizeof *image);
    if (unwind_at >= sizeof image->bytes)
        return -1;
    memcpy(image->bytes, pi_tramp_start, shape.code_size);
    size_t n = pi_ehframe_build(&shape, image->bytes + unwind_at, sizeof image->bytes - unwind_at,
                                unwind);
    /* perf inject maps round8(code) + mapped_size per trampoline: that must
     * stay inside the slot or consecutive generated DSOs would overlap. */
    if (n == 0 || unwind_at + unwind->mapped_size > PI_SLOT_STRIDE)
        return -1;
    image->length = unwind_at + (uint32_t)n;
    image->code_size = shape.code_size;
    image->tag_offset = (uint32_t)(pi_tramp_tag - pi_tramp_start);
    return 0;
}
