/* The switch (interp.c): each interpreter's eval-frame field, and its
 * record. Every function takes the state's lock itself. */
#ifndef PI_INTERP_H
#define PI_INTERP_H

struct pi_state;

/* Hooks `interp`, unless done already: its code-extra index, our hook in
 * front of whatever function runs there now (chaining keeps both). Called
 * with the interpreter's thread state attached, or, for 3.6/3.7, from the
 * watcher thread. */
void pi_interp_install(struct pi_state *s, void *interp);

/* Someone put another eval-frame function in front of ours in `interp`
 * while it should run: said once, and not fought (debuggers, JITs). */
void pi_interp_notice_replacement(struct pi_state *s, void *interp);

/* The audit hook's common case, in a few loads: the interpreter `tstate`
 * belongs to is the one last remembered and still runs our hook, so there is
 * nothing to install or notice. 0 while nothing is remembered. remember:
 * after the full look, keeps `interp` if it runs ours. */
int pi_interp_settled(struct pi_state *s, void *tstate);
void pi_interp_remember(struct pi_state *s, void *interp);

/* leave: the calling interpreter steps out (from its own hook, when
 * switched off). rejoin_all: every interpreter that left is hooked again
 * (from a pending call, GIL held). yield: CPython's trampoline takes the
 * interpreter (yield=1), or did not after all (yield=0); returns 1 if
 * anything changed. */
void pi_interp_leave(struct pi_state *s, void *interp);
void pi_interp_rejoin_all(struct pi_state *s);
int pi_interp_yield(struct pi_state *s, void *interp, int yield);

/* After Py_FinalizeEx: interpreter IDs start again at 0 in a new runtime,
 * so every record and installed mark is forgotten. Trampolines and files
 * stay (frames and perf still refer to them). */
void pi_interp_forget_all(struct pi_state *s);

#endif
