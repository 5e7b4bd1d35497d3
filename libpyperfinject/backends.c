/* The process's outputs (backends.h). */
#include "backends.h"

#include "log.h"

#include <errno.h>
#include <stdio.h>
#include <string.h>

int pi_backends_open(struct pi_backends *b, const struct pi_config *cfg, long pid, char *err,
                     size_t errlen)
{
    struct {
        int wanted;
        const struct pi_backend_ops *ops;
        void *self;
    } outputs[] = {
        {cfg->map, &pi_perfmap_ops, &b->perfmap},
        {cfg->jitdump, &pi_jitdump_ops, &b->jitdump},
        {cfg->gdb, &pi_gdbjit_ops, &b->gdbjit},
    };
    b->n = 0;
    b->gdbjit.batch = (uint32_t)cfg->gdb_batch;
    if (cfg->passthrough)
        return 0; /* the benchmark floor writes nothing */
    snprintf(err, errlen, "every output is switched off (PYPERFINJECT_MAP=0, "
                          "PYPERFINJECT_JITDUMP=0, PYPERFINJECT_GDB=0)");
    char failures[PI_MAX_BACKENDS][512];
    int nfailed = 0;
    for (size_t i = 0; i < sizeof outputs / sizeof *outputs; i++) {
        if (!outputs[i].wanted)
            continue;
        if (outputs[i].ops->open(outputs[i].self, cfg->dir, pid, failures[nfailed],
                                 sizeof failures[nfailed]) != 0) {
            nfailed++;
            continue;
        }
        b->list[b->n++] = (struct pi_backend){outputs[i].ops, outputs[i].self, 0, 0};
    }
    if (b->n == 0) {
        if (nfailed > 0) /* the first reason says it (usually the directory) */
            snprintf(err, errlen, "%s", failures[0]);
        return -1;
    }
    if (nfailed == 0)
        return 0;
    /* Partial: say what is missing, in one line (a directory that does not
     * exist fails both files), and carry on with the rest. */
    char line[sizeof failures + 2 * PI_MAX_BACKENDS];
    size_t used = 0;
    for (int i = 0; i < nfailed && used < sizeof line; i++) {
        int n = snprintf(line + used, sizeof line - used, "%s%s", i ? "; " : "", failures[i]);
        if (n < 0)
            break;
        used += (size_t)n;
    }
    pi_log(PI_LOG_WARN, "%s", line);
    return 0;
}

void pi_backends_announce(struct pi_backends *b, const struct pi_tramp_info *info)
{
    const char *names[PI_MAX_BACKENDS];
    int failed = 0, error = 0;
    for (int i = 0; i < b->n; i++) {
        struct pi_backend *k = &b->list[i];
        if (k->failed || k->ops->write(k->self, info) == 0)
            continue;
        k->failed = 1;
        if (failed == 0)
            error = errno;
        names[failed++] = k->ops->name;
    }
    if (failed == 0)
        return;
    /* One line for one problem, however many outputs it stopped. */
    char why[128];
    if (error == EBADF)
        snprintf(why, sizeof why, "the program closed its descriptor");
    else
        snprintf(why, sizeof why, "%s", strerror(error));
    pi_log(PI_LOG_WARN, "stopped writing the %s%s%s: %s", names[0], failed > 1 ? " and the " : "",
           failed > 1 ? names[1] : "", why);
}

int pi_backends_flush(struct pi_backends *b)
{
    int rc = 0;
    for (int i = 0; i < b->n; i++)
        if (b->list[i].ops->flush && b->list[i].ops->flush(b->list[i].self) != 0)
            rc = -1;
    return rc;
}

void pi_backends_describe(const struct pi_backends *b, char *buf, size_t len)
{
    size_t used = 0;
    buf[0] = '\0';
    for (int i = 0; i < b->n && used < len; i++) {
        const char *path = b->list[i].ops->describe(b->list[i].self);
        if (path == NULL)
            continue;
        int n = snprintf(buf + used, len - used, "%s%s", used ? " " : "", path);
        if (n < 0)
            break;
        used += (size_t)n;
    }
}

unsigned pi_backends_give_way(struct pi_backends *b, const char *cpython_backend, const char *dir)
{
    unsigned stopped = 0;
    if (strcmp(dir, "/tmp") != 0)
        return 0; /* CPython writes to /tmp: files elsewhere are not in its way */
    for (int i = 0; i < b->n; i++)
        if (!b->list[i].failed && b->list[i].ops->cpython_rival &&
            strcmp(b->list[i].ops->cpython_rival, cpython_backend) == 0) {
            b->list[i].failed = 1;
            stopped |= 1u << i;
        }
    return stopped;
}

void pi_backends_resume(struct pi_backends *b, unsigned stopped)
{
    for (int i = 0; i < b->n; i++)
        if (stopped & (1u << i))
            b->list[i].failed = 0;
}

void pi_backends_close(struct pi_backends *b)
{
    for (int i = 0; i < b->n; i++)
        if (b->list[i].ops->close && !b->list[i].failed)
            b->list[i].ops->close(b->list[i].self);
}
