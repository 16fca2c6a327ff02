/* Signal handlers, ground truth by construction (see truth.h): signal [SCALE [ALT]]
 *
 *   main ─┬─ raiser ── raise (libc) ·· [signal frame] ·· handler ── leaf
 *         └─ plain
 *
 * The handler runs on the thread's stack above the kernel's signal frame (glibc's
 * __restore_rt as its return address): it is raiser's callee only if the unwinder crosses the
 * signal frame. With ALT 1 the handler runs on an alternate stack (sigaltstack): the stack
 * copy taken in the handler then holds the signal frame but not the stack it interrupted, so
 * the handler's stacks end at the interrupted instruction, and must be said to. */
#include <signal.h>
#include <stdlib.h>
#include "truth.h"

enum { T_main, T_raiser, T_handler, T_leaf, T_plain };

static long ms;

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE void leaf(void) {
    ENTER(leaf);
    work(ms * 3);
    LEAVE(leaf);
}

NOINLINE void handler(int sig) {
    (void)sig;
    ENTER(handler);
    work(ms * 4);
    leaf();
    LEAVE(handler);
}

NOINLINE void raiser(void) {
    ENTER(raiser);
    work(ms * 2);
    raise(SIGUSR1);
    LEAVE(raiser);
}

NOINLINE void plain(void) {
    ENTER(plain);
    work(ms * 5);
    LEAVE(plain);
}

int main(int argc, char **argv) {
    ENTER(main);
    ms = truth_steps_per_ms();
    struct sigaction sa = {0};
    sa.sa_handler = handler;
    static char alternate[1 << 16];
    if (argc > 2 && atoi(argv[2])) {
        stack_t ss = {.ss_sp = alternate, .ss_size = sizeof alternate};
        if (sigaltstack(&ss, 0) != 0) abort();
        sa.sa_flags = SA_ONSTACK;
    }
    sigaction(SIGUSR1, &sa, 0);
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    for (int i = 0; i < 40 * scale; i++) {
        work(ms * 2);
        raiser();
        plain();
    }
    LEAVE(main);
    truth_report();
    return 0;
}
