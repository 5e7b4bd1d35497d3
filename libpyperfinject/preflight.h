/* Start-up reasons to stand aside, decided before anything is installed.
 *
 * Pure: the environment comes through a lookup function and the command
 * line as the bytes of /proc/self/cmdline (NUL-separated arguments), so
 * the tests can give any of them. */
#ifndef PI_PREFLIGHT_H
#define PI_PREFLIGHT_H

#include "abi.h"
#include "config.h"

#include <stddef.h>

struct pi_preflight_input {
    const struct pi_abi_startup *facts;
    pi_getenv_fn getenv_fn;
    void *ctx;
    const char *cmdline; /* NUL-separated, as /proc/self/cmdline; NULL: none */
    size_t cmdline_len;
};

/* Why CPython's own perf support was requested at start-up (-X perf,
 * -X perf_jit, PYTHONPERFSUPPORT, PYTHON_PERF_JIT_SUPPORT), or NULL. The
 * library then stands aside: CPython refuses its trampoline while another
 * eval-frame function is installed. */
const char *pi_preflight_cpython_requested(const struct pi_preflight_input *in);

/* Why the memory allocator will change between the library's audit-hook
 * registration and finalisation (PYTHONMALLOC, PYTHONDEVMODE, -X dev), or
 * NULL. Only where the library waits with an audit hook. */
const char *pi_preflight_allocator_switch(const struct pi_preflight_input *in);

#endif
