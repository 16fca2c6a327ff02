/* Workloads of known latency for `pkgmon --latency/--blocking`, each measuring itself.
 *
 *   latency sleep N OUT      nanosleep(1 ms) N times, from nap()
 *   latency getpid N OUT     getpid N times, from ask_pid()
 *   latency pipe N OUT       read() N bytes from a pipe whose writer (a child) sleeps 5 ms
 *                            between writes, from reader()
 *   latency lock N P OUT     P processes (1 or 2) take an fcntl lock N times each, from
 *                            take_lock(), holding it 2 ms and sleeping 0.5 ms between
 *   latency fault N K OUT    N reads of /dev/zero into K fresh pages each, from fill()
 *   latency direct N FILE OUT N O_DIRECT reads of 4 KiB at random offsets of FILE (on a
 *                            disk, so that each goes to the device), from read_block()
 *
 * OUT gets what the program measured itself with CLOCK_MONOTONIC around each call (so
 * including the wrapper's few instructions): `calls`, `total`, one `bucket B COUNT` per
 * non-empty log2 bucket (floor(log2(ns))), `faults` (its own minor faults during the calls,
 * from getrusage), `peer PID` for the pipe writer, and for direct `sleeps`, its voluntary
 * context switches during the reads (getrusage).
 */
#define _GNU_SOURCE
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return ts.tv_sec * 1000000000ULL + ts.tv_nsec;
}

static unsigned long long buckets[64], calls, total;

static void count(unsigned long long ns) {
    int b = ns > 1 ? 63 - __builtin_clzll(ns) : 0;
    buckets[b]++;
    calls++;
    total += ns;
}

/* The program's own resource usage, read around the calls it measures. */
static struct rusage usage(void) {
    struct rusage ru;
    getrusage(RUSAGE_SELF, &ru);
    return ru;
}

/* Voluntary context switches during the calls, where measured (direct): -1 elsewhere. */
static long sleeps = -1;

static void report(const char *out, long faults, int peer) {
    FILE *f = fopen(out, "w");
    if (!f) exit(3);
    fprintf(f, "calls %llu\ntotal %llu\nfaults %ld\npeer %d\n", calls, total, faults, peer);
    if (sleeps >= 0) fprintf(f, "sleeps %ld\n", sleeps);
    for (int b = 0; b < 64; b++)
        if (buckets[b]) fprintf(f, "bucket %d %llu\n", b, buckets[b]);
    fclose(f);
}

__attribute__((noinline)) static void nap(void) {
    struct timespec t = {0, 1000000};
    unsigned long long t0 = now();
    nanosleep(&t, 0);
    count(now() - t0);
}

__attribute__((noinline)) static void ask_pid(void) {
    unsigned long long t0 = now();
    syscall(SYS_getpid);
    count(now() - t0);
}

__attribute__((noinline)) static void reader(int fd) {
    char c;
    unsigned long long t0 = now();
    if (read(fd, &c, 1) != 1) exit(4);
    count(now() - t0);
}

static void spin_us(unsigned long long us) {
    unsigned long long end = now() + us * 1000;
    while (now() < end) {
    }
}

__attribute__((noinline)) static void take_lock(int fd) {
    struct flock l = {.l_type = F_WRLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    unsigned long long t0 = now();
    if (fcntl(fd, F_SETLKW, &l) != 0) exit(5);
    count(now() - t0);
}

__attribute__((noinline)) static void drop_lock(int fd) {
    struct flock l = {.l_type = F_UNLCK, .l_whence = SEEK_SET, .l_start = 0, .l_len = 1};
    fcntl(fd, F_SETLK, &l);
}

__attribute__((noinline)) static long fill(int fd, size_t pages) {
    size_t len = pages * 4096;
    char *p = mmap(0, len, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (p == MAP_FAILED) exit(6);
    madvise(p, len, MADV_NOHUGEPAGE);
    long f0 = usage().ru_minflt;
    unsigned long long t0 = now();
    if (read(fd, p, len) != (ssize_t)len) exit(7);
    unsigned long long t1 = now();
    long faults = usage().ru_minflt - f0;
    count(t1 - t0);
    munmap(p, len);
    return faults;
}

__attribute__((noinline)) static void read_block(int fd, void *buf, off_t blocks) {
    off_t at = (off_t)(random() % blocks) * 4096;
    unsigned long long t0 = now();
    if (pread(fd, buf, 4096, at) != 4096) exit(8);
    count(now() - t0);
}

int main(int argc, char **argv) {
    if (argc < 4) return 2;
    const char *mode = argv[1];
    long n = atol(argv[2]);
    if (!strcmp(mode, "sleep")) {
        for (long i = 0; i < n; i++) nap();
        report(argv[3], 0, 0);
    } else if (!strcmp(mode, "getpid")) {
        for (long i = 0; i < n; i++) ask_pid();
        report(argv[3], 0, 0);
    } else if (!strcmp(mode, "pipe")) {
        int p[2];
        if (pipe(p)) return 9;
        pid_t w = fork();
        if (w == 0) {
            close(p[0]);
            struct timespec t = {0, 5000000};
            for (long i = 0; i < n; i++) {
                nanosleep(&t, 0);
                if (write(p[1], "x", 1) != 1) _exit(1);
            }
            _exit(0);
        }
        close(p[1]);
        for (long i = 0; i < n; i++) reader(p[0]);
        waitpid(w, 0, 0);
        report(argv[3], 0, w);
    } else if (!strcmp(mode, "lock") && argc >= 5) {
        int procs = atoi(argv[3]);
        char path[] = "/tmp/latency-lock-XXXXXX";
        int fd = mkstemp(path);
        if (fd < 0) return 9;
        unlink(path);
        pid_t other = procs > 1 ? fork() : -1;
        for (long i = 0; i < n; i++) {
            take_lock(fd);
            spin_us(2000);
            drop_lock(fd);
            /* Let the other process, waiting for the lock, get in between. */
            struct timespec t = {0, 500000};
            nanosleep(&t, 0);
        }
        if (other == 0) _exit(0);
        if (other > 0) waitpid(other, 0, 0);
        report(argv[4], 0, other);
    } else if (!strcmp(mode, "fault") && argc >= 5) {
        int fd = open("/dev/zero", O_RDONLY);
        long faults = 0;
        for (long i = 0; i < n; i++) faults += fill(fd, atol(argv[3]));
        report(argv[4], faults, 0);
    } else if (!strcmp(mode, "direct") && argc >= 5) {
        int fd = open(argv[3], O_RDONLY | O_DIRECT);
        if (fd < 0) return 10;
        off_t size = lseek(fd, 0, SEEK_END);
        void *buf;
        if (size < 1 << 20 || posix_memalign(&buf, 4096, 4096)) return 11;
        srandom(42);
        long s0 = usage().ru_nvcsw;
        for (long i = 0; i < n; i++) read_block(fd, buf, size / 4096);
        sleeps = usage().ru_nvcsw - s0;
        report(argv[4], 0, 0);
    } else {
        return 2;
    }
    return 0;
}
