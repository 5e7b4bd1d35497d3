/* Switching profiling on and off while the program runs.
 *
 * Off: every interpreter's hook steps out on its next call and restores the
 * function it had replaced, so the interpreter runs at full speed again
 * (inlined calls included). On: a pending call (run by CPython in its main
 * thread, with the GIL) puts the hooks back. Trampolines and map entries
 * made earlier stay valid and are reused.
 *
 * Requests come from the public API, from an opt-in signal
 * (PYPERFINJECT_SIGNAL; sigqueue value 1 = on, 0 = off, a plain kill
 * toggles) and from the PYPERFINJECT_DURATION timer. The signal handler only
 * writes a byte to a pipe; a control thread does the rest. */
#ifndef PI_CONTROL_H
#define PI_CONTROL_H

struct pi_state;

/* At activation: the initial state, and the control thread and signal
 * handler when configured. Returns 0, or -1 with a reason in err. */
int pi_control_start(struct pi_state *s, char *err, unsigned long errlen);

/* Requests a state (1 on, 0 off, -1 toggle). Async-signal-safe. */
void pi_control_request(struct pi_state *s, int on);

/* 1 on, 0 off. */
int pi_control_is_on(const struct pi_state *s);

/* In a forked child on its first Python call: a control thread of its own. */
void pi_control_after_fork(struct pi_state *s);

/* In the fork child handler: stop signals from reaching the parent's pipe. */
void pi_control_forget_parent(struct pi_state *s);

#endif
