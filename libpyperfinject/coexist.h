/* Living with CPython's own perf trampoline (coexist.c). */
#ifndef PI_COEXIST_H
#define PI_COEXIST_H

struct pi_state;

/* Called at audit events with the GIL held: where CPython has a trampoline
 * of its own, wraps sys.activate_stack_trampoline once per interpreter so
 * that CPython's trampoline can take over instead of failing. */
void pi_coexist_watch(struct pi_state *s, void *interp);

#endif
