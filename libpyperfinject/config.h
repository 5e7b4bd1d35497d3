/* Configuration from environment variables.
 *
 * Every knob is one row of a table in config.c; its variable name is
 * "PYPERFINJECT_" + the row name. Values are parsed in one place and a bad
 * value is an error (the library then disables itself), never a silent
 * default. */
#ifndef PI_CONFIG_H
#define PI_CONFIG_H

#include <limits.h>
#include <stddef.h>

struct pi_config {
    int enable;        /* PYPERFINJECT_ENABLE: master switch */
    int map;           /* PYPERFINJECT_MAP: write perf-PID.map */
    int jitdump;       /* PYPERFINJECT_JITDUMP: write jit-PID.dump */
    int gdb;           /* PYPERFINJECT_GDB: name trampolines to debuggers (gdbjit.c) */
    int jit;           /* PYPERFINJECT_JIT: name CPython's JIT code (cpython_jit.c) */
    int gdb_batch;     /* PYPERFINJECT_GDB_BATCH: new functions per announcement to one */
    int verbose;       /* PYPERFINJECT_VERBOSE: 0 quiet .. 3 debug */
    int copy_on_fork;  /* PYPERFINJECT_FORK_COPY: children inherit parent's entries */
    int start;         /* PYPERFINJECT_START: on at start-up, or off until switched on */
    int signal;        /* PYPERFINJECT_SIGNAL: switching signal, 0 = none */
    int duration;      /* PYPERFINJECT_DURATION: seconds on before switching off, 0 = no limit */
    int passthrough;   /* PYPERFINJECT_PASSTHROUGH: benchmark floor, hook without trampolines */
    char dir[PATH_MAX - 32]; /* PYPERFINJECT_DIR: output directory (absolute) */
    /* PYPERFINJECT_KEEP_BINARIES: where to copy the mapped ELF files
     * (binaries.h): "" = nowhere (0, the default), 1 = dir, or a directory */
    char keep_binaries[PATH_MAX - 32];
};

/* Looks up a variable; returns NULL when unset. */
typedef const char *(*pi_getenv_fn)(const char *name, void *ctx);

/* Fills *cfg from defaults and the environment. Returns 0 on success; on a bad
 * value returns -1 and writes a one-line reason naming the variable into err.
 * Pure: no global state, no I/O beyond calling getenv_fn. */
int pi_config_parse(struct pi_config *cfg, pi_getenv_fn getenv_fn, void *ctx, char *err,
                    size_t errlen);

/* Settings given as text instead of the environment: "NAME=VALUE" lines
 * (pyperf-run attach passes them to pyperfinject_attach). A lookup for
 * pi_config_parse with ctx a struct pi_settings_text; the last line naming
 * a variable wins; a value longer than the buffer is not found. Pure. */
struct pi_settings_text {
    const char *text; /* NUL-terminated; NULL: no settings */
    char value[PATH_MAX];
};
const char *pi_settings_lookup(const char *name, void *ctx);

/* The i-th variable name (for tests and diagnostics), NULL past the end. */
const char *pi_config_name(size_t i);

#endif
