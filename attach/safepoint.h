/* Where a stopped thread may be borrowed to load a library.
 *
 * dlopen takes the loader's lock and allocates. A thread interrupted while
 * it holds either lock (inside malloc, inside ld.so) would deadlock on its
 * own lock. A thread blocked in a waiting system call holds neither: no
 * allocator or loader code sleeps, polls or accepts while holding a lock.
 * mmap, brk, madvise and futex are left out: malloc makes the first ones
 * under its arena lock, and a futex wait may be for that lock. */
#ifndef PA_SAFEPOINT_H
#define PA_SAFEPOINT_H

enum pa_arch { PA_ARCH_X86_64, PA_ARCH_AARCH64 };

/* A thread that runs the interpreter's own code (a Python loop that never
 * waits) holds no C library lock there either: stopped with its pc inside
 * the python executable or libpython (not libc, ld.so or an extension), it
 * may be borrowed too, as the second choice. path: the file mapped at the
 * pc; exe: the process's executable. 1 if so. Pure. */
int pa_interpreter_code(const char *path, const char *exe);

/* 1 if a thread stopped in system call `nr` of `arch` may be borrowed. Pure. */
int pa_safe_syscall(enum pa_arch arch, long nr);

/* The name of such a system call, for messages ("clock_nanosleep"), or NULL. */
const char *pa_syscall_name(enum pa_arch arch, long nr);

#endif
