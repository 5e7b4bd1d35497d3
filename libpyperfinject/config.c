#include "config.h"

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>

/* KIND_DIR_OR_BOOL: a directory, or 0 (none) or 1 (PYPERFINJECT_DIR). */
enum kind { KIND_BOOL, KIND_INT, KIND_DIR, KIND_DIR_OR_BOOL, KIND_SIGNAL };

struct option {
    const char *env;     /* full variable name */
    enum kind kind;
    size_t offset;       /* field in struct pi_config */
    const char *default_value;
    long min, max;       /* KIND_INT range */
};

#define FIELD(f) offsetof(struct pi_config, f)

/* Adding a knob is adding a row (and a field). */
static const struct option options[] = {
    {"PYPERFINJECT_ENABLE", KIND_BOOL, FIELD(enable), "1", 0, 1},
    {"PYPERFINJECT_MAP", KIND_BOOL, FIELD(map), "1", 0, 1},
    {"PYPERFINJECT_JITDUMP", KIND_BOOL, FIELD(jitdump), "1", 0, 1},
    {"PYPERFINJECT_GDB", KIND_BOOL, FIELD(gdb), "1", 0, 1},
    {"PYPERFINJECT_JIT", KIND_BOOL, FIELD(jit), "1", 0, 1},
    {"PYPERFINJECT_GDB_BATCH", KIND_INT, FIELD(gdb_batch), "256", 1, 1024},
    {"PYPERFINJECT_VERBOSE", KIND_INT, FIELD(verbose), "1", 0, 3},
    {"PYPERFINJECT_FORK_COPY", KIND_BOOL, FIELD(copy_on_fork), "1", 0, 1},
    {"PYPERFINJECT_DIR", KIND_DIR, FIELD(dir), "/tmp", 0, 0},
    {"PYPERFINJECT_START", KIND_BOOL, FIELD(start), "1", 0, 1},
    {"PYPERFINJECT_SIGNAL", KIND_SIGNAL, FIELD(signal), "none", 0, 0},
    {"PYPERFINJECT_DURATION", KIND_INT, FIELD(duration), "0", 0, 31536000},
    {"PYPERFINJECT_PASSTHROUGH", KIND_BOOL, FIELD(passthrough), "0", 0, 1},
    {"PYPERFINJECT_KEEP_BINARIES", KIND_DIR_OR_BOOL, FIELD(keep_binaries), "0", 0, 0},
};

const char *pi_settings_lookup(const char *name, void *ctx)
{
    struct pi_settings_text *st = ctx;
    const char *found = NULL;
    size_t found_len = 0, name_len = strlen(name);
    for (const char *line = st->text; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        if (len > name_len && strncmp(line, name, name_len) == 0 && line[name_len] == '=') {
            found = line + name_len + 1;
            found_len = len - name_len - 1;
        }
        line = end ? end + 1 : NULL;
    }
    if (found == NULL || found_len >= sizeof st->value)
        return NULL;
    memcpy(st->value, found, found_len);
    st->value[found_len] = '\0';
    return st->value;
}

const char *pi_config_name(size_t i)
{
    return i < sizeof options / sizeof *options ? options[i].env : NULL;
}

static int parse_bool(const char *s, int *out)
{
    static const char *const yes[] = {"1", "yes", "on", "true"};
    static const char *const no[] = {"0", "no", "off", "false"};
    for (size_t i = 0; i < sizeof yes / sizeof *yes; i++) {
        if (strcasecmp(s, yes[i]) == 0)
            return *out = 1, 0;
        if (strcasecmp(s, no[i]) == 0)
            return *out = 0, 0;
    }
    return -1;
}

static int parse_int(const char *s, long min, long max, int *out)
{
    if (*s == '\0' || strlen(s) > 12)
        return -1;
    char *end;
    errno = 0;
    long v = strtol(s, &end, 10);
    if (errno != 0 || *end != '\0' || v < min || v > max)
        return -1;
    *out = (int)v;
    return 0;
}

/* The directory must be absolute (a relative one would follow the program's
 * chdir) and free of characters that would make the path ambiguous. */
static int parse_dir(const char *s, char *out, size_t cap)
{
    size_t n = strlen(s);
    if (n == 0 || n >= cap || s[0] != '/')
        return -1;
    for (size_t i = 0; i < n; i++)
        if ((unsigned char)s[i] < 0x20 || s[i] == 0x7f)
            return -1;
    memcpy(out, s, n + 1);
    while (n > 1 && out[n - 1] == '/') /* "/tmp/" and "/tmp" are one place */
        out[--n] = '\0';
    return 0;
}

/* Only signals that mean nothing by default may be taken over: SIGUSR1,
 * SIGUSR2 and the real-time ones ("USR2", "SIGUSR2", "RTMIN+3", a number). */
static int parse_signal(const char *s, int *out)
{
    if (strcasecmp(s, "none") == 0 || strcmp(s, "0") == 0)
        return *out = 0, 0;
    if (strncasecmp(s, "SIG", 3) == 0)
        s += 3;
    int signo = -1;
    if (strcasecmp(s, "USR1") == 0)
        signo = SIGUSR1;
    else if (strcasecmp(s, "USR2") == 0)
        signo = SIGUSR2;
    else if (strncasecmp(s, "RTMIN", 5) == 0) {
        int offset = 0;
        if (s[5] == '+' && parse_int(s + 6, 0, 64, &offset) != 0)
            return -1;
        if (s[5] != '\0' && s[5] != '+')
            return -1;
        signo = SIGRTMIN + offset;
    } else if (parse_int(s, 1, 64, &signo) != 0) {
        return -1;
    }
    if (signo != SIGUSR1 && signo != SIGUSR2 && (signo < SIGRTMIN || signo > SIGRTMAX))
        return -1;
    *out = signo;
    return 0;
}

static const char *describe(const struct option *o)
{
    switch (o->kind) {
    case KIND_BOOL: return "expected 0/1, yes/no, on/off or true/false";
    case KIND_INT: return "expected an integer in range";
    case KIND_DIR: return "expected an absolute directory path";
    case KIND_DIR_OR_BOOL: return "expected 0, 1 or an absolute directory path";
    case KIND_SIGNAL: return "expected none, USR1, USR2 or RTMIN+N";
    }
    return "";
}

static int apply(struct pi_config *cfg, const struct option *o, const char *value)
{
    char *base = (char *)cfg;
    switch (o->kind) {
    case KIND_BOOL: return parse_bool(value, (int *)(void *)(base + o->offset));
    case KIND_INT: return parse_int(value, o->min, o->max, (int *)(void *)(base + o->offset));
    case KIND_DIR: return parse_dir(value, base + o->offset, sizeof cfg->dir);
    case KIND_DIR_OR_BOOL: {
        int on;
        if (parse_bool(value, &on) != 0)
            return parse_dir(value, base + o->offset, sizeof cfg->dir);
        /* "on" until PYPERFINJECT_DIR is known (pi_config_parse) */
        strcpy(base + o->offset, on ? "on" : "");
        return 0;
    }
    case KIND_SIGNAL: return parse_signal(value, (int *)(void *)(base + o->offset));
    }
    return -1;
}

int pi_config_parse(struct pi_config *cfg, pi_getenv_fn getenv_fn, void *ctx, char *err,
                    size_t errlen)
{
    memset(cfg, 0, sizeof *cfg);
    for (size_t i = 0; i < sizeof options / sizeof *options; i++)
        if (apply(cfg, &options[i], options[i].default_value) != 0)
            return snprintf(err, errlen, "internal: bad default for %s", options[i].env), -1;
    for (size_t i = 0; i < sizeof options / sizeof *options; i++) {
        const struct option *o = &options[i];
        const char *value = getenv_fn(o->env, ctx);
        if (value == NULL)
            continue;
        if (apply(cfg, o, value) != 0) {
            if (o->kind == KIND_INT)
                snprintf(err, errlen, "bad value for %s (expected an integer %ld..%ld)", o->env,
                         o->min, o->max);
            else
                snprintf(err, errlen, "bad value for %s (%s)", o->env, describe(o));
            return -1;
        }
    }
    if (strcmp(cfg->keep_binaries, "on") == 0)
        strcpy(cfg->keep_binaries, cfg->dir);
    return 0;
}
