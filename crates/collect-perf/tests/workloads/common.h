/* Shared helpers for the collect-perf test workloads. */
#include <stdlib.h>
#include <time.h>

static double now_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static volatile unsigned long sink;

static double thread_cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Burns `ms` milliseconds of this thread's CPU time (not wall time: the test machine is shared,
   and sample counts must not depend on how busy it is). */
__attribute__((noinline)) static void spin(double ms) {
    double end = thread_cpu_ms() + ms;
    unsigned long x = 1;
    while (thread_cpu_ms() < end) {
        for (int i = 0; i < 10000; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    }
    sink = x;
}
