/* libreloada.so: loaded and unloaded by the reload workload, round after round. */
#define TRUTH_LIBRARY
#include "truth.h"
#include "reload.h"

__attribute__((noinline, noipa)) void reload_leaf(long steps) {
    ENTER(reload_leaf);
    work(steps);
    LEAVE(reload_leaf);
}

void reload_work(long steps) {
    ENTER(reload_work);
    work(steps);
    reload_leaf(steps * 2);
    LEAVE(reload_work);
}
