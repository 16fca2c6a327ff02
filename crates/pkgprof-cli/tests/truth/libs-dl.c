/* libtruthdl.so: loaded by the libs workload with dlopen. */
#define TRUTH_LIBRARY
#include "truth.h"
#include "libs.h"

__attribute__((noinline, noipa)) void dl_leaf(long steps) {
    ENTER(dl_leaf);
    work(steps);
    LEAVE(dl_leaf);
}

void dl_compute(long steps) {
    ENTER(dl_compute);
    work(steps);
    dl_leaf(steps);
    LEAVE(dl_compute);
}
