/* A parent forking two children doing different work, then working itself. */
#include "common.h"
#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>
static char buf[1 << 16];
__attribute__((noinline)) static void child_io(double ms) {
    int in = open("/dev/zero", O_RDONLY);
    double end = thread_cpu_ms() + ms;
    while (thread_cpu_ms() < end) if (read(in, buf, sizeof buf) <= 0) exit(1);
}
int main(void) {
    pid_t a = fork();
    if (a == 0) { spin(300); _exit(0); }
    pid_t b = fork();
    if (b == 0) { child_io(300); _exit(0); }
    spin(300);
    waitpid(a, 0, 0);
    waitpid(b, 0, 0);
    return 0;
}
