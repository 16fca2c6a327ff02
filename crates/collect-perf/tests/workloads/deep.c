/* A recursion DEPTH levels deep, round and round: deep N [ROUNDS]. */
#include <stdlib.h>
static volatile unsigned long sink;
__attribute__((noinline)) static void spin(long n) {
    unsigned long x = sink | 1;
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005UL + 1;
        __asm__ volatile("" : "+r"(x));
    }
    sink = x;
}
__attribute__((noinline)) int down(int d, long n) {
    if (d == 0) {
        spin(n);
        return 0;
    }
    int r = down(d - 1, n);
    __asm__ volatile("");
    return r + 1;
}
int main(int argc, char **argv) {
    int depth = argc > 1 ? atoi(argv[1]) : 1500;
    int rounds = argc > 2 ? atoi(argv[2]) : 60;
    for (int i = 0; i < rounds; i++) down(depth, 2000000);
    return 0;
}
