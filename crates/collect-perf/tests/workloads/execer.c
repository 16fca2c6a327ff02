/* Works, then execs another program: execer PROGRAM [ARGS...] */
#include "common.h"
#include <unistd.h>
int main(int argc, char **argv) {
    if (argc < 2) return 2;
    spin(150);
    execv(argv[1], argv + 1);
    return 127;
}
