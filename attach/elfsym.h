/* The value of a defined symbol in an ELF file's dynamic symbol table:
 * where a function of a mapped library is, given where the library is. */
#ifndef PA_ELFSYM_H
#define PA_ELFSYM_H

#include <stddef.h>
#include <stdint.h>

/* Looks `name` up in .dynsym of the ELF64 little-endian image buf[0, len).
 * Returns 0 with *value (st_value: an offset from the load base for a
 * shared object), or -1 if the image is not such a file or does not define
 * the name. Reads only within the buffer. Pure. */
int pa_elf_dynsym(const uint8_t *buf, size_t len, const char *name, uint64_t *value);

/* The same for a file. -1 also when it cannot be read. */
int pa_elf_file_dynsym(const char *path, const char *name, uint64_t *value);

#endif
