/* Output backends: where new trampolines are announced.
 *
 * The evaluator doesn't know whether it writes a perf map, a jitdump or both:
 * each backend is a small table of operations over its own state. A new
 * output format is a new file with a new table, not new branches. */
#ifndef PI_BACKEND_H
#define PI_BACKEND_H

#include "mmaplog.h"
#include "outfile.h"

#include <stddef.h>
#include <stdint.h>

/* What a region of code is. */
enum pi_region_kind {
    PI_REGION_TRAMPOLINE, /* a copy of ours, in an arena */
    PI_REGION_CPYTHON_JIT, /* machine code of CPython's JIT (cpython_jit.c):
                              debuggers have it from CPython already */
};

/* Everything known about one new trampoline, or one JIT code region. */
struct pi_tramp_info {
    enum pi_region_kind kind;
    uintptr_t addr;
    uintptr_t arena;         /* the slots of the arena it is in */
    uint32_t code_size;
    uint64_t code_index;     /* 1, 2, ... in creation order */
    const char *symbol;      /* sanitised "py::qualname:filename" */
    size_t symbol_len;
    const char *filename;    /* sanitised source file name */
    uint32_t firstlineno;
    const uint8_t *unwind;   /* eh_frame + eh_frame_hdr, as laid out after the code */
    uint32_t unwind_size, unwind_hdr_size, unwind_mapped_size;
    /* The perf map cannot tell code that came and went at one address from
     * code that is there at once: for JIT regions it gets a name true for
     * everything that was there (map_symbol, when not NULL), or no line
     * when it has one already (map_skip). */
    const char *map_symbol;
    size_t map_symbol_len;
    uintptr_t map_addr; /* with map_symbol: the line's range */
    uint32_t map_size;
    int map_skip;
    /* JIT code: when it appeared (CLOCK_MONOTONIC; the jitdump keeps its
     * records in time order, so a later one may say a little later), and
     * whether CPython gave its memory back (the dump then records zeros). */
    uint64_t appeared_ns;
    int code_gone;
};

struct pi_backend_ops {
    const char *name;
    /* Creates this process's file in dir. 0, or -1 with a reason in err. */
    int (*open)(void *self, const char *dir, long pid, char *err, size_t errlen);
    /* Makes one trampoline known; on disk when it returns. 0 or -1 (errno). */
    int (*write)(void *self, const struct pi_tramp_info *t);
    /* In a forked child, from the fork handler: async-signal-safe, memory
     * only. The open file is the parent's from now on; this process has
     * none until start_child. `inherit`: remember what the parent had
     * written, for `inherit` below (optional). */
    void (*forked)(void *self, int inherit);
    /* In a forked child at its first need: creates this process's own
     * file. 0, or -1 with a reason in err. */
    int (*start_child)(void *self, const char *dir, long pid, char *err, size_t errlen);
    /* Optional. Bytes written by ancestors up to their forks and not yet
     * in this process's file. */
    uint64_t (*inheritable)(const void *self);
    /* Optional. Appends them (after start_child) and forgets them. 0; 1
     * when some could not be copied (reason in err; the file stays good);
     * -1 when the file must not be written any more (reason in err). */
    int (*inherit)(void *self, const char *dir, char *err, size_t errlen);
    /* At exit: final records (optional; must leave the descriptor open). */
    void (*close)(void *self);
    /* Makes what was written durable (fdatasync). 0, or -1 (errno). */
    int (*flush)(void *self);
    /* The path of this process's file, or NULL while it has none. */
    const char *(*describe)(const void *self);
    /* The sys.activate_stack_trampoline backend of CPython's that writes
     * this backend's file when the directory is /tmp, or NULL: this one
     * stops writing when CPython's takes over (coexist.c). */
    const char *cpython_rival;
};

struct pi_backend {
    const struct pi_backend_ops *ops;
    void *self;
    int failed;      /* stopped after an error; reported once */
    int unstarted;   /* a forked child without a file of its own yet */
};

extern const struct pi_backend_ops pi_perfmap_ops;
extern const struct pi_backend_ops pi_jitdump_ops;
extern const struct pi_backend_ops pi_gdbjit_ops;

/* A forked child's perf map inherits, in bulk and only when the child
 * keeps running, the lines its ancestors had written up to each fork: the
 * first `len` bytes of their files, oldest first. A grandchild forked before
 * its parent copied needs both. Beyond PI_MAP_SOURCES generations of young
 * forks the youngest ancestors' lines are left out. */
enum { PI_MAP_SOURCES = 8 };
struct pi_map_source {
    int fd;               /* the ancestor's descriptor, inherited by fork */
    struct pi_file_id id; /* to check it, or find the file again by path */
    long pid;
    uint64_t len;
};

/* State of the perf-map backend (public so the owner can embed it). */
struct pi_perfmap {
    int fd;               /* -1 in a forked child until it has its own file */
    struct pi_file_id id; /* what fd must still be */
    uint64_t size;        /* bytes written: what a forked child inherits */
    long pid;
    struct pi_map_source sources[PI_MAP_SOURCES];
    unsigned nsources;
    int parent_fd; /* a forked child: the parent's descriptor when not a source */
    struct pi_file_id parent_id;
    struct pi_mmaplog log; /* the lines' writer, unless write(2) serves */
    char path[4096];
};

/* State of the jitdump backend. */
struct pi_jitdump {
    int fd;            /* -1 in a forked child until it has its own file */
    struct pi_file_id id; /* what fd must still be */
    uint64_t size;     /* bytes written */
    uint64_t last_ns;  /* the newest record's time: a JIT record is never older */
    uint32_t pid;      /* written into CODE_LOAD records */
    uint32_t elf_mach; /* EM_X86_64 / EM_AARCH64 */
    int closed;        /* JIT_CODE_CLOSE written */
    void *marker;      /* the PROT_EXEC mapping perf looks for */
    struct pi_mmaplog log; /* the records' writer, unless write(2) serves */
    uint32_t forks;    /* forks this state went through (thread ids change) */
    int parent_fd;     /* a forked child: the parent's descriptor, to close */
    struct pi_file_id parent_id;
    char path[4096];
};

/* State of the GDB JIT interface backend (gdbjit.c): one symbol file per
 * arena, linked into the library's own descriptor. */
struct pi_gdbjit_file;
struct pi_gdbjit {
    uint32_t batch;        /* set by the owner before open: announce after this
                              many new symbols (PYPERFINJECT_GDB_BATCH) */
    struct pi_gdbjit_file *current; /* the arena new trampolines go to */
    uint32_t unannounced;  /* symbols added since a debugger last read it */
    uint64_t announced_ns; /* when it last did (CLOCK_MONOTONIC); 200 ms later
                              counts as a batch too */
    int watched;           /* a debugger's breakpoint was seen at the last look */
    uint64_t announcements; /* calls a debugger was stopped for (bench, tests) */
};

#endif
