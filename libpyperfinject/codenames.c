/* A code object's names for symbols (codenames.h). */
#include "codenames.h"

#include "names.h"
#include "state.h"

#include <stdio.h>
#include <string.h>

static pi_pyobj *field(const void *obj, int16_t offset)
{
    return offset < 0 ? NULL : *(pi_pyobj **)((char *)obj + offset);
}

/* UTF-8 text of a str object. File names may hold surrogate escapes that
 * strict UTF-8 refuses: recover the original bytes (the sanitiser escapes
 * them), and never leave an exception behind. *owned must be released. */
static const char *text_of(const struct pi_py *py, pi_pyobj *s, size_t *len, pi_pyobj **owned)
{
    *owned = NULL;
    if (s == NULL)
        return NULL;
    pi_ssize_t n = 0;
    const char *t = py->UnicodeAsUTF8AndSize(s, &n);
    if (t != NULL) {
        *len = (size_t)n;
        return t;
    }
    py->ErrClear();
    pi_pyobj *b = py->UnicodeAsEncodedString(s, "utf-8", "surrogateescape");
    if (b == NULL) {
        py->ErrClear();
        b = py->UnicodeAsEncodedString(s, "utf-8", "backslashreplace");
    }
    if (b == NULL || (t = py->BytesAsString(b)) == NULL) {
        py->ErrClear();
        if (b)
            py->DecRef(b);
        return NULL;
    }
    *owned = b;
    *len = strlen(t);
    return t;
}


/* Reads the code object's names. Runs no Python code and leaves the error
 * indicator exactly as it found it (throwflag calls carry a live exception). */
void pi_code_names_read(struct pi_state *s, const void *code, struct pi_code_names *out)
{
    const struct pi_py *py = &s->py;
    const struct pi_abi *abi = &s->abi;
    pi_pyobj *et = NULL, *ev = NULL, *etb = NULL;
    int saved = py->ErrOccurred() != NULL;
    if (saved)
        py->ErrFetch(&et, &ev, &etb);

    pi_pyobj *owned_q, *owned_f;
    size_t qlen = 0, flen = 0;
    const char *q = text_of(py, field(code, abi->co_qualname >= 0 ? abi->co_qualname : abi->co_name),
                            &qlen, &owned_q);
    const char *f = text_of(py, field(code, abi->co_filename), &flen, &owned_f);
    if (f != NULL && flen == 0)
        f = "?", flen = 1; /* perf needs a file name in DEBUG_INFO */
    /* Before 3.9 the main script's file name is as typed ("app.py"):
     * anchor relative names at the directory the process started in. */
    char path[PI_SYMBOL_MAX + 1];
    if (f != NULL && f[0] != '/' && f[0] != '<' && s->start_cwd[0] != '\0') {
        int n = snprintf(path, sizeof path, "%s/%.*s", s->start_cwd, (int)flen, f);
        if (n > 0 && (size_t)n < sizeof path)
            f = path, flen = (size_t)n;
    }
    out->symbol_len = pi_format_symbol(out->symbol, sizeof out->symbol, q, qlen, f, flen);
    pi_sanitize_append(out->filename, 0, sizeof out->filename, f ? f : "?", f ? flen : 1);
    out->firstlineno = *(const int32_t *)((const char *)code + abi->co_firstlineno);
    if (owned_q)
        py->DecRef(owned_q);
    if (owned_f)
        py->DecRef(owned_f);

    if (saved)
        py->ErrRestore(et, ev, etb);
}

