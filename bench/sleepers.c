// SPDX-License-Identifier: MIT
/*
 * Bench load for the loader's per-key cost: N threads that each sleep
 * PERIOD_MS in a loop (nanosleep), so that every thread waits to be woken,
 * and has a --per-thread key, in every interval of a second or more.
 *
 *   sleepers N PERIOD_MS
 *
 * Thread i first sleeps a share of the period so that the wakeups are spread
 * over it. Prints "ready N" on stdout once every thread is running and runs
 * until killed. Threads get 64 KiB stacks: 10,000 of them fit in ~640 MiB of
 * address space and far less resident memory.
 */
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static long period_ns;
static pthread_barrier_t started;

static void *sleeper(void *arg)
{
	struct timespec ts = { period_ns / 1000000000L, period_ns % 1000000000L };
	long off = (long)(intptr_t)arg;
	struct timespec first = { off / 1000000000L, off % 1000000000L };

	pthread_barrier_wait(&started);
	nanosleep(&first, NULL);	/* spread out: not every thread woken at once */
	for (;;)
		nanosleep(&ts, NULL);
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_attr_t attr;
	long n, ms;

	if (argc != 3 || (n = atol(argv[1])) < 1 || (ms = atol(argv[2])) < 1) {
		fprintf(stderr, "usage: sleepers N PERIOD_MS\n");
		return 2;
	}
	period_ns = ms * 1000000L;
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 * 1024);
	pthread_barrier_init(&started, NULL, (unsigned)n + 1);
	for (long i = 0; i < n; i++) {
		pthread_t t;
		long off = (long)((i * 7919) % n) * (period_ns / n);
		int err = pthread_create(&t, &attr, sleeper, (void *)(intptr_t)off);

		if (err) {
			fprintf(stderr, "sleepers: thread %ld: %s\n", i, strerror(err));
			return 1;
		}
	}
	pthread_barrier_wait(&started);
	printf("ready %ld\n", n);
	fflush(stdout);
	for (;;)
		pause();
}
