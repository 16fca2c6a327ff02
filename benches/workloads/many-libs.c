/* A process with many shared libraries: dlopens ./libmany1.so .. ./libmanyN.so (each one
 * function, many-libs-lib.c built with -DN=k) and calls each in turn, ROUNDS times; writes its
 * own CPU seconds (user + system) to $WORK_CPU_OUT if set.
 *
 *   many-libs N ROUNDS
 */
#include <dlfcn.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/resource.h>

typedef long (*fn)(long);

int main(int argc, char **argv) {
    if (argc != 3) {
        fprintf(stderr, "usage: many-libs N ROUNDS\n");
        return 2;
    }
    int n = atoi(argv[1]);
    long rounds = atol(argv[2]);
    fn *f = calloc(n > 0 ? n : 1, sizeof *f);
    char name[64];
    for (int i = 1; i <= n; i++) {
        snprintf(name, sizeof name, "./libmany%d.so", i);
        void *h = dlopen(name, RTLD_NOW);
        if (!h) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
        snprintf(name, sizeof name, "many%d", i);
        f[i - 1] = (fn)dlsym(h, name);
        if (!f[i - 1]) {
            fprintf(stderr, "%s\n", dlerror());
            return 1;
        }
    }
    /* The same work whatever N is: ROUNDS x 400 calls. */
    long s = 0;
    for (long r = 0; r < rounds; r++)
        for (int i = 0; i < 400; i++)
            s += f[i % n](s);
    printf("%ld\n", s);
    const char *out = getenv("WORK_CPU_OUT");
    if (out) {
        struct rusage u;
        getrusage(RUSAGE_SELF, &u);
        FILE *o = fopen(out, "w");
        if (!o) return 1;
        fprintf(o, "%.6f\n", u.ru_utime.tv_sec + u.ru_utime.tv_usec / 1e6 + u.ru_stime.tv_sec +
                                 u.ru_stime.tv_usec / 1e6);
        fclose(o);
    }
    return 0;
}
