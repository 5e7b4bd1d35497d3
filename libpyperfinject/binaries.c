#include "binaries.h"

#include "outfile.h"

#include <dlfcn.h>
#include <elf.h>
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <link.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

static size_t note_align(size_t n) { return (n + 3) & ~(size_t)3; }

int pi_build_id_hex(const uint8_t *notes, size_t len, char *hex, size_t cap)
{
    size_t at = 0;
    while (len - at >= sizeof(ElfW(Nhdr))) {
        ElfW(Nhdr) h;
        memcpy(&h, notes + at, sizeof h);
        at += sizeof h;
        size_t name_len = note_align(h.n_namesz), desc_len = note_align(h.n_descsz);
        if (name_len > len - at || desc_len > len - at - name_len)
            return -1; /* a note runs past the segment */
        const uint8_t *name = notes + at, *desc = notes + at + name_len;
        at += name_len + desc_len;
        if (h.n_type != NT_GNU_BUILD_ID || h.n_namesz != 4 || memcmp(name, "GNU", 4) != 0)
            continue;
        if (h.n_descsz == 0 || 2 * (size_t)h.n_descsz + 1 > cap)
            return -1;
        static const char digits[] = "0123456789abcdef";
        for (size_t i = 0; i < h.n_descsz; i++) {
            hex[2 * i] = digits[desc[i] >> 4];
            hex[2 * i + 1] = digits[desc[i] & 15];
        }
        hex[2 * h.n_descsz] = '\0';
        return (int)(2 * h.n_descsz);
    }
    return -1;
}

int pi_binaries_path(char *path, size_t cap, const char *dir, const char *hex, const char *file)
{
    const char *slash = strrchr(file, '/');
    const char *base = slash ? slash + 1 : file;
    if (*base == '\0')
        return -1;
    int n = snprintf(path, cap, "%s/binaries/%s/%s", dir, hex, base);
    return n < 0 || (size_t)n >= cap ? -1 : 0;
}

struct object {
    char hex[2 * 64 + 1];
    char *file; /* as this process's mount namespace names it */
};

struct listing {
    struct object *objects;
    size_t n, cap;
    ElfW(Addr) own_base; /* the library itself: not part of the program */
};

static int list_object(struct dl_phdr_info *info, size_t size, void *arg)
{
    (void)size;
    struct listing *l = arg;
    const char *name = info->dlpi_name;
    if (info->dlpi_addr == l->own_base && name[0] != '\0')
        return 0;
    if (name[0] == '\0')
        name = "/proc/self/exe"; /* the main program */
    else if (name[0] != '/')
        return 0; /* the vDSO, the library's own arenas ("[pyperfinject]") */
    char hex[sizeof l->objects->hex];
    int found = -1;
    for (ElfW(Half) i = 0; i < info->dlpi_phnum && found < 0; i++) {
        const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
        if (ph->p_type == PT_NOTE)
            found = pi_build_id_hex((const uint8_t *)(info->dlpi_addr + ph->p_vaddr),
                                    ph->p_memsz, hex, sizeof hex);
    }
    if (found < 0)
        return 0; /* perf can only match a file with a build id */
    if (l->n == l->cap) {
        size_t cap = l->cap ? 2 * l->cap : 16;
        struct object *more = realloc(l->objects, cap * sizeof *more);
        if (more == NULL)
            return 1;
        l->objects = more;
        l->cap = cap;
    }
    char *file = strdup(name);
    if (file == NULL)
        return 1;
    memcpy(l->objects[l->n].hex, hex, sizeof hex);
    l->objects[l->n++].file = file;
    return 0;
}

/* mkdir that accepts an existing directory. */
static int make_dir(const char *path)
{
    return mkdir(path, 0700) == 0 || errno == EEXIST ? 0 : -1;
}

/* Copies one object to its place; 1 if copied, 0 if already kept, -1 with
 * a reason. The copy goes to a name of this process's own first and is
 * linked into place, so a reader (or a racing process) never sees half a
 * file. */
static int keep_one(const char *dir, const struct object *o, char *err, size_t errlen)
{
    char target[PATH_MAX], tmp[PATH_MAX + 32];
    const char *file = o->file;
    char exe[PATH_MAX];
    if (strcmp(file, "/proc/self/exe") == 0) { /* named by what it points to */
        ssize_t n = readlink(file, exe, sizeof exe - 1);
        if (n <= 0)
            return 0;
        exe[n] = '\0';
        file = exe;
    }
    if (pi_binaries_path(target, sizeof target, dir, o->hex, file) != 0)
        return 0;
    struct stat st;
    if (lstat(target, &st) == 0)
        return 0;
    char *slash = strrchr(target, '/');
    *slash = '\0';
    char *parent = strrchr(target, '/');
    *parent = '\0';
    int made = make_dir(target); /* DIR/binaries */
    *parent = '/';
    if (made != 0 || make_dir(target) != 0) /* DIR/binaries/<hex> */
        return snprintf(err, errlen, "cannot create %s: %s", target, strerror(errno)), -1;
    *slash = '/';
    /* a hidden name: the host side takes every visible file for a binary */
    snprintf(tmp, sizeof tmp, "%.*s/.%s.%ld.tmp", (int)(slash - target), target, slash + 1,
             (long)getpid());
    int in = open(o->file, O_RDONLY | O_CLOEXEC);
    if (in < 0 || fstat(in, &st) != 0) {
        if (in >= 0)
            close(in);
        return 0; /* not readable (a file mode of 0711): perf couldn't use it either */
    }
    int out = open(tmp, O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW | O_CLOEXEC | O_NOCTTY, 0600);
    int rc = -1;
    if (out < 0)
        snprintf(err, errlen, "cannot create %s: %s", tmp, strerror(errno));
    else if (pi_outfile_append_copy(in, (uint64_t)st.st_size, out, 0) < 0)
        snprintf(err, errlen, "cannot copy %s to %s: %s", o->file, tmp, strerror(errno));
    else if (link(tmp, target) != 0 && errno != EEXIST) /* EEXIST: another process won */
        snprintf(err, errlen, "cannot create %s: %s", target, strerror(errno));
    else
        rc = 1;
    close(in);
    if (out >= 0) {
        close(out);
        unlink(tmp);
    }
    return rc;
}

int pi_binaries_keep(const char *dir, char *err, size_t errlen)
{
    struct listing l = {0};
    Dl_info self;
    if (dladdr((void *)pi_binaries_keep, &self) != 0)
        l.own_base = (ElfW(Addr))self.dli_fbase;
    dl_iterate_phdr(list_object, &l);
    int copied = 0;
    for (size_t i = 0; i < l.n; i++) {
        int rc = copied >= 0 ? keep_one(dir, &l.objects[i], err, errlen) : 0;
        if (rc < 0)
            copied = -1;
        else
            copied += rc;
        free(l.objects[i].file);
    }
    free(l.objects);
    return copied;
}
