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

#include "jitentry.h"

enum { CODE_ADDR = 0x7f0000001000, CODE_SIZE = 0x77e };

/* CIE: DW_CFA_def_cfa rsp+8, DW_CFA_offset rip at cfa-8. FDE: advance 1,
 * def_cfa_offset 16. */
static const uint8_t cie_insns[] = {0x0c, 0x07, 0x08, 0x90, 0x01};
static const uint8_t fde_insns[] = {0x41, 0x0e, 0x10};

struct file {
    uint8_t bytes[2048];
    size_t size;
    size_t sym_at, eh_at; /* offsets of the function symbol and .eh_frame */
};

static size_t put(struct file *f, const void *p, size_t n)
{
    size_t at = f->size;
    memcpy(f->bytes + at, p, n);
    f->size += n;
    return at;
}

static void align8(struct file *f)
{
    while (f->size % 8)
        f->bytes[f->size++] = 0;
}

static size_t put_eh_frame(struct file *f, const uint8_t *cie, size_t cie_len)
{
    size_t start = f->size;
    uint8_t cie_body[64] = {0, 0, 0, 0, 1, 'z', 'R', 0, 1, 0x78 /* -8 */, 16, 1, 0x00};
    size_t n = 13;
    memcpy(cie_body + n, cie, cie_len);
    n += cie_len;
    while ((n + 4) % 8)
        cie_body[n++] = 0;
    uint32_t len = (uint32_t)n;
    put(f, &len, 4);
    put(f, cie_body, n);
    size_t fde_start = f->size;
    uint8_t fde_body[64];
    size_t m = 0;
    uint32_t back = (uint32_t)(fde_start + 4 - start);
    uint64_t begin = CODE_ADDR, range = CODE_SIZE;
    memcpy(fde_body + m, &back, 4), m += 4;
    memcpy(fde_body + m, &begin, 8), m += 8;
    memcpy(fde_body + m, &range, 8), m += 8;
    fde_body[m++] = 0; /* augmentation data length */
    memcpy(fde_body + m, fde_insns, sizeof fde_insns), m += sizeof fde_insns;
    while ((m + 4) % 8)
        fde_body[m++] = 0;
    len = (uint32_t)m;
    put(f, &len, 4);
    put(f, fde_body, m);
    uint32_t end = 0;
    put(f, &end, 4);
    return start;
}

/* The file as CPython writes it: .text (no bytes: the code is elsewhere),
 * .eh_frame, .symtab with one function symbol over .text, .strtab. */
static void build(struct file *f, const uint8_t *cie, size_t cie_len, const char *symbol)
{
    memset(f, 0, sizeof *f);
    f->size = sizeof(Elf64_Ehdr);
    static const char shstr[] = "\0.text\0.eh_frame\0.symtab\0.strtab\0.shstrtab";
    size_t shstr_at = put(f, shstr, sizeof shstr);
    align8(f);
    f->eh_at = put_eh_frame(f, cie, cie_len);
    size_t eh_size = f->size - f->eh_at;
    align8(f);
    char strtab[128] = "";
    size_t strtab_len = 1 + strlen(symbol) + 1;
    memcpy(strtab + 1, symbol, strlen(symbol) + 1);
    size_t strtab_at = put(f, strtab, strtab_len);
    align8(f);
    Elf64_Sym syms[2];
    memset(syms, 0, sizeof syms);
    syms[1].st_name = 1;
    syms[1].st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC);
    syms[1].st_shndx = 1;
    syms[1].st_value = CODE_ADDR;
    syms[1].st_size = CODE_SIZE;
    size_t sym_at = put(f, syms, sizeof syms);
    f->sym_at = sym_at + sizeof(Elf64_Sym);
    align8(f);
    Elf64_Shdr sh[6];
    memset(sh, 0, sizeof sh);
    sh[1] = (Elf64_Shdr){.sh_name = 1, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
                         .sh_addr = CODE_ADDR, .sh_size = CODE_SIZE};
    sh[2] = (Elf64_Shdr){.sh_name = 7, .sh_type = SHT_PROGBITS, .sh_flags = SHF_ALLOC,
                         .sh_offset = f->eh_at, .sh_size = eh_size};
    sh[3] = (Elf64_Shdr){.sh_name = 17, .sh_type = SHT_SYMTAB, .sh_offset = sym_at,
                         .sh_size = sizeof syms, .sh_link = 4, .sh_entsize = sizeof(Elf64_Sym)};
    sh[4] = (Elf64_Shdr){.sh_name = 25, .sh_type = SHT_STRTAB, .sh_offset = strtab_at,
                         .sh_size = strtab_len};
    sh[5] = (Elf64_Shdr){.sh_name = 33, .sh_type = SHT_STRTAB, .sh_offset = shstr_at,
                         .sh_size = sizeof shstr};
    size_t sh_at = put(f, sh, sizeof sh);
    Elf64_Ehdr eh;
    memset(&eh, 0, sizeof eh);
    memcpy(eh.e_ident, ELFMAG, SELFMAG);
    eh.e_ident[EI_CLASS] = ELFCLASS64;
    eh.e_ident[EI_DATA] = ELFDATA2LSB;
    eh.e_ident[EI_VERSION] = EV_CURRENT;
    eh.e_type = ET_REL;
    eh.e_machine = EM_X86_64;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    eh.e_shoff = sh_at;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 6;
    eh.e_shstrndx = 5;
    memcpy(f->bytes, &eh, sizeof eh);
}

/* Parses a heap copy of exactly `size` bytes. */
static int parse(const struct file *f, size_t size, uint64_t code_addr, struct pi_jit_symfile *out)
{
    uint8_t *copy = malloc(size ? size : 1);
    assert_non_null(copy);
    memcpy(copy, f->bytes, size);
    int rc = pi_jitentry_parse(copy, size, EM_X86_64, code_addr, out);
    free(copy);
    return rc;
}

static void test_cpythons_file_is_read(void **state)
{
    (void)state;
    static struct file f;
    build(&f, cie_insns, sizeof cie_insns, "py::jit:executor");
    uint8_t *copy = malloc(f.size);
    memcpy(copy, f.bytes, f.size);
    struct pi_jit_symfile out;
    assert_int_equal(pi_jitentry_parse(copy, f.size, EM_X86_64, CODE_ADDR, &out), 0);
    assert_int_equal(out.text_addr, CODE_ADDR);
    assert_int_equal(out.text_size, CODE_SIZE);
    assert_int_equal(out.symbol_len, strlen("py::jit:executor"));
    assert_memory_equal(out.symbol, "py::jit:executor", out.symbol_len);
    assert_true(out.has_cfi);
    assert_int_equal(out.cfi.code_align, 1);
    assert_int_equal(out.cfi.data_align, -8);
    assert_int_equal(out.cfi.ra_column, 16);
    assert_true(out.cfi.cie_len >= sizeof cie_insns);
    assert_memory_equal(out.cfi.cie_insns, cie_insns, sizeof cie_insns);
    assert_true(out.cfi.fde_len >= sizeof fde_insns);
    assert_memory_equal(out.cfi.fde_insns, fde_insns, sizeof fde_insns);
    free(copy);
    /* 0: wherever the code is */
    assert_int_equal(parse(&f, f.size, 0, &out), 0);
}

static void test_every_prefix_is_refused_safely(void **state)
{
    (void)state;
    static struct file f;
    build(&f, cie_insns, sizeof cie_insns, "py::jit:executor");
    struct pi_jit_symfile out;
    /* The section headers come last: any shorter file lacks them. */
    for (size_t size = 0; size < f.size; size++)
        assert_int_equal(parse(&f, size, CODE_ADDR, &out), -1);
}

static void test_files_of_another_form_are_refused(void **state)
{
    (void)state;
    static struct file f;
    struct pi_jit_symfile out;
    build(&f, cie_insns, sizeof cie_insns, "py::jit:executor");
    assert_int_equal(parse(&f, f.size, CODE_ADDR + 16, &out), -1); /* code elsewhere */
    assert_int_equal(pi_jitentry_parse(f.bytes, f.size, EM_AARCH64, 0, &out), -1);

    Elf64_Sym sym;
    memcpy(&sym, f.bytes + f.sym_at, sizeof sym);
    sym.st_size = CODE_SIZE - 1; /* a symbol that is not the whole code */
    memcpy(f.bytes + f.sym_at, &sym, sizeof sym);
    assert_int_equal(parse(&f, f.size, 0, &out), -1);

    build(&f, cie_insns, sizeof cie_insns, "py::jit:executor");
    Elf64_Ehdr eh;
    memcpy(&eh, f.bytes, sizeof eh);
    eh.e_shstrndx = 40; /* no such section */
    memcpy(f.bytes, &eh, sizeof eh);
    assert_int_equal(parse(&f, f.size, 0, &out), -1);
}

static void test_cfi_that_cannot_move_is_left_out(void **state)
{
    (void)state;
    static struct file f;
    struct pi_jit_symfile out;
    /* DW_CFA_expression: the file is read, its rules are not kept. */
    static const uint8_t expression[] = {0x10, 0x06, 0x02, 0x76, 0x00};
    build(&f, expression, sizeof expression, "py::jit:executor");
    assert_int_equal(parse(&f, f.size, 0, &out), 0);
    assert_false(out.has_cfi);
    /* An FDE that points at other code. */
    build(&f, cie_insns, sizeof cie_insns, "py::jit:executor");
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
