/* A process's mapped files (/proc/PID/maps): where a library is loaded. */
#ifndef PA_PROCMAPS_H
#define PA_PROCMAPS_H

#include <stddef.h>
#include <stdint.h>

/* In maps text (the contents of /proc/PID/maps), the first file whose
 * base name starts with `prefix` and continues with ".so" or "-" or "."
 * (libc.so.6, libc-2.31.so, libpython3.11.so.1.0), mapped at offset 0.
 * Returns 0 with its load address and path (path_len bytes), or -1.
 * Pure. */
int pa_maps_find(const char *maps, const char *prefix, uint64_t *base, char *path,
                 size_t path_len);

/* In maps text, the path of the executable mapping that holds addr, into
 * path (path_len bytes). Returns 0, or -1 (anonymous, not executable, or
 * not mapped). Pure. */
int pa_maps_code_owner(const char *maps, uint64_t addr, char *path, size_t path_len);

/* The maps text of pid, NUL-terminated, malloc'd (free it), or NULL. */
char *pa_maps_read(int pid);

#endif
