/* Dynamic symbols of an ELF file (elfsym.h). */
#include "elfsym.h"

#include <elf.h>
#include <fcntl.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static int within(size_t len, uint64_t off, uint64_t size)
{
    return off <= len && size <= len - off;
}

int pa_elf_dynsym(const uint8_t *buf, size_t len, const char *name, uint64_t *value)
{
    Elf64_Ehdr eh;
    if (len < sizeof eh)
        return -1;
    memcpy(&eh, buf, sizeof eh);
    if (memcmp(eh.e_ident, ELFMAG, SELFMAG) != 0 || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
        eh.e_ident[EI_DATA] != ELFDATA2LSB || eh.e_shentsize != sizeof(Elf64_Shdr) ||
        !within(len, eh.e_shoff, (uint64_t)eh.e_shnum * sizeof(Elf64_Shdr)))
        return -1;
    size_t name_len = strlen(name);
    for (unsigned i = 0; i < eh.e_shnum; i++) {
        Elf64_Shdr sh, str;
        memcpy(&sh, buf + eh.e_shoff + i * sizeof sh, sizeof sh);
        if (sh.sh_type != SHT_DYNSYM || sh.sh_link >= eh.e_shnum ||
            !within(len, sh.sh_offset, sh.sh_size))
            continue;
        memcpy(&str, buf + eh.e_shoff + sh.sh_link * sizeof str, sizeof str);
        if (!within(len, str.sh_offset, str.sh_size))
            continue;
        for (uint64_t at = 0; at + sizeof(Elf64_Sym) <= sh.sh_size; at += sizeof(Elf64_Sym)) {
            Elf64_Sym sym;
            memcpy(&sym, buf + sh.sh_offset + at, sizeof sym);
            if (sym.st_shndx == SHN_UNDEF || sym.st_name >= str.sh_size ||
                str.sh_size - sym.st_name <= name_len)
                continue;
            const char *s = (const char *)buf + str.sh_offset + sym.st_name;
            if (memcmp(s, name, name_len) == 0 && s[name_len] == '\0') {
                *value = sym.st_value;
                return 0;
            }
        }
    }
    return -1;
}

int pa_elf_file_dynsym(const char *path, const char *name, uint64_t *value)
{
    int fd = open(path, O_RDONLY | O_CLOEXEC);
    struct stat st;
    if (fd < 0)
        return -1;
    int rc = -1;
    if (fstat(fd, &st) == 0 && st.st_size > 0 && st.st_size < (1 << 30)) {
        uint8_t *buf = malloc((size_t)st.st_size);
        if (buf != NULL && read(fd, buf, (size_t)st.st_size) == st.st_size)
            rc = pa_elf_dynsym(buf, (size_t)st.st_size, name, value);
        free(buf);
    }
    close(fd);
    return rc;
}
