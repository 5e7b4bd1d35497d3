/* The GDB JIT interface's symbol file for one arena (gdbjit_elf.h). */
#include "gdbjit_elf.h"

#include <elf.h>
#include <stdatomic.h>
#include <string.h>

enum { SEC_NULL, SEC_TEXT, SEC_EH_FRAME, SEC_SYMTAB, SEC_STRTAB, SEC_SHSTRTAB, SEC_COUNT };

/* Section names, each after a NUL; name_at[] gives their offsets. */
static const char shstrtab[] = "\0.text\0.eh_frame\0.symtab\0.strtab\0.shstrtab";
static const uint32_t name_at[SEC_COUNT] = {0, 1, 7, 17, 25, 33};

static uint64_t round_up(uint64_t v, uint64_t to)
{
    return (v + to - 1) / to * to;
}

struct layout {
    uint32_t cie_size, fde_size;
    uint64_t eh_off, sym_off, str_off, end;
};

static int plan(const struct pi_tramp_shape *shape, uint32_t max_syms, size_t name_max,
                struct layout *l)
{
    l->cie_size = (uint32_t)pi_ehframe_abs_cie(shape, NULL, 0);
    l->fde_size = (uint32_t)pi_ehframe_abs_fde(shape, 0, 0, NULL, 0);
    if (l->cie_size == 0 || l->fde_size == 0 || l->fde_size > sizeof ((struct pi_gdbelf *)0)->fde ||
        max_syms == 0)
        return -1;
    uint64_t shdrs = sizeof(Elf64_Ehdr);
    uint64_t names = shdrs + SEC_COUNT * sizeof(Elf64_Shdr);
    l->eh_off = round_up(names + sizeof shstrtab, 8);
    l->sym_off = round_up(l->eh_off + l->cie_size + (uint64_t)max_syms * l->fde_size, 8);
    l->str_off = l->sym_off + ((uint64_t)max_syms + 1) * sizeof(Elf64_Sym);
    l->end = l->str_off + 1 + (uint64_t)max_syms * (name_max + 1);
    return 0;
}

size_t pi_gdbelf_reserve(const struct pi_tramp_shape *shape, uint32_t max_syms, size_t name_max)
{
    struct layout l;
    return plan(shape, max_syms, name_max, &l) == 0 ? (size_t)l.end : 0;
}

static Elf64_Shdr *shdr(const struct pi_gdbelf *e, int i)
{
    return (Elf64_Shdr *)(void *)(e->base + sizeof(Elf64_Ehdr)) + i;
}

/* A size that makes bytes already written part of the file: the compiler
 * keeps program order around it, which is all a debugger that stops this
 * thread (or a core dump) can observe. */
static void publish(volatile uint64_t *where, uint64_t value)
{
    atomic_signal_fence(memory_order_seq_cst);
    *where = value;
    atomic_signal_fence(memory_order_seq_cst);
}

int pi_gdbelf_init(struct pi_gdbelf *e, uint8_t *base, size_t cap, volatile uint64_t *size,
                   const struct pi_tramp_shape *shape, uint32_t max_syms, size_t name_max,
                   uint64_t text_addr, uint64_t text_size)
{
    struct layout l;
    if (plan(shape, max_syms, name_max, &l) != 0 || l.end > cap)
        return -1;
    *e = (struct pi_gdbelf){
        .base = base, .size = size, .max_syms = max_syms,
        .cie_size = l.cie_size, .fde_size = l.fde_size, .eh_off = l.eh_off,
        .sym_off = l.sym_off, .str_off = l.str_off,
        .str_used = 1, /* the empty name */
    };

    Elf64_Ehdr *h = (Elf64_Ehdr *)(void *)base;
    memcpy(h->e_ident, ELFMAG, SELFMAG);
    h->e_ident[EI_CLASS] = ELFCLASS64;
    h->e_ident[EI_DATA] = ELFDATA2LSB;
    h->e_ident[EI_VERSION] = EV_CURRENT;
    h->e_ident[EI_OSABI] = ELFOSABI_NONE;
    h->e_type = ET_DYN; /* addresses are absolute: the debugger relocates nothing */
    h->e_machine = (Elf64_Half)pi_arch_elf_mach(shape->arch);
    h->e_version = EV_CURRENT;
    h->e_ehsize = sizeof(Elf64_Ehdr);
    h->e_shoff = sizeof(Elf64_Ehdr);
    h->e_shentsize = sizeof(Elf64_Shdr);
    h->e_shnum = SEC_COUNT;
    h->e_shstrndx = SEC_SHSTRTAB;

    uint64_t names_off = sizeof(Elf64_Ehdr) + SEC_COUNT * sizeof(Elf64_Shdr);
    memcpy(base + names_off, shstrtab, sizeof shstrtab);
    if (pi_ehframe_abs_cie(shape, base + l.eh_off, l.cie_size) != l.cie_size ||
        pi_ehframe_abs_fde(shape, 0, 0, e->fde, sizeof e->fde) != l.fde_size)
        return -1;

    const struct {
        int index;
        Elf64_Word type;
        Elf64_Xword flags;
        uint64_t addr, off, size, align, entsize;
        Elf64_Word link, info;
    } sections[] = {
        {SEC_TEXT, SHT_NOBITS, SHF_ALLOC | SHF_EXECINSTR, text_addr, names_off, text_size, 16,
         0, 0, 0},
        /* .eh_frame's address is where its bytes are: nothing else claims it */
        {SEC_EH_FRAME, SHT_PROGBITS, SHF_ALLOC, (uintptr_t)(base + l.eh_off), l.eh_off,
         l.cie_size, 8, 0, 0, 0},
        /* sh_info: index of the first non-local symbol (all but the null one) */
        {SEC_SYMTAB, SHT_SYMTAB, 0, 0, l.sym_off, sizeof(Elf64_Sym), 8, sizeof(Elf64_Sym),
         SEC_STRTAB, 1},
        {SEC_STRTAB, SHT_STRTAB, 0, 0, l.str_off, 1, 1, 0, 0, 0},
        {SEC_SHSTRTAB, SHT_STRTAB, 0, 0, names_off, sizeof shstrtab, 1, 0, 0, 0},
    };
    for (size_t i = 0; i < sizeof sections / sizeof *sections; i++) {
        Elf64_Shdr *s = shdr(e, sections[i].index);
        s->sh_name = name_at[sections[i].index];
        s->sh_type = sections[i].type;
        s->sh_flags = sections[i].flags;
        s->sh_addr = sections[i].addr;
        s->sh_offset = sections[i].off;
        s->sh_size = sections[i].size;
        s->sh_addralign = sections[i].align;
        s->sh_entsize = sections[i].entsize;
        s->sh_link = sections[i].link;
        s->sh_info = sections[i].info;
    }
    publish(size, l.str_off + e->str_used);
    return 0;
}

int pi_gdbelf_add(struct pi_gdbelf *e, uint64_t addr, uint32_t code_size, const char *name,
                  size_t len)
{
    if (e->nsyms >= e->max_syms)
        return -1;
    /* The bytes, outside the published sizes. */
    uint64_t name_off = e->str_used;
    memcpy(e->base + e->str_off + name_off, name, len);
    e->base[e->str_off + name_off + len] = '\0';
    uint64_t fde_off = e->cie_size + (uint64_t)e->nsyms * e->fde_size;
    uint8_t *fde = e->base + e->eh_off + fde_off;
    memcpy(fde, e->fde, e->fde_size);
    pi_ehframe_abs_fde_move(fde, addr, (uint32_t)fde_off);
    Elf64_Sym sym = {
        .st_name = (Elf64_Word)name_off,
        .st_info = ELF64_ST_INFO(STB_GLOBAL, STT_FUNC),
        .st_other = STV_DEFAULT,
        .st_shndx = SEC_TEXT,
        .st_value = addr,
        .st_size = code_size,
    };
    memcpy(e->base + e->sym_off + (uint64_t)(e->nsyms + 1) * sizeof sym, &sym, sizeof sym);

    /* Then the sizes: the file, the strings, the FDE, the symbol last. */
    e->str_used += len + 1;
    e->nsyms++;
    publish(e->size, e->str_off + e->str_used);
    publish((volatile uint64_t *)&shdr(e, SEC_STRTAB)->sh_size, e->str_used);
    publish((volatile uint64_t *)&shdr(e, SEC_EH_FRAME)->sh_size,
            e->cie_size + (uint64_t)e->nsyms * e->fde_size);
    publish((volatile uint64_t *)&shdr(e, SEC_SYMTAB)->sh_size,
            ((uint64_t)e->nsyms + 1) * sizeof(Elf64_Sym));
    return 0;
}
