/* Built with -O2 so that gcc splits functions into .part/.cold/.constprop clones, whose
 * addresses gprof gives to the function they precede or keeps as their own. Callees are
 * leaves, as in leaves.c. */
#include <stdio.h>
#include <stdlib.h>

volatile unsigned long sink;

__attribute__((noinline)) static unsigned long work(unsigned long n, unsigned long k) {
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++)
        s += (i * k) ^ (s >> 3);
    if (__builtin_expect(s == 42, 0)) {
        fprintf(stderr, "unlikely %lu\n", s);
        abort();
    }
    return s;
}

__attribute__((noinline)) unsigned long twice(unsigned long n) { return work(n, 2) + 1; }

int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 30000000UL;
    for (int i = 0; i < 4; i++)
        sink += work(n, 3);
    sink += work(n / 2, 7);
    (void)twice;
    return 0;
}
