/* A host program in the style of uwsgi: it loads libpython with
 * dlopen(RTLD_LOCAL) long after start-up, runs Python, finalises it, and
 * initialises it a second time.
 *
 * usage: dlopen_host LIBPYTHON.so CODE1 CODE2 */
#include <dlfcn.h>
#include <stdio.h>

typedef void (*init_fn)(void);
typedef int (*run_fn)(const char *);
typedef int (*fini_fn)(void);

int main(int argc, char **argv)
{
    if (argc != 4) {
        fprintf(stderr, "usage: %s LIBPYTHON CODE1 CODE2\n", argv[0]);
        return 2;
    }
    void *lib = dlopen(argv[1], RTLD_NOW | RTLD_LOCAL);
    if (lib == NULL) {
        fprintf(stderr, "dlopen: %s\n", dlerror());
        return 2;
    }
    init_fn init = (init_fn)dlsym(lib, "Py_Initialize");
    run_fn run = (run_fn)dlsym(lib, "PyRun_SimpleString");
    fini_fn fini = (fini_fn)dlsym(lib, "Py_FinalizeEx");
    if (!init || !run || !fini) {
        fprintf(stderr, "missing Python symbols\n");
        return 2;
    }
    for (int round = 0; round < 2; round++) {
        init();
        if (run(argv[2 + round]) != 0)
            return 3;
        if (fini() != 0)
            return 4;
    }
    puts("host done");
    return 0;
}
