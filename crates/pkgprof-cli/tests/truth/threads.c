/* Threads, ground truth by construction (see truth.h, TRUTH_THREADS): threads [SCALE]
 *
 *   main ─┬─ mainwork
 *         └─ spawner ── (150 threads, one after the other) brief
 *   thread: spinner ── spin_leaf
 *   thread (64 KiB stack, pthread_attr_setstacksize): smallstack ── rec (depth 100)
 *
 * Each thread's stack starts at glibc's clone3, which is also the function pthread_create
 * calls: the spawner's thread starts make samples land in clone3 under the spawner (34 to 60
 * at 10 kHz for 300 starts), so clone3 is both a root (of every thread's stacks) and a callee.
 *
 * Two things sampling does not see, so kept small here: a thread gets no sample for the part
 * of its CPU time short of a whole sampling period (each new thread's timer starts anew), so
 * each brief thread runs 1 ms, many periods; and a thread that starts threads in quick
 * succession is sampled far less than its time (a spawner of 4,000 threads that do nothing:
 * 6.1% of the process's CPU time measured, 0.5% sampled by pkgmon at 4 kHz; `perf record -e
 * cpu-clock -F 4000 -g` gave it under 0.02% for 6.3%), so the spawner starts only 150 (with
 * 300 it measured 1.1-2.1% of the run and was sampled at 0.0-0.9%: one CI run in many was
 * past the 2 points).
 * Percentages are of the process's CPU time. SCALE (default 1) multiplies the work. */
#define TRUTH_THREADS
#include "truth.h"

enum { T_main, T_mainwork, T_spawner, T_brief, T_spinner, T_spin_leaf, T_smallstack, T_rec };

static long ms;
static int scale = 1;

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE void spin_leaf(void) {
    ENTER(spin_leaf);
    work(ms * 2);
    LEAVE(spin_leaf);
}

NOINLINE int rec(int d) {
    volatile char pad[100];
    ENTER(rec);
    pad[0] = (char)d;
    work(ms / 50);
    int r = d > 0 ? rec(d - 1) : (work(ms * 5), 0);
    LEAVE(rec);
    return r + pad[0];
}

NOINLINE void *spinner(void *arg) {
    ENTER(spinner);
    for (int i = 0; i < 150 * scale; i++) {
        work(ms);
        spin_leaf();
    }
    LEAVE(spinner);
    truth_thread_done();
    return arg;
}

NOINLINE void *smallstack(void *arg) {
    ENTER(smallstack);
    for (int i = 0; i < 50 * scale; i++) {
        work(ms);
        rec(100);
    }
    LEAVE(smallstack);
    truth_thread_done();
    return arg;
}

NOINLINE void *brief(void *arg) {
    ENTER(brief);
    work(ms);
    LEAVE(brief);
    truth_thread_done();
    return arg;
}

NOINLINE void spawner(void) {
    ENTER(spawner);
    for (int i = 0; i < 150 * scale; i++) {
        pthread_t t;
        if (pthread_create(&t, 0, brief, 0) != 0) abort();
        pthread_join(t, 0);
    }
    LEAVE(spawner);
}

NOINLINE void mainwork(void) {
    ENTER(mainwork);
    work(ms * 300 * scale);
    LEAVE(mainwork);
}

int main(int argc, char **argv) {
    ENTER(main);
    ms = truth_steps_per_ms();
    scale = argc > 1 ? atoi(argv[1]) : 1;
    pthread_attr_t small;
    pthread_attr_init(&small);
    pthread_attr_setstacksize(&small, 64 << 10);
    pthread_t a, b;
    if (pthread_create(&a, 0, spinner, 0) != 0 || pthread_create(&b, &small, smallstack, 0) != 0)
        abort();
    mainwork();
    spawner();
    pthread_join(a, 0);
    pthread_join(b, 0);
    LEAVE(main);
    truth_report();
    return 0;
}
