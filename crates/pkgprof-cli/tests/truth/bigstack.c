/* Large stack frames, ground truth by construction (see truth.h): bigstack [SCALE]
 *
 *   main (16 KiB array) ─┬─ leaf
 *                        ├─ mid ── leaf
 *                        └─ chunky (2 KiB array per level, depth 12) ── leaf
 *
 * main's frame alone is larger than a small user-stack copy, and chunky's levels put its leaf
 * another 24 KiB deeper. */
#include "truth.h"

enum { T_main, T_mid, T_chunky, T_leaf };

static long ms;

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE void leaf(double m) {
    ENTER(leaf);
    work((long)(m * ms));
    LEAVE(leaf);
}

NOINLINE void mid(void) {
    ENTER(mid);
    work(ms * 2);
    leaf(3);
    LEAVE(mid);
}

NOINLINE int chunky(int d) {
    volatile char local[2048];
    ENTER(chunky);
    for (int i = 0; i < (int)sizeof local; i += 256) local[i] = (char)d;
    work(ms / 2);
    if (d > 0) chunky(d - 1); else leaf(20);
    int r = local[d * 8 % (int)sizeof local];
    LEAVE(chunky);
    return r;
}

int main(int argc, char **argv) {
    volatile char buf[16384];
    ENTER(main);
    for (int i = 0; i < (int)sizeof buf; i += 512) buf[i] = (char)i;
    ms = truth_steps_per_ms();
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    for (int i = 0; i < 20 * scale; i++) {
        work(ms * 10);
        leaf(8);
        mid();
        chunky(12);
    }
    truth_sink += buf[512];
    LEAVE(main);
    truth_report();
    return 0;
}
