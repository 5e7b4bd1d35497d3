/* attach/: pyperf-attach's parts. Symbols of ELF files and mapped
 * libraries, which threads may be borrowed, the call frame on both
 * architectures, and a real call made inside a sleeping child process
 * (skipped where ptrace is not permitted). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <dlfcn.h>
#include <errno.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <cmocka.h>

#include "elfsym.h"
#include "procmaps.h"
#include "remote_call.h"
#include "safepoint.h"

static void test_maps_find(void **state)
{
    (void)state;
    const char *maps =
        "55d0c0000000-55d0c0001000 r--p 00000000 fe:01 100 /usr/bin/python3.11\n"
        "7f0000000000-7f0000028000 r--p 00000000 fe:01 200 /usr/lib/x86_64-linux-gnu/libcrypt.so.1\n"
        "7f1000000000-7f1000028000 r--p 00001000 fe:01 300 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7f1000100000-7f1000128000 r--p 00000000 fe:01 300 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7f2000000000-7f2000001000 rw-p 00000000 00:00 0 \n"
        "7f3000000000-7f3000010000 r-xp 00000000 fe:01 400 /opt/lib/libpyperfinject.so.0.1.0\n";
    uint64_t base = 0;
    char path[256];
    assert_int_equal(pa_maps_find(maps, "libc", &base, path, sizeof path), 0);
    assert_int_equal(base, 0x7f1000100000u); /* the mapping at offset 0, not libcrypt */
    assert_string_equal(path, "/usr/lib/x86_64-linux-gnu/libc.so.6");
    assert_int_equal(pa_maps_find(maps, "libpyperfinject", &base, path, sizeof path), 0);
    assert_int_equal(base, 0x7f3000000000u);
    assert_int_equal(pa_maps_find(maps, "libdl", &base, path, sizeof path), -1);
    assert_int_equal(pa_maps_find(maps, "libc", &base, path, 8), -1); /* path does not fit */
    assert_int_equal(pa_maps_find("", "libc", &base, path, sizeof path), -1);
}

/* This process's libc: the file's dlopen, at the mapped base, is the one
 * the dynamic linker gives. */
static void test_code_owner(void **state)
{
    (void)state;
    const char *maps =
        "400000-401000 r--p 00000000 fe:01 100 /usr/bin/python3.11\n"
        "401000-500000 r-xp 00001000 fe:01 100 /usr/bin/python3.11\n"
        "7f0000000000-7f0000100000 r-xp 00028000 fe:01 300 /usr/lib/x86_64-linux-gnu/libc.so.6\n"
        "7f2000000000-7f2000001000 rwxp 00000000 00:00 0 \n";
    char path[256];
    assert_int_equal(pa_maps_code_owner(maps, 0x401234, path, sizeof path), 0);
    assert_string_equal(path, "/usr/bin/python3.11");
    assert_true(pa_interpreter_code(path, "/usr/bin/python3.11"));
    assert_int_equal(pa_maps_code_owner(maps, 0x7f0000000010u, path, sizeof path), 0);
    assert_false(pa_interpreter_code(path, "/usr/bin/python3.11")); /* libc: never */
    assert_int_equal(pa_maps_code_owner(maps, 0x400010, path, sizeof path), -1); /* not code */
    assert_int_equal(pa_maps_code_owner(maps, 0x7f2000000010u, path, sizeof path), -1); /* anon */
    assert_int_equal(pa_maps_code_owner(maps, 0x10, path, sizeof path), -1);
    assert_true(pa_interpreter_code("/opt/py/lib/libpython3.12.so.1.0", "/opt/py/bin/python3"));
    /* Run through a loader: the exe is ld.so, the code python3.14's. */
    assert_true(pa_interpreter_code("/cache/usr/bin/python3.14", "/cache/lib64/ld-linux-x86-64.so.2"));
    assert_false(pa_interpreter_code("/usr/lib/python3/dist-packages/_cffi.so", "/usr/bin/python3"));
}

static void test_symbol_of_mapped_libc(void **state)
{
    (void)state;
    char *maps = pa_maps_read(getpid());
    assert_non_null(maps);
    uint64_t base, value;
    char path[4096];
    assert_int_equal(pa_maps_find(maps, "libc", &base, path, sizeof path), 0);
    free(maps);
    assert_int_equal(pa_elf_file_dynsym(path, "getpid", &value), 0);
    assert_int_equal(base + value, (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "getpid"));
    assert_int_equal(pa_elf_file_dynsym(path, "no_such_symbol_here", &value), -1);
    assert_int_equal(pa_elf_file_dynsym("/proc/self/status", "getpid", &value), -1);
    static const uint8_t not_elf[64] = {0x7f, 'E', 'L', 'F', 1 /* 32-bit */};
    assert_int_equal(pa_elf_dynsym(not_elf, sizeof not_elf, "getpid", &value), -1);
    assert_int_equal(pa_elf_dynsym(not_elf, 3, "getpid", &value), -1);
}

static void test_safe_syscalls(void **state)
{
    (void)state;
    assert_true(pa_safe_syscall(PA_ARCH_X86_64, 230));  /* clock_nanosleep */
    assert_true(pa_safe_syscall(PA_ARCH_X86_64, 232));  /* epoll_wait */
    assert_true(pa_safe_syscall(PA_ARCH_AARCH64, 115)); /* clock_nanosleep */
    assert_string_equal(pa_syscall_name(PA_ARCH_AARCH64, 22), "epoll_pwait");
    /* malloc's and the lock's own: never. */
    assert_false(pa_safe_syscall(PA_ARCH_X86_64, 202)); /* futex */
    assert_false(pa_safe_syscall(PA_ARCH_X86_64, 9));   /* mmap */
    assert_false(pa_safe_syscall(PA_ARCH_X86_64, 12));  /* brk */
    assert_false(pa_safe_syscall(PA_ARCH_AARCH64, 98)); /* futex */
    assert_false(pa_safe_syscall(PA_ARCH_AARCH64, 222)); /* mmap */
    assert_false(pa_safe_syscall(PA_ARCH_X86_64, -1));   /* running */
}

static void test_frames(void **state)
{
    (void)state;
    struct pa_frame f;
    for (uint64_t sp = 0x7ffd00001000u; sp < 0x7ffd00001010u; sp++) {
        for (size_t len = 0; len < 40; len += 13) {
            assert_int_equal(pa_frame_for(PA_ARCH_X86_64, sp, len, &f), 0);
            assert_true(f.data_at + len <= sp - 128); /* the red zone stays the thread's */
            assert_int_equal(f.data_at % 16, 0);
            assert_int_equal((f.sp + 8) % 16, 0); /* as after a call instruction */
            assert_true(f.sp + 8 <= f.data_at);
            assert_true(f.return_on_stack);
            assert_int_equal(pa_frame_for(PA_ARCH_AARCH64, sp, len, &f), 0);
            assert_int_equal(f.sp % 16, 0);
            assert_true(f.sp < f.data_at && f.data_at + len <= sp);
            assert_false(f.return_on_stack);
        }
    }
    assert_int_equal(pa_frame_for(PA_ARCH_X86_64, 1024, 16, &f), -1);
}

static size_t local_strlen(const char *s) { return strlen(s); }

/* A child asleep in nanosleep: strlen called inside it, on data written
 * into its stack, returns the length; the child then wakes and exits as it
 * would have. */
static void test_call_inside_a_sleeping_child(void **state)
{
    (void)state;
    pid_t child = fork();
    if (child == 0) {
        struct timespec t = {1, 0};
        while (nanosleep(&t, &t) != 0 && errno == EINTR)
            ; /* the whole second, interrupted or not */
        _exit(local_strlen("xyz") == 3 ? 42 : 1);
    }
    assert_true(child > 0);
    struct timespec settle = {0, 100 * 1000 * 1000};
    nanosleep(&settle, NULL);
    struct pa_thread t;
    if (pa_thread_stop(&t, child, child) != 0) {
        kill(child, SIGKILL);
        waitpid(child, NULL, 0);
        skip(); /* ptrace not permitted here */
    }
    assert_true(pa_safe_syscall(pa_native_arch(), t.syscall_nr)); /* (clock_)nanosleep */
    const char text[] = "borrowed thread";
    uint64_t args[1] = {pa_thread_data_at(&t, sizeof text)};
    uint64_t len = 0;
    /* The same libc at the same address in the forked child. */
    uint64_t fn = (uint64_t)(uintptr_t)dlsym(RTLD_DEFAULT, "strlen");
    assert_int_equal(pa_thread_call(&t, fn, args, 1, text, sizeof text, &len), 0);
    assert_int_equal(len, strlen(text));
    char back[sizeof text];
    assert_int_equal(pa_thread_read(&t, args[0], back, sizeof back), 0);
    assert_string_equal(back, text);
    pa_thread_release(&t);
    int status = 0;
    assert_int_equal(waitpid(child, &status, 0), child);
    assert_true(WIFEXITED(status));
    assert_int_equal(WEXITSTATUS(status), 42);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_maps_find),
        cmocka_unit_test(test_code_owner),
        cmocka_unit_test(test_symbol_of_mapped_libc),
        cmocka_unit_test(test_safe_syscalls),
        cmocka_unit_test(test_frames),
        cmocka_unit_test(test_call_inside_a_sleeping_child),
    };
    return cmocka_run_group_tests_name("attach", tests, NULL, NULL);
}
