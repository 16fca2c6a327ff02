/* Short-lived threads: 400 threads one after the other, each spinning 0.3 ms, less than a
   sample period at 1000 Hz: threadstorm [COUNT] */
#include "common.h"
#include <pthread.h>
static void *run(void *arg) { (void)arg; spin(0.3); return 0; }
int main(int argc, char **argv) {
    int n = argc > 1 ? atoi(argv[1]) : 400;
    for (int i = 0; i < n; i++) {
        pthread_t t;
        if (pthread_create(&t, 0, run, 0) != 0) return 1;
        pthread_join(t, 0);
    }
    return 0;
}
