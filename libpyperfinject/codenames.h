/* What a code object is called in the outputs: "py::qualname:filename",
 * the file name alone (for DEBUG_INFO) and the first line. Shared by the
 * trampolines (eval.c) and CPython's JIT code (cpython_jit.c). */
#ifndef PI_CODENAMES_H
#define PI_CODENAMES_H

#include "names.h"

#include <stddef.h>
#include <stdint.h>

struct pi_state;

struct pi_code_names {
    char symbol[PI_SYMBOL_MAX + 1];
    char filename[PI_SYMBOL_MAX + 1];
    size_t symbol_len;
    int32_t firstlineno;
};

/* Reads them. Runs no Python code and leaves the error indicator exactly as
 * it found it (throwflag calls carry a live exception). GIL held. */
void pi_code_names_read(struct pi_state *s, const void *code, struct pi_code_names *out);

#endif
