/* The GDB JIT interface backend: gdb and lldb name the trampolines.
 *
 * A debugger that attaches, or opens a core file, reads a list of in-memory
 * symbol files from __jit_debug_descriptor, and puts a breakpoint on
 * __jit_debug_register_code, which a JIT calls after changing the list.
 * The library has a descriptor of its own. Its two symbols carry a hidden
 * version of their own (PYPERFINJECT_GDB_JIT_1, see exports.map), which no
 * unversioned reference binds to: CPython 3.15's JIT, LLVM or V8 in the same
 * process keep their descriptors and entries, and a debugger, which looks
 * the names up in every object, reads every list.
 *
 * One symbol file per arena (gdbjit_elf.h) grows in place with each new
 * trampoline, so what a debugger reads when it attaches, and what a core
 * holds, is always complete. A debugger that is already attached copied the
 * file when it last read it, and each announcement stops the process for
 * it twice (unregister, register) while it re-reads the file; so the
 * announcements are batched, and made only while its breakpoint is there:
 * with no debugger, a new trampoline costs an append and nothing more. */
#include "gdbjit.h"

#include "backend.h"
#include "gdbjit_elf.h"
#include "arena.h"
#include "names.h"
#include "slot.h"

#include <errno.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

/* The interface as gdb documents it ("JIT Interface", version 1). */
struct jit_code_entry {
    struct jit_code_entry *next, *prev;
    const char *symfile_addr;
    uint64_t symfile_size;
};

struct jit_descriptor {
    uint32_t version;
    uint32_t action_flag;
    struct jit_code_entry *relevant_entry;
    struct jit_code_entry *first_entry;
};

enum { JIT_NOACTION = 0, JIT_REGISTER = 1, JIT_UNREGISTER = 2 };

/* Exported only under the versioned names below (".symver ..., remove"). */
extern volatile struct jit_descriptor pi_gdb_descriptor;
void pi_gdb_register_code(void);

__attribute__((visibility("default"), used)) volatile struct jit_descriptor
    pi_gdb_descriptor = {1, JIT_NOACTION, NULL, NULL};

/* Where the debugger's breakpoint goes: it must stay a call. */
__attribute__((visibility("default"), noinline, used)) void pi_gdb_register_code(void)
{
    __asm__ volatile("" ::: "memory");
}

__asm__(".symver pi_gdb_descriptor, __jit_debug_descriptor@PYPERFINJECT_GDB_JIT_1, remove");
__asm__(".symver pi_gdb_register_code, __jit_debug_register_code@PYPERFINJECT_GDB_JIT_1, remove");

/* Announcing after an interval too: a debugger that is attached learns a
 * program's functions at most this late once it creates them slowly. */
#define INTERVAL_NS (200u * 1000u * 1000u)

/* A debugger's name for a trampoline: the perf map's, then ", line N" as
 * in a Python traceback. The comma and space are not only for reading: gdb
 * takes a lowercase name with a ".py" end or a "__" for an Ada one and
 * shows "x[py]" and ".init." instead, unless it has a space or a capital. */
#define NAME_SUFFIX_MAX sizeof(", line 4294967295")

/* Writes ", line N" (no NUL); returns its length. By hand: printf's
 * machinery was most of a new function's cost here. */
static size_t line_suffix(char *out, uint32_t line)
{
    static const char text[] = ", line ";
    char digits[10];
    size_t n = 0, len = sizeof text - 1;
    do
        digits[n++] = (char)('0' + line % 10);
    while ((line /= 10) != 0);
    memcpy(out, text, len);
    while (n > 0)
        out[len++] = digits[--n];
    return len;
}

/* One arena's symbol file; the ELF follows in the same mapping. */
struct pi_gdbjit_file {
    struct jit_code_entry entry;
    uintptr_t arena;
    int known; /* a debugger that is attached has read this entry */
    struct pi_gdbelf elf;
};

static size_t file_header(void)
{
    return (sizeof(struct pi_gdbjit_file) + 63u) & ~(size_t)63u;
}

static uint64_t now_ns(void)
{
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* A software breakpoint on the register function: int3 (after an endbr64
 * when the build has one) or an AArch64 BRK, as gdb and lldb insert. */
static int breakpoint_there(void)
{
    const volatile uint8_t *code = (const volatile uint8_t *)(uintptr_t)&pi_gdb_register_code;
#if defined(__x86_64__)
    static const uint8_t endbr64[4] = {0xf3, 0x0f, 0x1e, 0xfa};
    if (code[0] == 0xcc)
        return 1;
    for (int i = 0; i < 4; i++)
        if (code[i] != endbr64[i])
            return 0;
    return code[4] == 0xcc;
#elif defined(__aarch64__)
    uint32_t insn = (uint32_t)code[0] | (uint32_t)code[1] << 8 | (uint32_t)code[2] << 16 |
                    (uint32_t)code[3] << 24;
    return (insn & 0xffe0001fu) == 0xd4200000u; /* BRK #imm */
#else
    (void)code;
    return 0;
#endif
}

/* Whether a tracer is attached now. A breakpoint left behind by a debugger
 * that was killed (or by a parent's, in a forked child) traps with nobody
 * to catch it: then the function must not be called. */
static int traced(void)
{
    char buf[1024];
    int fd = open("/proc/self/status", O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return 0;
    ssize_t n = read(fd, buf, sizeof buf - 1);
    close(fd);
    if (n <= 0)
        return 0;
    buf[n] = '\0';
    const char *p = strstr(buf, "TracerPid:");
    if (p == NULL)
        return 0;
    p += strlen("TracerPid:");
    while (*p == ' ' || *p == '\t')
        p++;
    return *p >= '1' && *p <= '9';
}

/* A debugger is stopped at each call: tell it what changed. */
static void call_debugger(uint32_t action, struct jit_code_entry *entry)
{
    pi_gdb_descriptor.relevant_entry = entry;
    pi_gdb_descriptor.action_flag = action;
    pi_gdb_register_code();
    pi_gdb_descriptor.action_flag = JIT_NOACTION;
    pi_gdb_descriptor.relevant_entry = NULL;
}

/* The attached debugger re-reads f: it drops its copy first, if it has one. */
static void announce(struct pi_gdbjit *g, struct pi_gdbjit_file *f)
{
    if (!traced()) {
        g->watched = 0; /* a stale breakpoint: nobody is listening */
        return;
    }
    if (f->known)
        call_debugger(JIT_UNREGISTER, &f->entry);
    call_debugger(JIT_REGISTER, &f->entry);
    f->known = 1;
    g->unannounced = 0;
    g->announced_ns = now_ns();
    g->announcements++;
}

/* Follows debuggers coming and going. One that attached since the last look
 * read the whole list then; with none, nothing needs telling. */
static void look_for_debugger(struct pi_gdbjit *g)
{
    int watched = breakpoint_there();
    if (watched == g->watched)
        return;
    g->watched = watched;
    g->unannounced = 0;
    if (g->current)
        g->current->known = 1;
    if (watched)
        g->announced_ns = now_ns();
}

static struct pi_gdbjit_file *new_file(uintptr_t arena)
{
    struct pi_tramp_shape shape = pi_slot_template_shape();
    size_t reserve = pi_gdbelf_reserve(&shape, PI_ARENA_SLOTS, PI_SYMBOL_MAX + NAME_SUFFIX_MAX);
    if (reserve == 0)
        return errno = EINVAL, NULL;
    size_t len = file_header() + reserve;
    /* Pages are touched as symbols arrive; never unmapped, like arenas. */
    void *m = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE,
                   -1, 0);
    if (m == MAP_FAILED)
        return NULL;
    struct pi_gdbjit_file *f = m;
    f->arena = arena;
    uint8_t *elf = (uint8_t *)m + file_header();
    if (pi_gdbelf_init(&f->elf, elf, reserve, (volatile uint64_t *)&f->entry.symfile_size,
                       &shape, PI_ARENA_SLOTS, PI_SYMBOL_MAX + NAME_SUFFIX_MAX, arena,
                       PI_ARENA_BYTES) != 0)
        return errno = EINVAL, NULL;
    f->entry.symfile_addr = (const char *)elf;
    return f;
}

/* At the head of the list, in one store a stopped reader sees or not. */
static void link_file(struct pi_gdbjit_file *f)
{
    struct jit_code_entry *head = pi_gdb_descriptor.first_entry;
    f->entry.prev = NULL;
    f->entry.next = head;
    if (head)
        head->prev = &f->entry;
    __atomic_store_n(&pi_gdb_descriptor.first_entry, &f->entry, __ATOMIC_RELEASE);
}

static int gdbjit_open(void *self, const char *dir, long pid, char *err, size_t errlen)
{
    (void)dir, (void)pid, (void)err, (void)errlen;
    struct pi_gdbjit *g = self;
    *g = (struct pi_gdbjit){.batch = g->batch ? g->batch : 1};
    return 0;
}

static int gdbjit_write(void *self, const struct pi_tramp_info *t)
{
    struct pi_gdbjit *g = self;
    if (t->kind == PI_REGION_CPYTHON_JIT)
        return 0; /* CPython's own descriptor has it, for every debugger */
    look_for_debugger(g);
    int fresh = 0;
    if (g->current == NULL || g->current->arena != t->arena) {
        if (g->current && g->watched && g->unannounced)
            announce(g, g->current); /* the full arena, before the next one */
        struct pi_gdbjit_file *f = new_file(t->arena);
        if (f == NULL)
            return -1;
        f->known = !g->watched; /* a debugger attaching later reads it */
        link_file(f);
        g->current = f;
        fresh = 1;
    }
    char name[PI_SYMBOL_MAX + NAME_SUFFIX_MAX + 1];
    size_t len = t->symbol_len < PI_SYMBOL_MAX ? t->symbol_len : PI_SYMBOL_MAX;
    memcpy(name, t->symbol, len);
    len += line_suffix(name + len, t->firstlineno);
    if (pi_gdbelf_add(&g->current->elf, t->addr, t->code_size, name, len) != 0)
        return errno = ENOSPC, -1;
    if (!g->watched)
        return 0;
    g->unannounced++;
    if (fresh || g->unannounced >= g->batch || now_ns() - g->announced_ns >= INTERVAL_NS)
        announce(g, g->current);
    return 0;
}

/* The fork handler's copy: the parent's debugger is not this process's. */
static void gdbjit_forked(void *self, int inherit)
{
    (void)inherit; /* the files are memory: the child has them all */
    struct pi_gdbjit *g = self;
    g->watched = 0;
    g->unannounced = 0;
}

static int gdbjit_start_child(void *self, const char *dir, long pid, char *err, size_t errlen)
{
    (void)self, (void)dir, (void)pid, (void)err, (void)errlen;
    return 0; /* nothing to create: the next arena gets its own file */
}

/* pyperfinject_flush(): an attached debugger catches up now. */
static int gdbjit_flush(void *self)
{
    struct pi_gdbjit *g = self;
    look_for_debugger(g);
    if (g->watched && g->unannounced && g->current)
        announce(g, g->current);
    return 0;
}

static const char *gdbjit_describe(const void *self)
{
    (void)self;
    return NULL; /* no file: the start-up line names the files */
}

size_t pi_gdbjit_files(const uint8_t **addrs, uint64_t *sizes, size_t max)
{
    size_t n = 0;
    for (const struct jit_code_entry *e = pi_gdb_descriptor.first_entry; e; e = e->next, n++) {
        if (n < max) {
            addrs[n] = (const uint8_t *)e->symfile_addr;
            sizes[n] = e->symfile_size;
        }
    }
    return n;
}

const struct pi_backend_ops pi_gdbjit_ops = {
    .name = "debugger symbol files",
    .open = gdbjit_open,
    .write = gdbjit_write,
    .forked = gdbjit_forked,
    .start_child = gdbjit_start_child,
    .flush = gdbjit_flush,
    .describe = gdbjit_describe,
};
