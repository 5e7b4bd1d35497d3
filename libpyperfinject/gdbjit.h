/* The GDB JIT interface backend (gdbjit.c; its operations are pi_gdbjit_ops
 * in backend.h). What it offers besides them. */
#ifndef PI_GDBJIT_H
#define PI_GDBJIT_H

#include <stddef.h>
#include <stdint.h>

/* The symbol files in the library's descriptor list, newest first: up to
 * max of their addresses and sizes. Returns how many the list holds. For
 * tests; a debugger reads the same list. */
size_t pi_gdbjit_files(const uint8_t **addrs, uint64_t *sizes, size_t max);

#endif
