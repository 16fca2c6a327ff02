/* The continuous soak's workload (tests/continuous.rs).
 *
 *   instances spin SECONDS OUT    burn SECONDS of CPU time, then append "PID CPU_NS" to OUT,
 *                                 CPU_NS from /proc/self/stat (utime + stime)
 *   instances rename SECONDS OUT  prctl(PR_SET_NAME, "renamed"), then as spin
 *   instances exec PROGRAM SECONDS OUT
 *                                 burn a little, then exec PROGRAM spin SECONDS OUT
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <time.h>
#include <unistd.h>

static volatile unsigned long sink;

__attribute__((noinline)) static void burn(unsigned long n) {
    for (unsigned long i = 0; i < n; i++) sink += i * i;
}

static double cpu_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

__attribute__((noinline)) static void spin_for(double seconds) {
    while (cpu_seconds() < seconds) burn(200000);
}

static void report(const char *out) {
    char buf[1024];
    FILE *f = fopen("/proc/self/stat", "r");
    if (!f || !fgets(buf, sizeof buf, f)) exit(3);
    fclose(f);
    /* Fields after the command name: state is field 3; utime and stime are 14 and 15. */
    char *p = strrchr(buf, ')');
    unsigned long long utime = 0, stime = 0;
    int field = 2;
    for (char *tok = strtok(p + 1, " "); tok; tok = strtok(NULL, " ")) {
        field++;
        if (field == 14) utime = strtoull(tok, NULL, 10);
        if (field == 15) { stime = strtoull(tok, NULL, 10); break; }
    }
    long hz = sysconf(_SC_CLK_TCK);
    FILE *o = fopen(out, "a");
    if (!o) exit(4);
    fprintf(o, "%d %llu\n", getpid(), (utime + stime) * (1000000000ULL / hz));
    fclose(o);
}

int main(int argc, char **argv) {
    if (argc == 4 && !strcmp(argv[1], "spin")) {
        spin_for(atof(argv[2]));
        report(argv[3]);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "rename")) {
        prctl(PR_SET_NAME, "renamed", 0, 0, 0);
        spin_for(atof(argv[2]));
        report(argv[3]);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "exec")) {
        spin_for(0.2);
        execl(argv[2], argv[2], "spin", argv[3], argv[4], (char *)NULL);
        return 5;
    }
    fprintf(stderr, "usage: instances spin|rename SECONDS OUT | exec PROGRAM SECONDS OUT\n");
    return 2;
}
