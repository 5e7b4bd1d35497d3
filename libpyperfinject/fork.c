/* Forked children: which files they write, and when.
 *
 * A child runs the trampolines it inherited, and perf knows them already:
 * it starts the child with the parent's maps at the fork, so a sample in an
 * inherited arena is named from perf-PARENT.map, or from the jitted code
 * perf inject made out of the parent's dump. So a child writes what is new:
 *
 *  - fork handler (pthread_atfork, registered at activation): memory only
 *    (async-signal-safe). The backends' open files
 *    become the parent's; the current arena is retired, so new slots come
 *    from an arena mapped after the fork, which perf names after the child's
 *    own files; the time is noted.
 *  - first Python call: bookkeeping, no file system call (a subprocess child
 *    with preexec_fn runs Python, then execs).
 *  - first new trampoline: the child's own perf-PID.map and jit-PID.dump.
 *    A child that makes none leaves no files.
 *  - the perf map's inherited lines, which other readers of the sampled
 *    pid's map need (bcc, bpftrace): copied in bulk, once the child shows it
 *    keeps running: at a new trampoline PI_FORK_SETTLE_NS or more after the
 *    fork, or at its normal exit. The dump never copies: perf resolves the
 *    inherited code through its fork model. */
#include "fork.h"

#include "control.h"
#include "lock.h"
#include "log.h"
#include "state.h"

#include <errno.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static uint64_t monotonic_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts); /* the vDSO: no system call */
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The lock is held across fork, so the child's copy of the state is whole. */
static void before_fork(void) { pthread_mutex_lock(&pi_state.lock); }

static void after_fork_parent(void) { pthread_mutex_unlock(&pi_state.lock); }

/* Memory only: a child that execs never touches a file; one that runs
 * Python makes its own files at its first new trampoline. */
static void after_fork_child(void)
{
    struct pi_state *s = &pi_state;
    pthread_mutex_init(&s->lock, NULL);
    pi_control_forget_parent(s);
    s->fork.fork_ns = monotonic_ns();
    s->fork.child = 1;
    for (int i = 0; i < s->backends.n; i++) {
        struct pi_backend *b = &s->backends.list[i];
        if (b->failed)
            continue; /* stays off in the child too */
        b->ops->forked(b->self, s->cfg.copy_on_fork);
        b->unstarted = 1;
    }
    pi_arena_retire_current(&s->pool);
    pi_attention_raise(s, PI_ATTN_FORK);
}

int pi_fork_watch(void)
{
    int rc = pthread_atfork(before_fork, after_fork_parent, after_fork_child);
    return rc == 0 ? 0 : (errno = rc, -1);
}

void pi_fork_first_call(struct pi_state *s)
{
    pi_lock(s);
    pi_attention_lower(s, PI_ATTN_FORK);
    pi_unlock(s);
    pi_control_after_fork(s);
}

/* Creates the own files of the backends selected (all unstarted ones, or
 * only those with lines to inherit). One line for all failures. */
static void start_backends(struct pi_state *s, int only_inheriting)
{
    char err[512] = "";
    int failed = 0, live = 0, tried = 0;
    for (int i = 0; i < s->backends.n; i++) {
        struct pi_backend *b = &s->backends.list[i];
        if (b->failed)
            continue;
        live++;
        if (!b->unstarted ||
            (only_inheriting && (!b->ops->inheritable || b->ops->inheritable(b->self) == 0)))
            continue;
        if (tried++ == 0)
            s->pid = (long)getpid();
        char why[512];
        if (b->ops->start_child(b->self, s->cfg.dir, s->pid, why, sizeof why) != 0) {
            b->failed = 1;
            if (failed++ == 0)
                memcpy(err, why, sizeof err);
        } else {
            b->unstarted = 0;
        }
    }
    if (failed > 0)
        pi_log(PI_LOG_WARN, "forked child %ld: %s%s", s->pid, err,
               failed == live ? "; this process runs unprofiled" : "");
}

static void inherit(struct pi_state *s)
{
    for (int i = 0; i < s->backends.n; i++) {
        struct pi_backend *b = &s->backends.list[i];
        if (b->failed || b->unstarted || !b->ops->inherit || !b->ops->inheritable ||
            b->ops->inheritable(b->self) == 0)
            continue;
        char why[512];
        int rc = b->ops->inherit(b->self, s->cfg.dir, why, sizeof why);
        if (rc < 0)
            b->failed = 1;
        if (rc != 0)
            pi_log(PI_LOG_WARN, "forked child %ld: %s%s%s", s->pid, why,
                   rc < 0 ? "; stopped writing the " : "", rc < 0 ? b->ops->name : "");
    }
}

/* Done once every live backend has its file and nothing to inherit. */
static int settled(const struct pi_state *s)
{
    for (int i = 0; i < s->backends.n; i++) {
        const struct pi_backend *b = &s->backends.list[i];
        if (!b->failed && (b->unstarted || (b->ops->inheritable && b->ops->inheritable(b->self))))
            return 0;
    }
    return 1;
}

void pi_fork_before_announce(struct pi_state *s)
{
    if (!s->fork.child)
        return;
    start_backends(s, 0);
    if (monotonic_ns() - s->fork.fork_ns >= PI_FORK_SETTLE_NS)
        inherit(s);
    s->fork.child = !settled(s);
}

void pi_fork_at_exit(struct pi_state *s)
{
    if (!s->fork.child)
        return;
    start_backends(s, 1);
    inherit(s);
    s->fork.child = !settled(s);
}
