#include "abi.h"

#include <stdio.h>
#include <string.h>

#define NO -1

/* Rows: version, hook signature, install, code extra, wait, meaning of the
 * initial field, how a call is refused on a full C stack, CPython's own perf
 * support, whether free-threaded builds exist, then offsets: the eval_frame
 * field, frame->code and its tag mask, and the code object's filename, name,
 * qualname, firstlineno and co_extra for the default (GIL) build.
 * PyThreadState.interp is at 16 and ob_type at 8 in every version. co_extra
 * is read directly on the hot path and verified against the API on the first
 * trampoline (eval.c). Sources: offsetof() on 3.6.15-3.13.0 pyenv builds and
 * Debian 3.11/3.14/3.15, cross-checked with PyCode_Type.tp_members. */
static const struct pi_abi table[] = {
#define ROW(mi, hook, inst, extra, wait, def, own, perf, ft, evoff, fcoff, tag, fn, nm, qn, fl, cx) \
    {3, mi, hook, inst, extra, wait, def, own, perf, ft, 16, evoff, fcoff, tag, 8, fn, nm, qn, fl, \
     cx, 0, {NO, NO, NO, NO, NO, NO, NO}}
#define TSTATE PI_HOOK_TSTATE_FRAME_THROW
#define AUDIT PI_WAIT_AUDIT_HOOK
    ROW(6, PI_HOOK_FRAME_THROW, PI_INSTALL_FIELD, PI_EXTRA_SIDE_TABLE, PI_WAIT_WATCHER,
        PI_DEFAULT_IS_FUNCTION, PI_REFUSE_RETURN, PI_CPYTHON_PERF_NONE, 0,
        112, 32, 0, 96, 104, NO, 36, NO),
    ROW(7, PI_HOOK_FRAME_THROW, PI_INSTALL_FIELD, PI_EXTRA_SIDE_TABLE, PI_WAIT_WATCHER,
        PI_DEFAULT_IS_FUNCTION, PI_REFUSE_RETURN, PI_CPYTHON_PERF_NONE, 0,
        464, 32, 0, 96, 104, NO, 36, NO),
    ROW(8, PI_HOOK_FRAME_THROW, PI_INSTALL_FIELD, PI_EXTRA_PRIVATE, AUDIT,
        PI_DEFAULT_IS_FUNCTION, PI_REFUSE_RETURN, PI_CPYTHON_PERF_NONE, 0,
        568, 32, 0, 104, 112, NO, 40, 144),
    ROW(9, TSTATE, PI_INSTALL_SETTER, PI_EXTRA_PRIVATE, AUDIT,
        PI_DEFAULT_IS_FUNCTION, PI_REFUSE_RETURN, PI_CPYTHON_PERF_NONE, 0,
        NO, 32, 0, 104, 112, NO, 40, 144),
    ROW(10, TSTATE, PI_INSTALL_SETTER, PI_EXTRA_PRIVATE, AUDIT,
        PI_DEFAULT_IS_FUNCTION, PI_REFUSE_RETURN, PI_CPYTHON_PERF_NONE, 0,
        NO, 32, 0, 104, 112, NO, 40, 144),
    ROW(11, TSTATE, PI_INSTALL_SETTER, PI_EXTRA_PRIVATE, AUDIT,
        PI_DEFAULT_IS_NULL, PI_REFUSE_RETURN, PI_CPYTHON_PERF_NONE, 0,
        NO, 32, 0, 112, 120, 128, 72, 176),
    ROW(12, TSTATE, PI_INSTALL_SETTER, PI_EXTRA_UNSTABLE, AUDIT,
        PI_DEFAULT_IS_NULL, PI_REFUSE_THROW, PI_CPYTHON_PERF_MAP, 0,
        NO, 0, 0, 112, 120, 128, 68, 184),
    ROW(13, TSTATE, PI_INSTALL_SETTER, PI_EXTRA_UNSTABLE, AUDIT,
        PI_DEFAULT_IS_NULL, PI_REFUSE_THROW, PI_CPYTHON_PERF_MAP_JIT, 1,
        NO, 0, 0, 112, 120, 128, 68, 192),
    ROW(14, TSTATE, PI_INSTALL_SETTER, PI_EXTRA_UNSTABLE, AUDIT,
        PI_DEFAULT_IS_NULL, PI_REFUSE_NONE, PI_CPYTHON_PERF_MAP_JIT, 1,
        NO, 0, 3, 112, 120, 128, 68, 200),
    ROW(15, TSTATE, PI_INSTALL_SETTER, PI_EXTRA_UNSTABLE, AUDIT,
        PI_DEFAULT_IS_NULL, PI_REFUSE_NONE, PI_CPYTHON_PERF_MAP_JIT, 1,
        NO, 0, 3, 112, 120, 128, 68, 200),
#undef AUDIT
#undef TSTATE
#undef ROW
};

enum { NROWS = sizeof table / sizeof *table };

/* CPython's JIT, per version: ptype /o of the -dbg builds of Debian's 3.14
 * and 3.15 (whose co_extra offsets match the release builds'), and checked
 * at run time (cpython_jit.c: an executor counts only when its jit_code is
 * code CPython registered, and frames only when they run a code object). 3.14 registers
 * no code with anyone, so its row only documents the layout. */
static const struct {
    uint8_t minor;
    struct pi_abi_jit jit;
} jit_table[] = {
    {14, {152, 112, 72, 8, 88, 96, 128}},
    {15, {152, 88, 72, 8, 64, 72, 104}},
};

static const struct pi_abi_jit no_jit = {NO, NO, NO, NO, NO, NO, NO};

static struct pi_abi_jit jit_facts(unsigned minor, int free_threaded)
{
    for (size_t i = 0; i < sizeof jit_table / sizeof *jit_table && !free_threaded; i++)
        if (jit_table[i].minor == minor)
            return jit_table[i].jit;
    return no_jit;
}

/* The free-threaded object header is 32 bytes instead of 16. */
enum { FT_HEADER_GROWTH = 16, FT_OB_TYPE_OFFSET = 24 };

static void shift(int16_t *field)
{
    if (*field >= 0)
        *field = (int16_t)(*field + FT_HEADER_GROWTH);
}

int pi_abi_lookup(unsigned major, unsigned minor, int free_threaded, struct pi_abi *out)
{
    for (size_t i = 0; i < NROWS; i++) {
        if (table[i].major != major || table[i].minor != minor)
            continue;
        *out = table[i];
        out->jit = jit_facts(minor, free_threaded);
        if (free_threaded) {
            if (!table[i].ft_builds)
                return -1;
            out->free_threaded = 1;
            out->ob_type_offset = FT_OB_TYPE_OFFSET;
            shift(&out->co_filename);
            shift(&out->co_name);
            shift(&out->co_qualname);
            shift(&out->co_firstlineno);
            shift(&out->co_extra);
        }
        return 0;
    }
    return -1;
}

int pi_abi_startup_facts(unsigned major, unsigned minor, struct pi_abi_startup *out)
{
    if (major != table[0].major || minor < table[0].minor)
        return -1;
    size_t i = 0;
    while (i + 1 < NROWS && table[i + 1].minor <= minor)
        i++;
    out->wait = table[i].wait;
    out->cpython_perf = table[i].cpython_perf;
    return 0;
}

void pi_abi_supported_range(unsigned *lo, unsigned *hi)
{
    *lo = table[0].minor;
    *hi = table[NROWS - 1].minor;
}

int pi_abi_parse_version(const char *text, unsigned *major, unsigned *minor)
{
    unsigned a = 0, b = 0;
    const char *p = text;
    if (p == NULL || *p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9' && a < 100)
        a = a * 10 + (unsigned)(*p++ - '0');
    if (*p++ != '.' || *p < '0' || *p > '9')
        return -1;
    while (*p >= '0' && *p <= '9' && b < 1000)
        b = b * 10 + (unsigned)(*p++ - '0');
    *major = a;
    *minor = b;
    return 0;
}

/* PyMemberDef as laid out on LP64: name, type (int), offset (Py_ssize_t),
 * flags (int), doc. */
struct member_def {
    const char *name;
    int type;
    long offset;
    int flags;
    const char *doc;
};

size_t pi_abi_tp_members_offset(int free_threaded)
{
    /* PyVarObject header (24, or 40 free-threaded) + 27 pointer-sized slots
     * from tp_name to tp_methods. */
    return (free_threaded ? 40 : 24) + 27 * sizeof(void *);
}

int pi_abi_check_members(const struct pi_abi *abi, const void *members, size_t max_members,
                         char *err, size_t errlen)
{
    const struct {
        const char *name;
        int16_t expected;
    } wanted[] = {
        {"co_filename", abi->co_filename},
        {"co_name", abi->co_name},
        {"co_qualname", abi->co_qualname},
        {"co_firstlineno", abi->co_firstlineno},
    };
    const struct member_def *m = members;
    for (size_t w = 0; w < sizeof wanted / sizeof *wanted; w++) {
        if (wanted[w].expected < 0)
            continue;
        size_t i = 0;
        while (i < max_members && m[i].name != NULL && strcmp(m[i].name, wanted[w].name) != 0)
            i++;
        if (i == max_members || m[i].name == NULL) {
            snprintf(err, errlen, "code objects have no member %s", wanted[w].name);
            return -1;
        }
        if (m[i].offset != wanted[w].expected) {
            snprintf(err, errlen, "%s is at offset %ld, this library expects %d", wanted[w].name,
                     m[i].offset, wanted[w].expected);
            return -1;
        }
    }
    return 0;
}
