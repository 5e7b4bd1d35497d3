/* Taking the library's one lock (state.h) on a thread that runs Python.
 *
 * A free-threaded CPython stops the world: for its garbage collector, for
 * os.fork, and (3.14+) to install an eval-frame function. It waits until
 * every attached thread parks at a safe point, and a thread blocked on a
 * pthread mutex while attached never parks. If the holder of our lock is
 * the one stopping the world (installing the hook in a new interpreter,
 * switching off), or waits for it, a plain wait for the lock deadlocks. So
 * on a free-threaded build an attached thread that finds the lock taken
 * waits for it detached (PyEval_SaveThread), re-attaches, and tries again:
 * it never holds the lock while parked, and never blocks attached. Holders
 * do not park either: nothing the library calls under the lock reaches a
 * safe point, except the eval-frame setter, which parks the others.
 * Everywhere else (GIL builds, threads without a thread state, the fork
 * handler) it is a plain pthread_mutex_lock. */
#ifndef PI_LOCK_H
#define PI_LOCK_H

struct pi_state;

void pi_lock(struct pi_state *s);
void pi_unlock(struct pi_state *s);

#endif
