// SPDX-License-Identifier: GPL-2.0
/*
 * mtchurn THREADS N: THREADS producer threads (1..64), released together by a barrier, each doing
 * N malloc/free pairs with churn's sizes (block i is 16 * (1 + i % 256) bytes). It feeds
 * memtrack's event ring from several CPUs at once, to find the event rate it sustains without
 * drops. Events: 2 * THREADS * N, plus glibc's one DTV calloc per thread.
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static pthread_barrier_t start;
static long n;

static void *produce(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&start);
	for (long i = 0; i < n; i++) {
		char *p = malloc(16 * (1 + i % 256));

		if (!p)
			abort();
		/* A volatile store keeps the compiler from eliding the malloc/free pair. */
		*(volatile char *)p = (char)i;
		free(p);
	}
	return NULL;
}

int main(int argc, char **argv)
{
	pthread_t t[64];
	long threads;

	if (argc != 3 || (threads = atol(argv[1])) < 1 || threads > 64 || (n = atol(argv[2])) < 0) {
		fprintf(stderr, "usage: mtchurn THREADS(1..64) N\n");
		return 2;
	}
	/* The main thread only waits: THREADS is the number of producers, not THREADS + 1. */
	pthread_barrier_init(&start, NULL, threads);
	for (long k = 0; k < threads; k++)
		if (pthread_create(&t[k], NULL, produce, NULL))
			return 1;
	for (long k = 0; k < threads; k++)
		pthread_join(t[k], NULL);
	return 0;
}
