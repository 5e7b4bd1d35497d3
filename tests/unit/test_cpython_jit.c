/* cpython_jit.c: CPython 3.15's JIT code followed. CPython is a few fakes
 * laid out as the 3.15 row of abi.c says: a GDB JIT descriptor whose
 * entries are symbol files built from the formats (tests/tools/
 * jit_symfile.h), code objects with their executors, executors with side
 * exits, a thread state with frames. The outputs are one fake backend that
 * keeps what it is told. The code addresses are never read: the fake
 * backend reads no code bytes. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>

#include "cpython_jit.h"
#include "jit_symfile.h"
#include "state.h"

enum { CODE_BASE = 0x10000000, CODE_SIZE = 0x400, MAX_TOLD = 64 };

/* --- the outputs --- */

struct told {
    char symbol[128], map_symbol[256];
    uintptr_t addr, map_addr;
    uint32_t size, map_size;
    int map_skip, code_gone, has_unwind;
    uint64_t appeared_ns;
};
static struct told told[MAX_TOLD];
static int ntold;

static int fake_write(void *self, const struct pi_tramp_info *t)
{
    (void)self;
    assert_true(ntold < MAX_TOLD);
    struct told *k = &told[ntold++];
    memset(k, 0, sizeof *k);
    snprintf(k->symbol, sizeof k->symbol, "%s", t->symbol);
    if (t->map_symbol)
        snprintf(k->map_symbol, sizeof k->map_symbol, "%s", t->map_symbol);
    k->addr = t->addr, k->size = t->code_size;
    k->map_addr = t->map_addr, k->map_size = t->map_size;
    k->map_skip = t->map_skip, k->code_gone = t->code_gone;
    k->has_unwind = t->unwind_size > 0;
    k->appeared_ns = t->appeared_ns;
    assert_int_equal(t->kind, PI_REGION_CPYTHON_JIT);
    return 0;
}

static const struct pi_backend_ops fake_ops = {.name = "fake", .write = fake_write};

/* --- CPython --- */

static char code_type[64]; /* &PyCode_Type: only its address matters */

/* A code object (3.15): ob_type at 8, co_firstlineno 68, co_filename 112,
 * co_name 120, co_qualname 128, co_executors 152. Names are C strings the
 * fake unicode functions hand back as they are. */
struct executors {
    int32_t size, capacity;
    void *items[4];
};
struct code {
    _Alignas(8) uint8_t b[208];
    struct executors executors;
};

static void make_code(struct code *c, const char *qualname, const char *file, int32_t line)
{
    memset(c, 0, sizeof *c);
    void *type = code_type;
    memcpy(c->b + 8, &type, sizeof type);
    memcpy(c->b + 68, &line, sizeof line);
    memcpy(c->b + 112, &file, sizeof file);
    memcpy(c->b + 120, &qualname, sizeof qualname);
    memcpy(c->b + 128, &qualname, sizeof qualname);
    c->executors.capacity = 4;
}

static void lists(struct code *c, void *executor)
{
    void *array = &c->executors;
    c->executors.items[c->executors.size++] = executor;
    memcpy(c->b + 152, &array, sizeof array);
}

/* An executor (3.15): vm_data.code at 64, exit_count 72, jit_code 88,
 * exits from 104 (16 bytes each, the executor at +8). */
struct executor {
    _Alignas(8) uint8_t b[104 + 16 * 4];
};

static void make_executor(struct executor *x, uintptr_t jit_code, struct code *code)
{
    memset(x, 0, sizeof *x);
    memcpy(x->b + 88, &jit_code, sizeof jit_code);
    memcpy(x->b + 64, &code, sizeof code); /* NULL: a side exit's, or a cold stub's */
}

static void exits_to(struct executor *x, void *next)
{
    uint32_t n;
    memcpy(&n, x->b + 72, sizeof n);
    memcpy(x->b + 104 + 16 * n + 8, &next, sizeof next);
    n++;
    memcpy(x->b + 72, &n, sizeof n);
}

/* The descriptor, and its entries (newest first, as CPython links them). */
static struct pi_gdb_jit_descriptor desc;
static struct pi_gdb_jit_entry entries[8];
static struct jit_symfile files[8];

static struct pi_gdb_jit_entry *registers(int i, uintptr_t addr)
{
    jit_symfile_build(&files[i], addr, CODE_SIZE, jit_symfile_cie, sizeof jit_symfile_cie,
                      "py::jit:executor");
    struct pi_gdb_jit_entry *e = &entries[i];
    memset(e, 0, sizeof *e);
    e->symfile_addr = (const char *)files[i].bytes;
    e->symfile_size = files[i].size;
    e->code_addr = (const void *)addr;
    e->next = desc.first_entry;
    if (e->next)
        e->next->prev = e;
    desc.first_entry = e;
    return e;
}

static void unregisters(struct pi_gdb_jit_entry *e)
{
    if (e->prev)
        e->prev->next = e->next;
    else
        desc.first_entry = e->next;
    if (e->next)
        e->next->prev = e->prev;
}

/* A thread state (interp at 16, current_frame at 72) and frames
 * (f_executable at 0, tagged; previous at 8). */
struct frame {
    uintptr_t executable;
    struct frame *previous;
};
static _Alignas(8) uint8_t tstate[128];
static char interp[8];

static void set_frames(struct frame *top)
{
    memcpy(tstate + 72, &top, sizeof top);
}

static void frame_of(struct frame *f, struct code *c, struct frame *previous)
{
    f->executable = (uintptr_t)c | 1; /* a _PyStackRef's tag bit */
    f->previous = previous;
}

static const char *fake_utf8(pi_pyobj *s, pi_ssize_t *size)
{
    *size = (pi_ssize_t)strlen((const char *)s);
    return (const char *)s;
}
static pi_pyobj *fake_err_occurred(void) { return NULL; }
static void fake_decref(pi_pyobj *o) { (void)o; }

static int setup(void **state)
{
    (void)state;
    struct pi_state *s = &pi_state;
    assert_int_equal(pi_abi_lookup(3, 15, 0, &s->abi), 0);
    s->py.CodeType = (pi_pyobj *)code_type;
    s->hot.frame_code_offset = s->abi.frame_code_offset; /* as inject.c's hot_from_abi */
    s->hot.frame_code_tag = s->abi.frame_code_tag;
    s->hot.ob_type_offset = s->abi.ob_type_offset;
    s->hot.code_type = code_type;
    s->py.UnicodeAsUTF8AndSize = fake_utf8;
    s->py.ErrOccurred = fake_err_occurred;
    s->py.DecRef = fake_decref;
    s->nrecords = 1;
    memset(&s->backends, 0, sizeof s->backends);
    s->backends.n = 1;
    s->backends.list[0] = (struct pi_backend){&fake_ops, NULL, 0, 0};
    memset(&desc, 0, sizeof desc);
    /* The library never frees a book; each test starts a new one and keeps
     * the old reachable (LeakSanitizer). */
    static struct pi_jit_book *old_books[32];
    static unsigned nold;
    if (s->jit.book != NULL && nold < sizeof old_books / sizeof *old_books)
        old_books[nold++] = s->jit.book;
    memset(&s->jit, 0, sizeof s->jit);
    s->jit.desc = &desc;
    s->jit.co_executors = s->abi.jit.co_executors;
    memset(tstate, 0, sizeof tstate);
    void *i = interp;
    memcpy(tstate + s->abi.tstate_interp, &i, sizeof i);
    ntold = 0;
    return 0;
}

static void look(struct frame *calling)
{
    if (pi_jit_changed(&pi_state.jit) || pi_state.jit.pending)
        pi_jit_look(&pi_state, tstate, calling);
}

/* A function whose code has JIT code at addr, listed in its co_executors. */
static void jitted(struct code *c, struct executor *x, const char *qualname, int32_t line,
                   uintptr_t addr)
{
    make_code(c, qualname, "/app.py", line);
    make_executor(x, addr, c);
    lists(c, x);
}

/* Only `qualname`, which has no JIT code, on the thread's frames. */
static void runs_alone(struct code *c, struct frame *f, const char *qualname)
{
    make_code(c, qualname, "/app.py", 3);
    frame_of(f, c, NULL);
    set_frames(f);
}

/* --- the tests --- */

static void test_an_executor_is_named_after_the_function_on_the_frames(void **state)
{
    (void)state;
    static struct code module, foo;
    static struct executor x;
    static struct frame f_module, f_foo;
    make_code(&module, "<module>", "/app.py", 1);
    jitted(&foo, &x, "foo", 7, CODE_BASE);
    frame_of(&f_module, &module, NULL);
    frame_of(&f_foo, &foo, &f_module);
    set_frames(&f_foo); /* foo runs the loop that became JIT code */
    registers(0, CODE_BASE);
    assert_true(pi_jit_changed(&pi_state.jit));
    look(NULL);
    assert_int_equal(ntold, 1);
    assert_string_equal(told[0].symbol, "py::jit:foo:/app.py");
    assert_int_equal(told[0].addr, CODE_BASE);
    assert_int_equal(told[0].size, CODE_SIZE);
    assert_true(told[0].has_unwind); /* CPython's rules, rebuilt */
    assert_false(told[0].code_gone);
    assert_true(told[0].appeared_ns > 0);
    assert_false(pi_state.jit.pending);
    assert_false(pi_jit_changed(&pi_state.jit)); /* nothing new: the hook's plain path */
    look(NULL);
    assert_int_equal(ntold, 1); /* told once */
}

static void test_a_name_found_later_keeps_the_time_it_appeared(void **state)
{
    (void)state;
    static struct code main_code, foo;
    static struct executor x;
    static struct frame f_main, f_foo;
    make_code(&main_code, "main", "/app.py", 1);
    jitted(&foo, &x, "foo", 7, CODE_BASE);
    frame_of(&f_main, &main_code, NULL);
    set_frames(&f_main); /* foo has returned: only main on the frames */
    registers(0, CODE_BASE);
    look(NULL);
    assert_int_equal(ntold, 0);
    assert_true(pi_state.jit.pending);
    /* The hook asks again at a call of a function with JIT code. */
    assert_true(pi_jit_waiting_look(&pi_state.jit, foo.b));
    frame_of(&f_foo, &foo, &f_main);
    look(&f_foo); /* main calls foo again */
    assert_int_equal(ntold, 1);
    assert_string_equal(told[0].symbol, "py::jit:foo:/app.py");
    assert_false(pi_state.jit.pending);
}

static void test_side_exits_are_named_after_the_trace_they_continue(void **state)
{
    (void)state;
    static struct code foo;
    static struct executor root, side, cold;
    static struct frame f_foo;
    make_code(&foo, "foo", "/app.py", 7);
    make_executor(&root, CODE_BASE, &foo);
    make_executor(&side, CODE_BASE + 0x1000, NULL); /* no code of its own */
    exits_to(&side, &cold);
    make_executor(&cold, CODE_BASE + 0x2000, NULL); /* no code, no exits: a cold stub */
    exits_to(&root, &side);
    exits_to(&root, &cold);
    lists(&foo, &root);
    frame_of(&f_foo, &foo, NULL);
    set_frames(&f_foo);
    registers(0, CODE_BASE + 0x2000);
    registers(1, CODE_BASE);
    registers(2, CODE_BASE + 0x1000);
    look(NULL);
    assert_int_equal(ntold, 3);
    int named = 0, generic = 0;
    for (int i = 0; i < ntold; i++) {
        if (told[i].addr == CODE_BASE + 0x2000) {
            assert_string_equal(told[i].symbol, "py::jit:executor"); /* CPython's name */
            generic++;
        } else {
            assert_string_equal(told[i].symbol, "py::jit:foo:/app.py");
            named++;
        }
    }
    assert_int_equal(named, 2);
    assert_int_equal(generic, 1);
}

static void test_what_is_never_found_goes_out_under_cpythons_name(void **state)
{
    (void)state;
    static struct code other;
    static struct frame f;
    runs_alone(&other, &f, "other");
    registers(0, CODE_BASE); /* no executor anyone can reach leads to it */
    int looks = 0;
    while (ntold == 0 && looks < 5000) {
        look(NULL);
        looks++;
    }
    assert_int_equal(ntold, 1);
    assert_true(looks >= 1000 && looks <= 1100); /* about MAX_LOOKS */
    assert_string_equal(told[0].symbol, "py::jit:executor");
    assert_false(told[0].code_gone);
}

static void test_code_freed_before_its_name_is_told_unread(void **state)
{
    (void)state;
    static struct frame f;
    static struct code other;
    runs_alone(&other, &f, "other");
    struct pi_gdb_jit_entry *gone = registers(0, CODE_BASE);
    look(NULL);
    assert_true(pi_state.jit.pending);
    /* CPython frees it (taken off the list) and registers another. */
    unregisters(gone);
    registers(1, CODE_BASE + 0x1000);
    look(NULL);
    assert_int_equal(ntold, 1);
    assert_int_equal(told[0].addr, CODE_BASE);
    assert_true(told[0].code_gone); /* its bytes are not read */
    assert_string_equal(told[0].symbol, "py::jit:executor");
}

static void test_an_entry_gone_from_the_middle_is_not_read(void **state)
{
    (void)state;
    static struct code foo, bar;
    static struct executor x, y;
    static struct frame f_foo, f_bar;
    jitted(&foo, &x, "foo", 7, CODE_BASE);
    jitted(&bar, &y, "bar", 9, CODE_BASE + 0x1000);
    frame_of(&f_bar, &bar, NULL);
    set_frames(&f_bar);
    struct pi_gdb_jit_entry *old = registers(0, CODE_BASE);
    registers(1, CODE_BASE + 0x1000); /* the head */
    look(NULL);
    assert_int_equal(ntold, 1); /* bar's; foo's waits */
    /* foo's entry leaves from the middle: the head stays as it was. */
    unregisters(old);
    assert_false(pi_jit_changed(&pi_state.jit));
    frame_of(&f_foo, &foo, &f_bar);
    look(&f_foo); /* a stale executor pointer must not lead to reading it */
    assert_int_equal(ntold, 2);
    assert_int_equal(told[1].addr, CODE_BASE);
    assert_true(told[1].code_gone);
    assert_string_equal(told[1].symbol, "py::jit:executor");
}

static void test_what_waits_at_exit_is_told(void **state)
{
    (void)state;
    static struct frame f;
    static struct code other;
    runs_alone(&other, &f, "other");
    registers(0, CODE_BASE);
    look(NULL);
    assert_int_equal(ntold, 0);
    pi_jit_at_exit(&pi_state);
    assert_int_equal(ntold, 1);
    assert_true(told[0].code_gone); /* finalisation may have unmapped it */
}

static void test_reused_addresses_get_one_map_line_naming_both(void **state)
{
    (void)state;
    static struct code foo, bar;
    static struct executor x, y;
    static struct frame f_foo, f_bar;
    jitted(&foo, &x, "foo", 7, CODE_BASE);
    frame_of(&f_foo, &foo, NULL);
    set_frames(&f_foo);
    struct pi_gdb_jit_entry *first = registers(0, CODE_BASE);
    look(NULL);
    assert_int_equal(ntold, 1);
    unregisters(first); /* foo's code freed; bar's comes at the same address */
    jitted(&bar, &y, "bar", 9, CODE_BASE);
    frame_of(&f_bar, &bar, NULL);
    set_frames(&f_bar);
    registers(1, CODE_BASE);
    look(NULL);
    assert_int_equal(ntold, 2);
    assert_string_equal(told[1].symbol, "py::jit:bar:/app.py"); /* the dump: exact */
    assert_string_equal(told[1].map_symbol, "py::jit:foo:/app.py|bar:/app.py"); /* the map */
    /* No trampoline arena may land there now. */
    assert_true(pi_jit_address_taken(CODE_BASE + 0x10, 0x10, &pi_state.jit));
    assert_false(pi_jit_address_taken(CODE_BASE + CODE_SIZE, 0x10, &pi_state.jit));
}

static void test_a_second_interpreter_stops_the_following(void **state)
{
    (void)state;
    static struct frame f;
    static struct code other;
    runs_alone(&other, &f, "other");
    registers(0, CODE_BASE);
    look(NULL);
    pi_state.nrecords = 2; /* a subinterpreter, with a GIL of its own */
    registers(1, CODE_BASE + 0x1000);
    look(NULL);
    assert_null(pi_state.jit.desc);
    assert_false(pi_jit_changed(&pi_state.jit)); /* the hook's plain path from now on */
    assert_false(pi_state.jit.pending);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test_setup(test_an_executor_is_named_after_the_function_on_the_frames, setup),
        cmocka_unit_test_setup(test_a_name_found_later_keeps_the_time_it_appeared, setup),
        cmocka_unit_test_setup(test_side_exits_are_named_after_the_trace_they_continue, setup),
        cmocka_unit_test_setup(test_what_is_never_found_goes_out_under_cpythons_name, setup),
        cmocka_unit_test_setup(test_code_freed_before_its_name_is_told_unread, setup),
        cmocka_unit_test_setup(test_an_entry_gone_from_the_middle_is_not_read, setup),
        cmocka_unit_test_setup(test_what_waits_at_exit_is_told, setup),
        cmocka_unit_test_setup(test_reused_addresses_get_one_map_line_naming_both, setup),
        cmocka_unit_test_setup(test_a_second_interpreter_stops_the_following, setup),
    };
    return cmocka_run_group_tests_name("cpython_jit", tests, NULL, NULL);
}
