/* The end-to-end workload of tests/seamless_e2e.rs: read_zeros calls read() on /dev/zero until
 * the process has used the CPU time asked for (milliseconds, default 300), so nearly all samples
 * are in the kernel under libc's read wrapper, as in the pkprof paper's Figure 2.2. */
#include <fcntl.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>
static char buf[1 << 16];
static double cpu_ms(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}
__attribute__((noinline)) long read_zeros(int fd) { return read(fd, buf, sizeof buf); }
int main(int argc, char **argv) {
    int fd = open("/dev/zero", O_RDONLY);
    double end = cpu_ms() + (argc > 1 ? atof(argv[1]) : 300);
    while (cpu_ms() < end)
        if (read_zeros(fd) <= 0) return 1;
    return 0;
}
