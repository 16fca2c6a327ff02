/* A fixed amount of work spread over twelve functions in proportions 1..12, and read/write
 * system calls (reads of /dev/urandom) between them: a workload whose flat profile has many rows and both sides of
 * the user/kernel boundary, for comparing recorders of the same run (perf record, pkgmon).
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
	for (int r = 0; r < rounds; r++) {
		w01(20000); w02(20000); w03(20000); w04(20000); w05(20000); w06(20000);
		w07(20000); w08(20000); w09(20000); w10(20000); w11(20000); w12(20000);
		io(in, out, buf);
	}
	return 0;
}
