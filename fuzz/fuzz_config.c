/* Fuzz target: the configuration parser (config.c).
 *
 * The input is a list of (variable, value) assignments served by a fake
 * getenv (the variables of the table, plus unrelated names). pi_config_parse
 * must never crash, and its verdict must equal an independent model of the
 * documented grammar (docs/configuration.md):
 *   - 0: every field holds the value the model computed (defaults for unset
 *     variables), the directory is absolute, free of control bytes and has
 *     no trailing slash (unless it is "/");
 *   - -1: the message names the first variable (table order) whose value
 *     the model rejects, and fits err. */
#include "config.h"
#include "fuzz_common.h"

#include <ctype.h>
#include <signal.h>
#include <strings.h>

#define NVARS 10
static const char *const vars[NVARS] = {
    "PYPERFINJECT_ENABLE", "PYPERFINJECT_MAP",    "PYPERFINJECT_JITDUMP",
    "PYPERFINJECT_VERBOSE", "PYPERFINJECT_FORK_COPY", "PYPERFINJECT_DIR",
    "PYPERFINJECT_START",  "PYPERFINJECT_SIGNAL", "PYPERFINJECT_DURATION",
    "PYPERFINJECT_PASSTHROUGH",
};
static const char *const decoys[] = {"PYPERFINJECT_", "PYPERFINJECT_ENABLED", "PATH",
                                     "pyperfinject_enable"};

struct env {
    const char *name[64];
    char *value[64];
    int n;
};

static const char *fake_getenv(const char *name, void *ctx)
{
    const struct env *e = ctx;
    const char *found = NULL;
    for (int i = 0; i < e->n; i++) /* the last assignment wins, like setenv */
        if (strcmp(e->name[i], name) == 0)
            found = e->value[i];
    return found;
}

/* --- the model --------------------------------------------------------- */

static int m_bool(const char *s, int *out)
{
    static const char *const yes[] = {"1", "yes", "on", "true"};
    static const char *const no[] = {"0", "no", "off", "false"};
    for (int i = 0; i < 4; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return *out = 1, 1;
        if (strcasecmp(s, no[i]) == 0)
            return *out = 0, 1;
    }
    return 0;
}

/* strtol's grammar, as documented: leading white space, a sign, decimal
 * digits, nothing after; at most 12 characters in all; within [lo, hi]. */
static int m_int(const char *s, long lo, long hi, int *out)
{
    size_t n = strlen(s);
    if (n == 0 || n > 12)
        return 0;
    const char *p = s;
    while (*p == ' ' || (*p >= '\t' && *p <= '\r'))
        p++;
    int neg = 0;
    if (*p == '+' || *p == '-')
        neg = *p++ == '-';
    if (!isdigit((unsigned char)*p))
        return 0;
    long long v = 0;
    for (; isdigit((unsigned char)*p); p++)
        v = v * 10 + (*p - '0'); /* <= 12 digits: no overflow */
    if (*p != '\0')
        return 0;
    v = neg ? -v : v;
    if (v < lo || v > hi)
        return 0;
    *out = (int)v;
    return 1;
}

static int m_dir(const char *s, char *out, size_t cap)
{
    size_t n = strlen(s);
    if (n == 0 || n >= cap || s[0] != '/')
        return 0;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return 0;
    memcpy(out, s, n + 1);
    while (n > 1 && out[n - 1] == '/')
        out[--n] = '\0';
    return 1;
}

static int m_signal(const char *s, int *out)
{
    if (strcasecmp(s, "none") == 0 || strcmp(s, "0") == 0)
        return *out = 0, 1;
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    int signo;
    if (strcasecmp(s, "USR1") == 0) {
        signo = SIGUSR1;
    } else if (strcasecmp(s, "USR2") == 0) {
        signo = SIGUSR2;
    } else if (strncasecmp(s, "RTMIN", 5) == 0) {
        int off = 0;
        if (s[5] == '+') {
            if (!m_int(s + 6, 0, 64, &off))
                return 0;
        } else if (s[5] != '\0') {
            return 0;
        }
        signo = SIGRTMIN + off;
    } else if (!m_int(s, 1, 64, &signo)) {
        return 0;
    }
    if (signo != SIGUSR1 && signo != SIGUSR2 && (signo < SIGRTMIN || signo > SIGRTMAX))
        return 0;
    *out = signo;
    return 1;
}

/* Applies variable i's value to *want; 0 if the model rejects it. */
static int m_apply(int i, const char *v, struct pi_config *want)
{
    switch (i) {
    case 0: return m_bool(v, &want->enable);
    case 1: return m_bool(v, &want->map);
    case 2: return m_bool(v, &want->jitdump);
    case 3: return m_int(v, 0, 3, &want->verbose);
    case 4: return m_bool(v, &want->copy_on_fork);
    case 5: return m_dir(v, want->dir, sizeof want->dir);
    case 6: return m_bool(v, &want->start);
    case 7: return m_signal(v, &want->signal);
    case 8: return m_int(v, 0, 31536000, &want->duration);
    case 9: return m_bool(v, &want->passthrough);
    }
    return 0;
}

/* --- the target -------------------------------------------------------- */

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    static const char *const pool[] = {"1", "0", "yes", "OFF", "tRuE", "3", "none", "USR2",
                                       "RTMIN+4", "/tmp", "/tmp///", "31536000", "-1", ""};
    struct fz f = {data, size};
    struct env e = {.n = 0};
    size_t errlen = fz_u8(&f) % 2 ? fz_u8(&f) : 512;
    int count = fz_u8(&f) % 16;
    for (int k = 0; k < count; k++) {
        uint8_t sel = fz_u8(&f);
        uint8_t how = fz_u8(&f);
        e.name[e.n] = sel % 8 == 7 ? decoys[sel / 8 % 4] : vars[sel % NVARS];
        if (how % 4 == 0) { /* a known-good or edge value */
            e.value[e.n] = strdup(pool[how / 4 % (sizeof pool / sizeof *pool)]);
        } else if (how % 4 == 1) { /* a huge value built from one byte */
            size_t n = 4000 + (size_t)fz_u8(&f) * 40;
            e.value[e.n] = malloc(n + 1);
            if (e.value[e.n]) {
                memset(e.value[e.n], how % 8 == 1 ? '/' : 'a' + how % 26, n);
                e.value[e.n][n] = '\0';
            }
        } else { /* raw bytes, cut at the first NUL like a real environment */
            size_t n;
            const uint8_t *b = fz_bytes(&f, &n);
            e.value[e.n] = malloc(n + 1);
            if (e.value[e.n]) {
                memcpy(e.value[e.n], b, n);
                e.value[e.n][n] = '\0';
            }
        }
        FUZZ_CHECK(e.value[e.n] != NULL, "out of memory");
        e.n++;
    }

    struct pi_config want;
    memset(&want, 0, sizeof want);
    want.enable = want.map = want.jitdump = want.verbose = want.copy_on_fork = want.start = 1;
    strcpy(want.dir, "/tmp");
    const char *first_bad = NULL;
    for (int i = 0; i < NVARS && !first_bad; i++) {
        const char *v = fake_getenv(vars[i], &e);
        if (v != NULL && !m_apply(i, v, &want))
            first_bad = vars[i];
    }

    struct pi_config got;
    char *err = malloc(errlen ? errlen : 1);
    FUZZ_CHECK(err != NULL, "out of memory");
    memset(err, 0x5a, errlen ? errlen : 1);
    int rc = pi_config_parse(&got, fake_getenv, &e, err, errlen);
    if (first_bad == NULL) {
        FUZZ_CHECK(rc == 0, "rejected what the model accepts: %.*s", (int)errlen, err);
        FUZZ_CHECK(got.enable == want.enable && got.map == want.map &&
                       got.jitdump == want.jitdump && got.verbose == want.verbose &&
                       got.copy_on_fork == want.copy_on_fork && got.start == want.start &&
                       got.signal == want.signal && got.duration == want.duration &&
                       got.passthrough == want.passthrough,
                   "a field differs from the model");
        FUZZ_CHECK(strcmp(got.dir, want.dir) == 0, "dir '%s' != model '%s'", got.dir, want.dir);
        size_t dl = strlen(got.dir);
        FUZZ_CHECK(got.dir[0] == '/' && (dl == 1 || got.dir[dl - 1] != '/'), "dir shape");
        FUZZ_CHECK(got.verbose >= 0 && got.verbose <= 3, "verbose range");
    } else {
        FUZZ_CHECK(rc == -1, "accepted a value the model rejects (%s)", first_bad);
        if (errlen > 0) {
            FUZZ_CHECK(memchr(err, '\0', errlen) != NULL, "message not terminated in err");
            if (errlen > 16 + strlen(first_bad))
                FUZZ_CHECK(strstr(err, first_bad) != NULL, "message '%s' does not name %s", err,
                           first_bad);
        }
    }
    free(err);
    for (int i = 0; i < e.n; i++)
        free(e.value[i]);
    return 0;
}
