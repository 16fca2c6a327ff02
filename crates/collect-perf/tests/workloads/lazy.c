/* Calls a C library function through the PLT in a loop: run with LD_BIND_NOT=1, the dynamic
 * linker leaves the GOT as it was, so every call goes through its lazy-binding trampoline
 * (_dl_runtime_resolve_*) and symbol lookup, where most of the time goes. With `drop`, the
 * loop runs with its stack pointer a few hundred bytes above a page boundary and gives the
 * pages below back before each call, so the trampoline's register save area touches a page
 * not in memory: a page fault inside the trampoline.
 *
 *   LD_BIND_NOT=1 lazy CALLS [drop]
 */
#include <alloca.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>

static int drop;

static inline uintptr_t stack_pointer(void) {
    uintptr_t sp;
    __asm__ volatile("mov %%rsp, %0" : "=r"(sp));
    return sp;
}

__attribute__((noinline)) long resolve_loop(long n) {
    long s = 0;
    uintptr_t below = (stack_pointer() & ~(uintptr_t)4095) - 4 * 4096;
    for (long i = 0; i < n; i++) {
        if (drop)
            madvise((void *)below, 4 * 4096, MADV_DONTNEED);
        s += strtol("12", NULL, 10);
    }
    return s;
}

/* Calls resolve_loop with the stack pointer about 512 bytes above a page boundary. */
__attribute__((noinline)) long near_a_page_boundary(long n) {
    size_t above = stack_pointer() & 4095;
    volatile char *pad = alloca(above >= 1024 ? above - 512 : above + 4096 - 512);
    pad[0] = 0;
    return resolve_loop(n) + pad[0];
}

int main(int argc, char **argv) {
    long n = argc > 1 ? atol(argv[1]) : 100000;
    drop = argc > 2 && strcmp(argv[2], "drop") == 0;
    printf("%ld\n", drop ? near_a_page_boundary(n) : resolve_loop(n));
    return 0;
}
