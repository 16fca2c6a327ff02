/* Names as perf prints them: libc called through the PLT in a tight loop (strlen), a 64-bit
   system call (getppid) and the vDSO (clock_gettime), a third of SECONDS each: names [SECONDS] */
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}
static char empty[8];
volatile size_t sink;
int main(int argc, char **argv) {
    double s = argc > 1 ? atof(argv[1]) : 1;
    empty[0] = argc > 5 ? 'x' : 0; /* not a constant: strlen is really called */
    for (double end = now() + s / 3; now() < end;)
        for (int i = 0; i < 100000; i++) sink += strlen(empty);
    for (double end = now() + s / 3; now() < end;)
        for (int i = 0; i < 1000; i++) sink += getppid();
    for (double end = now() + s / 3; now() < end;) {}
    return 0;
}
