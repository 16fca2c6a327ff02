/* Ground truth for `pkgprof --diff`: two builds of one program, the second with compute()
 * doing COMPUTE_WORK times as much work (default 1). parse() and report() are the same in
 * both, so the diff must name compute() first, outside the sampling noise. Built with `gcc -pg -O1 [-DCOMPUTE_WORK=3]` by tests/export.rs (and without -pg, fewer ROUNDS,
 * for pkgmon and perf record). */
#ifndef ROUNDS
#define ROUNDS 400
#endif
#ifndef COMPUTE_WORK
#define COMPUTE_WORK 1
#endif

volatile unsigned long sink;

__attribute__((noinline)) void parse(void) {
    for (unsigned long i = 0; i < 4000000; i++) sink += i;
}

__attribute__((noinline)) void compute(void) {
    for (unsigned long i = 0; i < 4000000UL * COMPUTE_WORK; i++) sink += i ^ 3;
}

__attribute__((noinline)) void report(void) {
    for (unsigned long i = 0; i < 2000000; i++) sink += i >> 1;
}

int main(void) {
    for (int round = 0; round < ROUNDS; round++) {
        parse();
        compute();
        report();
    }
    return 0;
}
