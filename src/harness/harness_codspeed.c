// SPDX-License-Identifier: GPL-2.0
/*
 * Memory mode's output (harness.h): what CodSpeed's runner and backend read after a memory run.
 *
 * - DIR/results/PID.MemtrackArtifact.msgpack, PID being the tracked command's, converted from
 *   memtrack's own artifact by codspeed_write.c (which `memtrack track` shares).
 * - DIR/results/PID.ExecutionTimestamps.msgpack, PID being memtrack's own: the MessagePack map
 *   {"uri_by_ts": [[ts, uri], ...], "markers": [{"SampleStart": ts}, {"SampleEnd": ts}, ...]}
 *   that the runner builds from an integration's FIFO messages
 *   (crates/runner-shared/src/artifacts/execution_timestamps.rs, src/executor/shared/fifo.rs),
 *   whose non-empty uri_by_ts the runner's memory executor looks for. The PID in its name keeps
 *   it apart from the runner's own ExecutionTimestamps.msgpack.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "codspeed/codspeed_stamps.h"
#include "codspeed/codspeed_write.h"
#include "harness/harness.h"

#define TIMESTAMPS_SUFFIX ".ExecutionTimestamps.msgpack"

/* ---- The artifact: codspeed_write.c, from the benchmark's .mtk ------------------------------ */

void mt_harness_codspeed_convert(const struct mt_harness *h, struct mt_bench_result *b)
{
	b->cs = (struct mt_codspeed_job){.mtk = b->artifact, .dir = h->results_dir};
	b->cs_ret = mt_codspeed_convert(&b->cs);
	b->cs_converted = true;
}

/* Published only once every benchmark ran: a failed plan leaves none of its artifacts. */
static int publish(const struct mt_harness *h, struct mt_bench_result *b)
{
	int ret = b->cs_ret ? b->cs_ret : mt_codspeed_publish(&b->cs);

	if (ret)
		fprintf(stderr,
			MT_HARNESS_PROG ": cannot write CodSpeed's memory artifact of '%s': %s\n",
			b->name, b->cs.err[0] ? b->cs.err : strerror(-ret));
	else if (!h->quiet)
		fprintf(stderr, "memtrack: '%s': %llu events written to %s\n", b->name,
			(unsigned long long)b->cs.events, b->cs.path);
	return ret;
}

/* ---- The execution timestamps (codspeed_stamps.c) ----------------------------------------- */

/*
 * Per benchmark, what exec-harness's hooks make the runner record: its URI with the time it was
 * named (its end), and a sample from the start to the end of its tracked run.
 */
static int note_timestamps(struct mt_codspeed_stamps *st, const struct mt_bench_result *res,
			   size_t n)
{
	int ret = 0;

	for (size_t i = 0; i < n && !ret; i++)
		ret = mt_codspeed_stamps_uri(st, res[i].tracked_end_ns, res[i].uri);
	for (size_t i = 0; i < n && !ret; i++) {
		ret = mt_codspeed_stamps_marker(st, MT_CS_SAMPLE_START, res[i].tracked_start_ns);
		if (!ret)
			ret =
			    mt_codspeed_stamps_marker(st, MT_CS_SAMPLE_END, res[i].tracked_end_ns);
	}
	return ret;
}

static int write_timestamps(const struct mt_harness *h, const struct mt_bench_result *res, size_t n)
{
	struct mt_codspeed_stamps st = {0};
	char path[PATH_MAX + 64], why[256] = "";
	int ret = note_timestamps(&st, res, n);

	snprintf(path, sizeof(path), "%s/%d" TIMESTAMPS_SUFFIX, h->results_dir, (int)getpid());
	if (!ret)
		ret = mt_codspeed_write_stamps(path, &st, &h->base.identity, why, sizeof(why));
	if (ret)
		fprintf(stderr, MT_HARNESS_PROG ": cannot write '%s': %s\n", path,
			why[0] ? why : strerror(-ret));
	mt_codspeed_stamps_free(&st);
	return ret;
}

int mt_harness_write_codspeed(const struct mt_harness *h, struct mt_bench_result *res, size_t n)
{
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		if (!res[i].cs_converted)
			mt_harness_codspeed_convert(h, &res[i]);
		ret = publish(h, &res[i]);
		if (ret)
			return ret;
	}
	return write_timestamps(h, res, n);
}
