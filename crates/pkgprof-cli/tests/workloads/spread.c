/* A fixed amount of work spread over twelve functions in proportions 1..12, and read/write
 * system calls (reads of /dev/urandom) between them: a workload whose flat profile has many rows and both sides of
 * the user/kernel boundary, for comparing recorders of the same run (perf record, pkgmon).
 * Each round calls the thirteen parts in another order (a fixed-seed shuffle): a round lasts about
 * ten sample periods at 4 kHz, and in a fixed order the timer could lock onto the same functions
 * round after round and give shares points away from the work done (seen in CI: 5.8% vs 3.7%).
 * usage: spread ROUNDS (prints its pid on standard error: standard output may be perf's pipe) */
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

static volatile unsigned long sink;

#define WORK(name, weight)                                                  \
	__attribute__((noinline)) static void name(unsigned long n)         \
	{                                                                   \
		unsigned long s = 0;                                        \
		for (unsigned long i = 0; i < n * (weight); i++)            \
			s += i * i % 7;                                     \
		sink += s;                                                  \
	}

WORK(w01, 1) WORK(w02, 2) WORK(w03, 3) WORK(w04, 4) WORK(w05, 5) WORK(w06, 6)
WORK(w07, 7) WORK(w08, 8) WORK(w09, 9) WORK(w10, 10) WORK(w11, 11) WORK(w12, 12)

__attribute__((noinline)) static void io(int in, int out, char *buf)
{
	for (int i = 0; i < 8; i++)
		if (read(in, buf, 65536) < 0 || write(out, buf, 65536) < 0)
			exit(1);
}

int main(int argc, char **argv)
{
	int rounds = argc > 1 ? atoi(argv[1]) : 100;
	fprintf(stderr, "%d\n", (int)getpid());
	int in = open("/dev/urandom", O_RDONLY), out = open("/dev/null", O_WRONLY);
	static char buf[65536];
	void (*work[12])(unsigned long) = { w01, w02, w03, w04, w05, w06,
					    w07, w08, w09, w10, w11, w12 };
	int order[13] = { 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12 };
	unsigned long seed = 88172645463325252UL;
	for (int r = 0; r < rounds; r++) {
		for (int i = 12; i > 0; i--) {
			seed ^= seed << 13, seed ^= seed >> 7, seed ^= seed << 17;
			int j = (int)(seed % (unsigned long)(i + 1)), t = order[i];
			order[i] = order[j], order[j] = t;
		}
		for (int i = 0; i < 13; i++)
			if (order[i] == 12)
				io(in, out, buf);
			else
				work[order[i]](20000);
	}
	return 0;
}
