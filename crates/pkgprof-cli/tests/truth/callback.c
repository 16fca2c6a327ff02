/* Callbacks through libc, ground truth by construction (see truth.h): callback [SCALE]
 *
 *   main ─┬─ sorter ── qsort (libc) ── cmp        (the program's comparator under libc's frames)
 *         ├─ searcher ── bsearch (libc) ── cmp
 *         └─ plain
 *
 * The comparator's callers are libc's sorting functions: its time is sorter's and searcher's
 * inclusive time only if the stack is unwound through libc's frames. */
#include <stdlib.h>
#include "truth.h"

enum { T_main, T_sorter, T_searcher, T_cmp, T_plain };

static long ms;
static double cost;

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE int cmp(const void *a, const void *b) {
    ENTER(cmp);
    work((long)(cost * ms));
    int x = *(const int *)a, y = *(const int *)b;
    LEAVE(cmp);
    return (x > y) - (x < y);
}

NOINLINE void sorter(void) {
    int v[48];
    ENTER(sorter);
    for (int i = 0; i < 48; i++) v[i] = (i * 7919) % 101;
    work(ms * 2);
    cost = 0.15;
    qsort(v, 48, sizeof v[0], cmp);
    LEAVE(sorter);
}

NOINLINE void searcher(void) {
    static int v[1024];
    ENTER(searcher);
    for (int i = 0; i < 1024; i++) v[i] = 2 * i;
    cost = 0.4;
    for (int k = 0; k < 8; k++) {
        int key = 2 * ((k * 389) % 1024);
        if (!bsearch(&key, v, 1024, sizeof v[0], cmp)) abort();
    }
    LEAVE(searcher);
}

NOINLINE void plain(void) {
    ENTER(plain);
    work(ms * 6);
    LEAVE(plain);
}

int main(int argc, char **argv) {
    ENTER(main);
    ms = truth_steps_per_ms();
    int scale = argc > 1 ? atoi(argv[1]) : 1;
    for (int i = 0; i < 20 * scale; i++) {
        work(ms * 2);
        sorter();
        searcher();
        plain();
    }
    LEAVE(main);
    truth_report();
    return 0;
}
