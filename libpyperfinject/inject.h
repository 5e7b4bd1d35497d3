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

/* Who calls pi_attach_running, which decides where the install runs. */
enum pi_attach_caller {
    PI_CALLER_PYTHON,         /* code of the program's: with the GIL, at once */
    PI_CALLER_WAITING_THREAD, /* a borrowed thread in a blocking system call:
                                 PyGILState_Ensure, then at once */
    PI_CALLER_ANYWHERE,       /* a borrowed thread stopped anywhere: the main
                                 thread's pending call */
};

/* Loaded into a running interpreter: installs the library there as if it
 * had been preloaded. settings: "NAME=VALUE" lines of PYPERFINJECT_*
 * variables (the process's environment is not read). A Python caller
 * without the GIL gets the pending call too. Never raises a Python
 * exception. why: a line for the caller. */
int pi_attach_running(const char *settings, enum pi_attach_caller caller, char *why,
                      size_t whylen);

#endif
