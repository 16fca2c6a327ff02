/* Short-lived processes at a steady rate, for the continuous-mode soak
 * (benches/soak-continuous.sh).
 *
 *   churn RATE SECONDS LOG     start RATE processes a second for SECONDS seconds
 *   churn spin MS              (a child) burn MS milliseconds of CPU, then exit
 *
 * Children take turns: exec /bin/true; exec /bin/sh -c 'exit 0'; exec this program as
 * `churn spin 3` (a program of its own, sampled now and then at 19 Hz); fork without exec and
 * spin 2 ms. For each child LOG gets one line, written after it exited and before it was
 * reaped (so its /proc entry still names it):
 *
 *   <pid> <start ticks, /proc/<pid>/stat field 22> <fork, CLOCK_REALTIME ns> <exit seen, ns>
 *
 * and the last line is `total <children>`.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

static unsigned long long now_ns(clockid_t clock) {
  struct timespec ts;
  clock_gettime(clock, &ts);
  return (unsigned long long)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

static void spin(long ms) {
  unsigned long long end = now_ns(CLOCK_THREAD_CPUTIME_ID) + ms * 1000000ull;
  volatile unsigned long x = 0;
  while (now_ns(CLOCK_THREAD_CPUTIME_ID) < end)
    for (int i = 0; i < 1000; i++) x += i * x + 1;
}

/* Field 22 of /proc/<pid>/stat (after the parenthesised name, which may hold spaces). */
static unsigned long long start_ticks(pid_t pid) {
  char path[64], buf[1024];
  snprintf(path, sizeof path, "/proc/%d/stat", (int)pid);
  FILE *f = fopen(path, "r");
  if (!f) return 0;
  size_t n = fread(buf, 1, sizeof buf - 1, f);
  fclose(f);
  buf[n] = 0;
  char *p = strrchr(buf, ')');
  if (!p) return 0;
  p += 2; /* field 3 */
  for (int field = 3; field < 22 && p; field++) {
    p = strchr(p, ' ');
    if (p) p++;
  }
  return p ? strtoull(p, NULL, 10) : 0;
}

struct child {
  pid_t pid;
  unsigned long long fork_ns;
};

int main(int argc, char **argv) {
  if (argc == 3 && strcmp(argv[1], "spin") == 0) {
    spin(atol(argv[2]));
    return 0;
  }
  if (argc != 4) {
    fprintf(stderr, "usage: churn RATE SECONDS LOG | churn spin MS\n");
    return 2;
  }
  double rate = atof(argv[1]);
  double seconds = atof(argv[2]);
  FILE *log = fopen(argv[3], "w");
  if (!log || rate <= 0) return 2;
  unsigned long long period = (unsigned long long)(1e9 / rate);
  unsigned long long start = now_ns(CLOCK_MONOTONIC);
  unsigned long long end = start + (unsigned long long)(seconds * 1e9);
  /* Children not reaped yet: at most a few, each lives milliseconds. */
  struct child live[4096];
  int nlive = 0;
  unsigned long long total = 0, next = start;
  char self[4096];
  ssize_t len = readlink("/proc/self/exe", self, sizeof self - 1);
  if (len <= 0) return 2;
  self[len] = 0;
  for (;;) {
    unsigned long long t = now_ns(CLOCK_MONOTONIC);
    if (t >= next && t < end && nlive < 4096) {
      unsigned long long fork_ns = now_ns(CLOCK_REALTIME);
      pid_t pid = fork();
      if (pid == 0) {
        switch (total % 4) {
          case 0: execl("/bin/true", "true", (char *)NULL); break;
          case 1: execl("/bin/sh", "sh", "-c", "exit 0", (char *)NULL); break;
          case 2: execl(self, "churn", "spin", "3", (char *)NULL); break;
          default: spin(2); _exit(0);
        }
        _exit(127);
      }
      if (pid > 0) {
        live[nlive].pid = pid;
        live[nlive].fork_ns = fork_ns;
        nlive++;
        total++;
      }
      next += period;
      if (next < t) next = t; /* fell behind: do not burst */
      continue;
    }
    if (nlive == 0) {
      if (t >= end) break;
      struct timespec ts = {0, (long)(next > t ? next - t : 0)};
      nanosleep(&ts, NULL);
      continue;
    }
    /* Wait for a child to exit without reaping it, read its start time, then reap it. */
    siginfo_t info;
    memset(&info, 0, sizeof info);
    int options = WEXITED | WNOWAIT | (t < end && next > t ? WNOHANG : 0);
    if (waitid(P_ALL, 0, &info, options) != 0) {
      if (errno == ECHILD) nlive = 0;
      continue;
    }
    if (info.si_pid == 0) {
      struct timespec ts = {0, 1000000};
      if (next > t && next - t < 1000000) ts.tv_nsec = (long)(next - t);
      nanosleep(&ts, NULL);
      continue;
    }
    pid_t pid = info.si_pid;
    unsigned long long ticks = start_ticks(pid);
    unsigned long long exit_ns = now_ns(CLOCK_REALTIME);
    waitpid(pid, NULL, 0);
    for (int i = 0; i < nlive; i++) {
      if (live[i].pid == pid) {
        fprintf(log, "%d %llu %llu %llu\n", (int)pid, ticks, live[i].fork_ns, exit_ns);
        live[i] = live[--nlive];
        break;
      }
    }
  }
  fprintf(log, "total %llu\n", total);
  fclose(log);
  return 0;
}
