/* Waiting for interpreters (wait.h). */
#include "wait.h"

#include "interp.h"
#include "log.h"
#include "state.h"

#include <dlfcn.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

static void on_finalize(void);

/* Once per runtime cycle, after the first interpreter was served. */
static void watch_finalisation(struct pi_state *s)
{
    if (s->wait.at_exit == NULL || atomic_load_explicit(&s->wait.at_exit_registered,
                                                        memory_order_relaxed) ||
        atomic_exchange(&s->wait.at_exit_registered, 1))
        return;
    if (s->wait.at_exit(on_finalize) != 0)
        atomic_store(&s->wait.at_exit_registered, 0);
}

static int audit_hook(const char *event, pi_pyobj *args, void *userdata)
{
    (void)event, (void)args;
    struct pi_state *s = userdata;
    if (s->on_interpreter(s, s->wait.thread_state_get(), NULL) == 0)
        watch_finalisation(s);
    return 0;
}

/* Runs at the very end of Py_FinalizeEx: the audit hook list was cleared,
 * and a new runtime numbers its interpreters from 0 again. Start over. */
static void on_finalize(void)
{
    struct pi_state *s = &pi_state;
    pi_interp_forget_all(s);
    atomic_store(&s->wait.at_exit_registered, 0);
    if (s->wait.add_audit_hook && s->wait.add_audit_hook(audit_hook, s) != 0)
        pi_log(PI_LOG_INFO, "cannot re-register the audit hook after finalisation");
}

/* The main interpreter is published in the interpreter list only after its
 * fields are set (PyInterpreterState_New), and eval_frame is written nowhere
 * else: reporting it as soon as it appears, well before Py_IsInitialized()
 * turns 1, catches the whole start-up. */
static void *watcher(void *arg)
{
    struct pi_state *s = arg;
    /* Poll fast at first (interpreters appear within milliseconds), then back
     * off; give up after a minute of a runtime that never starts. */
    long delay_ns = 20 * 1000;
    for (long waited_ns = 0; waited_ns < 60L * 1000 * 1000 * 1000; waited_ns += delay_ns) {
        void *interp = s->wait.interpreter_head();
        if (interp != NULL) {
            if (s->on_interpreter(s, NULL, interp) == 0)
                watch_finalisation(s);
            return NULL;
        }
        struct timespec ts = {0, delay_ns};
        nanosleep(&ts, NULL);
        if (delay_ns < 5 * 1000 * 1000)
            delay_ns *= 2;
    }
    pi_log(PI_LOG_INFO, "Python was not initialised within a minute; not waiting any longer");
    return NULL;
}

static int start_watcher(struct pi_state *s, char *err, size_t errlen)
{
    pthread_t thread;
    pthread_attr_t attr;
    pthread_attr_init(&attr);
    pthread_attr_setdetachstate(&attr, PTHREAD_CREATE_DETACHED);
    pthread_attr_setstacksize(&attr, 64 * 1024);
    /* Block all signals in the watcher: the host's handlers must run on its
     * own threads. */
    sigset_t all, old;
    sigfillset(&all);
    pthread_sigmask(SIG_SETMASK, &all, &old);
    int rc = pthread_create(&thread, &attr, watcher, s);
    pthread_sigmask(SIG_SETMASK, &old, NULL);
    pthread_attr_destroy(&attr);
    if (rc != 0) {
        snprintf(err, errlen, "cannot start the watcher thread: %s", strerror(rc));
        return -1;
    }
    return 0;
}

int pi_wait_start(struct pi_state *s, void *handle, const struct pi_abi_startup *facts, char *err,
                  size_t errlen)
{
    s->wait.add_audit_hook = (int (*)(pi_audit_hook_fn, void *))dlsym(handle, "PySys_AddAuditHook");
    s->wait.thread_state_get = (void *(*)(void))dlsym(handle, "PyThreadState_GetUnchecked");
    if (s->wait.thread_state_get == NULL)
        s->wait.thread_state_get = (void *(*)(void))dlsym(handle, "_PyThreadState_UncheckedGet");
    s->wait.interpreter_head = (void *(*)(void))dlsym(handle, "PyInterpreterState_Head");
    s->wait.at_exit = (int (*)(void (*)(void)))dlsym(handle, "Py_AtExit");
    if (facts->wait == PI_WAIT_AUDIT_HOOK) {
        if (s->wait.add_audit_hook == NULL || s->wait.thread_state_get == NULL) {
            snprintf(err, errlen, "this Python lacks PySys_AddAuditHook");
            return -1;
        }
        if (s->wait.add_audit_hook(audit_hook, s) != 0) {
            snprintf(err, errlen, "PySys_AddAuditHook refused the hook");
            return -1;
        }
        return 0;
    }
    if (s->wait.interpreter_head == NULL) {
        snprintf(err, errlen, "this Python lacks PyInterpreterState_Head");
        return -1;
    }
    return start_watcher(s, err, errlen);
}
