/* The lifecycle (inject.c): resolve, wait, activate. */
#ifndef PI_INJECT_H
#define PI_INJECT_H

/* 1 once the library is attached to a running interpreter. */
int pi_is_active(void);

#endif
