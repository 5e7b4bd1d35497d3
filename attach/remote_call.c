/* Calling a function inside a stopped thread (remote_call.h). */
#include "remote_call.h"

#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/uio.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#if defined(__aarch64__)
#include <asm/ptrace.h>
typedef struct user_pt_regs pa_regs;
#elif defined(__x86_64__)
typedef struct user_regs_struct pa_regs;
#else
#error "pyperf-attach: x86-64 and aarch64 only"
#endif

_Static_assert(sizeof(pa_regs) <= sizeof(((struct pa_thread *)0)->saved), "register file");

enum { RED_ZONE = 128, MARGIN = 256 };

int pa_frame_for(enum pa_arch arch, uint64_t saved_sp, size_t data_len, struct pa_frame *f)
{
    uint64_t below = RED_ZONE + MARGIN + (uint64_t)data_len + 32;
    if (saved_sp < below + 4096)
        return -1;
    f->data_at = (saved_sp - RED_ZONE - MARGIN - data_len) & ~(uint64_t)15;
    if (arch == PA_ARCH_X86_64) {
        f->sp = f->data_at - 8; /* the return address: entry sp + 8 is 16-aligned */
        f->return_on_stack = 1;
    } else {
        f->sp = f->data_at - 16;
        f->return_on_stack = 0;
    }
    return 0;
}

enum pa_arch pa_native_arch(void)
{
#if defined(__aarch64__)
    return PA_ARCH_AARCH64;
#else
    return PA_ARCH_X86_64;
#endif
}

static int get_regs(int tid, pa_regs *r)
{
    struct iovec io = {r, sizeof *r};
    return ptrace(PTRACE_GETREGSET, tid, (void *)NT_PRSTATUS, &io) == 0 ? 0 : -1;
}

static int set_regs(int tid, const pa_regs *r)
{
    struct iovec io = {(void *)r, sizeof *r};
    return ptrace(PTRACE_SETREGSET, tid, (void *)NT_PRSTATUS, &io) == 0 ? 0 : -1;
}

/* The system call a stopped thread is in, or -1; its stack pointer and pc. */
static void syscall_sp_pc(const pa_regs *r, long *nr, uint64_t *sp, uint64_t *pc)
{
#if defined(__aarch64__)
    *nr = -1; /* aarch64 keeps it in a separate regset (NT_ARM_SYSTEM_CALL) */
    *sp = r->sp;
    *pc = r->pc;
#else
    *nr = (long)r->orig_rax;
    *sp = r->rsp;
    *pc = r->rip;
#endif
}

int pa_thread_stop(struct pa_thread *t, int pid, int tid)
{
    memset(t, 0, sizeof *t);
    t->pid = pid;
    t->tid = tid;
    t->mem_fd = -1;
    if (ptrace(PTRACE_SEIZE, tid, NULL, NULL) != 0)
        return -1;
    int status, e;
    if (ptrace(PTRACE_INTERRUPT, tid, NULL, NULL) != 0 || waitpid(tid, &status, __WALL) != tid ||
        !WIFSTOPPED(status)) {
        e = errno;
        ptrace(PTRACE_DETACH, tid, NULL, NULL);
        return errno = e, -1;
    }
    pa_regs r;
    char mem[64];
    snprintf(mem, sizeof mem, "/proc/%d/mem", pid);
    if (get_regs(tid, &r) != 0 || (t->mem_fd = open(mem, O_RDWR | O_CLOEXEC)) < 0) {
        e = errno;
        ptrace(PTRACE_DETACH, tid, NULL, NULL);
        return errno = e, -1;
    }
    memcpy(t->saved, &r, sizeof r);
    syscall_sp_pc(&r, &t->syscall_nr, &t->sp, &t->pc);
#if defined(__aarch64__)
    int nr = -1;
    struct iovec io = {&nr, sizeof nr};
    if (ptrace(PTRACE_GETREGSET, tid, (void *)NT_ARM_SYSTEM_CALL, &io) == 0)
        t->syscall_nr = nr;
#endif
    return 0;
}

int pa_thread_read(const struct pa_thread *t, uint64_t addr, void *buf, size_t len)
{
    return pread(t->mem_fd, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -1;
}

static int write_mem(const struct pa_thread *t, uint64_t addr, const void *buf, size_t len)
{
    return pwrite(t->mem_fd, buf, len, (off_t)addr) == (ssize_t)len ? 0 : -1;
}

/* Lets the thread run until it stops at the return to 0. Its own signals
 * are passed on; a fault anywhere else is the thread's own, not ours to
 * hide: it is left stopped there for the caller to release (and deliver). */
static int run_to_return(int tid, pa_regs *out)
{
    int deliver = 0;
    for (;;) {
        if (ptrace(PTRACE_CONT, tid, NULL, (void *)(long)deliver) != 0)
            return -1;
        int status;
        if (waitpid(tid, &status, __WALL) != tid || !WIFSTOPPED(status))
            return -1; /* exited or killed */
        int sig = WSTOPSIG(status);
        deliver = 0;
        if (status >> 16 == PTRACE_EVENT_STOP)
            continue; /* group stop or our interrupt: go on */
        if (sig == SIGSEGV || sig == SIGBUS) {
            if (get_regs(tid, out) != 0)
                return -1;
#if defined(__aarch64__)
            if (out->pc == 0)
                return 0;
#else
            if (out->rip == 0)
                return 0;
#endif
            return -1;
        }
        deliver = sig; /* the program's own signal: its handler runs on our frame */
    }
}

uint64_t pa_thread_data_at(const struct pa_thread *t, size_t len)
{
    struct pa_frame f;
    return pa_frame_for(pa_native_arch(), t->sp, len, &f) == 0 ? f.data_at : 0;
}

int pa_thread_call(struct pa_thread *t, uint64_t fn, const uint64_t *args, int nargs,
                   const void *data, size_t len, uint64_t *result)
{
    struct pa_frame f;
    if (nargs > 4 || pa_frame_for(pa_native_arch(), t->sp, len, &f) != 0)
        return errno = EINVAL, -1;
    static const uint64_t zero = 0;
    if ((len > 0 && write_mem(t, f.data_at, data, len) != 0) ||
        (f.return_on_stack && write_mem(t, f.sp, &zero, sizeof zero) != 0))
        return -1;
    pa_regs r;
    memcpy(&r, t->saved, sizeof r);
#if defined(__aarch64__)
    for (int i = 0; i < nargs; i++)
        r.regs[i] = args[i];
    r.regs[30] = 0; /* the link register: return to 0 */
    r.sp = f.sp;
    r.pc = fn;
    int no_syscall = -1; /* nothing to restart at our entry */
    struct iovec io = {&no_syscall, sizeof no_syscall};
    ptrace(PTRACE_SETREGSET, t->tid, (void *)NT_ARM_SYSTEM_CALL, &io);
#else
    uint64_t *slots[] = {(uint64_t *)&r.rdi, (uint64_t *)&r.rsi, (uint64_t *)&r.rdx,
                         (uint64_t *)&r.rcx};
    for (int i = 0; i < nargs; i++)
        *slots[i] = args[i];
    r.rsp = f.sp;
    r.rip = fn;
    r.rax = 0;
    r.orig_rax = (unsigned long long)-1; /* no system call to restart at our entry */
#endif
    if (set_regs(t->tid, &r) != 0)
        return -1;
    pa_regs done;
    if (run_to_return(t->tid, &done) != 0)
        return -1;
#if defined(__aarch64__)
    *result = done.regs[0];
#else
    *result = done.rax;
#endif
    return 0;
}

void pa_thread_release(struct pa_thread *t)
{
    if (t->mem_fd >= 0)
        close(t->mem_fd);
    pa_regs r;
    memcpy(&r, t->saved, sizeof r);
    set_regs(t->tid, &r); /* its interrupted system call restarts from these */
#if defined(__aarch64__)
    int nr = (int)t->syscall_nr;
    struct iovec io = {&nr, sizeof nr};
    ptrace(PTRACE_SETREGSET, t->tid, (void *)NT_ARM_SYSTEM_CALL, &io);
#endif
    ptrace(PTRACE_DETACH, t->tid, NULL, NULL);
}
