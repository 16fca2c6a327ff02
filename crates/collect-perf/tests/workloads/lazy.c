/* Calls a C library function through the PLT in a loop: run with LD_BIND_NOT=1, the dynamic
 * linker leaves the GOT as it was, so every call goes through its lazy-binding trampoline
 * (_dl_runtime_resolve_*) and symbol lookup, where most of the time goes.
 *
 *   LD_BIND_NOT=1 lazy CALLS
 */
#include <stdio.h>
#include <stdlib.h>

__attribute__((noinline)) long resolve_loop(long n) {
    long s = 0;
    for (long i = 0; i < n; i++)
        s += strtol("12", NULL, 10);
    return s;
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    printf("%ld\n", resolve_loop(n));
    return 0;
}
