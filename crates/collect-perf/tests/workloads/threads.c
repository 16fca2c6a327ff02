/* A multi-threaded process: four threads spinning plus the main thread. */
#include "common.h"
#include <pthread.h>
static void *run(void *arg) { (void)arg; spin(250); return 0; }
int main(void) {
    pthread_t t[4];
    for (int i = 0; i < 4; i++) pthread_create(&t[i], 0, run, 0);
    spin(250);
    for (int i = 0; i < 4; i++) pthread_join(t[i], 0);
    return 0;
}
