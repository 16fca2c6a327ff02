/* Workloads whose kernel work is deferred, for pkgmon --async=workqueue,timer:
 *
 *   deferred writeback SECONDS PIDFILE FILE   dirties FILE's pages and has the kernel's flusher
 *                                             write them (syncfs): the writeback runs in a
 *                                             kworker, for this process
 *   deferred pacing SECONDS PIDFILE           a TCP stream over loopback paced by the socket's
 *                                             own timer (SO_MAX_PACING_RATE): each paced burst
 *                                             is sent from the timer's callback, in whatever
 *                                             task the CPU runs, for this process
 *   deferred direct SECONDS PIDFILE DEVICE [CPU]
 *                                             reads DEVICE (a loop device) with O_DIRECT, 4 KiB
 *                                             at a time (at most 50,000 a second), round and
 *                                             round: each read's
 *                                             completion runs in the BLOCK softirq (a loop
 *                                             device completes from its worker, so in
 *                                             ksoftirqd), for this process; on CPU only, if
 *                                             given
 *
 * PIDFILE gets "owner PID" (the process the work is for) and, in pacing mode, "reader PID"
 * and "victim PID": a process that only spins in user space on the same CPU as the others,
 * so that the timer fires while it runs (perf samples no tracepoint in the idle task).
 */
#define _GNU_SOURCE
#include <arpa/inet.h>
#include <fcntl.h>
#include <netinet/in.h>
#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "loopback.h"

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec + t.tv_nsec / 1e9;
}

static void die(const char *what) {
    perror(what);
    exit(1);
}

static void writeback(double seconds, const char *path) {
    static char buf[1 << 20];
    memset(buf, 'x', sizeof buf);
    int fd = open(path, O_WRONLY | O_CREAT | O_TRUNC, 0600);
    if (fd < 0)
        die(path);
    double end = now() + seconds;
    while (now() < end) {
        /* 16 MiB of dirty pages, rewritten in place, then written back by the flusher. */
        for (int i = 0; i < 16; i++)
            if (pwrite(fd, buf, sizeof buf, (off_t)i << 20) != sizeof buf)
                die("pwrite");
        if (syncfs(fd))
            die("syncfs");
    }
    close(fd);
    unlink(path);
}

/* Every process of pacing mode on the CPU the first runs on. */
static void one_cpu(void) {
    cpu_set_t one;
    CPU_ZERO(&one);
    CPU_SET(sched_getcpu(), &one);
    if (sched_setaffinity(0, sizeof one, &one))
        die("sched_setaffinity");
}

static void pacing(double seconds, FILE *pids) {
    one_cpu();
    pid_t victim = fork();
    if (victim == 0) {
        volatile unsigned long n = 0;
        for (;;)
            n++;
    }
    fprintf(pids, "victim %d\n", victim);
    struct sockaddr_in addr;
    pid_t reader = loopback_reader(&addr);
    fprintf(pids, "reader %d\n", reader);
    fflush(pids);
    int s = socket(AF_INET, SOCK_STREAM, 0);
    /* 1 GiB/s: the stack paces its bursts with the socket's high-resolution timer. */
    unsigned rate = 1u << 30;
    if (connect(s, (struct sockaddr *)&addr, sizeof addr) ||
        setsockopt(s, SOL_SOCKET, SO_MAX_PACING_RATE, &rate, sizeof rate))
        die("connect");
    static char buf[1 << 16];
    memset(buf, 'x', sizeof buf);
    double end = now() + seconds;
    while (now() < end)
        if (send(s, buf, sizeof buf, 0) <= 0)
            die("send");
    close(s);
    waitpid(reader, NULL, 0);
    kill(victim, SIGKILL);
    waitpid(victim, NULL, 0);
}

static void direct(double seconds, const char *device) {
    int fd = open(device, O_RDONLY | O_DIRECT);
    if (fd < 0)
        die(device);
    off_t size = lseek(fd, 0, SEEK_END);
    enum { BLOCK = 4096 };
    void *buf;
    if (size < BLOCK || posix_memalign(&buf, 4096, BLOCK))
        die("size");
    /* At most RATE reads a second: a fast machine completed ~190,000 a second, each leaving
       ~3 records of BLOCK softirq windows and completions, more than a debug pkgmon read on
       two CPUs (228,466 BPF records and 121,025 samples lost in a CI run). */
    enum { RATE = 50000, BATCH = 64 };
    double start = now(), end = start + seconds;
    long done = 0;
    for (off_t at = 0; now() < end; at = (at + BLOCK) % (size / BLOCK * BLOCK)) {
        if (pread(fd, buf, BLOCK, at) != BLOCK)
            die("pread");
        if (++done % BATCH == 0) {
            double ahead = start + (double)done / RATE - now();
            if (ahead > 0) {
                struct timespec t = {0, (long)(ahead * 1e9)};
                nanosleep(&t, 0);
            }
        }
    }
    close(fd);
}

int main(int argc, char **argv) {
    if (argc < 4 || (!strcmp(argv[1], "writeback") && argc != 5) ||
        (!strcmp(argv[1], "direct") && argc != 5 && argc != 6)) {
        fprintf(stderr, "usage: deferred writeback SECONDS PIDFILE FILE | pacing SECONDS PIDFILE"
                        " | direct SECONDS PIDFILE DEVICE [CPU]\n");
        return 2;
    }
    if (argc == 6) {
        cpu_set_t one;
        CPU_ZERO(&one);
        CPU_SET(atoi(argv[5]), &one);
        if (sched_setaffinity(0, sizeof one, &one))
            die("sched_setaffinity");
    }
    double seconds = atof(argv[2]);
    FILE *pids = fopen(argv[3], "w");
    if (!pids)
        die(argv[3]);
    fprintf(pids, "owner %d\n", getpid());
    fflush(pids);
    if (!strcmp(argv[1], "writeback"))
        writeback(seconds, argv[4]);
    else if (!strcmp(argv[1], "pacing"))
        pacing(seconds, pids);
    else if (!strcmp(argv[1], "direct"))
        direct(seconds, argv[4]);
    else
        return 2;
    fclose(pids);
    return 0;
}
