/* Unit tests for gdbjit_elf.c and gdbjit.c: the symbol files debuggers read.
 *
 * The files are read back here with <elf.h> only, as a debugger's ELF
 * reader would: sections by name, symbols through .strtab, FDEs through
 * their CIE pointers. The property that matters most is checked after every
 * single addition: the file, as its published sizes describe it, is whole
 * (a debugger may read it between any two additions). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include <elf.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "backend.h"
#include "bytes.h"
#include "gdbjit.h"
#include "gdbjit_elf.h"
#include "names.h"
#include "slot.h"
#include "tramp_code.h"

struct parsed {
    const Elf64_Ehdr *h;
    const Elf64_Shdr *text, *eh_frame, *symtab, *strtab;
    size_t nsyms; /* function symbols (without the null one) */
};

static const Elf64_Shdr *section(const uint8_t *f, const char *name)
{
    const Elf64_Ehdr *h = (const void *)f;
    const Elf64_Shdr *s = (const void *)(f + h->e_shoff);
    const char *names = (const char *)f + s[h->e_shstrndx].sh_offset;
    for (int i = 0; i < h->e_shnum; i++)
        if (strcmp(names + s[i].sh_name, name) == 0)
            return &s[i];
    return NULL;
}

/* Everything a reader relies on, within `size` bytes. */
static void parse_whole(const uint8_t *f, uint64_t size, struct parsed *p)
{
    assert_true(size >= sizeof(Elf64_Ehdr));
    p->h = (const void *)f;
    assert_memory_equal(p->h->e_ident, ELFMAG, SELFMAG);
    assert_int_equal(p->h->e_ident[EI_CLASS], ELFCLASS64);
    assert_int_equal(p->h->e_type, ET_DYN);
    assert_true(p->h->e_shoff + (uint64_t)p->h->e_shnum * sizeof(Elf64_Shdr) <= size);
    p->text = section(f, ".text");
    p->eh_frame = section(f, ".eh_frame");
    p->symtab = section(f, ".symtab");
    p->strtab = section(f, ".strtab");
    assert_non_null(p->text);
    assert_non_null(p->eh_frame);
    assert_non_null(p->symtab);
    assert_non_null(p->strtab);
    assert_int_equal(p->text->sh_type, SHT_NOBITS);
    const Elf64_Shdr *with_bytes[] = {p->eh_frame, p->symtab, p->strtab};
    for (size_t i = 0; i < 3; i++)
        assert_true(with_bytes[i]->sh_offset + with_bytes[i]->sh_size <= size);
    assert_int_equal(p->symtab->sh_entsize, sizeof(Elf64_Sym));
    assert_int_equal(p->symtab->sh_size % sizeof(Elf64_Sym), 0);
    assert_int_equal(p->symtab->sh_link, (uint32_t)(p->strtab - section(f, "")));
    p->nsyms = p->symtab->sh_size / sizeof(Elf64_Sym) - 1;
    const Elf64_Sym *syms = (const void *)(f + p->symtab->sh_offset);
    const char *str = (const char *)f + p->strtab->sh_offset;
    assert_int_equal(str[0], '\0');
    for (size_t i = 1; i <= p->nsyms; i++) {
        assert_true(syms[i].st_name < p->strtab->sh_size);
        assert_non_null(memchr(str + syms[i].st_name, '\0', p->strtab->sh_size - syms[i].st_name));
        assert_int_equal(syms[i].st_shndx, (uint16_t)(p->text - section(f, "")));
        assert_true(syms[i].st_value >= p->text->sh_addr);
        assert_true(syms[i].st_value + syms[i].st_size <= p->text->sh_addr + p->text->sh_size);
    }
    /* .eh_frame's address is where its bytes are: nothing else claims it. */
    assert_true(p->eh_frame->sh_addr == (uintptr_t)(f + p->eh_frame->sh_offset));
}

static const char *sym_name(const uint8_t *f, const struct parsed *p, size_t i)
{
    const Elf64_Sym *syms = (const void *)(f + p->symtab->sh_offset);
    return (const char *)f + p->strtab->sh_offset + syms[i].st_name;
}

static uint64_t sym_value(const uint8_t *f, const struct parsed *p, size_t i)
{
    const Elf64_Sym *syms = (const void *)(f + p->symtab->sh_offset);
    return syms[i].st_value;
}

/* The FDEs in order: each points back to the CIE at 0 and starts where the
 * symbol of the same rank does. */
static size_t check_fdes(const uint8_t *f, const struct parsed *p)
{
    const uint8_t *eh = f + p->eh_frame->sh_offset;
    uint64_t at = 4 + u32_at(eh), n = 0;
    assert_int_equal(u32_at(eh + 4), 0); /* CIE id */
    while (at < p->eh_frame->sh_size) {
        uint32_t len = u32_at(eh + at);
        assert_true(at + 4 + len <= p->eh_frame->sh_size);
        assert_int_equal(u32_at(eh + at + 4), at + 4); /* back to the CIE */
        n++;
        assert_true(n <= p->nsyms);
        assert_true(u64_at(eh + at + 8) == sym_value(f, p, n));
        at += 4 + len;
    }
    assert_int_equal(at, p->eh_frame->sh_size);
    return n;
}

static void test_file_is_whole_after_every_addition(void **state)
{
    (void)state;
    uint8_t code[64];
    struct pi_tramp_shape shape = make_tramp_code(PI_ARCH_X86_64, 0, code, 1);
    const uint32_t max = 40;
    size_t cap = pi_gdbelf_reserve(&shape, max, 100);
    assert_true(cap > 0);
    uint8_t *region = mmap(NULL, cap, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    assert_true(region != MAP_FAILED);
    volatile uint64_t size = 0;
    struct pi_gdbelf e;
    const uint64_t text = 0x7f0000100000u;

    assert_int_equal(pi_gdbelf_init(&e, region, cap - 1, &size, &shape, max, 100, text, 4096), -1);
    assert_int_equal(pi_gdbelf_init(&e, region, cap, &size, &shape, max, 100, text, 4096), 0);
    struct parsed p;
    parse_whole(region, size, &p);
    assert_int_equal(p.nsyms, 0);
    assert_int_equal(p.h->e_machine, EM_X86_64);
    assert_true(p.text->sh_addr == text && p.text->sh_size == 4096);
    assert_int_equal(check_fdes(region, &p), 0);

    char name[128];
    for (uint32_t i = 0; i < max; i++) {
        int n = snprintf(name, sizeof name, "py::f%u:/a/b.py, line %u", i, i + 1);
        assert_int_equal(pi_gdbelf_add(&e, text + 64u * i, shape.code_size, name, (size_t)n), 0);
        parse_whole(region, size, &p);
        assert_int_equal(p.nsyms, i + 1);
        assert_int_equal(check_fdes(region, &p), i + 1);
        assert_string_equal(sym_name(region, &p, i + 1), name);
        /* Nothing is published past the last name. */
        assert_true(size == p.strtab->sh_offset + p.strtab->sh_size);
    }
    assert_int_equal(pi_gdbelf_add(&e, text, shape.code_size, "full", 4), -1);
    assert_true(size <= cap);
    munmap(region, cap);
}

static void test_aarch64_machine(void **state)
{
    (void)state;
    uint8_t code[64], region[8192];
    struct pi_tramp_shape shape = make_tramp_code(PI_ARCH_AARCH64, 1, code, 1);
    volatile uint64_t size = 0;
    struct pi_gdbelf e;
    memset(region, 0, sizeof region);
    assert_true(pi_gdbelf_reserve(&shape, 4, 32) <= sizeof region);
    assert_int_equal(pi_gdbelf_init(&e, region, sizeof region, &size, &shape, 4, 32, 0x1000, 512),
                     0);
    assert_int_equal(pi_gdbelf_add(&e, 0x1000, shape.code_size, "py::g:/x.py, line 3", 19), 0);
    struct parsed p;
    parse_whole(region, size, &p);
    assert_int_equal(p.h->e_machine, EM_AARCH64);
    assert_int_equal(check_fdes(region, &p), 1);
    struct pi_tramp_shape bad = shape;
    bad.after_pop = bad.code_size;
    assert_int_equal(pi_gdbelf_reserve(&bad, 4, 32), 0);
}

/* ---- The backend: one file per arena, in the library's list. ---- */

static void announce(const struct pi_backend_ops *ops, void *self, uintptr_t arena, uint32_t slot,
                     const char *symbol, uint32_t line)
{
    struct pi_tramp_info t = {
        .addr = arena + (uintptr_t)slot * PI_SLOT_STRIDE,
        .arena = arena,
        .code_size = 16,
        .symbol = symbol,
        .symbol_len = strlen(symbol),
        .firstlineno = line,
    };
    assert_int_equal(ops->write(self, &t), 0);
}

static void test_backend_one_file_per_arena(void **state)
{
    (void)state;
    struct pi_gdbjit g;
    char err[128];
    const struct pi_backend_ops *ops = &pi_gdbjit_ops;
    const uint8_t *files[4];
    uint64_t sizes[4];
    size_t before = pi_gdbjit_files(files, sizes, 4);

    assert_int_equal(ops->open(&g, "/nonexistent", 1, err, sizeof err), 0);
    assert_null(ops->describe(&g)); /* it writes no file */
    const uintptr_t a = 0x7f0000200000u, b = 0x7f0000400000u;
    announce(ops, &g, a, 0, "py::foo:/x.py", 2);
    announce(ops, &g, a, 1, "py::bar:/x.py", 5);
    announce(ops, &g, a, 2, "py::__init__:/x.py", 0);
    assert_int_equal(pi_gdbjit_files(files, sizes, 4), before + 1);

    /* A fork: the child keeps the parent's files; its next arena is new. */
    ops->forked(&g, 1);
    assert_int_equal(ops->start_child(&g, "/nonexistent", 2, err, sizeof err), 0);
    announce(ops, &g, b, 0, "py::child:/y.py", 9);
    assert_int_equal(pi_gdbjit_files(files, sizes, 4), before + 2);

    struct parsed p;
    parse_whole(files[0], sizes[0], &p); /* newest first */
    assert_int_equal(p.nsyms, 1);
    assert_true(p.text->sh_addr == b && p.text->sh_size == PI_ARENA_BYTES);
    assert_string_equal(sym_name(files[0], &p, 1), "py::child:/y.py, line 9");
    parse_whole(files[1], sizes[1], &p);
    assert_int_equal(p.nsyms, 3);
    assert_int_equal(check_fdes(files[1], &p), 3);
    assert_true(p.text->sh_addr == a);
    assert_string_equal(sym_name(files[1], &p, 1), "py::foo:/x.py, line 2");
    assert_string_equal(sym_name(files[1], &p, 2), "py::bar:/x.py, line 5");
    assert_string_equal(sym_name(files[1], &p, 3), "py::__init__:/x.py, line 0");
    assert_true(sym_value(files[1], &p, 2) == a + PI_SLOT_STRIDE);
    /* With no debugger's breakpoint, nobody was stopped for any of it. */
    assert_int_equal(g.announcements, 0);
    assert_int_equal(ops->flush(&g), 0);
    assert_int_equal(g.announcements, 0);
}

/* A name as long as the perf map allows, and its suffix, fit. */
static void test_backend_longest_name(void **state)
{
    (void)state;
    struct pi_gdbjit g;
    char err[128], name[PI_SYMBOL_MAX + 1];
    const struct pi_backend_ops *ops = &pi_gdbjit_ops;
    memset(name, 'q', PI_SYMBOL_MAX);
    name[PI_SYMBOL_MAX] = '\0';
    assert_int_equal(ops->open(&g, "/", 1, err, sizeof err), 0);
    const uintptr_t arena = 0x7f0000600000u;
    for (uint32_t i = 0; i < PI_ARENA_SLOTS; i++)
        announce(ops, &g, arena, i, name, 4294967295u);
    const uint8_t *files[1];
    uint64_t sizes[1];
    pi_gdbjit_files(files, sizes, 1);
    struct parsed p;
    parse_whole(files[0], sizes[0], &p);
    assert_int_equal(p.nsyms, PI_ARENA_SLOTS);
    assert_int_equal(check_fdes(files[0], &p), PI_ARENA_SLOTS);
    size_t len = strlen(sym_name(files[0], &p, PI_ARENA_SLOTS));
    assert_int_equal(len, PI_SYMBOL_MAX + strlen(", line 4294967295"));
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_file_is_whole_after_every_addition),
        cmocka_unit_test(test_aarch64_machine),
        cmocka_unit_test(test_backend_one_file_per_arena),
        cmocka_unit_test(test_backend_longest_name),
    };
    return cmocka_run_group_tests(tests, NULL, NULL);
}
