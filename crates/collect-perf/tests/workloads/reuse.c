/* A reused pid: the first child runs first_work and exits; the parent sets ns_last_pid so the
   next fork gets the same pid, and that second child renames itself (prctl) and runs
   second_work. Run it as root in a pid namespace of its own (unshare -fp), where ns_last_pid
   is its own. Prints "reused PID" or "not reused A B" on stderr. */
#include "common.h"
#include <stdio.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <unistd.h>

__attribute__((noinline)) static void first_work(void) { spin(150); }
__attribute__((noinline)) static void second_work(void) { spin(150); }

int main(void) {
    pid_t a = fork();
    if (a == 0) { first_work(); _exit(0); }
    waitpid(a, 0, 0);
    FILE *f = fopen("/proc/sys/kernel/ns_last_pid", "w");
    if (!f) { perror("ns_last_pid"); return 2; }
    fprintf(f, "%d", a - 1);
    fclose(f);
    pid_t b = fork();
    if (b == 0) {
        prctl(PR_SET_NAME, "renamed", 0, 0, 0);
        second_work();
        _exit(0);
    }
    waitpid(b, 0, 0);
    if (a == b) fprintf(stderr, "reused %d\n", a);
    else fprintf(stderr, "not reused %d %d\n", a, b);
    return a == b ? 0 : 3;
}
