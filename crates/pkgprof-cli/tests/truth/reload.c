/* Libraries unloaded and loaded again, ground truth by construction (see truth.h):
 * reload DIR [SCALE]
 *
 *   main ─┬─ reload_work (DIR/libreloada.so) ── reload_leaf
 *         ├─ other_work (DIR/libreloadb.so)
 *         └─ plain
 *
 * Each round dlopens both libraries, calls them and dlcloses them, so both are unmapped. In
 * even rounds libreloada.so is loaded first, in odd ones libreloadb.so: each library is mapped
 * in turn at the addresses the other had the round before, and a profile that keeps only
 * addresses must tell the two apart (the collector writes the later mapping displaced). The
 * loading and unloading runs in ld.so's functions, which the profile names: it is measured
 * apart and reported as no function's (1.5 to 1.9% of the run here, kernel 6.18: counted in
 * main's self time, it put main 1.9 points under what it measured, and over the tests'
 * tolerance one run in ~10), beside ~6 ms of work a library a round. */
#include <dlfcn.h>
#include <stdio.h>
#include "truth.h"
#include "reload.h"

static long ms;

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE void plain(void) {
    ENTER(plain);
    work(ms * 6);
    LEAVE(plain);
}

static void *open_or_die(const char *path) {
    void *h = dlopen(path, RTLD_NOW);
    if (!h) {
        fprintf(stderr, "%s\n", dlerror());
        exit(1);
    }
    return h;
}

int main(int argc, char **argv) {
    ENTER(main);
    ms = truth_steps_per_ms();
    const char *dir = argc > 1 ? argv[1] : ".";
    int scale = argc > 2 ? atoi(argv[2]) : 1;
    char a[4096], b[4096];
    snprintf(a, sizeof a, "%s/libreloada.so", dir);
    snprintf(b, sizeof b, "%s/libreloadb.so", dir);
    work(ms * 20);
    for (int i = 0; i < 40 * scale; i++) {
        ENTER(loading);
        void *first = open_or_die(i & 1 ? b : a);
        void *second = open_or_die(i & 1 ? a : b);
        LEAVE(loading);
        void *ha = i & 1 ? second : first, *hb = i & 1 ? first : second;
        ((void (*)(long))dlsym(ha, "reload_work"))(ms * 6);
        ((void (*)(long))dlsym(hb, "other_work"))(ms * 6);
        ENTER(loading);
        dlclose(second);
        dlclose(first);
        LEAVE(loading);
        plain();
    }
    LEAVE(main);
    /* The libraries' names went with them (truth_enter keeps the pointers it was given). */
    truth_names[T_reload_work] = "reload_work";
    truth_names[T_reload_leaf] = "reload_leaf";
    truth_names[T_other_work] = "other_work";
    truth_names[T_loading] = NULL;
    truth_report();
    return 0;
}
