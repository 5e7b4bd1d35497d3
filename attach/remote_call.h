/* Calling a function inside one stopped thread of another process, as a
 * debugger's `call` does: save its registers, point them at the function
 * with the arguments, a stack below the thread's own and a return to address
 * 0, let it run until that return faults, read the result, put every
 * register back. The thread then goes on where it was (an interrupted
 * system call restarts). */
#ifndef PA_REMOTE_CALL_H
#define PA_REMOTE_CALL_H

#include "safepoint.h"

#include <stddef.h>
#include <stdint.h>

/* Where a call's stack goes, below the thread's stack pointer: the
 * caller's data (strings, buffers) at data_at, and the stack pointer at
 * the call. x86-64 skips the 128-byte red zone and puts the return address
 * 0 at sp (so that sp + 8 is 16-aligned at the entry, as after a call);
 * aarch64 returns through the link register (set to 0) and keeps sp
 * 16-aligned. Returns 0, or -1 if the stack pointer is too low. Pure. */
struct pa_frame {
    uint64_t data_at;
    uint64_t sp;
    int return_on_stack; /* x86-64: write 8 zero bytes at sp */
};
int pa_frame_for(enum pa_arch arch, uint64_t saved_sp, size_t data_len, struct pa_frame *f);

/* The architecture this program runs on (and, so, the targets it serves). */
enum pa_arch pa_native_arch(void);

/* A thread seized and stopped (pa_thread_stop), with its registers saved. */
struct pa_thread {
    int pid, tid;
    int mem_fd;         /* /proc/PID/mem, for reading and writing */
    long syscall_nr;    /* the system call it was stopped in, or -1 */
    uint64_t sp;        /* its stack pointer when stopped */
    uint64_t pc;        /* where it was stopped */
    unsigned char saved[512]; /* the architecture's register file */
};

/* Seizes thread tid of pid and stops it. Returns 0; -1 with errno when
 * ptrace refuses (EPERM: permissions, Yama); the thread is then untouched. */
int pa_thread_stop(struct pa_thread *t, int pid, int tid);

/* Where a call with len bytes of data puts them in the thread's stack
 * (pa_frame_for), so that arguments can point there; 0 if it cannot. */
uint64_t pa_thread_data_at(const struct pa_thread *t, size_t len);

/* Calls fn(args...) (at most 4 integer arguments) in the stopped thread,
 * after writing data[0, len) at pa_thread_data_at(t, len). Returns 0 with
 * the function's return value in *result; -1 if the thread died or stopped
 * anywhere but the return (it is then left as it is). The program's own
 * signals that arrive meanwhile are delivered to it. */
int pa_thread_call(struct pa_thread *t, uint64_t fn, const uint64_t *args, int nargs,
                   const void *data, size_t len, uint64_t *result);

/* Reads len bytes at addr of the thread's process. 0 or -1. */
int pa_thread_read(const struct pa_thread *t, uint64_t addr, void *buf, size_t len);

/* Puts the saved registers back and lets the thread go. */
void pa_thread_release(struct pa_thread *t);

#endif
