/* A process's mapped files (procmaps.h). */
#include "procmaps.h"

#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

static int name_matches(const char *path, const char *prefix)
{
    const char *base = strrchr(path, '/');
    base = base ? base + 1 : path;
    size_t n = strlen(prefix);
    return strncmp(base, prefix, n) == 0 &&
           (base[n] == '.' || base[n] == '-' || base[n] == '\0');
}

int pa_maps_find(const char *maps, const char *prefix, uint64_t *base, char *path,
                 size_t path_len)
{
    for (const char *line = maps; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[4352];
        if (len < sizeof buf) {
            memcpy(buf, line, len);
            buf[len] = '\0';
            uint64_t start, offset;
            int name_at = 0;
            if (sscanf(buf, "%" SCNx64 "-%*x %*s %" SCNx64 " %*s %*s %n", &start, &offset,
                       &name_at) >= 2 &&
                name_at > 0 && buf[name_at] == '/' && offset == 0 &&
                name_matches(buf + name_at, prefix) && strlen(buf + name_at) < path_len) {
                *base = start;
                strcpy(path, buf + name_at);
                return 0;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return -1;
}

int pa_maps_code_owner(const char *maps, uint64_t addr, char *path, size_t path_len)
{
    for (const char *line = maps; line != NULL && *line != '\0';) {
        const char *end = strchr(line, '\n');
        size_t len = end ? (size_t)(end - line) : strlen(line);
        char buf[4352], perms[8] = "";
        if (len < sizeof buf) {
            memcpy(buf, line, len);
            buf[len] = '\0';
            uint64_t start, stop;
            int name_at = 0;
            if (sscanf(buf, "%" SCNx64 "-%" SCNx64 " %7s %*s %*s %*s %n", &start, &stop, perms,
                       &name_at) >= 3 &&
                addr >= start && addr < stop) {
                if (perms[2] != 'x' || name_at == 0 || buf[name_at] != '/' ||
                    strlen(buf + name_at) >= path_len)
                    return -1;
                strcpy(path, buf + name_at);
                return 0;
            }
        }
        line = end ? end + 1 : NULL;
    }
    return -1;
}

char *pa_maps_read(int pid)
{
    char name[64];
    snprintf(name, sizeof name, "/proc/%d/maps", pid);
    int fd = open(name, O_RDONLY | O_CLOEXEC);
    if (fd < 0)
        return NULL;
    size_t cap = 1 << 16, used = 0;
    char *text = malloc(cap);
    for (ssize_t n; text != NULL && (n = read(fd, text + used, cap - used - 1)) > 0;) {
        used += (size_t)n;
        if (cap - used < 4096) {
            char *bigger = realloc(text, cap * 2);
            if (bigger == NULL) {
                free(text);
                text = NULL;
                break;
            }
            text = bigger;
            cap *= 2;
        }
    }
    close(fd);
    if (text != NULL)
        text[used] = '\0';
    return text;
}
