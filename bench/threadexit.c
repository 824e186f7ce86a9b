// SPDX-License-Identifier: GPL-2.0
/*
 * threadexit N: start N threads that block, then exit the process with all of them alive, after
 * printing CLOCK_REALTIME in ns on stdout: the moment the exit began, for tools/bench's
 * "exit to memtrack's exit" (section 4).
 */
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <time.h>
#include <unistd.h>

#define MAX_THREADS 1024

static pthread_barrier_t started;

static void *block(void *arg)
{
	(void)arg;
	pthread_barrier_wait(&started);
	pause();
	return NULL;
}

int main(int argc, char **argv)
{
	long n = argc > 1 ? atol(argv[1]) : 64;
	struct timespec now;
	pthread_t t;

	if (n < 1 || n > MAX_THREADS)
		return 2;
	pthread_barrier_init(&started, NULL, n + 1);
	for (long i = 0; i < n; i++)
		if (pthread_create(&t, NULL, block, NULL))
			return 1;
	pthread_barrier_wait(&started);
	clock_gettime(CLOCK_REALTIME, &now);
	printf("%lld\n", (long long)now.tv_sec * 1000000000LL + now.tv_nsec);
	fflush(stdout);
	exit(0);
}
