/* libreloadb.so: loaded and unloaded by the reload workload, taking libreloada.so's place
   every other round. */
#define TRUTH_LIBRARY
#include "truth.h"
#include "reload.h"

void other_work(long steps) {
    ENTER(other_work);
    work(steps);
    LEAVE(other_work);
}
