/* Shared libraries, ground truth by construction (see truth.h): libs DIR [SCALE]
 *
 *   main ─┬─ plain
 *         ├─ lib_compute (libtruthlib.so, through the PLT) ── lib_inner
 *         ├─ dl_compute (DIR/libtruthdl.so, dlopen'ed) ── dl_leaf
 *         └─ writer ── write (libc, through the PLT, to /dev/null) */
#include <dlfcn.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>
#include "truth.h"
#include "libs.h"

void lib_compute(long steps);

static long ms;

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE void plain(void) {
    ENTER(plain);
    work(ms * 5);
    LEAVE(plain);
}

NOINLINE void writer(int fd) {
    static char block[65536];
    ENTER(writer);
    work(ms / 2);
    for (int i = 0; i < 40; i++)
        if (write(fd, block, sizeof block) < 0) abort();
    LEAVE(writer);
}

int main(int argc, char **argv) {
    ENTER(main);
    ms = truth_steps_per_ms();
    char path[4096];
    snprintf(path, sizeof path, "%s/libtruthdl.so", argc > 1 ? argv[1] : ".");
    void *dl = dlopen(path, RTLD_NOW);
    if (!dl) { fprintf(stderr, "%s\n", dlerror()); return 1; }
    void (*dl_compute)(long) = (void (*)(long))dlsym(dl, "dl_compute");
    int fd = open("/dev/null", O_WRONLY);
    int scale = argc > 2 ? atoi(argv[2]) : 1;
    work(ms * 50);
    for (int i = 0; i < 40 * scale; i++) {
        plain();
        lib_compute(ms * 4);
        dl_compute(ms * 3);
        writer(fd);
    }
    LEAVE(main);
    truth_report();
    return 0;
}
