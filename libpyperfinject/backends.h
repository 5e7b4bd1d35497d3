/* The process's outputs: every backend switched on, behind backend.h's
 * operations. Callers hold the state's lock, except where a function says
 * otherwise; nothing outside backends.c and the backends themselves looks
 * inside a backend's state. */
#ifndef PI_BACKENDS_H
#define PI_BACKENDS_H

#include "backend.h"
#include "config.h"

enum { PI_MAX_BACKENDS = 3 };

struct pi_backends {
    struct pi_backend list[PI_MAX_BACKENDS]; /* the ones opened, in order */
    int n;
    struct pi_perfmap perfmap; /* the backends' own state */
    struct pi_jitdump jitdump;
    struct pi_gdbjit gdbjit;
};

/* At activation: opens every output cfg switches on. One that fails is
 * reported with one line and left out (a noexec directory costs DWARF mode,
 * not the map). Returns 0 when at least one is open (or the benchmark floor
 * writes nothing by design), or -1 with the reason in err. */
int pi_backends_open(struct pi_backends *b, const struct pi_config *cfg, long pid, char *err,
                     size_t errlen);

/* A new trampoline, announced by every live backend before it first runs.
 * A backend that fails stops; one line says which and why. */
void pi_backends_announce(struct pi_backends *b, const struct pi_tramp_info *info);

/* fdatasync of every open file. 0, or -1 when one failed. */
int pi_backends_flush(struct pi_backends *b);

/* "PATH PATH" of the files written, for the start-up line. */
void pi_backends_describe(const struct pi_backends *b, char *buf, size_t len);

/* CPython's own trampoline is about to start with its backend
 * `cpython_backend` ("perf", "perf_jit"): a backend whose file CPython
 * will write stops, before CPython opens it (it truncates the file, which
 * must not happen under a store into its mapping). Returns the backends
 * stopped, for pi_backends_resume if CPython's start fails. Under the
 * state's lock, so no write is under way. */
unsigned pi_backends_give_way(struct pi_backends *b, const char *cpython_backend, const char *dir);

/* Restarts the backends pi_backends_give_way stopped (CPython's trampoline
 * did not start after all). */
void pi_backends_resume(struct pi_backends *b, unsigned stopped);

/* At exit: final records. */
void pi_backends_close(struct pi_backends *b);

#endif
