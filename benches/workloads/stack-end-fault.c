/* What a copy from user memory that runs into an unmapped page costs the kernel: the end of
 * every sample's user-stack copy (the kernel copies up to --stack-size bytes from the stack
 * pointer, and the stack's mapping ends first). read(2) from /dev/zero into a buffer that
 * lies wholly inside mapped memory, then into one whose second half is past the mapping's
 * end: the difference is one page-fault exception and its fix-up.
 *   stack-end-fault [CALLS]   prints ns a call of each kind, best of 3 rounds */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

static double now(void) {
    struct timespec t;
    clock_gettime(CLOCK_MONOTONIC, &t);
    return t.tv_sec * 1e9 + t.tv_nsec;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 1000000;
    int fd = open("/dev/zero", O_RDONLY);
    char *p = mmap(0, 3 * 4096, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    if (fd < 0 || p == MAP_FAILED || munmap(p + 2 * 4096, 4096) != 0) return 1;
    p[0] = p[4096] = 1;
    double inside = 1e18, crossing = 1e18;
    for (int round = 0; round < 3; round++) {
        double t0 = now();
        for (long i = 0; i < n; i++)
            if (read(fd, p + 4096 - 2048, 2048) != 2048) return 1;
        double t1 = now();
        /* 4096 asked, 2048 copied before the unmapped page: read returns 2048. */
        for (long i = 0; i < n; i++)
            if (read(fd, p + 4096 + 2048, 4096) != 2048) return 1;
        double t2 = now();
        if ((t1 - t0) / n < inside) inside = (t1 - t0) / n;
        if ((t2 - t1) / n < crossing) crossing = (t2 - t1) / n;
    }
    printf("2 KiB copied inside the mapping: %.0f ns a call\n", inside);
    printf("2 KiB copied, then the unmapped page: %.0f ns a call (+%.0f ns)\n", crossing,
           crossing - inside);
    return 0;
}
