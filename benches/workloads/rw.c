/* Fixed syscall work (for overhead measurements): rw PAIRS — PAIRS reads of 64 KiB from
   /dev/zero, each followed by a write of it to /dev/null. */
#include <fcntl.h>
#include <stdlib.h>
#include <unistd.h>
static char buf[1 << 16];
int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    int in = open("/dev/zero", O_RDONLY), out = open("/dev/null", O_WRONLY);
    for (long i = 0; i < n; i++) {
        if (read(in, buf, sizeof buf) <= 0) return 1;
        if (write(out, buf, sizeof buf) <= 0) return 1;
    }
    return 0;
}
