/* Keeping the process's own ELF files next to its profile.
 *
 * perf symbolises and unwinds a sample in /usr/bin/python3.11 with the file
 * at that path on the host. For a process in a container that is another
 * build (or no file at all): garbage frames, broken chains. With
 * PYPERFINJECT_KEEP_BINARIES=1 the library copies every ELF object mapped at
 * start-up (the interpreter, libpython, libc, ...) into
 * DIR/binaries/<build-id>/<file name>, once per build id and directory; the
 * host side (`pyperf-run import`) gives them to perf's build-id cache, and a
 * recording made with `perf record --buildid-mmap` then finds them by build
 * id, whatever the host has at the path. */
#ifndef PI_BINARIES_H
#define PI_BINARIES_H

#include <stddef.h>
#include <stdint.h>

/* Finds the GNU build id in a run of ELF notes (a PT_NOTE segment) and
 * writes it as lower-case hex into hex. Returns its length in characters,
 * or -1 if there is none or it doesn't fit. Pure. */
int pi_build_id_hex(const uint8_t *notes, size_t len, char *hex, size_t cap);

/* Builds "<dir>/binaries/<hex>/<base name of file>". Returns 0, or -1 if it
 * doesn't fit or file has no base name. Pure. */
int pi_binaries_path(char *path, size_t cap, const char *dir, const char *hex, const char *file);

/* Copies the objects the process has mapped, skipping those already kept
 * and the library itself. Returns the number of files copied, or -1 with a
 * one-line reason in err (what was copied before stays). Runs once, at
 * activation; takes no lock of the host's but the loader's, and only while
 * listing the objects. */
int pi_binaries_keep(const char *dir, char *err, size_t errlen);

#endif
