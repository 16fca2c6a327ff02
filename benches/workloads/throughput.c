/* A CPU benchmark for benches/compare-continuous.sh, in two modes:
 *
 *   throughput SECONDS     spin for SECONDS of wall time; print the units of work done
 *   throughput -n UNITS    do UNITS units of work; print "<wall ns> <cpu ns>" it took
 *
 * A unit is a fixed arithmetic loop. One copy per CPU keeps every CPU busy; a collector's
 * overhead is the throughput lost (first mode) or the time a fixed amount of work takes
 * longer (second mode: wall time, and the process's own CPU time, which the sampling work
 * the kernel does in the sampled task adds to but the machine's other load does not). */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void unit(void) {
    for (unsigned long i = 0; i < 20000; i++) sink += i * i;
}

static double now(clockid_t clock) {
    struct timespec t;
    clock_gettime(clock, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    if (argc > 2 && strcmp(argv[1], "-n") == 0) {
        unsigned long n = strtoul(argv[2], NULL, 10);
        double w = now(CLOCK_MONOTONIC), c = now(CLOCK_PROCESS_CPUTIME_ID);
        for (unsigned long k = 0; k < n; k++) unit();
        printf("%.0f %.0f\n", now(CLOCK_MONOTONIC) - w, now(CLOCK_PROCESS_CPUTIME_ID) - c);
        return 0;
    }
    double secs = argc > 1 ? atof(argv[1]) : 10;
    double start = now(CLOCK_MONOTONIC);
    unsigned long units = 0;
    for (;;) {
        for (int k = 0; k < 64; k++) unit();
        units += 64;
        if (now(CLOCK_MONOTONIC) - start >= secs * 1e9) break;
    }
    printf("%lu\n", units);
    return 0;
}
