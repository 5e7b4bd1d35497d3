/* See jit_symfile.h. */
#include "jit_symfile.h"

#include <elf.h>
#include <string.h>

const uint8_t jit_symfile_cie[5] = {0x0c, 0x07, 0x08, 0x90, 0x01};
const uint8_t jit_symfile_fde[3] = {0x41, 0x0e, 0x10};

static size_t put(struct jit_symfile *f, const void *p, size_t n)
{
    size_t at = f->size;
    memcpy(f->bytes + at, p, n);
    f->size += n;
    return at;
}

static void align8(struct jit_symfile *f)
{
    while (f->size % 8)
        f->bytes[f->size++] = 0;
}

static size_t put_eh_frame(struct jit_symfile *f, uint64_t addr, uint64_t size, const uint8_t *cie,
                           size_t cie_len)
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
    uint64_t begin = addr, range = size;
    memcpy(fde_body + m, &back, 4), m += 4;
    memcpy(fde_body + m, &begin, 8), m += 8;
    memcpy(fde_body + m, &range, 8), m += 8;
    fde_body[m++] = 0; /* augmentation data length */
    memcpy(fde_body + m, jit_symfile_fde, sizeof jit_symfile_fde), m += sizeof jit_symfile_fde;
    while ((m + 4) % 8)
        fde_body[m++] = 0;
    len = (uint32_t)m;
    put(f, &len, 4);
    put(f, fde_body, m);
    uint32_t end = 0;
    put(f, &end, 4);
    return start;
}

void jit_symfile_build(struct jit_symfile *f, uint64_t addr, uint64_t size, const uint8_t *cie,
                       size_t cie_len, const char *symbol)
{
    memset(f, 0, sizeof *f);
    f->size = sizeof(Elf64_Ehdr);
    static const char shstr[] = "\0.text\0.eh_frame\0.symtab\0.strtab\0.shstrtab";
    size_t shstr_at = put(f, shstr, sizeof shstr);
    align8(f);
    f->eh_at = put_eh_frame(f, addr, size, cie, cie_len);
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
    syms[1].st_value = addr;
    syms[1].st_size = size;
    size_t sym_at = put(f, syms, sizeof syms);
    f->sym_at = sym_at + sizeof(Elf64_Sym);
    align8(f);
    Elf64_Shdr sh[6];
    memset(sh, 0, sizeof sh);
    sh[1] = (Elf64_Shdr){.sh_name = 1, .sh_type = SHT_NOBITS, .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
                         .sh_addr = addr, .sh_size = size};
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
    eh.e_machine = JIT_SYMFILE_MACHINE;
    eh.e_version = EV_CURRENT;
    eh.e_ehsize = sizeof eh;
    eh.e_shoff = sh_at;
    eh.e_shentsize = sizeof(Elf64_Shdr);
    eh.e_shnum = 6;
    eh.e_shstrndx = 5;
    memcpy(f->bytes, &eh, sizeof eh);
}

