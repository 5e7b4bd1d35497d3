/* Start-up reasons to stand aside (preflight.h). */
#include "preflight.h"

#include <string.h>

static int truthy(const struct pi_preflight_input *in, const char *name)
{
    const char *v = in->getenv_fn(name, in->ctx);
    return v != NULL && v[0] != '\0' && strcmp(v, "0") != 0;
}

/* Loader options that take a value, when python runs as `ld.so ... python`. */
static int loader_option_with_value(const char *arg)
{
    static const char *const with_value[] = {"--library-path", "--argv0", "--preload",
                                             "--audit", "--inhibit-rpath", "--glibc-hwcaps-mask",
                                             "--glibc-hwcaps-prepend"};
    for (size_t i = 0; i < sizeof with_value / sizeof *with_value; i++)
        if (strcmp(arg, with_value[i]) == 0)
            return 1;
    return 0;
}

static int is_perf_xoption(const char *value)
{
    return strcmp(value, "perf") == 0 || strcmp(value, "perf_jit") == 0;
}

static int is_dev_xoption(const char *value) { return strcmp(value, "dev") == 0; }

/* The next argument after arg, or end. */
static const char *next_arg(const char *arg, const char *end)
{
    const char *nul = memchr(arg, '\0', (size_t)(end - arg));
    return nul != NULL ? nul + 1 : end;
}

/* Scans the interpreter's own options (up to the script, -c or -m) for an
 * -X option accepted by `wanted`. */
static int xoption_requested(const struct pi_preflight_input *in, int (*wanted)(const char *))
{
    if (in->cmdline == NULL || in->cmdline_len == 0 || in->cmdline[in->cmdline_len - 1] != '\0')
        return 0; /* arguments must end in NUL: a cut read is not scanned */
    const char *arg = in->cmdline;
    const char *end = in->cmdline + in->cmdline_len;
    const char *base = strrchr(arg, '/');
    int under_loader = strncmp(base ? base + 1 : arg, "ld-", 3) == 0;
    arg = next_arg(arg, end);
    if (under_loader) { /* skip the loader's options and the program path */
        while (arg < end && strncmp(arg, "--", 2) == 0) {
            int skip_value = loader_option_with_value(arg);
            arg = next_arg(arg, end);
            if (skip_value && arg < end)
                arg = next_arg(arg, end);
        }
        if (arg < end)
            arg = next_arg(arg, end);
    }
    while (arg < end && arg[0] == '-') {
        if (strcmp(arg, "-c") == 0 || strcmp(arg, "-m") == 0 || strcmp(arg, "-") == 0 ||
            strcmp(arg, "--") == 0)
            return 0;
        const char *value = NULL;
        if (strcmp(arg, "-X") == 0) {
            arg = next_arg(arg, end);
            value = arg < end ? arg : NULL;
        } else if (strncmp(arg, "-X", 2) == 0) {
            value = arg + 2;
        } else if (strcmp(arg, "-W") == 0) {
            arg = next_arg(arg, end); /* its value */
        }
        if (value != NULL && wanted(value))
            return 1;
        if (arg < end)
            arg = next_arg(arg, end);
    }
    return 0;
}

const char *pi_preflight_cpython_requested(const struct pi_preflight_input *in)
{
    if (in->facts->cpython_perf == PI_CPYTHON_PERF_NONE)
        return NULL;
    if (truthy(in, "PYTHONPERFSUPPORT"))
        return "PYTHONPERFSUPPORT";
    if (in->facts->cpython_perf == PI_CPYTHON_PERF_MAP_JIT && truthy(in, "PYTHON_PERF_JIT_SUPPORT"))
        return "PYTHON_PERF_JIT_SUPPORT";
    return xoption_requested(in, is_perf_xoption) ? "-X perf" : NULL;
}

const char *pi_preflight_allocator_switch(const struct pi_preflight_input *in)
{
    /* PySys_AddAuditHook before initialisation allocates with the raw
     * allocator of that moment; Py_Finalize frees with the configured one.
     * PYTHONMALLOC and the development mode change it in between, and the
     * free then crashes (debug hooks: "*** OUCH"; glibc: invalid pointer). */
    if (in->facts->wait != PI_WAIT_AUDIT_HOOK)
        return NULL;
    const char *m = in->getenv_fn("PYTHONMALLOC", in->ctx);
    if (m != NULL && m[0] != '\0')
        return "PYTHONMALLOC";
    if (truthy(in, "PYTHONDEVMODE"))
        return "PYTHONDEVMODE";
    return xoption_requested(in, is_dev_xoption) ? "-X dev" : NULL;
}
