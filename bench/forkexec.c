// SPDX-License-Identifier: GPL-2.0
/*
 * forkexec ROUNDS CMD [ARGS...]: run CMD ROUNDS times, one after the other, and print the wall
 * time of each round in nanoseconds, one per line (fork to reap, CLOCK_MONOTONIC). It is the bare
 * fork/exec/wait loop that exec-harness rounds are compared with, and the stopwatch tools/bench
 * uses for every whole-command time (a shell's `date` would add its own fork and exec).
 * Stops at the first failing round, with exit status 1.
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include "spawn.h"

int main(int argc, char **argv)
{
	char *end;
	long rounds;

	if (argc < 3) {
		fprintf(stderr, "usage: forkexec ROUNDS CMD [ARGS...]\n");
		return 2;
	}
	rounds = strtol(argv[1], &end, 10);
	if (*end || rounds <= 0) {
		fprintf(stderr, "forkexec: ROUNDS must be a positive integer, not '%s'\n", argv[1]);
		return 2;
	}
	for (long r = 0; r < rounds; r++) {
		uint64_t ns;

		if (bench_spawn("forkexec", argv + 2, &ns))
			return 1;
		/* Printed per round, not summed: the caller chooses its statistics. */
		printf("%" PRIu64 "\n", ns);
	}
	return 0;
}
