/* A C function for Python to call through ctypes at depth foo -> bar -> baz:
 * it unwinds its own stack in-process and returns the instruction pointers,
 * so the test can check that the unwinder walked through the trampolines.
 *
 *   probe_libunwind: libunwind's local unwinder (unw_step)
 *   probe_backtrace: glibc backtrace(), i.e. libgcc's unwinder */
#define UNW_LOCAL_ONLY
#include <execinfo.h>
#include <libunwind.h>
#include <stdint.h>

int probe_libunwind(uintptr_t *ips, int max)
{
    unw_context_t context;
    unw_cursor_t cursor;
    int n = 0;
    if (unw_getcontext(&context) != 0 || unw_init_local(&cursor, &context) != 0)
        return -1;
    do {
        unw_word_t ip;
        if (unw_get_reg(&cursor, UNW_REG_IP, &ip) != 0)
            break;
        ips[n++] = (uintptr_t)ip;
    } while (n < max && unw_step(&cursor) > 0);
    return n;
}

int probe_backtrace(uintptr_t *ips, int max)
{
    return backtrace((void **)ips, max);
}
