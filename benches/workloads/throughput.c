/* A CPU benchmark for benches/compare-continuous.sh: spins for SECONDS of wall time and
 * prints how many units of work it did (a unit is a fixed arithmetic loop). Two copies keep
 * both CPUs of the build machine busy; the collector's overhead is the throughput lost. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void unit(void) {
    for (unsigned long i = 0; i < 20000; i++) sink += i * i;
}

int main(int argc, char **argv) {
    double secs = argc > 1 ? atof(argv[1]) : 10;
    struct timespec a, b;
    clock_gettime(CLOCK_MONOTONIC, &a);
    unsigned long units = 0;
    for (;;) {
        for (int k = 0; k < 64; k++) unit();
        units += 64;
        clock_gettime(CLOCK_MONOTONIC, &b);
        if ((b.tv_sec - a.tv_sec) + (b.tv_nsec - a.tv_nsec) / 1e9 >= secs) break;
    }
    printf("%lu\n", units);
    return 0;
}
