/* The continuous soak's workload (tests/continuous.rs).
 *
 *   instances spin SECONDS OUT    burn SECONDS of CPU time, then append "PID CPU_NS" to OUT,
 *                                 CPU_NS from /proc/self/stat (utime + stime)
 *   instances rename SECONDS OUT  prctl(PR_SET_NAME, "renamed"), then as spin
 *   instances exec PROGRAM SECONDS OUT
 *                                 burn a little, then exec PROGRAM spin SECONDS OUT
 *   instances threads N SECONDS OUT
 *                                 N threads (the main one among them) burn SECONDS each,
 *                                 then report the process's CPU time as spin does
 *   instances fork SECONDS OUT    fork without exec; parent and child each burn SECONDS and
 *                                 report as spin does
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
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

static double thread_seconds(void) {
    struct timespec t;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void *thread_spin(void *seconds) {
    while (thread_seconds() < *(double *)seconds) burn(200000);
    return NULL;
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
    if (argc == 5 && !strcmp(argv[1], "threads")) {
        int n = atoi(argv[2]);
        double seconds = atof(argv[3]);
        pthread_t t[16];
        if (n < 1 || n > 16) return 2;
        for (int i = 1; i < n; i++) pthread_create(&t[i], NULL, thread_spin, &seconds);
        thread_spin(&seconds);
        for (int i = 1; i < n; i++) pthread_join(t[i], NULL);
        report(argv[4]);
        return 0;
    }
    if (argc == 4 && !strcmp(argv[1], "fork")) {
        pid_t child = fork();
        if (child < 0) return 6;
        spin_for(atof(argv[2]));
        report(argv[3]);
        if (child == 0) _exit(0);
        waitpid(child, NULL, 0);
        return 0;
    }
    if (argc == 5 && !strcmp(argv[1], "exec")) {
        spin_for(0.2);
        execl(argv[2], argv[2], "spin", argv[3], argv[4], (char *)NULL);
        return 5;
    }
    fprintf(stderr, "usage: instances spin|rename|fork SECONDS OUT | exec PROGRAM SECONDS OUT |"
                    " threads N SECONDS OUT\n");
    return 2;
}
