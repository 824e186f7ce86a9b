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
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/outfile.h"
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

/* ---- The execution timestamps --------------------------------------------------------------- */

static void pack_marker(msgpack_packer *pk, const char *name, uint64_t ts)
{
	msgpack_pack_map(pk, 1);
	mt_codspeed_pack_str(pk, name);
	msgpack_pack_uint64(pk, ts);
}

/*
 * Per benchmark, what exec-harness's hooks make the runner record: SampleStart when the
 * benchmark starts, SampleEnd when it stops, then its URI with the time it was named.
 */
static void pack_timestamps(msgpack_packer *pk, const struct mt_bench_result *res, size_t n)
{
	size_t i;

	msgpack_pack_map(pk, 2);
	mt_codspeed_pack_str(pk, "uri_by_ts");
	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++) {
		msgpack_pack_array(pk, 2);
		msgpack_pack_uint64(pk, res[i].tracked_end_ns);
		mt_codspeed_pack_str(pk, res[i].uri);
	}
	mt_codspeed_pack_str(pk, "markers");
	msgpack_pack_array(pk, 2 * n);
	for (i = 0; i < n; i++) {
		pack_marker(pk, "SampleStart", res[i].tracked_start_ns);
		pack_marker(pk, "SampleEnd", res[i].tracked_end_ns);
	}
}

static int write_timestamps(const struct mt_harness *h, const struct mt_bench_result *res, size_t n)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 80];
	msgpack_sbuffer buf;
	msgpack_packer pk;
	char why[256] = "";
	FILE *f = NULL;
	int ret = 0, fd;

	snprintf(path, sizeof(path), "%s/%d" TIMESTAMPS_SUFFIX, h->results_dir, (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s/.memtrack-%d-timestamps.tmp", h->results_dir, (int)getpid());
	msgpack_sbuffer_init(&buf);
	msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
	pack_timestamps(&pk, res, n);
	fd = mt_outfile_open(tmp, MT_OUTFILE_REPLACE, &h->base.identity, why, sizeof(why));
	if (fd >= 0 && !(f = fdopen(fd, "w")))
		close(fd);
	if (!f)
		ret = fd < 0 ? fd : -ENOMEM;
	else if (fwrite(buf.data, 1, buf.size, f) != buf.size)
		ret = -EIO;
	if (f && fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		fprintf(stderr, MT_HARNESS_PROG ": cannot write '%s': %s\n", path,
			why[0] ? why : strerror(-ret));
	}
	msgpack_sbuffer_destroy(&buf);
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
