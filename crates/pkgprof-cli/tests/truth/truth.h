/* Ground truth by construction: each instrumented function measures its own CPU time.
 *
 * A function calls ENTER(F) first and LEAVE(F) last. At each of these events the thread's CPU
 * time (CLOCK_THREAD_CPUTIME_ID) since the previous event is charged as self time to the
 * function on top of a shadow stack, and a function's inclusive time is the span of its
 * outermost activation (a recursive function counts once, as a profiler counts it once per
 * sample). Events are rare (each function does hundreds of microseconds of work between them),
 * so reading the clock costs well under 0.5% of the run.
 *
 * At exit, truth_report() writes one line per function to the file named by $TRUTH_OUT:
 *   <name> <self ms> <inclusive ms>
 * and a first line `total <ms>` with the thread's CPU time at that moment. The work itself is
 * work(n): n steps of a multiply-add chain that no compiler can shorten, inlined into the
 * function that asks for it, so it is that function's self time. */
#include <stdio.h>
#include <stdlib.h>
#include <time.h>

#define TRUTH_MAX_FUNCS 32

#ifdef TRUTH_LIBRARY
/* A shared library's functions report to the executable's instrumentation (linked with
   -rdynamic), so one shadow stack sees every call. */
void truth_enter(int f, const char *name);
void truth_leave(int f);
#else
#define TRUTH_MAX_DEPTH 100000

/* With TRUTH_THREADS, each thread keeps its own shadow stack and sums, and adds them to the
   process's when it ends (truth_thread_done(), which a thread calls last and truth_report()
   calls for the main thread); percentages are then of the process's CPU time. */
#ifdef TRUTH_THREADS
#include <pthread.h>
#define TRUTH_LOCAL __thread
#undef TRUTH_MAX_DEPTH
#define TRUTH_MAX_DEPTH 4096
#else
#define TRUTH_LOCAL
#endif

static const char *truth_names[TRUTH_MAX_FUNCS];
static TRUTH_LOCAL double truth_self[TRUTH_MAX_FUNCS], truth_incl[TRUTH_MAX_FUNCS],
    truth_since[TRUTH_MAX_FUNCS];
static TRUTH_LOCAL int truth_active[TRUTH_MAX_FUNCS];
static TRUTH_LOCAL int truth_stack[TRUTH_MAX_DEPTH];
static TRUTH_LOCAL int truth_sp;
static TRUTH_LOCAL double truth_last;

static double truth_now(void) {
    struct timespec ts;
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
    return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

__attribute__((noinline)) void truth_enter(int f, const char *name) {
    double t = truth_now();
    if (truth_sp > 0) truth_self[truth_stack[truth_sp - 1]] += t - truth_last;
    truth_last = t;
    truth_names[f] = name;
    truth_stack[truth_sp++] = f;
    if (truth_active[f]++ == 0) truth_since[f] = t;
}

__attribute__((noinline)) void truth_leave(int f) {
    double t = truth_now();
    truth_self[truth_stack[truth_sp - 1]] += t - truth_last;
    truth_last = t;
    truth_sp--;
    if (--truth_active[f] == 0) truth_incl[f] += t - truth_since[f];
}
#endif

static volatile unsigned long truth_sink;

/* Functions are numbered by an enum of T_<name> constants the workload declares. */
#define ENTER(f) truth_enter(T_##f, #f)
#define LEAVE(f) truth_leave(T_##f)

/* n steps of work, inlined into the caller. The empty asm keeps the chain opaque. */
static inline __attribute__((always_inline)) void work(long n) {
    unsigned long x = truth_sink | 1;
    for (long i = 0; i < n; i++) {
        x = x * 6364136223846793005UL + 1442695040888963407UL;
        __asm__ volatile("" : "+r"(x));
    }
    truth_sink = x;
}

#ifndef TRUTH_LIBRARY
/* Steps per millisecond of CPU time, the best of five measurements (their time is the
   caller's self time): one measurement that met the kernel's work at start-up (a CI run's
   thread clock read ~10x the steps' own time) shrank a whole run to 84 samples. */
static long truth_steps_per_ms(void) {
    long n = 200000;
    double best = 0;
    for (int i = 0; i < 5; i++) {
        double t0 = truth_now();
        work(n);
        double ms = truth_now() - t0;
        if (ms > 0 && (best == 0 || ms < best)) best = ms;
    }
    return best > 0 ? (long)(n / best) : n;
}

#ifdef TRUTH_THREADS
static double truth_sum_self[TRUTH_MAX_FUNCS], truth_sum_incl[TRUTH_MAX_FUNCS];
static pthread_mutex_t truth_lock = PTHREAD_MUTEX_INITIALIZER;

/* Adds this thread's measurements to the process's. */
static void truth_thread_done(void) {
    pthread_mutex_lock(&truth_lock);
    for (int i = 0; i < TRUTH_MAX_FUNCS; i++) {
        truth_sum_self[i] += truth_self[i];
        truth_sum_incl[i] += truth_incl[i];
    }
    pthread_mutex_unlock(&truth_lock);
}
#endif

static void truth_report(void) {
    const char *path = getenv("TRUTH_OUT");
    FILE *f = path ? fopen(path, "w") : stderr;
    if (!f) return;
#ifdef TRUTH_THREADS
    /* Every other thread has ended (joined): the process's CPU time is theirs and ours. */
    truth_thread_done();
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    fprintf(f, "total %.3f\n", ts.tv_sec * 1e3 + ts.tv_nsec / 1e6);
    double *self = truth_sum_self, *incl = truth_sum_incl;
#else
    fprintf(f, "total %.3f\n", truth_now());
    double *self = truth_self, *incl = truth_incl;
#endif
    for (int i = 0; i < TRUTH_MAX_FUNCS; i++)
        if (truth_names[i]) fprintf(f, "%s %.3f %.3f\n", truth_names[i], self[i], incl[i]);
    if (f != stderr) fclose(f);
}
#endif
