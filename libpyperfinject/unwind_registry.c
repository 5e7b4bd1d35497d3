#include "unwind_registry.h"

#include <stdlib.h>
#include <string.h>

/* libgcc_s (GCC_3.0): registers a NULL-terminated array of FDE pointers. The
 * array must stay valid for the life of the process: it is never freed,
 * like the arena it describes. */
void __register_frame_table(void *begin);

int pi_unwind_register_arena(const uint8_t *base, const struct pi_slot_image *image)
{
    enum { SLOTS = PI_ARENA_BYTES / PI_SLOT_STRIDE };
    uint32_t eh_frame = (image->code_size + 7u) & ~7u;
    uint32_t cie_length;
    memcpy(&cie_length, image->bytes + eh_frame, sizeof cie_length);
    uint32_t fde = eh_frame + 4 + cie_length; /* the FDE follows its CIE */
    if (fde + 8 > image->length)
        return -1;
    const void **table = calloc(SLOTS + 1, sizeof *table);
    if (table == NULL)
        return -1;
    for (size_t i = 0; i < SLOTS; i++)
        table[i] = base + i * PI_SLOT_STRIDE + fde;
    __register_frame_table(table);
    return 0;
}
