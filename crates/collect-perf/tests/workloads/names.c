/* Names as perf prints them: libc called through the PLT in a tight loop (strlen), a 64-bit
   system call (getppid), the vDSO (clock_gettime) and a function GCC clones as `scaled.isra.0`
   (its struct argument passed as scalars), a quarter of SECONDS each: names [SECONDS] */
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
struct scale { long factor, steps, unused[6]; };
__attribute__((noinline)) static long scaled(const struct scale *p) {
    long s = 0, f = p->factor, n = p->steps;
    for (long i = 0; i < n; i++) {
        s += i * f;
        __asm__ volatile("" : "+r"(s));
    }
    return s;
}
int main(int argc, char **argv) {
    double s = argc > 1 ? atof(argv[1]) : 1;
    empty[0] = argc > 5 ? 'x' : 0; /* not a constant: strlen is really called */
    struct scale k = { argc, 50000L * argc, {0} };
    for (double end = now() + s / 4; now() < end;)
        for (int i = 0; i < 100000; i++) sink += strlen(empty);
    for (double end = now() + s / 4; now() < end;)
        for (int i = 0; i < 1000; i++) sink += getppid();
    for (double end = now() + s / 4; now() < end;) {}
    for (double end = now() + s / 4; now() < end;) sink += scaled(&k);
    return 0;
}
