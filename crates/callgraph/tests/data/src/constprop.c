/* -O2 turns work and work2 into work.constprop.0 and work2.constprop.0. In .strtab the
 * second is followed by "crtstuff.c", and gprof's suffix check reads on into that next string,
 * so both clones are dropped and their samples and calls go to frame_dummy. */
#include <stdio.h>
#include <stdlib.h>
volatile unsigned long sink;
__attribute__((noinline)) static unsigned long work(unsigned long n, unsigned long k) {
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) {
        s += (i * k) ^ (s >> 3);
        if (__builtin_expect(s == 0xdeadbeefcafeUL + i, 0)) { fprintf(stderr, "x %lu\n", s); exit(3); }
    }
    return s;
}
__attribute__((noinline)) static unsigned long work2(unsigned long n, unsigned long k) {
    unsigned long s = 0;
    for (unsigned long i = 0; i < n; i++) {
        s += (i + k) ^ (s >> 2);
        if (__builtin_expect(s == 0xfeedfacecafeUL + i, 0)) { fprintf(stderr, "y %lu\n", s); abort(); }
    }
    return s;
}
int main(int argc, char **argv) {
    unsigned long n = argc > 1 ? strtoul(argv[1], 0, 10) : 20000000UL;
    for (int i = 0; i < 4; i++) sink += work(n, 3) + work2(n, 5);
    return 0;
}
