/* libpyperfinject: Python function names in perf, for unmodified CPython.
 *
 * The story of a process, top to bottom:
 *
 *  1. resolve   The constructor (or, for hosts that dlopen libpython later,
 *               our dlopen wrapper) finds CPython's symbols with dlsym, reads
 *               the version and picks that version's row of the ABI table.
 *               Anything unexpected: one "pyperfinject:" line on stderr and
 *               the library stands aside. Not CPython: silence.
 *  2. wait      The interpreter usually doesn't exist yet. 3.8+ registers an
 *               audit hook that fires inside each interpreter as it starts;
 *               3.6/3.7 poll from a thread (wait.c). Each running
 *               interpreter is reported to interpreter_running below.
 *  3. activate  At the first one: the files, the fork handlers (fork.c), the
 *               switch-on/off control (control.c).
 *     install   The eval-frame function is installed on every interpreter,
 *               chained to any PEP 523 function already there (interp.c).
 *  4. evaluate  Each code object gets its own copy of a tiny trampoline; the
 *               evaluator runs inside it, so perf sees a native frame at a
 *               unique address, named in /tmp/perf-PID.map and jit-PID.dump
 *               before the function first runs (eval.c, backends).
 *
 * fork: a child makes its own files when it makes its first trampoline, from
 * an arena of its own; its map takes the parent's lines once it keeps
 * running (fork.c). Arenas are never unmapped. */
#include "inject.h"

#include "binaries.h"
#include "coexist.h"
#include "cpython_jit.h"
#include "control.h"
#include "eval.h"
#include "fork.h"
#include "interp.h"
#include "log.h"
#include "preflight.h"
#include "slot.h"
#include "state.h"
#include "unwind_registry.h"
#include "wait.h"

#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/auxv.h>
#include <time.h>
#include <unistd.h>

/* NOT_YET: no CPython seen. WAITING: CPython found, no interpreter running
 * yet. ACTIVE: files open, hooking interpreters. STOOD_ASIDE: final. */
enum attach_status { NOT_YET = 0, WAITING = 1, ACTIVE = 2, STOOD_ASIDE = 3 };
static _Atomic int attach_status = NOT_YET;

/* Read from outside, through /proc/PID/mem, by `pyperf-run --pid PID
 * status` (docs/runtime-control.md): where the state is. The addresses
 * keep the hot state where it is; the layout number changes with any
 * change here. Status values as enum attach_status above. */
struct pyperfinject_remote {
    char magic[16];             /* "pyperfinject" */
    uint32_t layout;            /* 1 */
    uint32_t off_bit;           /* set in *attention while switched off */
    const _Atomic int *status;  /* enum attach_status */
    const _Atomic int *attention;
};
__attribute__((visibility("default"))) extern const struct pyperfinject_remote pyperfinject_remote;
const struct pyperfinject_remote pyperfinject_remote = {
    "pyperfinject", 1, PI_ATTN_OFF, &attach_status, &pi_state.hot.attention,
};
static pthread_mutex_t attach_lock = PTHREAD_MUTEX_INITIALIZER;
/* A problem found while preparing, reported when Python actually starts. */
static char deferred_error[512];

static const char *env_lookup(const char *name, void *ctx)
{
    (void)ctx;
    return getenv(name);
}

/* --- resolve ---------------------------------------------------------- */

/* At exit: a forked child's inherited map lines (fork.c), final records
 * (JIT_CODE_CLOSE). Descriptors stay open for
 * daemon threads that may still run; a lock held by a stuck thread means
 * the records are skipped rather than exit hanging. */
__attribute__((destructor)) static void pi_destructor(void)
{
    struct pi_state *s = &pi_state;
    if (atomic_load(&attach_status) != ACTIVE || (atomic_load(&s->hot.attention) & PI_ATTN_FORK))
        return;
    for (int tries = 0; pthread_mutex_trylock(&s->lock) != 0; tries++) {
        if (tries == 100)
            return;
        struct timespec pause = {0, 1000000};
        nanosleep(&pause, NULL);
    }
    pi_fork_at_exit(s);
    pi_jit_at_exit(s);
    pi_backends_close(&s->backends);
    pthread_mutex_unlock(&s->lock);
}

static void hot_from_abi(struct pi_state *s)
{
    s->hot.frame_code_offset = s->abi.frame_code_offset;
    s->hot.frame_code_tag = s->abi.frame_code_tag;
    s->hot.ob_type_offset = s->abi.ob_type_offset;
    s->hot.code_type = s->py.CodeType;
    s->hot.get_extra = s->py.CodeGetExtra;
    s->hot.co_extra_offset = s->abi.co_extra;
    s->hot.lookup = s->abi.extra == PI_EXTRA_SIDE_TABLE ? PI_LOOKUP_SIDE_TABLE
                    : s->abi.co_extra >= 0              ? PI_LOOKUP_DIRECT
                                                        : PI_LOOKUP_API;
    if (s->hot.lookup != PI_LOOKUP_DIRECT)
        pi_attention_raise(s, PI_ATTN_LOOKUP);
}

/* The interpreter's command line, NUL-terminated, for the preflight checks:
 * its options come first, so a cut read still holds them. */
static size_t read_cmdline(char *buf, size_t len)
{
    int fd = open("/proc/self/cmdline", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, len - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    return (size_t)n + 1;
}

/* Everything that can be decided without touching the process: settings,
 * symbols, layout checks, the slot image. No files, no output: a program
 * that merely links libpython (perf does) must not notice us. Returns 0, 1
 * when switched off, or -1 with the reason in err. */
/* How the library came into the process. */
enum arrival {
    PRELOADED, /* before Python started: LD_PRELOAD, or a host's dlopen of libpython */
    ATTACHED,  /* into a running interpreter: pyperfinject_attach (pyperf-run attach) */
};

static int prepare(struct pi_state *s, void *handle, unsigned major, unsigned minor,
                   const struct pi_abi_startup *facts, enum arrival arrival,
                   pi_getenv_fn settings, void *settings_ctx, char *err, size_t errlen)
{
    char missing[128];
    if (pi_config_parse(&s->cfg, settings, settings_ctx, err, errlen) != 0)
        return -1;
    pi_log_set_level(s->cfg.verbose);
    if (!s->cfg.enable)
        return 1;
    static char cmdline[8192];
    struct pi_preflight_input preflight = {facts, env_lookup, NULL, cmdline, 0};
    preflight.cmdline_len = read_cmdline(cmdline, sizeof cmdline);
    /* An audit hook registered after start-up is allocated and freed with
     * the same allocator: only the early one cannot survive a switch. */
    const char *allocator = arrival == PRELOADED ? pi_preflight_allocator_switch(&preflight) : NULL;
    if (allocator != NULL) {
        snprintf(err, errlen, "%s changes Python's memory allocator after start-up, which the "
                 "library's early audit hook cannot survive; not profiling this process",
                 allocator);
        return 2;
    }
    const char *cpython = pi_preflight_cpython_requested(&preflight);
    if (cpython != NULL) {
        pi_log(PI_LOG_INFO, "CPython's own perf support is requested (%s); standing aside",
               cpython);
        return 1;
    }

    unsigned lo, hi;
    pi_abi_supported_range(&lo, &hi);
    if (pi_pysyms_resolve(&s->py, handle, minor, missing, sizeof missing) != 0)
        return snprintf(err, errlen, "Python %u.%u lacks %s", major, minor, missing), -1;
    if (pi_abi_lookup(major, minor, s->py.free_threaded, &s->abi) != 0)
        return snprintf(err, errlen, "Python %u.%u%s is not supported (3.%u-3.%u are)", major,
                        minor, s->py.free_threaded ? " (free-threaded)" : "", lo, hi), -1;
    const void *members = *(void *const *)((const char *)s->py.CodeType +
                                           pi_abi_tp_members_offset(s->abi.free_threaded));
    char why[256];
    if (members == NULL || pi_abi_check_members(&s->abi, members, 64, why, sizeof why) != 0)
        return snprintf(err, errlen, "Python %u.%u has an unexpected code-object layout (%s)",
                        major, minor, members ? why : "no member table"), -1;
    if (pi_slot_image_build(&s->image, &s->unwind) != 0)
        return snprintf(err, errlen, "internal: trampoline template does not fit a slot"), -1;
    hot_from_abi(s);
    if (s->cfg.jit && pi_jit_setup(&s->jit, handle, &s->abi))
        pi_log(PI_LOG_DEBUG, "following CPython's JIT code (__jit_debug_descriptor)");
    s->hook = pi_eval_hook_for(s);
    return 0;
}

/* The process's ELF files, for a host that has other files at their paths
 * (binaries.h). A failure costs names, never the profile: one line. */
static void keep_binaries(const struct pi_state *s)
{
    const char *dir = s->cfg.keep_binaries;
    if (dir[0] == '\0')
        return;
    char err[512];
    struct timespec t0, t1;
    clock_gettime(CLOCK_MONOTONIC, &t0);
    int copied = pi_binaries_keep(dir, err, sizeof err);
    clock_gettime(CLOCK_MONOTONIC, &t1);
    if (copied < 0)
        pi_log(PI_LOG_WARN, "%s; perf may not resolve this process's native frames on another "
                            "machine or container host", err);
    else
        pi_log(PI_LOG_INFO, "kept %d binaries in %s/binaries in %.1f ms", copied, dir,
               (double)(t1.tv_sec - t0.tv_sec) * 1e3 + (double)(t1.tv_nsec - t0.tv_nsec) / 1e6);
}

/* The process's files, fork handlers and switching. 0, or -1 with the
 * reason in err. */
static int start_profiling(struct pi_state *s, char *err, size_t errlen)
{
    if (pi_backends_open(&s->backends, &s->cfg, s->pid, err, errlen) != 0)
        return -1;
    if (pi_fork_watch() != 0)
        return snprintf(err, errlen, "cannot watch forks: %s", strerror(errno)), -1;
    return pi_control_start(s, err, errlen);
}

/* First sight of a running interpreter: now the process is really Python.
 * Report a deferred problem, or create the files. Returns 0 when the
 * interpreter may be hooked. Called with the thread state attached (3.8+)
 * or from the watcher thread (3.6/3.7). */
static int activate(struct pi_state *s)
{
    int status = atomic_load_explicit(&attach_status, memory_order_acquire);
    if (status == ACTIVE || status == STOOD_ASIDE)
        return status == ACTIVE ? 0 : -1;
    int rc = -1;
    pthread_mutex_lock(&attach_lock);
    if (atomic_load(&attach_status) == ACTIVE) {
        rc = 0;
    } else if (atomic_load(&attach_status) == WAITING) {
        char err[512];
        struct timespec now;
        clock_gettime(CLOCK_MONOTONIC, &now);
        s->pid = (long)getpid();
        if (getcwd(s->start_cwd, sizeof s->start_cwd) == NULL)
            s->start_cwd[0] = '\0';
        s->pool.fill_header = pi_unwind_fill_header;
        s->pool.header_ctx = &s->image;
        s->pool.taken = pi_jit_address_taken;
        s->pool.taken_ctx = &s->jit;
        s->pool.salt = ((uint64_t)s->pid << 32) ^ (uint64_t)now.tv_nsec ^
                       (uint64_t)now.tv_sec << 20;
        if (deferred_error[0] != '\0') {
            pi_log(PI_LOG_WARN, "%s; profiling disabled, the program runs normally",
                   deferred_error);
        } else if (start_profiling(s, err, sizeof err) != 0) {
            pi_log(PI_LOG_WARN, "%s; profiling disabled, the program runs normally", err);
        } else {
            rc = 0;
            keep_binaries(s);
            char files[2 * 4096 + 2];
            pi_backends_describe(&s->backends, files, sizeof files);
            pi_log(PI_LOG_INFO, "profiling Python %u.%u%s; writing %s", s->abi.major,
                   s->abi.minor, s->py.free_threaded ? "t" : "", files);
        }
        atomic_store(&attach_status, rc == 0 ? ACTIVE : STOOD_ASIDE);
    }
    pthread_mutex_unlock(&attach_lock);
    return rc;
}

int pi_is_active(void) { return atomic_load(&attach_status) == ACTIVE; }

/* --- install ---------------------------------------------------------- */

/* wait.c's report of a running interpreter (the state's on_interpreter):
 * the first one activates the library; each is then hooked. With a thread
 * state (audit hook) the interpreter is the one it is attached to, and
 * Python may be called: replaced hooks are noticed, and CPython's own
 * trampoline is let in (coexist.c). */
static int interpreter_running(struct pi_state *s, void *tstate, void *interp)
{
    /* Every audit event of every interpreter comes here (hundreds at
     * start-up): the usual one is answered by a look. */
    if (tstate != NULL && pi_interp_settled(s, tstate) &&
        atomic_load_explicit(&s->coexist_pending, memory_order_relaxed) == 0)
        return 0;
    if (activate(s) != 0)
        return -1;
    if (interp == NULL && tstate == NULL)
        return -1;
    if (interp == NULL)
        interp = pi_abi_interp_of(&s->abi, tstate);
    pi_interp_install(s, interp);
    if (tstate != NULL) {
        pi_interp_notice_replacement(s, interp);
        if (atomic_load_explicit(&s->coexist_pending, memory_order_relaxed) > 0)
            pi_coexist_watch(s, interp);
        pi_interp_remember(s, interp);
    }
    return 0;
}

/* The version behind `handle` and its start-up facts. -1 for Python 2 and
 * 3.0-3.5, or no version: the library stays inert there. */
static int version_of(void *handle, unsigned *major, unsigned *minor,
                      struct pi_abi_startup *facts)
{
    const char *(*get_version)(void) = (const char *(*)(void))dlsym(handle, "Py_GetVersion");
    return get_version == NULL || pi_abi_parse_version(get_version(), major, minor) != 0 ||
                   pi_abi_startup_facts(*major, *minor, facts) != 0
               ? -1
               : 0;
}

/* Loaded into a process whose interpreter already runs (ctypes, or
 * pyperf-run attach's dlopen): the constructor does nothing there, and
 * pyperfinject_attach installs the library when asked. */
static int interpreter_runs(void *handle)
{
    int (*initialized)(void) = (int (*)(void))dlsym(handle, "Py_IsInitialized");
    return initialized != NULL && initialized();
}

/* Decides, once per process, whether `handle` is a CPython to serve. */
static void attach(void *handle)
{
    if (!pi_pysyms_is_cpython(handle) || interpreter_runs(handle))
        return; /* not Python (or not loaded yet), or late: stay silent */
    pthread_mutex_lock(&attach_lock);
    if (atomic_load(&attach_status) != NOT_YET)
        goto out;
    unsigned major = 0, minor = 0;
    struct pi_abi_startup facts;
    if (version_of(handle, &major, &minor, &facts) != 0) {
        atomic_store(&attach_status, STOOD_ASIDE); /* Python 2, or no version: inert */
        goto out;
    }
    int rc = prepare(&pi_state, handle, major, minor, &facts, PRELOADED, env_lookup, NULL,
                     deferred_error, sizeof deferred_error);
    if (rc == 2) { /* a reason to stand aside without any hook: said at verbose 2 */
        pi_log(PI_LOG_INFO, "%s", deferred_error);
        rc = 1;
    }
    if (rc == 1) {
        atomic_store(&attach_status, STOOD_ASIDE); /* PYPERFINJECT_ENABLE=0: no cost at all */
        goto out;
    }
    /* Wait for an interpreter even after an error: it is reported only if
     * the process turns out to run Python. */
    char err[512];
    pi_state.on_interpreter = interpreter_running;
    if (pi_wait_start(&pi_state, handle, &facts, err, sizeof err) != 0) {
        if (rc == 0)
            pi_log(PI_LOG_WARN, "%s; profiling disabled, the program runs normally", err);
        atomic_store(&attach_status, STOOD_ASIDE);
        goto out;
    }
    atomic_store(&attach_status, WAITING);
out:
    pthread_mutex_unlock(&attach_lock);
}

/* --- attach to a running interpreter --------------------------------- */

/* Hooks the interpreters of a process whose Python already runs. 3.8+, with
 * the GIL held: the audit hook (for subinterpreters and a re-initialised
 * runtime), then the calling thread's interpreter. 3.6/3.7: the main
 * interpreter, as the watcher would (a field store, from any thread). */
static int install_running(struct pi_state *s, const struct pi_abi_startup *facts, char *err,
                           size_t errlen)
{
    s->on_interpreter = interpreter_running;
    int served;
    if (facts->wait == PI_WAIT_WATCHER) {
        served = interpreter_running(s, NULL, s->py.InterpreterHead());
    } else {
        if (pi_wait_start(s, RTLD_DEFAULT, facts, err, errlen) != 0)
            return -1;
        served = interpreter_running(s, s->py.ThreadStateGet(), NULL);
    }
    if (served != 0)
        return snprintf(err, errlen, "%s", deferred_error[0] ? deferred_error
                                           : "the files could not be created (see stderr)"), -1;
    return 0;
}

static struct pi_abi_startup attach_facts;

/* The main thread's pending call, GIL held. */
static int install_pending(void *arg)
{
    (void)arg;
    char err[512];
    if (install_running(&pi_state, &attach_facts, err, sizeof err) != 0) {
        atomic_store(&attach_status, STOOD_ASIDE);
        pi_log(PI_LOG_WARN, "attach: %s; profiling disabled, the program runs normally", err);
    }
    return 0; /* never an exception of ours in the program */
}

int pi_attach_running(const char *settings, enum pi_attach_caller caller, char *why,
                      size_t whylen)
{
    struct pi_state *s = &pi_state;
    snprintf(why, whylen, "ok");
    if (getauxval(AT_SECURE) != 0)
        return snprintf(why, whylen, "a setuid or capability program"), PI_ATTACH_FAILED;
    int status = atomic_load(&attach_status);
    if (status == WAITING)
        return snprintf(why, whylen, "under way: the library waits for the interpreter"),
               PI_ATTACH_PENDING;
    if (status == ACTIVE) {
        if (pi_control_is_on(s))
            return snprintf(why, whylen, "already attached, profiling on"), PI_ATTACH_ALREADY;
        pi_control_request(s, 1);
        return snprintf(why, whylen, "already attached; switched on"), PI_ATTACH_SWITCHED_ON;
    }
    if (status == STOOD_ASIDE)
        return snprintf(why, whylen, "the library stood aside in this process earlier"),
               PI_ATTACH_FAILED;
    if (!pi_pysyms_is_cpython(RTLD_DEFAULT) || !interpreter_runs(RTLD_DEFAULT))
        return snprintf(why, whylen, "no running CPython in this process"), PI_ATTACH_FAILED;
    /* Prepared under the lock, and WAITING from then on: a second attach
     * meanwhile is told so. Installing takes the lock itself (activate). */
    pthread_mutex_lock(&attach_lock);
    unsigned major = 0, minor = 0;
    struct pi_settings_text text = {settings, {0}};
    int prepared = -1;
    if (atomic_load(&attach_status) != NOT_YET) {
        snprintf(why, whylen, "another attach is under way");
    } else if (version_of(RTLD_DEFAULT, &major, &minor, &attach_facts) != 0) {
        snprintf(why, whylen, "not a CPython the library serves (3.6 or newer)");
    } else {
        prepared = prepare(s, RTLD_DEFAULT, major, minor, &attach_facts, ATTACHED,
                           pi_settings_lookup, &text, why, whylen);
        if (prepared == 1)
            snprintf(why, whylen, "switched off by the settings, or CPython's own perf support "
                                  "is on in this process");
        if (prepared == 0)
            atomic_store(&attach_status, WAITING);
    }
    pthread_mutex_unlock(&attach_lock);
    if (prepared != 0)
        return PI_ATTACH_FAILED; /* nothing was installed */
    int now = caller == PI_CALLER_WAITING_THREAD ||
              (caller == PI_CALLER_PYTHON &&
               (attach_facts.wait == PI_WAIT_WATCHER || s->py.GILStateCheck()));
    if (now) {
        /* A borrowed thread blocked outside the interpreter takes the GIL
         * as a C library's callback would; a Python caller holds it. */
        int gil = caller == PI_CALLER_WAITING_THREAD ? s->py.GILStateEnsure() : 0;
        int installed = install_running(s, &attach_facts, why, whylen) == 0;
        if (caller == PI_CALLER_WAITING_THREAD)
            s->py.GILStateRelease(gil);
        if (installed)
            return PI_ATTACHED;
    } else if (s->py.AddPendingCall(install_pending, NULL) == 0) {
        snprintf(why, whylen, "the main thread installs it at its next Python step");
        return PI_ATTACH_PENDING;
    } else {
        snprintf(why, whylen, "CPython's pending-call queue is full; try again");
    }
    atomic_store(&attach_status, STOOD_ASIDE);
    return PI_ATTACH_FAILED;
}

__attribute__((constructor)) static void pi_constructor(void)
{
    pi_log_capture_stderr(); /* before anything may want to say something */
    pi_unwind_init();
    /* setuid/setgid/capability programs: never act on the caller's
     * environment there. */
    if (getauxval(AT_SECURE) != 0) {
        atomic_store(&attach_status, STOOD_ASIDE);
        return;
    }
    attach(RTLD_DEFAULT);
}

/* --- dlopen (documented interposition) --------------------------------
 * Hosts such as uwsgi load libpython with dlopen(RTLD_LOCAL) long after
 * start-up, which hides it from dlsym(RTLD_DEFAULT). Watching dlopen lets the
 * library attach through the new handle before the host initialises Python. */

typedef void *(*dlopen_fn)(const char *, int);

__attribute__((visibility("default"))) void *dlopen(const char *file, int mode)
{
    static _Atomic(dlopen_fn) real;
    dlopen_fn f = atomic_load_explicit(&real, memory_order_acquire);
    if (f == NULL) {
        f = (dlopen_fn)dlsym(RTLD_NEXT, "dlopen");
        atomic_store_explicit(&real, f, memory_order_release);
    }
    void *handle = f(file, mode);
    if (handle != NULL && file != NULL && atomic_load(&attach_status) == NOT_YET)
        attach(handle);
    return handle;
}
