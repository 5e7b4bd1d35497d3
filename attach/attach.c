/* pyperf-attach: loads libpyperfinject into a running CPython process and
 * installs it there (pyperfinject_attach), or calls one of the loaded
 * library's functions (pyperfinject_disable, pyperfinject_enable).
 *
 *   pyperf-attach PID LIBRARY [SETTINGS]   load (unless loaded) and attach
 *   pyperf-attach --call PID FUNCTION      call FUNCTION() of the loaded library
 *
 * It borrows one thread that waits in a system call where loading is safe,
 * or runs the interpreter's own code (safepoint.h), calls dlopen and then the function in it (remote_call.h),
 * and gives the thread back as it was; the other threads run on. LIBRARY
 * must be a path valid in the target's mount namespace (pyperf-run takes
 * care of that). Prints one line: "RC<TAB>WHAT HAPPENED" (RC as
 * pyperfinject_attach returns it, or the function's), and exits 0; 2 on a
 * usage error; 1 when nothing could be done, with the reason, the process
 * untouched. */
#include "elfsym.h"
#include "procmaps.h"
#include "remote_call.h"

#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

enum { WHY_LEN = 512, WAIT_FOR_THREAD_MS = 5000, SECOND_CHOICE_AFTER_MS = 250 };
/* PYPERFINJECT_ATTACH_FROM_OUTSIDE and _WAITING_THREAD (pyperfinject.h). */
enum { ATTACH_FROM_OUTSIDE = 1, ATTACH_WAITING_THREAD = 2 };

/* The one line of a failure: "-1<TAB>REASON". Returns 1, the exit status. */
static int __attribute__((format(printf, 1, 2))) fail(const char *fmt, ...)
{
    va_list ap;
    va_start(ap, fmt);
    fputs("-1\t", stdout);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    va_end(ap);
    return 1;
}

/* The address of `symbol` in the library whose file name starts with
 * `prefix`, as mapped in pid (its file read through /proc/PID/root). */
static int remote_symbol(int pid, const char *maps, const char *prefix, const char *symbol,
                         uint64_t *addr)
{
    uint64_t base, value;
    char path[4096], in_root[4200];
    if (pa_maps_find(maps, prefix, &base, path, sizeof path) != 0)
        return -1;
    snprintf(in_root, sizeof in_root, "/proc/%d/root%s", pid, path);
    if (pa_elf_file_dynsym(in_root, symbol, &value) != 0)
        return -1;
    *addr = base + value;
    return 0;
}

/* Why ptrace refused, and what to do about it. */
static const char *refusal(int e)
{
    if (e == ESRCH)
        return "the process is gone";
    if (e != EPERM)
        return strerror(e);
    FILE *f = fopen("/proc/sys/kernel/yama/ptrace_scope", "r");
    int scope = -1;
    if (f != NULL) {
        if (fscanf(f, "%d", &scope) != 1)
            scope = -1;
        fclose(f);
    }
    if (geteuid() != 0 && scope == 1)
        return "kernel.yama.ptrace_scope is 1: only a parent or root may trace it (run as root, "
               "or sysctl kernel.yama.ptrace_scope=0)";
    if (scope == 2)
        return "kernel.yama.ptrace_scope is 2: only a process with CAP_SYS_PTRACE may trace it";
    if (scope == 3)
        return "kernel.yama.ptrace_scope is 3: tracing is off until the next boot";
    return "not permitted: the process belongs to another user, or it is not dumpable (run as "
           "root, or as its user)";
}

/* Whether a stopped thread may be borrowed: waiting in a safe system call,
 * or (second choice) running the interpreter's own code. */
static int may_borrow(const struct pa_thread *t, const char *maps, const char *exe, int second)
{
    char path[4096];
    if (pa_safe_syscall(pa_native_arch(), t->syscall_nr))
        return 1;
    return second && t->syscall_nr < 0 &&
           pa_maps_code_owner(maps, t->pc, path, sizeof path) == 0 &&
           pa_interpreter_code(path, exe);
}

/* Stops a thread of pid that may be borrowed (safepoint.h), waiting for one
 * up to WAIT_FOR_THREAD_MS: for the first SECOND_CHOICE_AFTER_MS only
 * threads that wait in a safe system call. 0, or -1 with *why. */
static int borrow_thread(int pid, const char *maps, struct pa_thread *t, const char **why)
{
    char dir[64], exe[4096] = "", link[64];
    snprintf(dir, sizeof dir, "/proc/%d/task", pid);
    snprintf(link, sizeof link, "/proc/%d/exe", pid);
    ssize_t n = readlink(link, exe, sizeof exe - 1);
    exe[n > 0 ? n : 0] = '\0';
    *why = "no thread of the process waits in a system call where loading a library is safe "
           "(sleep, select/poll/epoll, accept, read, wait), nor runs the interpreter's own "
           "code, within 5 s; try again";
    for (int waited = 0; waited < WAIT_FOR_THREAD_MS; waited += 20) {
        int second = waited >= SECOND_CHOICE_AFTER_MS;
        DIR *d = opendir(dir);
        if (d == NULL)
            return *why = "the process is gone", -1;
        for (struct dirent *e; (e = readdir(d)) != NULL;) {
            int tid = atoi(e->d_name);
            char path[128], text[64] = "";
            snprintf(path, sizeof path, "%s/%d/syscall", dir, tid);
            FILE *f = tid > 0 ? fopen(path, "r") : NULL;
            if (f == NULL)
                continue;
            long nr = -1;
            if (fgets(text, sizeof text, f) == NULL || sscanf(text, "%ld", &nr) != 1)
                nr = -1; /* "running" */
            fclose(f);
            if (!pa_safe_syscall(pa_native_arch(), nr) && !(second && nr < 0))
                continue;
            if (pa_thread_stop(t, pid, tid) != 0) {
                int err = errno;
                closedir(d);
                return *why = refusal(err), -1;
            }
            if (may_borrow(t, maps, exe, second)) {
                closedir(d);
                return 0;
            }
            pa_thread_release(t); /* it moved on meanwhile */
        }
        closedir(d);
        struct timespec pause = {0, 20 * 1000 * 1000};
        nanosleep(&pause, NULL);
    }
    return -1;
}

/* dlopen in the target: libc's (glibc 2.34+), libdl's, or glibc's own
 * __libc_dlopen_mode (which needs __RTLD_DLOPEN). */
static int find_dlopen(int pid, const char *maps, uint64_t *fn, uint64_t *mode)
{
    *mode = RTLD_NOW;
    if (remote_symbol(pid, maps, "libc", "dlopen", fn) == 0 ||
        remote_symbol(pid, maps, "libdl", "dlopen", fn) == 0)
        return 0;
    *mode = RTLD_NOW | 0x80000000u;
    return remote_symbol(pid, maps, "libc", "__libc_dlopen_mode", fn);
}

/* Loads library in the borrowed thread unless the process has it. */
static int load(struct pa_thread *t, char **maps, const char *library, const char **why)
{
    uint64_t probe;
    if (remote_symbol(t->pid, *maps, "libpyperfinject", "pyperfinject_version", &probe) == 0)
        return 0; /* preloaded, or attached before */
    uint64_t fn, mode, handle;
    if (find_dlopen(t->pid, *maps, &fn, &mode) != 0)
        return *why = "no dlopen in the process (a static binary?)", -1;
    size_t len = strlen(library) + 1;
    uint64_t args[2] = {pa_thread_data_at(t, len), mode};
    if (pa_thread_call(t, fn, args, 2, library, len, &handle) != 0)
        return *why = "the borrowed thread did not return from dlopen", -1;
    if (handle == 0)
        return *why = "dlopen failed in the process (is the library's path valid in its mount "
                      "namespace, and readable by its user?)", -1;
    free(*maps);
    *maps = pa_maps_read(t->pid);
    return *maps ? 0 : (*why = "the process is gone", -1);
}

int main(int argc, char **argv)
{
    int calling = argc == 4 && strcmp(argv[1], "--call") == 0;
    if (!calling && (argc < 3 || argc > 4 || argv[1][0] == '-')) {
        fprintf(stderr, "usage: pyperf-attach PID LIBRARY [SETTINGS]\n"
                        "       pyperf-attach --call PID FUNCTION\n");
        return 2;
    }
    int pid = atoi(argv[calling ? 2 : 1]);
    if (pid <= 0)
        return fail("not a process id: %s", argv[calling ? 2 : 1]);
    char *maps = pa_maps_read(pid);
    if (maps == NULL)
        return fail("cannot read /proc/%s/maps: %s", argv[calling ? 2 : 1], strerror(errno));
    uint64_t fn;
    if (calling && remote_symbol(pid, maps, "libpyperfinject", argv[3], &fn) != 0)
        return fail("process %s has no libpyperfinject with %s", argv[2], argv[3]);
    struct pa_thread t;
    const char *why;
    if (borrow_thread(pid, maps, &t, &why) != 0)
        return fail("%s", why);
    int status = 0;
    uint64_t rc = 0;
    char out[WHY_LEN] = "";
    if (calling) {
        if (pa_thread_call(&t, fn, NULL, 0, NULL, 0, &rc) != 0)
            status = fail("the borrowed thread did not return from %s", argv[3]);
    } else if (load(&t, &maps, argv[2], &why) != 0) {
        status = fail("%s", why);
    } else if (remote_symbol(pid, maps, "libpyperfinject", "pyperfinject_attach", &fn) != 0) {
        status = fail("the library in the process has no pyperfinject_attach (an older "
                      "version is loaded)");
    } else {
        const char *settings = argc == 4 ? argv[3] : "";
        size_t slen = strlen(settings) + 1;
        char data[8192 + WHY_LEN];
        if (slen > 8192) {
            status = fail("settings too long");
        } else {
            memcpy(data, settings, slen);
            memset(data + slen, 0, WHY_LEN);
            uint64_t at = pa_thread_data_at(&t, slen + WHY_LEN);
            /* A thread waiting in a system call is outside the interpreter
             * and may take the GIL to install at once; one stopped in the
             * interpreter's code hands the install to the main thread. */
            uint64_t flags = ATTACH_FROM_OUTSIDE;
            if (pa_safe_syscall(pa_native_arch(), t.syscall_nr))
                flags |= ATTACH_WAITING_THREAD;
            uint64_t args[4] = {at, flags, at + slen, WHY_LEN};
            if (pa_thread_call(&t, fn, args, 4, data, slen + WHY_LEN, &rc) != 0 ||
                pa_thread_read(&t, at + slen, out, WHY_LEN) != 0)
                status = fail("the borrowed thread did not return from pyperfinject_attach");
            out[WHY_LEN - 1] = '\0';
        }
    }
    const char *name = pa_syscall_name(pa_native_arch(), t.syscall_nr);
    pa_thread_release(&t);
    free(maps);
    if (status == 0)
        printf("%d\t%s (thread %d, borrowed from %s)\n", (int)rc, out[0] ? out : "done", t.tid,
               name ? name : "?");
    return status;
}
