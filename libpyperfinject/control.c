#include "control.h"

#include "interp.h"
#include "log.h"
#include "state.h"

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

struct pi_control {
    _Atomic int pipe_write; /* -1 when there is no control thread */
    int pipe_read;
    int signo;              /* 0: no signal handler */
    int duration;           /* seconds; 0: no limit */
    _Atomic int rejoin_wanted; /* a switch-on whose pending call is not yet queued */
    int parent_write;       /* after fork: the parent's pipe, to close */
};

/* One per process, reachable from the signal handler. */
static struct pi_control the_control = {.pipe_write = -1, .pipe_read = -1, .parent_write = -1};

int pi_control_is_on(const struct pi_state *s)
{
    return !(atomic_load(&s->hot.attention) & PI_ATTN_OFF);
}

/* Runs in CPython's main thread with the GIL: the hooks go back in. */
static int rejoin(void *arg)
{
    struct pi_state *s = arg;
    if (pi_control_is_on(s))
        pi_interp_rejoin_all(s);
    return 0;
}

static void queue_rejoin(struct pi_state *s)
{
    struct pi_control *c = &the_control;
    if (s->py.AddPendingCall(rejoin, s) == 0)
        atomic_store(&c->rejoin_wanted, 0);
    else
        atomic_store(&c->rejoin_wanted, 1); /* queue full: the control thread retries */
}

/* Applies a request. Not from a signal handler. */
static void apply(struct pi_state *s, int on)
{
    if (on < 0)
        on = !pi_control_is_on(s);
    if (on) {
        pi_attention_lower(s, PI_ATTN_OFF);
        queue_rejoin(s);
    } else {
        pi_attention_raise(s, PI_ATTN_OFF);
    }
    pi_log(PI_LOG_INFO, "profiling switched %s", on ? "on" : "off");
}

void pi_control_request(struct pi_state *s, int on)
{
    struct pi_control *c = &the_control;
    int fd = atomic_load(&c->pipe_write);
    if (fd < 0) {
        apply(s, on);
        return;
    }
    char byte = on < 0 ? 't' : on ? '1' : '0';
    int saved = errno;
    ssize_t w = write(fd, &byte, 1);
    (void)w; /* a full pipe already holds requests enough */
    errno = saved;
}

static void on_signal(int signo, siginfo_t *info, void *context)
{
    (void)signo, (void)context;
    int on = -1;
    if (info != NULL && info->si_code == SI_QUEUE)
        on = info->si_value.sival_int != 0;
    pi_control_request(&pi_state, on);
}

static long remaining_ms(const struct timespec *deadline)
{
    struct timespec now;
    clock_gettime(CLOCK_MONOTONIC, &now);
    long ms = (deadline->tv_sec - now.tv_sec) * 1000 + (deadline->tv_nsec - now.tv_nsec) / 1000000;
    return ms > 0 ? ms : 0;
}

static void *control_thread(void *arg)
{
    struct pi_state *s = arg;
    struct pi_control *c = &the_control;
    struct timespec deadline = {0, 0};
    int timing = 0;
    if (c->duration > 0 && pi_control_is_on(s)) {
        clock_gettime(CLOCK_MONOTONIC, &deadline);
        deadline.tv_sec += c->duration;
        timing = 1;
    }
    for (;;) {
        int timeout = atomic_load(&c->rejoin_wanted) ? 10 : timing ? (int)remaining_ms(&deadline) : -1;
        struct pollfd p = {c->pipe_read, POLLIN, 0};
        int n = poll(&p, 1, timeout);
        if (n < 0 && errno != EINTR)
            return NULL;
        if (atomic_load(&c->rejoin_wanted) && pi_control_is_on(s))
            queue_rejoin(s);
        if (n == 0 && timing && remaining_ms(&deadline) == 0) {
            apply(s, 0);
            timing = 0;
            continue;
        }
        char bytes[64];
        ssize_t got = n > 0 ? read(c->pipe_read, bytes, sizeof bytes) : 0;
        for (ssize_t i = 0; i < got; i++) {
            apply(s, bytes[i] == 't' ? -1 : bytes[i] == '1');
            timing = c->duration > 0 && pi_control_is_on(s);
            if (timing) {
                clock_gettime(CLOCK_MONOTONIC, &deadline);
                deadline.tv_sec += c->duration;
            }
        }
    }
}

static int start_thread(struct pi_state *s, char *err, unsigned long errlen)
{
    struct pi_control *c = &the_control;
    int fds[2];
    if (pipe2(fds, O_CLOEXEC | O_NONBLOCK) != 0) {
        snprintf(err, errlen, "cannot create the control pipe: %s", strerror(errno));
        return -1;
    }
    c->pipe_read = fds[0];
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    sigset_t all, old;
    sigfillset(&all); /* the host's signals are for the host's threads */
    pthread_sigmask(SIG_SETMASK, &all, &old);
    pthread_t thread;
    int rc = pthread_create(&thread, &attr, control_thread, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        close(fds[0]);
        close(fds[1]);
        snprintf(err, errlen, "cannot start the control thread: %s", strerror(rc));
        return -1;
    }
    atomic_store(&c->pipe_write, fds[1]);
    return 0;
}

int pi_control_start(struct pi_state *s, char *err, unsigned long errlen)
{
    struct pi_control *c = &the_control;
    s->control = c;
    c->signo = s->cfg.signal;
    c->duration = s->cfg.duration;
    if (!s->cfg.start)
        pi_attention_raise(s, PI_ATTN_OFF);
    if (c->signo == 0 && c->duration == 0)
        return 0; /* API calls alone need no thread */
    if (start_thread(s, err, errlen) != 0)
        return -1;
    if (c->signo != 0) {
        struct sigaction sa;
        memset(&sa, 0, sizeof sa);
        sa.sa_sigaction = on_signal;
        sa.sa_flags = SA_SIGINFO | SA_RESTART;
        sigemptyset(&sa.sa_mask);
        if (sigaction(c->signo, &sa, NULL) != 0) {
            snprintf(err, errlen, "cannot handle signal %d: %s", c->signo, strerror(errno));
            return -1;
        }
    }
    return 0;
}

void pi_control_forget_parent(struct pi_state *s)
{
    (void)s;
    /* The pipe belongs to the parent's thread: signals to this child must
     * not switch the parent. */
    the_control.parent_write = atomic_exchange(&the_control.pipe_write, -1);
}

void pi_control_after_fork(struct pi_state *s)
{
    struct pi_control *c = &the_control;
    if (s->control == NULL || (c->signo == 0 && c->duration == 0) ||
        atomic_load(&c->pipe_write) >= 0)
        return;
    char err[256];
    if (c->pipe_read >= 0)
        close(c->pipe_read); /* our copies of the parent's pipe */
    if (c->parent_write >= 0)
        close(c->parent_write);
    c->pipe_read = c->parent_write = -1;
    if (start_thread(s, err, sizeof err) != 0)
        pi_log(PI_LOG_WARN, "forked child: %s; switching by signal is off here", err);
}
