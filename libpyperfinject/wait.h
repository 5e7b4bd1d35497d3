/* Waiting for interpreters (wait.c): the event source that reports each
 * running interpreter through the state's on_interpreter callback.
 *
 * 3.8+: an audit hook registered before initialisation (PySys_AddAuditHook
 * is documented safe then) fires inside every interpreter during its own
 * initialisation, with its thread state attached and before user code runs.
 * Subinterpreters are covered the same way. Finalisation clears audit hooks,
 * so a Py_AtExit callback forgets the interpreters and registers again for a
 * host that initialises Python again.
 *
 * 3.6/3.7 have no audit hooks: a watcher thread polls for the main
 * interpreter. Code that runs before it is found (tens of microseconds into
 * start-up) is missed; subinterpreters are not reported. */
#ifndef PI_WAIT_H
#define PI_WAIT_H

#include "abi.h"

#include <stddef.h>

struct pi_state;

/* Starts waiting the way `facts` say. Uses only the symbols it resolves
 * itself from handle, so it works even when preparing failed (the failure is
 * then reported when Python starts). Returns 0, or -1 with a reason in err. */
int pi_wait_start(struct pi_state *s, void *handle, const struct pi_abi_startup *facts, char *err,
                  size_t errlen);

#endif
