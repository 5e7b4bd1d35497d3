/* Forked children: which files they write, and when (fork.c). */
#ifndef PI_FORK_H
#define PI_FORK_H

struct pi_state;

/* How long a child must have run before its perf map takes its ancestors'
 * lines: a subprocess child with preexec_fn runs Python (at-fork handlers,
 * the preexec function) for a few milliseconds before it execs. */
#define PI_FORK_SETTLE_NS (100u * 1000u * 1000u)

/* At activation: the pthread_atfork handlers for pi_state. The child's is
 * memory only, async-signal-safe. Returns 0, or -1 with errno. */
int pi_fork_watch(void);

/* The child's first Python call: bookkeeping only, no file system call. */
void pi_fork_first_call(struct pi_state *s);

/* Under the lock, before a new trampoline is announced: the child's own
 * files, and the inherited map lines once it has run PI_FORK_SETTLE_NS. */
void pi_fork_before_announce(struct pi_state *s);

/* Under the lock, at a normal exit: the inherited map lines, if any. */
void pi_fork_at_exit(struct pi_state *s);

#endif
