/* One-line diagnostics on stderr, prefixed "pyperfinject:".
 *
 * Each message is formatted into a stack buffer and written with a single
 * write(2), so lines from several threads or processes never interleave and
 * the function is usable from fork handlers (no stdio, no locks, no malloc).
 *
 * A message goes only to the file that was stderr when the library started.
 * A program that has rearranged its descriptors since (a forked child
 * about to exec with fd 2 on a pipe its parent reads, a daemon with fd 2 on
 * its log) uses fd 2 for output of its own, which must stay its own: there
 * the library says nothing. */
#ifndef PI_LOG_H
#define PI_LOG_H

enum pi_log_level {
    PI_LOG_QUIET = 0, /* nothing at all */
    PI_LOG_WARN = 1,  /* why the library disabled itself or lost data (default) */
    PI_LOG_INFO = 2,  /* what it attached to and where it writes */
    PI_LOG_DEBUG = 3, /* per-interpreter and per-file events */
};

/* Remembers what fd 2 is now (the constructor calls it first): messages are
 * written only while fd 2 is still that file. Never called: no output. */
void pi_log_capture_stderr(void);

/* Sets the level; messages above it are dropped. */
void pi_log_set_level(int level);
int pi_log_level(void);

/* Formats and writes one line if `level` is enabled. Never fails visibly. */
void pi_log(int level, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

#endif
