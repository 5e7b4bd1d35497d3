/* libpyperfinject public API: switch Python profiling on and off from inside
 * the process (embedders, or Python code through ctypes).
 *
 * The library is usually preloaded (LD_PRELOAD); these functions are then
 * found by name, e.g. from Python:
 *
 *     import ctypes
 *     lib = ctypes.CDLL(None)          # the preloaded library's symbols
 *     lib.pyperfinject_disable()
 *
 * All functions are thread-safe, may be called with or without the GIL (and
 * ctypes releases it), and never raise Python exceptions. Switching off
 * restores the interpreter's previous eval-frame function, so a switched-off
 * interpreter runs at full speed; switching on reuses the trampolines and map
 * entries made before. Switching takes effect at each interpreter's next
 * Python call (off) or at CPython's next pending-call check (on).
 *
 * Build against it with: pkg-config --cflags --libs pyperfinject */
#ifndef PYPERFINJECT_H
#define PYPERFINJECT_H

#ifdef __cplusplus
extern "C" {
#endif

/* Bumped when a function is added (compatible) or changed (incompatible:
 * never without a new name). */
#define PYPERFINJECT_API_VERSION 2

enum pyperfinject_state {
    PYPERFINJECT_INACTIVE = -1, /* not attached: no CPython here, disabled, or it stood aside */
    PYPERFINJECT_OFF = 0,       /* attached, switched off */
    PYPERFINJECT_ON = 1,        /* attached, naming Python functions */
};

/* PYPERFINJECT_API_VERSION of the loaded library. */
int pyperfinject_api_version(void);

/* The library's version, e.g. "0.1.0". */
const char *pyperfinject_version(void);

/* Switch on / off. Return 0, or -1 when the library is inactive. */
int pyperfinject_enable(void);
int pyperfinject_disable(void);

/* One of enum pyperfinject_state. */
int pyperfinject_state(void);

/* Installs the library in a process whose interpreter already runs, as if
 * it had been preloaded (pyperf-run attach loads the library and calls
 * this). settings: "NAME=VALUE" lines of PYPERFINJECT_* variables, or NULL
 * for the defaults (the process's environment is not read). Called with the
 * GIL (from Python through ctypes.PyDLL) it installs at once. flags, for a
 * thread borrowed by a debugger-like tool: PYPERFINJECT_ATTACH_FROM_OUTSIDE
 * (it may be stopped anywhere in the interpreter: the main thread installs
 * it at its next Python step, a pending call), or that and
 * PYPERFINJECT_ATTACH_WAITING_THREAD (it waits in a blocking system call,
 * outside the interpreter: it takes the GIL with PyGILState_Ensure and
 * installs at once, as a C callback may). Without the GIL and without
 * flags: the pending call. Returns 0 installed, 1 already attached and on
 * (nothing done), 2 already attached and off (switched on), 3 scheduled on
 * the main thread, -1 failed: nothing changed. A line saying what happened
 * goes to why (whylen bytes; may be NULL). Since PYPERFINJECT_API_VERSION 2. */
#define PYPERFINJECT_ATTACH_FROM_OUTSIDE 1
#define PYPERFINJECT_ATTACH_WAITING_THREAD 2
int pyperfinject_attach(const char *settings, int flags, char *why, unsigned long whylen);

/* Makes the files durable (fdatasync). Entries are always handed to the
 * kernel before the function they name first runs, so this matters only for
 * power loss, not for a crash of the process. Returns 0, or -1 when
 * inactive or on an I/O error. */
int pyperfinject_flush(void);

#ifdef __cplusplus
}
#endif

#endif
