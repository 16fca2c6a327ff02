/* Threads that alternate user-space work with read()/write() system calls for a fixed time:
 * a workload with both sides of the user/kernel boundary, for recording benchmarks.
 * usage: mix THREADS SECONDS */
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

static double seconds;

static double now(void)
{
	struct timespec t;
	clock_gettime(CLOCK_MONOTONIC, &t);
	return t.tv_sec + t.tv_nsec / 1e9;
}

static unsigned long crunch(unsigned long n)
{
	unsigned long s = 0;
	for (unsigned long i = 0; i < n; i++)
		s += i * i % 7;
	return s;
}

static void copy_some(int in, int out, char *buf, size_t len)
{
	if (read(in, buf, len) < 0 || write(out, buf, len) < 0)
		exit(1);
}

static void *worker(void *arg)
{
	static __thread char buf[1 << 16];
	int in = open("/dev/zero", O_RDONLY), out = open("/dev/null", O_WRONLY);
	unsigned long sink = 0;
	double end = now() + seconds;
	(void)arg;
	if (in < 0 || out < 0)
		exit(1);
	while (now() < end) {
		sink += crunch(200000);
		for (int i = 0; i < 20; i++)
			copy_some(in, out, buf, sizeof buf);
	}
	return (void *)sink;
}

int main(int argc, char **argv)
{
	int n = argc > 1 ? atoi(argv[1]) : 2;
	pthread_t t[64];
	seconds = argc > 2 ? atof(argv[2]) : 1;
	if (n < 1 || n > 64)
		return 2;
	for (int i = 0; i < n; i++)
		pthread_create(&t[i], NULL, worker, NULL);
	for (int i = 0; i < n; i++)
		pthread_join(t[i], NULL);
	return 0;
}
