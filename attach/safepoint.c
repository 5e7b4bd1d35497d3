/* Where a stopped thread may be borrowed (safepoint.h). */
#include "safepoint.h"

#include <stddef.h>
#include <string.h>

struct waiting_call {
    const char *name;
    long x86_64, aarch64; /* -1: none on that architecture */
};

/* The blocking waits a Python service's threads sit in: sleeping,
 * selecting, accepting, reading, waiting for children or signals. */
static const struct waiting_call waits[] = {
    {"read", 0, 63},
    {"readv", 19, 65},
    {"poll", 7, -1},
    {"ppoll", 271, 73},
    {"select", 23, -1},
    {"pselect6", 270, 72},
    {"pause", 34, -1},
    {"nanosleep", 35, 101},
    {"clock_nanosleep", 230, 115},
    {"accept", 43, 202},
    {"accept4", 288, 242},
    {"recvfrom", 45, 207},
    {"recvmsg", 47, 212},
    {"recvmmsg", 299, 243},
    {"wait4", 61, 260},
    {"waitid", 247, 95},
    {"rt_sigtimedwait", 128, 137},
    {"rt_sigsuspend", 130, 133},
    {"epoll_wait", 232, -1},
    {"epoll_pwait", 281, 22},
    {"epoll_pwait2", 441, 441},
};

const char *pa_syscall_name(enum pa_arch arch, long nr)
{
    if (nr < 0)
        return NULL;
    for (size_t i = 0; i < sizeof waits / sizeof *waits; i++)
        if ((arch == PA_ARCH_X86_64 ? waits[i].x86_64 : waits[i].aarch64) == nr)
            return waits[i].name;
    return NULL;
}

int pa_safe_syscall(enum pa_arch arch, long nr) { return pa_syscall_name(arch, nr) != NULL; }

int pa_interpreter_code(const char *path, const char *exe)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    return (exe != NULL && strcmp(path, exe) == 0) || strncmp(base, "libpython3", 10) == 0 ||
           strncmp(base, "python3", 7) == 0; /* run through a loader: not the exe */
}
