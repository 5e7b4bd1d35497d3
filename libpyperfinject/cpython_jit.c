/* CPython's JIT code in the outputs (cpython_jit.h).
 *
 * Everything here runs from the eval hook with the GIL held, which is what
 * keeps CPython's list and its executors still while they are read: CPython
 * adds, removes and frees them holding the GIL too. With a second
 * interpreter (which may have a GIL of its own) that no longer holds, and
 * the list is left alone from then on. Free-threaded builds have no row. */
#include "cpython_jit.h"

#include "abi.h"
#include "backends.h"
#include "codenames.h"
#include "ehframe.h"
#include "fork.h"
#include "jitentry.h"
#include "jitmap.h"
#include "lock.h"
#include "log.h"
#include "names.h"
#include "slot.h"
#include "state.h"

#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

enum {
    MAX_LIST = 1 << 16,       /* entries read per look; more is not a list */
    MAX_FRAMES = 64,          /* frames searched for a first executor */
    MAX_EXEC_ARRAY = 4096,    /* a code object's executors, at most */
    MAX_EXIT_DEPTH = 16,      /* side exits followed from a listed executor */
    MAX_EXITS = 4096,         /* exits read per executor */
    MAX_VISITS = 1024,        /* executors visited per code object */
    WALKED = 64,              /* code objects remembered as walked */
    MAX_LOOKS = 1024,         /* looks an executor waits for its name */
    EXIT_SIZE = 16,           /* _PyExitData, 3.14 and 3.15 */
    EXIT_EXECUTOR = 8,        /* its executor pointer */
    RULES_MAX = 64,           /* CFI bytes kept per executor (CPython's: 7) */
    GENERIC_MAX = 63,
};

/* One registered executor's code region. */
struct region {
    uint64_t code_addr; /* 0: an empty slot of the table */
    uint64_t code_size;
    const void *entry, *symfile; /* with code_addr: which registration */
    uint64_t seen_ns;   /* the look that found it */
    uint32_t looks;     /* looks it has waited through */
    uint8_t announced;
    uint8_t has_cfi, cie_len, fde_len;
    uint8_t ra_column;
    uint32_t code_align;
    int32_t data_align;
    uint8_t cie[RULES_MAX], fde[RULES_MAX];
    char generic[GENERIC_MAX + 1]; /* CPython's symbol for it */
};

/* Open addressing on code_addr; rebuilt by every look at a changed list. */
struct table {
    struct region *slots;
    size_t cap; /* a power of two, or 0 */
};

/* A code object whose executors were all walked while the list had this
 * head: walking them again finds nothing new until the list changes. */
struct walked {
    const void *code, *executors, *head;
    int32_t count;
};

struct pi_jit_book {
    struct walked walked[WALKED];
    struct table live;
    const void *last_head;
    unsigned pending;
    void *interp;       /* the one interpreter whose list this is */
    struct pi_jit_map map; /* the perf map's lines for JIT code */
    uint64_t seq, looks;
};

static uint64_t now_ns(void)
{
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return (uint64_t)t.tv_sec * 1000000000u + (uint64_t)t.tv_nsec;
}

static void *load_ptr(const void *base, int16_t offset)
{
    return *(void *const *)((const char *)base + offset);
}

/* --- the table of regions --- */

static size_t hash(uint64_t addr, size_t cap)
{
    return (size_t)((addr >> 4) * 0x9e3779b97f4a7c15ull) & (cap - 1);
}

static struct region *find(const struct table *t, uint64_t addr)
{
    if (t->cap == 0 || addr == 0)
        return NULL;
    for (size_t i = hash(addr, t->cap);; i = (i + 1) & (t->cap - 1)) {
        if (t->slots[i].code_addr == addr)
            return &t->slots[i];
        if (t->slots[i].code_addr == 0)
            return NULL;
    }
}

/* The slot for addr in a table with room (n < cap / 2). */
static struct region *slot_for(struct table *t, uint64_t addr)
{
    size_t i = hash(addr, t->cap);
    while (t->slots[i].code_addr != 0 && t->slots[i].code_addr != addr)
        i = (i + 1) & (t->cap - 1);
    return &t->slots[i];
}

/* --- reading one entry --- */

/* A new registration: its code region and CFI, copied out of the file
 * (which goes when CPython unregisters it). 0, or -1 if it is not a file
 * of the form CPython writes. */
static int read_entry(const struct pi_gdb_jit_entry *e, struct region *r)
{
    struct pi_jit_symfile f;
    if (e->symfile_addr == NULL ||
        pi_jitentry_parse(e->symfile_addr, e->symfile_size,
                          (uint16_t)pi_arch_elf_mach(pi_slot_template_shape().arch), 0,
                          &f) != 0)
        return -1;
    memset(r, 0, sizeof *r);
    r->code_addr = f.text_addr;
    r->code_size = f.text_size;
    r->entry = e;
    r->symfile = e->symfile_addr;
    if (f.has_cfi && f.cfi.cie_len <= RULES_MAX && f.cfi.fde_len <= RULES_MAX) {
        r->has_cfi = 1;
        r->code_align = f.cfi.code_align;
        r->data_align = f.cfi.data_align;
        r->ra_column = f.cfi.ra_column;
        r->cie_len = (uint8_t)f.cfi.cie_len;
        r->fde_len = (uint8_t)f.cfi.fde_len;
        memcpy(r->cie, f.cfi.cie_insns, f.cfi.cie_len);
        memcpy(r->fde, f.cfi.fde_insns, f.cfi.fde_len);
    }
    pi_sanitize_append(r->generic, 0, sizeof r->generic, f.symbol, f.symbol_len);
    return 0;
}

static void emit(struct pi_state *s, struct pi_jit_book *b, struct region *r, void *code,
                 int gone, int locked);

/* Rebuilds the table from CPython's list: regions still registered keep
 * what is known of them, new ones wait for names, gone ones are dropped;
 * one that went before it was named (an executor invalidated soon after it
 * was made) goes out under CPython's name first: it ran, and its samples
 * need a name. Returns -1 when memory runs out or the list is not one. */
static int rescan(struct pi_state *s, struct pi_jit_book *b, const struct pi_gdb_jit_entry *head)
{
    size_t count = 0;
    for (const struct pi_gdb_jit_entry *e = head; e; e = e->next)
        if (++count > MAX_LIST)
            return -1;
    size_t cap = 16;
    while (cap < 2 * count + 2)
        cap *= 2;
    struct table next = {calloc(cap, sizeof(struct region)), cap};
    if (next.slots == NULL)
        return -1;
    uint64_t now = 0;
    for (const struct pi_gdb_jit_entry *e = head; e; e = e->next) {
        /* code_addr, CPython 3.15's field after GDB's four, finds what is
         * known; the file is read only for entries new to us. */
        uint64_t addr = (uint64_t)(uintptr_t)e->code_addr;
        const struct region *prev = find(&b->live, addr);
        struct region fresh;
        if (prev && prev->entry == e && prev->symfile == e->symfile_addr) {
            fresh = *prev;
        } else if (read_entry(e, &fresh) != 0 || fresh.code_addr != addr) {
            continue; /* not CPython's form: left unnamed */
        } else {
            if (now == 0)
                now = now_ns();
            fresh.seen_ns = now;
        }
        struct region *dst = slot_for(&next, addr);
        if (dst->code_addr != 0)
            continue; /* two live entries for one address: the newer counts */
        *dst = fresh;
    }
    for (size_t i = 0; i < b->live.cap; i++) {
        struct region *old = &b->live.slots[i];
        const struct region *kept = find(&next, old->code_addr);
        if (old->code_addr && !old->announced &&
            (kept == NULL || kept->entry != old->entry || kept->symfile != old->symfile))
            emit(s, b, old, NULL, 1, 0);
    }
    free(b->live.slots);
    b->live = next;
    b->pending = 0;
    for (size_t i = 0; i < next.cap; i++)
        if (next.slots[i].code_addr && !next.slots[i].announced)
            b->pending++;
    return 0;
}

/* --- finding executors --- */

/* The code object's executors (co_executors: those its bytecode enters)
 * whose machine code waits for a name get it. Each is a live executor as
 * long as the code object lives, which running it on a frame ensures. */
static void name_from_code(struct pi_state *s, struct pi_jit_book *b, void *code);

/* Looks for them on the frame about to run and the thread's frames. */
static void name_from_frames(struct pi_state *s, struct pi_jit_book *b, void *tstate, void *frame)
{
    const struct pi_abi_jit *j = &s->abi.jit;
    if (frame)
        name_from_code(s, b, pi_hot_code_of(&s->hot, frame));
    void *f = tstate ? load_ptr(tstate, j->tstate_frame) : NULL;
    for (int depth = 0; f != NULL && depth < MAX_FRAMES && b->pending; depth++) {
        name_from_code(s, b, pi_hot_code_of(&s->hot, f));
        f = load_ptr(f, j->frame_previous);
    }
}

/* --- announcing --- */

/* How long an executor waits for its name (or MAX_LOOKS) before it goes
 * out under CPython's: its records carry the time it appeared, so waiting
 * costs only the looks. */
#define NAME_WAIT_NS (2ull * 1000 * 1000 * 1000)

/* One region to the outputs, named after `code` (NULL: CPython's name),
 * with the time it was first seen: perf then names the samples it took
 * before its name was found. `gone`: CPython unregistered it and may have
 * unmapped the code (its bytes are not read). `locked`: the caller holds
 * the state lock. */
static void emit(struct pi_state *s, struct pi_jit_book *b, struct region *r, void *code,
                 int gone, int locked)
{
    struct pi_code_names names;
    char symbol[PI_SYMBOL_MAX + 8]; /* room for "jit:" */
    const char *filename = "?";
    uint32_t line = 0;
    if (code != NULL) {
        pi_code_names_read(s, code, &names);
        const char *rest = strncmp(names.symbol, "py::", 4) == 0 ? names.symbol + 4 : names.symbol;
        snprintf(symbol, sizeof symbol, "py::jit:%.*s", PI_SYMBOL_MAX - 4, rest);
        filename = names.filename;
        line = names.firstlineno > 0 ? (uint32_t)names.firstlineno : 0;
    } else {
        snprintf(symbol, sizeof symbol, "%s", r->generic[0] ? r->generic : "py::jit:executor");
    }
    uint8_t unwind[4 * RULES_MAX + 128];
    struct pi_unwind_sizes sizes = {0, 0, 0, 0};
    if (r->has_cfi) {
        struct pi_cfi_rules rules = {r->code_align, r->data_align, r->ra_column,
                                     r->cie, r->cie_len, r->fde, r->fde_len};
        if (pi_ehframe_build_rules(&rules, (uint32_t)r->code_size, unwind, sizeof unwind,
                                   &sizes) == 0)
            sizes = (struct pi_unwind_sizes){0, 0, 0, 0};
    }
    struct pi_tramp_info info = {
        .kind = PI_REGION_CPYTHON_JIT,
        .addr = (uintptr_t)r->code_addr,
        .code_size = (uint32_t)r->code_size,
        /* apart from the trampolines' 1, 2, ...: perf inject names its
         * files jitted-<pid>-<code_index>.so */
        .code_index = (UINT64_C(1) << 40) + ++b->seq,
        .symbol = symbol,
        .symbol_len = strlen(symbol),
        .filename = filename,
        .firstlineno = line,
        .unwind = sizes.total ? unwind : NULL,
        .unwind_size = sizes.total,
        .unwind_hdr_size = sizes.hdr_size,
        .unwind_mapped_size = sizes.mapped_size,
        .appeared_ns = r->seen_ns,
        .code_gone = gone,
    };
    char map_name[PI_SYMBOL_MAX + 1];
    if (!locked)
        pi_lock(s); /* the map's lines are read by arenas being mapped (pi_jit_address_taken) */
    pi_jit_map_place(&b->map, &info, map_name, sizeof map_name); /* -1: the region's own line */
    pi_fork_before_announce(s);
    pi_backends_announce(&s->backends, &info);
    if (!locked)
        pi_unlock(s);
    r->announced = 1;
}

/* Whether r is still on CPython's list. The eval hook notices a new head
 * only: an entry unregistered from the middle (an executor freed) leaves
 * the head as it was, and its code may be unmapped already. */
static int registered(const struct pi_jit_watch *w, const struct region *r)
{
    size_t n = 0;
    for (const struct pi_gdb_jit_entry *e = w->desc ? w->desc->first_entry : NULL;
         e != NULL && n < MAX_LIST; e = e->next, n++)
        if (e == r->entry)
            return e->symfile_addr == r->symfile &&
                   (uint64_t)(uintptr_t)e->code_addr == r->code_addr;
    return 0;
}

/* A region's name settled: found (`code`), or not to be had. Its bytes are
 * read only while CPython still lists it; one that left the list is named
 * by nothing but CPython (another executor may hold its address now). */
static void announce(struct pi_state *s, struct pi_jit_book *b, struct region *r, void *code)
{
    int gone = !registered(&s->jit, r);
    emit(s, b, r, gone ? NULL : code, gone, 0);
}

/* An executor and the side-exit executors its exits lead to (traces that
 * continue where it leaves; no code object lists them). Each is named after
 * the code object its trace starts in, or when it does not say (side exits
 * may not), after the one it continues: `code` for the executors `code`
 * lists. The interpreter's two shared cold-exit stubs, which every exit
 * points to until it warms up, have neither a code object nor exits (their
 * other fields are never set): they keep CPython's name. Exits hold strong
 * references and the stubs live as long as the interpreter, so what is
 * reached is alive. `visits` bounds the walk from one code object. */
static void name_executor(struct pi_state *s, struct pi_jit_book *b, unsigned *visits, void *x,
                          void *continued, int depth)
{
    const struct pi_abi_jit *j = &s->abi.jit;
    if (x == NULL || ++*visits > MAX_VISITS || b->pending == 0)
        return;
    uint32_t exits = *(const uint32_t *)((const char *)x + j->exec_exit_count);
    void *code = pi_hot_code_or_null(&s->hot, load_ptr(x, j->exec_code));
    int cold = code == NULL && exits == 0;
    if (code == NULL && !cold)
        code = continued;
    struct region *r = find(&b->live, (uint64_t)(uintptr_t)load_ptr(x, j->exec_jit_code));
    if (r != NULL && !r->announced && (code != NULL || cold)) {
        announce(s, b, r, code);
        b->pending--;
    }
    if (cold || depth == MAX_EXIT_DEPTH)
        return;
    for (uint32_t i = 0; i < exits && i < MAX_EXITS && b->pending; i++) {
        const char *exit = (const char *)x + j->exec_exits + (size_t)i * EXIT_SIZE;
        void *next = *(void *const *)(const void *)(exit + EXIT_EXECUTOR);
        if (next != x)
            name_executor(s, b, visits, next, code, depth + 1);
    }
}

static void name_from_code(struct pi_state *s, struct pi_jit_book *b, void *code)
{
    const struct pi_abi_jit *j = &s->abi.jit;
    const int32_t *array = code ? load_ptr(code, j->co_executors) : NULL;
    if (array == NULL || array[0] <= 0 || array[0] > MAX_EXEC_ARRAY || array[0] > array[1])
        return;
    void *const *executors = (void *const *)(const void *)(array + 2);
    struct walked *done = &b->walked[((uintptr_t)code >> 4) % WALKED];
    if (done->code == code && done->executors == array && done->count == array[0] &&
        done->head == b->last_head)
        return;
    unsigned visits = 0;
    for (int32_t i = 0; i < array[0] && b->pending; i++)
        name_executor(s, b, &visits, executors[i], code, 0);
    *done = (struct walked){code, array, b->last_head, array[0]};
}

/* Names what waits; what stays unfound for MAX_LOOKS looks or NAME_WAIT_NS
 * (code whose function never runs again, the interpreter's cold-exit stubs
 * that no exit leads to yet) goes out under CPython's own name. */
static void name_pending(struct pi_state *s, struct pi_jit_book *b, void *tstate, void *frame)
{
    name_from_frames(s, b, tstate, frame);
    uint64_t now = b->pending && ++b->looks % 64 == 0 ? now_ns() : 0;
    for (size_t i = 0; i < b->live.cap && b->pending; i++) {
        struct region *r = &b->live.slots[i];
        if (r->code_addr && !r->announced &&
            (++r->looks >= MAX_LOOKS || (now != 0 && now - r->seen_ns >= NAME_WAIT_NS))) {
            announce(s, b, r, NULL);
            b->pending--;
        }
    }
}

void pi_jit_at_exit(struct pi_state *s)
{
    struct pi_jit_book *b = s->jit.book;
    for (size_t i = 0; b != NULL && i < b->live.cap && b->pending; i++) {
        struct region *r = &b->live.slots[i];
        if (r->code_addr && !r->announced) {
            emit(s, b, r, NULL, 1, 1); /* finalisation may have unmapped it */
            b->pending--;
        }
    }
}

/* Said once: with no descriptor, no look comes here again. */
static void stop(struct pi_jit_watch *w, const char *why)
{
    pi_log(PI_LOG_INFO, "CPython's JIT code is no longer named: %s", why);
    w->desc = NULL;
    w->seen = NULL;
    w->pending = 0;
}

void pi_jit_look(struct pi_state *s, void *tstate, void *frame)
{
    struct pi_jit_watch *w = &s->jit;
    const volatile struct pi_gdb_jit_descriptor *d = w->desc;
    if (d == NULL)
        return;
    if (w->book == NULL && (w->book = calloc(1, sizeof *w->book)) == NULL)
        return stop(w, "out of memory");
    struct pi_jit_book *b = w->book;
    void *interp = tstate ? pi_abi_interp_of(&s->abi, tstate) : NULL;
    if (b->interp == NULL)
        b->interp = interp;
    if (s->nrecords > 1 || interp != b->interp)
        return stop(w, "a second interpreter may change the list under its own GIL");
    const struct pi_gdb_jit_entry *head = d->first_entry;
    if (head != b->last_head) {
        if (rescan(s, b, head) != 0)
            return stop(w, "its list is longer than expected, or memory ran out");
        b->last_head = head;
    }
    if (b->pending)
        name_pending(s, b, tstate, frame);
    w->seen = head;
    w->pending = b->pending != 0;
}

/* CPython's own rule (pylifecycle.c): a non-empty PYTHON_JIT not starting
 * with '0' turns the JIT on. Without it the build's default holds, which is
 * off in every build distributions ship (--enable-experimental-jit=yes-off):
 * following then costs every call a look at the list (7 instructions) for
 * code that never comes. */
static int jit_switched_on(void)
{
    const char *env = getenv("PYTHON_JIT");
    return env != NULL && env[0] != '\0' && env[0] != '0';
}

int pi_jit_setup(struct pi_jit_watch *w, void *handle, const struct pi_abi *abi)
{
    w->desc = NULL;
    w->seen = NULL;
    w->pending = 0;
    w->co_executors = abi->jit.co_executors;
    if (abi->jit.co_executors < 0 || !abi->jit.tstate_frame || !jit_switched_on())
        return 0;
    void *d = dlsym(handle, "__jit_debug_descriptor");
    void *registrar = dlsym(handle, "__jit_debug_register_code");
    /* Never the library's own list (gdbjit.c), wherever a lookup went. */
    Dl_info in_d, in_us;
    if (d == NULL || registrar == NULL || dladdr(d, &in_d) == 0 ||
        dladdr((void *)pi_jit_setup, &in_us) == 0 || in_d.dli_fbase == in_us.dli_fbase)
        return 0;
    w->desc = d;
    return 1;
}

int pi_jit_address_taken(uintptr_t start, size_t len, void *ctx)
{
    const struct pi_jit_watch *w = ctx;
    return w->book != NULL && pi_jit_map_overlaps(&w->book->map, start, start + len);
}
