/* The worst case for system-call tracing: N getpid system calls, nothing else. Prints the
 * loop's own elapsed time per call on stderr (`getpid: 123.4 ns per call`), so that a tracer's
 * cost shows apart from its start-up and its writing of files.
 *
 *   getpid N
 */
#include <stdio.h>
#include <stdlib.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    double t0 = now();
    for (long i = 0; i < n; i++) syscall(SYS_getpid);
    fprintf(stderr, "getpid: %.1f ns per call\n", (now() - t0) / (n > 0 ? n : 1));
    return 0;
}
