/* A stack buffer the program never fills: untouched [MS]
 *
 * A thread (a fresh stack: none of it touched before) spins MS/4 ms of CPU in inner(), so its
 * stack's end shows in shallow copies, then calls buffered(), whose 64 KiB buffer has only its
 * lowest byte written, which spins MS ms in inner(). The buffer's other pages are never
 * touched, so never in memory: the kernel's stack copy of a sample in inner() stops at the
 * first of them, below buffered()'s return address. Without frame pointers (these functions
 * are built without them) such a stack ends at buffered(). */
#include "common.h"
#include <pthread.h>

#define NOFP __attribute__((noinline, optimize("omit-frame-pointer")))

NOFP static void inner(double ms) { spin(ms); }

NOFP static void buffered(double ms) {
    volatile char buf[65536];
    buf[0] = 1;
    inner(ms);
    __asm__ volatile("" : : "r"(buf) : "memory");
}

static void *run(void *arg) {
    double ms = *(double *)arg;
    inner(ms / 4);
    buffered(ms);
    return 0;
}

int main(int argc, char **argv) {
    double ms = argc > 1 ? atof(argv[1]) : 300;
    pthread_t t;
    if (pthread_create(&t, 0, run, &ms) != 0) return 1;
    pthread_join(t, 0);
    return 0;
}
