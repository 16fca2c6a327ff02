/* Fixed amount of work (for overhead measurements): work ITERATIONS_IN_MILLIONS
 * With WORK_CPU_OUT=FILE it writes its own CPU seconds (user + system) there at exit, so that
 * a benchmark can tell the cost a profiler puts on the sampled process from its own. */
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>
static volatile unsigned long sink;
__attribute__((noinline)) static unsigned long step(unsigned long x, long n) {
    for (long i = 0; i < n; i++) x = x * 6364136223846793005UL + 1442695040888963407UL;
    return x;
}
int main(int argc, char **argv) {
    long m = argc > 1 ? atol(argv[1]) : 1000;
    unsigned long x = 1;
    for (long i = 0; i < m; i++) x = step(x, 1000000);
    sink = x;
    const char *out = getenv("WORK_CPU_OUT");
    FILE *f = out ? fopen(out, "w") : NULL;
    if (f) {
        struct rusage ru;
        getrusage(RUSAGE_SELF, &ru);
        fprintf(f, "%.6f\n", ru.ru_utime.tv_sec + ru.ru_utime.tv_usec / 1e6 + ru.ru_stime.tv_sec +
                                 ru.ru_stime.tv_usec / 1e6);
        fclose(f);
    }
    return 0;
}
