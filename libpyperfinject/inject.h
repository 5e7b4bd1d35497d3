/* The lifecycle (inject.c): resolve, wait, activate. */
#ifndef PI_INJECT_H
#define PI_INJECT_H

#include <stddef.h>

/* 1 once the library is attached to a running interpreter. */
int pi_is_active(void);

/* What pi_attach_running did (the values of pyperfinject_attach). */
enum pi_attach_result {
    PI_ATTACHED = 0,           /* installed in this interpreter now */
    PI_ATTACH_ALREADY = 1,     /* it was, and profiling is on: nothing to do */
    PI_ATTACH_SWITCHED_ON = 2, /* it was, switched off: switched on */
    PI_ATTACH_PENDING = 3,     /* the main thread installs it at its next Python step */
    PI_ATTACH_FAILED = -1,     /* nothing changed; the reason is in why */
};

/* Loaded into a running interpreter: installs the library there as if it
 * had been preloaded. settings: "NAME=VALUE" lines of PYPERFINJECT_*
 * variables (the process's environment is not read). Without the GIL, or
 * from_outside (a thread borrowed by pyperf-attach, stopped anywhere), the
 * install goes to the main thread as a pending call. Never raises a Python
 * exception. why: a line for the caller. */
int pi_attach_running(const char *settings, int from_outside, char *why, size_t whylen);

#endif
