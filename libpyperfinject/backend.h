/* Output backends: where new trampolines are announced.
 *
 * The evaluator doesn't know whether it writes a perf map, a jitdump or both:
 * each backend is a small table of operations over its own state. A new
 * output format is a new file with a new table, not new branches. */
#ifndef PI_BACKEND_H
#define PI_BACKEND_H

#include "outfile.h"

#include <stddef.h>
#include <stdint.h>

/* Everything known about one new trampoline. */
struct pi_tramp_info {
    uintptr_t addr;
    uint32_t code_size;
    uint64_t code_index;     /* 1, 2, ... in creation order */
    const char *symbol;      /* sanitised "py::qualname:filename" */
    size_t symbol_len;
    const char *filename;    /* sanitised source file name */
    uint32_t firstlineno;
    const uint8_t *unwind;   /* eh_frame + eh_frame_hdr, as laid out after the code */
    uint32_t unwind_size, unwind_hdr_size, unwind_mapped_size;
};

struct pi_backend_ops {
    const char *name;
    /* Creates this process's file in dir. 0, or -1 with a reason in err. */
    int (*open)(void *self, const char *dir, long pid, char *err, size_t errlen);
    /* Makes one trampoline known; on disk when it returns. 0 or -1 (errno). */
    int (*write)(void *self, const struct pi_tramp_info *t);
    /* In a forked child: start this process's own file; when `inherit`, it
     * first receives everything the parent had written at the fork. */
    int (*after_fork_child)(void *self, const char *dir, long pid, int inherit, char *err,
                            size_t errlen);
    /* At exit: final records (optional; must leave the descriptor open). */
    void (*close)(void *self);
};

struct pi_backend {
    const struct pi_backend_ops *ops;
    void *self;
    int failed; /* stopped after an error; reported once */
};

extern const struct pi_backend_ops pi_perfmap_ops;
extern const struct pi_backend_ops pi_jitdump_ops;

/* State of the perf-map backend (public so the owner can embed it). */
struct pi_perfmap {
    int fd;
    struct pi_file_id id; /* what fd must still be */
    uint64_t size; /* bytes written: what a forked child inherits */
    char path[4096];
};

/* State of the jitdump backend. */
struct pi_jitdump {
    int fd;
    struct pi_file_id id; /* what fd must still be */
    uint64_t size;     /* bytes written: what a forked child inherits */
    uint32_t pid;      /* written into CODE_LOAD records */
    uint32_t elf_mach; /* EM_X86_64 / EM_AARCH64 */
    int closed;        /* JIT_CODE_CLOSE written */
    void *marker;      /* the PROT_EXEC mapping perf looks for */
    char path[4096];
};

#endif
