/* A frame wider than the largest user-stack copy: main calls wide(), whose 96 KiB array puts
   wide's frame record, and with it main, past the 64 KiB a sample's copy holds; wide calls
   inner, which spins. Stacks reach main only by the frame-pointer chain: widestack [MS] */
#include "common.h"
#include <string.h>
/* Not a tail call: inner keeps a frame of its own. */
__attribute__((noinline, noipa)) void inner(double ms) {
    spin(ms);
    sink = sink + 1;
}
__attribute__((noinline, noipa)) int wide(double ms) {
    volatile char a[96 * 1024];
    memset((char *)a, 1, sizeof a);
    inner(ms);
    return a[7];
}
int main(int argc, char **argv) { return wide(argc > 1 ? atof(argv[1]) : 300) == 1 ? 0 : 1; }
