/* A scratch directory for a cmocka group: scratch_setup makes a fresh one
 * (its path in `dir`), scratch_teardown removes it with its contents.
 * Include once, from a unit test's .c file. */
#ifndef PI_SCRATCH_DIR_H
#define PI_SCRATCH_DIR_H

#include <stdio.h>
#include <stdlib.h>

static char dir[] = "/tmp/pyperfinject-unit-XXXXXX";

static int scratch_setup(void **state)
{
    (void)state;
    return mkdtemp(dir) ? 0 : -1;
}

static int scratch_teardown(void **state)
{
    (void)state;
    char cmd[128];
    snprintf(cmd, sizeof cmd, "rm -rf %s", dir);
    return system(cmd);
}

#endif
