/* GDB JIT symbol files of CPython's JIT (jitentry.h). Formats: the ELF-64
 * object file format (section headers, symbol table) and LSB 4.1
 * "Exception Frames" (.eh_frame, CIE and FDE). */
#include "jitentry.h"

#include <elf.h>
#include <string.h>

/* A bounded byte range of the file. */
struct span {
    const uint8_t *p;
    uint64_t len;
};

static int sub(struct span s, uint64_t off, uint64_t len, struct span *out)
{
    if (off > s.len || len > s.len - off)
        return -1;
    *out = (struct span){s.p + off, len};
    return 0;
}

static const Elf64_Shdr *section(struct span file, const Elf64_Ehdr *eh, unsigned i)
{
    struct span s;
    if (i >= eh->e_shnum ||
        sub(file, eh->e_shoff + (uint64_t)i * sizeof(Elf64_Shdr), sizeof(Elf64_Shdr), &s) != 0)
        return NULL;
    return (const Elf64_Shdr *)(const void *)s.p;
}

/* The NUL-terminated string at `off` of a string table, or NULL. */
static const char *string_at(struct span table, uint64_t off, size_t *len)
{
    if (off >= table.len)
        return NULL;
    const void *end = memchr(table.p + off, '\0', table.len - off);
    if (end == NULL)
        return NULL;
    *len = (size_t)((const uint8_t *)end - (table.p + off));
    return (const char *)(table.p + off);
}

static const Elf64_Shdr *find_section(struct span file, const Elf64_Ehdr *eh, struct span names,
                                      const char *want)
{
    for (unsigned i = 1; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = section(file, eh, i);
        size_t len;
        const char *name = sh ? string_at(names, sh->sh_name, &len) : NULL;
        if (name && strcmp(name, want) == 0)
            return sh;
    }
    return NULL;
}

/* The first function symbol of .symtab, which must be the whole of .text:
 * one executor per file, as CPython writes them (a debugger's list holds
 * other JITs' files too, the library's own among them). */
static int function_symbol(struct span file, const Elf64_Ehdr *eh, struct pi_jit_symfile *out)
{
    for (unsigned i = 1; i < eh->e_shnum; i++) {
        const Elf64_Shdr *sh = section(file, eh, i);
        if (!sh || sh->sh_type != SHT_SYMTAB || sh->sh_entsize != sizeof(Elf64_Sym))
            continue;
        const Elf64_Shdr *strsh = section(file, eh, sh->sh_link);
        struct span syms, strs;
        if (!strsh || sub(file, sh->sh_offset, sh->sh_size, &syms) != 0 ||
            sub(file, strsh->sh_offset, strsh->sh_size, &strs) != 0)
            return -1;
        for (uint64_t k = 0; k + sizeof(Elf64_Sym) <= syms.len; k += sizeof(Elf64_Sym)) {
            Elf64_Sym sym;
            memcpy(&sym, syms.p + k, sizeof sym);
            if (ELF64_ST_TYPE(sym.st_info) != STT_FUNC)
                continue;
            if (sym.st_value != out->text_addr || sym.st_size != out->text_size)
                return -1;
            out->symbol = string_at(strs, sym.st_name, &out->symbol_len);
            return out->symbol ? 0 : -1;
        }
    }
    return -1;
}

/* Little readers over a span; each fails past the end. */
struct reader {
    struct span s;
    uint64_t at;
    int bad;
};

static uint64_t read_fixed(struct reader *r, unsigned n)
{
    uint64_t v = 0;
    if (r->bad || n > r->s.len - r->at || r->at > r->s.len) {
        r->bad = 1;
        return 0;
    }
    memcpy(&v, r->s.p + r->at, n); /* little-endian hosts only (x86-64, AArch64) */
    r->at += n;
    return v;
}

static uint64_t read_uleb(struct reader *r)
{
    uint64_t v = 0;
    for (unsigned shift = 0; !r->bad; shift += 7) {
        if (r->at >= r->s.len || shift > 63) {
            r->bad = 1;
            break;
        }
        uint8_t b = r->s.p[r->at++];
        v |= (uint64_t)(b & 0x7f) << shift;
        if (!(b & 0x80))
            return v;
    }
    return 0;
}

static int64_t read_sleb(struct reader *r)
{
    uint64_t v = 0;
    unsigned shift = 0;
    uint8_t b = 0;
    do {
        if (r->bad || r->at >= r->s.len || shift > 63) {
            r->bad = 1;
            return 0;
        }
        b = r->s.p[r->at++];
        v |= (uint64_t)(b & 0x7f) << shift;
        shift += 7;
    } while (b & 0x80);
    if (shift < 64 && (b & 0x40))
        v |= ~(uint64_t)0 << shift;
    return (int64_t)v;
}

/* The CIE at the start of .eh_frame and the FDE after it, as CPython writes
 * them: augmentation "zR" with absolute pointers, the FDE covering .text. */
static int read_cfi(struct span eh, struct pi_jit_symfile *out)
{
    struct reader r = {eh, 0, 0};
    uint64_t cie_len = read_fixed(&r, 4);
    if (r.bad || cie_len == 0 || cie_len >= 0xfffffff0u || cie_len > eh.len - 4)
        return -1;
    uint64_t cie_end = 4 + cie_len;
    if (read_fixed(&r, 4) != 0) /* CIE id */
        return -1;
    uint64_t version = read_fixed(&r, 1);
    const char *aug = (const char *)(r.s.p + r.at);
    if (r.bad || (version != 1 && version != 3) || cie_end - r.at < 3 ||
        memcmp(aug, "zR", 3) != 0)
        return -1;
    r.at += 3;
    out->cfi.code_align = (uint32_t)read_uleb(&r);
    out->cfi.data_align = (int32_t)read_sleb(&r);
    out->cfi.ra_column = (uint8_t)(version == 1 ? read_fixed(&r, 1) : read_uleb(&r));
    uint64_t aug_len = read_uleb(&r);
    uint64_t encoding = read_fixed(&r, 1);
    if (r.bad || aug_len != 1 || encoding != 0 /* DW_EH_PE_absptr */ || r.at > cie_end)
        return -1;
    out->cfi.cie_insns = r.s.p + r.at;
    out->cfi.cie_len = (size_t)(cie_end - r.at);

    r.at = cie_end;
    uint64_t fde_len = read_fixed(&r, 4);
    if (r.bad || fde_len == 0 || fde_len >= 0xfffffff0u || fde_len > eh.len - r.at)
        return -1;
    uint64_t fde_end = r.at + fde_len;
    uint64_t back = read_fixed(&r, 4);
    uint64_t pc_begin = read_fixed(&r, 8);
    uint64_t range = read_fixed(&r, 8);
    uint64_t fde_aug = read_uleb(&r);
    if (r.bad || back != cie_end + 4 || pc_begin != out->text_addr || range < out->text_size ||
        fde_aug > fde_end - r.at)
        return -1;
    r.at += fde_aug;
    if (r.at > fde_end)
        return -1;
    out->cfi.fde_insns = r.s.p + r.at;
    out->cfi.fde_len = (size_t)(fde_end - r.at);
    if (!pi_cfi_insns_portable(out->cfi.cie_insns, out->cfi.cie_len) ||
        !pi_cfi_insns_portable(out->cfi.fde_insns, out->cfi.fde_len) || out->cfi.code_align == 0)
        return -1;
    return 0;
}

int pi_jitentry_parse(const void *data, uint64_t size, uint16_t machine, uint64_t code_addr,
                      struct pi_jit_symfile *out)
{
    memset(out, 0, sizeof *out);
    struct span file = {data, size};
    if (data == NULL || size < sizeof(Elf64_Ehdr))
        return -1;
    const Elf64_Ehdr *eh = data;
    if (memcmp(eh->e_ident, ELFMAG, SELFMAG) != 0 || eh->e_ident[EI_CLASS] != ELFCLASS64 ||
        eh->e_ident[EI_DATA] != ELFDATA2LSB || eh->e_machine != machine ||
        eh->e_shentsize != sizeof(Elf64_Shdr) || eh->e_shnum == 0)
        return -1;
    const Elf64_Shdr *shstr = section(file, eh, eh->e_shstrndx);
    struct span names;
    if (!shstr || sub(file, shstr->sh_offset, shstr->sh_size, &names) != 0)
        return -1;
    const Elf64_Shdr *text = find_section(file, eh, names, ".text");
    if (!text || (code_addr != 0 && text->sh_addr != code_addr) || text->sh_size == 0 ||
        text->sh_size > PI_JIT_MAX_CODE)
        return -1;
    out->text_addr = text->sh_addr;
    out->text_size = text->sh_size;
    if (function_symbol(file, eh, out) != 0)
        return -1;
    const Elf64_Shdr *ehs = find_section(file, eh, names, ".eh_frame");
    struct span frame;
    if (ehs && sub(file, ehs->sh_offset, ehs->sh_size, &frame) == 0 && read_cfi(frame, out) == 0)
        out->has_cfi = 1;
    else
        memset(&out->cfi, 0, sizeof out->cfi);
    return 0;
}
