/* libtruthlib.so: linked to the libs workload, so its calls go through the PLT. */
#define TRUTH_LIBRARY
#include "truth.h"
#include "libs.h"

__attribute__((noinline, noipa)) void lib_inner(long steps) {
    ENTER(lib_inner);
    work(steps);
    LEAVE(lib_inner);
}

void lib_compute(long steps) {
    ENTER(lib_compute);
    work(steps);
    lib_inner(steps * 2);
    LEAVE(lib_compute);
}
