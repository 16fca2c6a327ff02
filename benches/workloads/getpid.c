/* The worst case for system-call tracing: N getpid system calls, nothing else. Prints the
 * loop's own elapsed and CPU time per call on stderr (`getpid: 123.4 ns per call (cpu 120.1 ns)`),
 * so that a tracer's cost shows apart from its start-up and its writing of files.
 *
 *   getpid N
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double clock_ns(clockid_t c) {
    struct timespec t;
    clock_gettime(c, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

static double now(void) { return clock_ns(CLOCK_MONOTONIC); }

/* The process's CPU time: what a tracer adds to each call, less disturbed by other work on a
 * loaded machine than the elapsed time. */
static double cpu(void) { return clock_ns(CLOCK_PROCESS_CPUTIME_ID); }

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    double t0 = now(), c0 = cpu();
    for (long i = 0; i < n; i++) syscall(SYS_getpid);
    double per = n > 0 ? n : 1;
    fprintf(stderr, "getpid: %.1f ns per call (cpu %.1f ns)\n", (now() - t0) / per, (cpu() - c0) / per);
    return 0;
}
