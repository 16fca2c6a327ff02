/* Syscall-bound loop: read /dev/zero into a large buffer, write it to /dev/null. syscall MS */
#include "common.h"
#include <fcntl.h>
#include <unistd.h>
static char buf[1 << 20];
__attribute__((noinline)) static void copy_loop(double ms) {
    int in = open("/dev/zero", O_RDONLY), out = open("/dev/null", O_WRONLY);
    double end = thread_cpu_ms() + ms;
    while (thread_cpu_ms() < end) {
        if (read(in, buf, sizeof buf) <= 0) exit(1);
        if (write(out, buf, sizeof buf) <= 0) exit(1);
    }
}
int main(int argc, char **argv) { copy_loop(argc > 1 ? atof(argv[1]) : 500); return 0; }
