/* Leaf functions only: every called function calls nothing, so the flat profile does not
 * depend on call-graph time propagation. Loop counts give each function a distinct share. */
#include <stdlib.h>

#define NOINLINE __attribute__((noinline))

volatile unsigned long sink;

NOINLINE static void spin(unsigned long n) {
    for (unsigned long i = 0; i < n; i++)
        sink += i;
}

NOINLINE void heavy(void) { for (unsigned long i = 0; i < 60000000UL; i++) sink += i ^ 3; }
NOINLINE void medium(void) { for (unsigned long i = 0; i < 400000UL; i++) sink += i; }
NOINLINE void light(void) { sink++; }
NOINLINE void never(void) { sink--; }
NOINLINE static void helper(int k) { sink += (unsigned long)k * 7; }

int main(int argc, char **argv) {
    unsigned long scale = argc > 1 ? strtoul(argv[1], 0, 10) : 1;
    for (unsigned long r = 0; r < scale; r++) {
        for (int i = 0; i < 3; i++)
            heavy();
        for (int i = 0; i < 50; i++)
            medium();
        for (int i = 0; i < 1000; i++)
            light();
        for (int i = 0; i < 777; i++)
            helper(i);
        spin(20000000UL);
    }
    if (argc > 5)
        never();
    return 0;
}
