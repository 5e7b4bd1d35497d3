/* The image every trampoline slot starts as: the assembly template from
 * tramp_<arch>.S followed by the unwind info that describes it. */
#ifndef PI_SLOT_H
#define PI_SLOT_H

#include "arena.h"
#include "ehframe.h"

/* Builds the image for the architecture this library was compiled for.
 * Returns 0, or -1 if the template and its unwind info don't fit a slot. */
int pi_slot_image_build(struct pi_slot_image *image, struct pi_unwind_sizes *unwind);

/* The shape of the compiled-in template (for tests and the jitdump header). */
struct pi_tramp_shape pi_slot_template_shape(void);

#endif
