/* jitdump-check: validate a jitdump written by libpyperfinject.
 *
 *   jitdump-check [--allow-truncated] [--trimmed] [--list] [--pid N] [--expect PATTERN]... FILE
 *
 * --trimmed: the writer exited normally, so no zeros may follow the records
 * (without it they are allowed and counted: "untrimmed N").
 * Prints a one-line summary, the loads with --list ("load INDEX ADDR SIZE
 * NAME"), then one line per violation ("FILE: record N @OFFSET: ISSUE:
 * message", or "FILE: ISSUE: message" for the header and whole-file rules),
 * then "FILE: OK" or "FILE: INVALID". Exit status: 0 if
 * the dump is valid and every --expect pattern (fnmatch) names a load, 1 if
 * not, 2 on a usage or I/O error. A FILE named jit-PID.dump must carry PID
 * in its header unless --pid says otherwise. */
#define _POSIX_C_SOURCE 200809L

#include "jitdump_check.h"

#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void usage(FILE *to)
{
    fprintf(to, "usage: jitdump-check [--allow-truncated] [--trimmed] [--list] [--pid N] "
                "[--expect PATTERN]... FILE\n");
}

/* The pid in a jit-PID.dump basename, or 0. */
static uint32_t pid_from_name(const char *path)
{
    const char *base = strrchr(path, '/');
    unsigned long pid;
    char tail[8];

    base = base ? base + 1 : path;
    if (sscanf(base, "jit-%lu%7s", &pid, tail) == 2 && strcmp(tail, ".dump") == 0 &&
        pid <= UINT32_MAX)
        return (uint32_t)pid;
    return 0;
}

static bool parse_pid(const char *s, uint32_t *out)
{
    char *end;
    unsigned long v = strtoul(s, &end, 10);
    if (*s == '\0' || *end != '\0' || v == 0 || v > UINT32_MAX)
        return false;
    *out = (uint32_t)v;
    return true;
}

int main(int argc, char **argv)
{
    struct pi_jdc_options opts = { false, 0, NULL, 0, false };
    const char **expect = calloc((size_t)argc, sizeof *expect);
    const char *path = NULL;
    bool list = false;

    if (!expect)
        return 2;
    for (int i = 1; i < argc; i++) {
        const char *a = argv[i];
        if (strcmp(a, "--allow-truncated") == 0) {
            opts.allow_truncated = true;
        } else if (strcmp(a, "--trimmed") == 0) {
            opts.require_trimmed = true;
        } else if (strcmp(a, "--list") == 0) {
            list = true;
        } else if (strcmp(a, "--expect") == 0 && i + 1 < argc) {
            expect[opts.n_expect++] = argv[++i];
        } else if (strcmp(a, "--pid") == 0 && i + 1 < argc) {
            if (!parse_pid(argv[++i], &opts.expect_pid)) {
                fprintf(stderr, "jitdump-check: bad --pid '%s'\n", argv[i]);
                return 2;
            }
        } else if (strcmp(a, "-h") == 0 || strcmp(a, "--help") == 0) {
            usage(stdout);
            return 0;
        } else if (a[0] == '-' || path) {
            usage(stderr);
            return 2;
        } else {
            path = a;
        }
    }
    if (!path) {
        usage(stderr);
        return 2;
    }
    opts.expect = expect;
    if (!opts.expect_pid)
        opts.expect_pid = pid_from_name(path);

    struct pi_jdc_report rep;
    const char *err = NULL;
    bool ok = pi_jdc_check_file(path, &opts, &rep, &err);
    if (err) {
        fprintf(stderr, "jitdump-check: %s: %s\n", path, err);
        free(expect);
        return 2;
    }

    printf("%s: pid %" PRIu32 ", elf_mach %" PRIu32 ", %zu records: %zu loads, %zu unwinding, "
           "%zu debug, %zu close%s",
           path, rep.pid, rep.elf_mach, rep.records, rep.n_loads, rep.unwinds, rep.debug_infos,
           rep.closes, rep.truncated ? " (truncated)" : "");
    if (rep.untrimmed)
        printf(", untrimmed %zu%s", rep.untrimmed, rep.unfinished ? " (an unfinished group)" : "");
    printf("\n");
    if (list) {
        for (size_t i = 0; i < rep.n_loads; i++) {
            const struct pi_jdc_load *l = &rep.loads[i];
            printf("load %" PRIu64 " 0x%" PRIx64 " %" PRIu64 " %s\n", l->code_index, l->addr,
                   l->code_size, l->name ? l->name : "?");
        }
    }
    for (size_t i = 0; i < rep.n_violations; i++) {
        const struct pi_jdc_violation *v = &rep.violations[i];
        if (v->record)
            printf("%s: record %zu @%zu: %s: %s\n", path, v->record, v->offset,
                   pi_jdc_issue_name(v->issue), v->msg);
        else /* the header or the file as a whole */
            printf("%s: %s: %s\n", path, pi_jdc_issue_name(v->issue), v->msg);
    }
    if (rep.n_dropped)
        printf("%s: ... %zu more violations\n", path, rep.n_dropped);
    printf("%s: %s\n", path, ok ? "OK" : "INVALID");

    pi_jdc_report_free(&rep);
    free(expect);
    return ok ? 0 : 1;
}
