/* A short-lived child storm: 50 children, each spinning about 2 ms. */
#include "common.h"
#include <sys/wait.h>
#include <unistd.h>
int main(void) {
    for (int i = 0; i < 50; i++) {
        pid_t p = fork();
        if (p == 0) { spin(2); _exit(0); }
        if (p < 0) return 1;
    }
    while (wait(0) > 0) {}
    return 0;
}
