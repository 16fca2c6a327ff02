/* A frame larger than any stack copy and than the unwinder's rules hold, ground truth by
 * construction (see truth.h): hugeframe [SCALE]
 *
 *   main (1 MiB array; values kept across its calls in rbx, rbp, r12) ── spin
 *
 * Built without frame pointers, main's unwind entry puts its CFA 1 MiB above the stack pointer
 * and rbp saved just below it: offsets beyond framehop's 16-bit rules. A stack through main
 * ends for want of stack copy (its return address lies 1 MiB up), not of unwind information. */
#include "truth.h"

enum { T_main, T_spin };

static long ms;

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE void spin(long m) {
    ENTER(spin);
    work(m);
    LEAVE(spin);
}

int main(int argc, char **argv) {
    volatile char buf[1 << 20];
    ENTER(main);
    for (int i = 0; i < (int)sizeof buf; i += 4096) buf[i] = (char)i;
    ms = truth_steps_per_ms();
    int rounds = 150 * (argc > 1 ? atoi(argv[1]) : 1);
    long kept = argc;
    for (int i = 0; i < rounds; i++) {
        spin(ms * 3);
        kept += buf[(i * 4096) % (int)sizeof buf];
    }
    LEAVE(main);
    truth_sink += kept;
    truth_report();
    return 0;
}
