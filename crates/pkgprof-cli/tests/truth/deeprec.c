/* Deep recursion, ground truth by construction (see truth.h): deeprec DEPTH [SCALE [PREFAULT]]
 *
 *   main ── driver ── descend (direct recursion, depth DEPTH) ── bottom
 *
 * Each level has a 200-byte buffer, so a level takes ~240 bytes of stack and DEPTH 1000 takes
 * ~240 KiB: more than the kernel's largest stack copy (64 KiB). Work at every level on the way
 * down and up, and most of it at the bottom. SCALE (default 1) multiplies the work. With
 * PREFAULT 1, main first touches the stack the recursion will use, so that no sample lands in
 * a page fault of the stack's growth (whose stack copy is empty: such a sample is unwound by
 * the kernel's chain alone, and ends where that chain does). */
#include <alloca.h>
#include <string.h>
#include "truth.h"
enum { T_main, T_driver, T_descend, T_bottom };
static long ms;
#define NOINLINE __attribute__((noinline, noipa))
NOINLINE void bottom(void) { ENTER(bottom); work(ms * 30); LEAVE(bottom); }
NOINLINE int descend(int d) {
    volatile char pad[200];
    ENTER(descend);
    pad[0] = (char)d;
    work(ms / 20);
    int r = d > 0 ? descend(d - 1) : (bottom(), 0);
    work(ms / 40);
    LEAVE(descend);
    return r + pad[0];
}
NOINLINE void prefault(size_t bytes) {
    char *p = alloca(bytes);
    memset(p, 0, bytes);
    __asm__ volatile("" : : "r"(p) : "memory");
}
NOINLINE void driver(int depth, int scale) {
    ENTER(driver);
    for (int i = 0; i < 3 * scale; i++) { work(ms * 5); descend(depth); }
    LEAVE(driver);
}
int main(int argc, char **argv) {
    ENTER(main);
    int depth = argc > 1 ? atoi(argv[1]) : 100;
    if (argc > 3 && atoi(argv[3])) prefault((size_t)depth * 320);
    ms = truth_steps_per_ms();
    work(ms * 50);
    driver(depth, argc > 2 ? atoi(argv[2]) : 1);
    LEAVE(main);
    truth_report();
    return 0;
}
