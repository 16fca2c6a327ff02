/* Recursion, ground truth by construction (see truth.h): recursion [SCALE]
 *
 *   main ── driver ─┬─ recurse (direct recursion, depth 200) ── leaf
 *                   ├─ ping ⇄ pong (mutual recursion, depth 2 × 60) ── leaf
 *                   ├─ cheap ── both (depth 1: little work)
 *                   └─ deep ─── both (depth 200: much work)
 *
 * Every function also does work of its own at each level, so self and inclusive times differ
 * everywhere. SCALE (default 1) multiplies the amount of work. */
#include "truth.h"

enum { T_main, T_driver, T_recurse, T_ping, T_pong, T_leaf, T_cheap, T_deep, T_both };

static long ms; /* work steps per millisecond */

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE void leaf(double m) {
    ENTER(leaf);
    work((long)(m * ms));
    LEAVE(leaf);
}

NOINLINE int recurse(int d) {
    ENTER(recurse);
    work(ms / 4);
    int r = d > 0 ? recurse(d - 1) : (leaf(20), 0);
    work(ms / 8);
    LEAVE(recurse);
    return r + 1;
}

NOINLINE int pong(int d);

NOINLINE int ping(int d) {
    ENTER(ping);
    work(ms / 4);
    int r = d > 0 ? pong(d - 1) : (leaf(10), 0);
    LEAVE(ping);
    return r + 1;
}

NOINLINE int pong(int d) {
    ENTER(pong);
    work(ms / 2);
    int r = ping(d);
    LEAVE(pong);
    return r + 1;
}

/* Recursive, with two callers: cheap calls it shallowly, deep deeply. */
NOINLINE int both(int d) {
    ENTER(both);
    work(ms / 5);
    int r = d > 0 ? both(d - 1) : 0;
    work(ms / 10);
    LEAVE(both);
    return r + 1;
}

NOINLINE int cheap(void) {
    ENTER(cheap);
    work(ms / 2);
    int r = both(1);
    LEAVE(cheap);
    return r;
}

NOINLINE int deep(void) {
    ENTER(deep);
    work(ms / 2);
    int r = both(200);
    LEAVE(deep);
    return r;
}

NOINLINE void driver(int scale) {
    ENTER(driver);
    for (int i = 0; i < 3 * scale; i++) {
        work(ms * 5);
        recurse(200);
        ping(60);
        for (int k = 0; k < 20; k++) cheap();
        deep();
    }
    LEAVE(driver);
}

int main(int argc, char **argv) {
    ENTER(main);
    ms = truth_steps_per_ms();
    work(ms * 100);
    driver(argc > 1 ? atoi(argv[1]) : 1);
    LEAVE(main);
    truth_report();
    return 0;
}
