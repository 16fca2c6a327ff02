/* Reads CLOCK_MONOTONIC in a loop: the vDSO answers it without a system call. clock MS */
#include "common.h"
__attribute__((noinline)) static void read_clock(double ms) {
    double end = thread_cpu_ms() + ms;
    struct timespec ts;
    unsigned long n = 0;
    while (thread_cpu_ms() < end) {
        for (int i = 0; i < 2000; i++) {
            clock_gettime(CLOCK_MONOTONIC, &ts);
            n += ts.tv_nsec;
        }
    }
    sink = n;
}
int main(int argc, char **argv) { read_clock(argc > 1 ? atof(argv[1]) : 300); return 0; }
