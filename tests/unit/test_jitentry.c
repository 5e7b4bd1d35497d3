/* jitentry.c: the in-memory ELF file CPython's JIT registers per executor
 * with the GDB JIT interface (Python/jit_unwind.c in 3.15). The file is
 * built here from the formats (ELF-64 sections and symbols, .eh_frame CIE
 * and FDE with absolute pointers), then spoiled one field at a time; every
 * prefix of it is read from an allocation of exactly that size, so a read
 * past the end is a sanitizer report. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include <cmocka.h>
#include <elf.h>

#include "jit_symfile.h"
#include "jitentry.h"

enum { CODE_ADDR = 0x7f0000001000, CODE_SIZE = 0x77e };

/* Parses a heap copy of exactly `size` bytes. */
static void build(struct jit_symfile *f, const uint8_t *cie, size_t cie_len, const char *symbol)
{
    jit_symfile_build(f, CODE_ADDR, CODE_SIZE, cie, cie_len, symbol);
}

static int parse(const struct jit_symfile *f, size_t size, uint64_t code_addr, struct pi_jit_symfile *out)
{
    uint8_t *copy = malloc(size ? size : 1);
    assert_non_null(copy);
    memcpy(copy, f->bytes, size);
    int rc = pi_jitentry_parse(copy, size, JIT_SYMFILE_MACHINE, code_addr, out);
    free(copy);
    return rc;
}

static void test_cpythons_file_is_read(void **state)
{
    (void)state;
    static struct jit_symfile f;
    build(&f, jit_symfile_cie, sizeof jit_symfile_cie, "py::jit:executor");
    uint8_t *copy = malloc(f.size);
    memcpy(copy, f.bytes, f.size);
    struct pi_jit_symfile out;
    assert_int_equal(pi_jitentry_parse(copy, f.size, JIT_SYMFILE_MACHINE, CODE_ADDR, &out), 0);
    assert_int_equal(out.text_addr, CODE_ADDR);
    assert_int_equal(out.text_size, CODE_SIZE);
    assert_int_equal(out.symbol_len, strlen("py::jit:executor"));
    assert_memory_equal(out.symbol, "py::jit:executor", out.symbol_len);
    assert_true(out.has_cfi);
    assert_int_equal(out.cfi.code_align, 1);
    assert_int_equal(out.cfi.data_align, -8);
    assert_int_equal(out.cfi.ra_column, 16);
    assert_true(out.cfi.cie_len >= sizeof jit_symfile_cie);
    assert_memory_equal(out.cfi.cie_insns, jit_symfile_cie, sizeof jit_symfile_cie);
    assert_true(out.cfi.fde_len >= sizeof jit_symfile_fde);
    assert_memory_equal(out.cfi.fde_insns, jit_symfile_fde, sizeof jit_symfile_fde);
    free(copy);
    /* 0: wherever the code is */
    assert_int_equal(parse(&f, f.size, 0, &out), 0);
}

static void test_every_prefix_is_refused_safely(void **state)
{
    (void)state;
    static struct jit_symfile f;
    build(&f, jit_symfile_cie, sizeof jit_symfile_cie, "py::jit:executor");
    struct pi_jit_symfile out;
    /* The section headers come last: any shorter file lacks them. */
    for (size_t size = 0; size < f.size; size++)
        assert_int_equal(parse(&f, size, CODE_ADDR, &out), -1);
}

static void test_files_of_another_form_are_refused(void **state)
{
    (void)state;
    static struct jit_symfile f;
    struct pi_jit_symfile out;
    build(&f, jit_symfile_cie, sizeof jit_symfile_cie, "py::jit:executor");
    assert_int_equal(parse(&f, f.size, CODE_ADDR + 16, &out), -1); /* code elsewhere */
    assert_int_equal(pi_jitentry_parse(f.bytes, f.size, JIT_SYMFILE_MACHINE == 62 ? 183 : 62, 0,
                                       &out),
                     -1); /* another machine */

    Elf64_Sym sym;
    memcpy(&sym, f.bytes + f.sym_at, sizeof sym);
    sym.st_size = CODE_SIZE - 1; /* a symbol that is not the whole code */
    memcpy(f.bytes + f.sym_at, &sym, sizeof sym);
    assert_int_equal(parse(&f, f.size, 0, &out), -1);

    build(&f, jit_symfile_cie, sizeof jit_symfile_cie, "py::jit:executor");
    Elf64_Ehdr eh;
    memcpy(&eh, f.bytes, sizeof eh);
    eh.e_shstrndx = 40; /* no such section */
    memcpy(f.bytes, &eh, sizeof eh);
    assert_int_equal(parse(&f, f.size, 0, &out), -1);
}

static void test_cfi_that_cannot_move_is_left_out(void **state)
{
    (void)state;
    static struct jit_symfile f;
    struct pi_jit_symfile out;
    /* DW_CFA_expression: the file is read, its rules are not kept. */
    static const uint8_t expression[] = {0x10, 0x06, 0x02, 0x76, 0x00};
    build(&f, expression, sizeof expression, "py::jit:executor");
    assert_int_equal(parse(&f, f.size, 0, &out), 0);
    assert_false(out.has_cfi);
    /* An FDE that points at other code. */
    build(&f, jit_symfile_cie, sizeof jit_symfile_cie, "py::jit:executor");
    uint64_t elsewhere = CODE_ADDR + 0x100;
    size_t cie_len;
    uint32_t len32;
    memcpy(&len32, f.bytes + f.eh_at, 4);
    cie_len = 4 + len32;
    memcpy(f.bytes + f.eh_at + cie_len + 8, &elsewhere, 8);
    assert_int_equal(parse(&f, f.size, 0, &out), 0);
    assert_false(out.has_cfi);
}

int main(void)
{
    const struct CMUnitTest tests[] = {
        cmocka_unit_test(test_cpythons_file_is_read),
        cmocka_unit_test(test_every_prefix_is_refused_safely),
        cmocka_unit_test(test_files_of_another_form_are_refused),
        cmocka_unit_test(test_cfi_that_cannot_move_is_left_out),
    };
    return cmocka_run_group_tests_name("jitentry", tests, NULL, NULL);
}
