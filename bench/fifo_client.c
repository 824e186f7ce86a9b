// SPDX-License-Identifier: GPL-2.0
/*
 * fifo_client K: K benchmarks of one malloc(64) and free each, told to CodSpeed's runner over
 * its FIFO as exec-harness tells it (memtrack's own client, src/harness/harness_fifo.c): the
 * greeting once, then per benchmark StartProfiler, the work, StopProfiler, CurrentBenchmark.
 * Without a runner it does the same work and sends nothing. tools/bench's section 20 runs it
 * under memtrack bench and under memtrack run: the difference is the FIFO's cost per benchmark.
 */
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <unistd.h>

#include "harness/harness_fifo.h"

static int call(struct mt_fifo *f, bool runner, struct mt_fifo_msg m)
{
	return runner ? mt_fifo_call(f, &m) : 0;
}

int main(int argc, char **argv)
{
	long k = argc > 1 ? atol(argv[1]) : 100;
	struct mt_fifo f;
	char uri[64];
	int runner = mt_fifo_connect(&f, MT_FIFO_CTL_PATH, MT_FIFO_ACK_PATH, 5000, getuid());

	if (runner < 0)
		return 1;
	if (call(&f, runner, (struct mt_fifo_msg){.cmd = MT_FIFO_SET_VERSION, .value = 2}) ||
	    call(&f, runner, (struct mt_fifo_msg){.cmd = MT_FIFO_GET_INTEGRATION_MODE}) ||
	    call(&f, runner,
		 (struct mt_fifo_msg){
		     .cmd = MT_FIFO_SET_INTEGRATION, .str = "exec-harness", .str2 = "1.3.0"}))
		return 1;
	for (long i = 0; i < k; i++) {
		volatile char *p;

		if (call(&f, runner, (struct mt_fifo_msg){.cmd = MT_FIFO_START_PROFILER}))
			return 1;
		/* Written through: the compiler may not take the pair away. */
		p = malloc(64);
		if (!p)
			return 1;
		p[0] = 1;
		free((void *)p);
		if (call(&f, runner, (struct mt_fifo_msg){.cmd = MT_FIFO_STOP_PROFILER}))
			return 1;
		snprintf(uri, sizeof(uri), "fifo_client::%ld", i);
		if (call(&f, runner,
			 (struct mt_fifo_msg){
			     .cmd = MT_FIFO_CURRENT_BENCHMARK, .pid = getpid(), .str = uri}))
			return 1;
	}
	if (runner)
		mt_fifo_close(&f);
	return 0;
}
