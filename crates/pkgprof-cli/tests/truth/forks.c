/* Processes, ground truth by construction (see truth.h): forks [SCALE]
 *
 *   parent: main ── parent_work                       (then waits for both children)
 *   child:  main ── child_deep ── deep (recursion, depth 60, 512 bytes a level) ── leaf
 *   child:  main ── child_flat ── leaf
 *
 * Each process measures itself from the moment it exists and reports to $TRUTH_OUT.<pid>: the
 * profile of each must be its own, its children's samples neither in it nor missing from
 * theirs, and a child's stacks must reach its `main` through the frames it inherited. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>
#include "truth.h"

enum { T_main, T_parent_work, T_child_deep, T_deep, T_child_flat, T_leaf };

static long ms;

#define NOINLINE __attribute__((noinline, noipa))

NOINLINE void leaf(long m) {
    ENTER(leaf);
    work(m);
    LEAVE(leaf);
}

NOINLINE void deep(int d) {
    char buf[512];
    ENTER(deep);
    buf[d % 512] = (char)d;
    __asm__ volatile("" ::"r"(buf) : "memory");
    work(ms / 20);
    if (d > 0)
        deep(d - 1);
    else
        leaf(ms / 2);
    LEAVE(deep);
}

NOINLINE void child_deep(int n) {
    ENTER(child_deep);
    for (int i = 0; i < n; i++) {
        work(ms);
        deep(60);
    }
    LEAVE(child_deep);
}

NOINLINE void child_flat(int n) {
    ENTER(child_flat);
    for (int i = 0; i < n; i++) {
        work(ms * 3);
        leaf(ms);
    }
    LEAVE(child_flat);
}

NOINLINE void parent_work(int n) {
    ENTER(parent_work);
    for (int i = 0; i < n; i++) work(ms * 2);
    LEAVE(parent_work);
}

/* A new process's thread clock starts at zero: what it inherited of its parent's measurements
   is the parent's, and its functions active at the fork start their spans now. */
static void forked(void) {
    truth_last = truth_now();
    memset(truth_self, 0, sizeof truth_self);
    memset(truth_incl, 0, sizeof truth_incl);
    for (int i = 0; i < TRUTH_MAX_FUNCS; i++)
        if (truth_active[i]) truth_since[i] = truth_last;
}

/* Reports to $TRUTH_OUT.<pid>. */
static void report(void) {
    const char *base = getenv("TRUTH_OUT");
    if (!base) return;
    char path[4096];
    snprintf(path, sizeof path, "%s.%d", base, (int)getpid());
    setenv("TRUTH_OUT", path, 1);
    truth_report();
}

/* Forks a child that runs body(n) under main, reports and exits; returns its pid. */
static pid_t child(void (*body)(int), int n) {
    pid_t pid = fork();
    if (pid == 0) {
        forked();
        body(n);
        LEAVE(main);
        report();
        _exit(0);
    }
    return pid;
}

int main(int argc, char **argv) {
    ENTER(main);
    ms = truth_steps_per_ms();
    int n = 100 * (argc > 1 ? atoi(argv[1]) : 1);
    pid_t a = child(child_deep, n);
    pid_t b = child(child_flat, n);
    parent_work(n);
    if (a < 0 || b < 0 || waitpid(a, 0, 0) != a || waitpid(b, 0, 0) != b) return 1;
    LEAVE(main);
    report();
    return 0;
}
