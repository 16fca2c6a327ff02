/* Fixed amount of work (for overhead measurements): work ITERATIONS_IN_MILLIONS */
#include <stdio.h>
#include <stdlib.h>
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
    return 0;
}
