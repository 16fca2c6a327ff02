/* Stack pages not yet touched, ground truth by construction (see truth.h): untouched [SCALE]
 *
 *   main ── toucher (64 KiB array: its pages dropped with madvise, then touched again one by
 *                    one from the bottom, with work between), first before anything else
 *
 * While toucher works, the pages of its array above the stack pointer are not in memory: the
 * kernel's stack copy stops at the first of them, short of toucher's return address, so its
 * stacks end there. With frame pointers the kernel's chain goes on through toucher and main
 * to glibc's __libc_start_call_main, which keeps none, and stops there too (later stacks are
 * completed from main's earlier whole ones, the first call's cannot be). Either way the stack
 * copy is what cut them (glibc's unwind information would have gone on), and that is what
 * they must be counted as. */
#include <stdint.h>
#include <sys/mman.h>
#include "truth.h"

enum { T_main, T_toucher };

static long ms;

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE void toucher(long steps) {
    volatile char area[65536];
    ENTER(toucher);
    area[0] = 1;
    /* The whole pages of the array above its lowest one leave memory (an alignment of the
       array itself would make gcc realign the stack through a register the samples do not
       carry, a different cut). */
    uintptr_t lo = ((uintptr_t)area + 8191) & ~(uintptr_t)4095;
    uintptr_t hi = ((uintptr_t)area + sizeof area) & ~(uintptr_t)4095;
    if (madvise((void *)lo, hi - lo, MADV_DONTNEED) != 0) abort();
    for (uintptr_t at = lo; at < hi; at += 4096) {
        work(steps);
        area[at - (uintptr_t)area] = 1;
    }
    LEAVE(toucher);
}

int main(int argc, char **argv) {
    ENTER(main);
    /* First thing, before any sample of main itself: a stack cut here has no earlier whole
       stack of main's to be completed from. */
    toucher(400000);
    ms = truth_steps_per_ms();
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    for (int i = 0; i < 100 * scale; i++) {
        work(ms);
        toucher(ms / 4);
    }
    LEAVE(main);
    truth_report();
    return 0;
}
