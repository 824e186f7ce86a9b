/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The runner's side of CodSpeed's runner FIFO, for memtrack bench (docs/BENCH.md): the FIFOs
 * made and served as CodSpeed's runner 5.0.2 serves them in memory mode (its
 * src/executor/shared/fifo.rs and src/executor/memory/executor.rs), each StartProfiler,
 * StopProfiler, CurrentBenchmark and AddMarker handed to a callback before it is answered, so
 * that the mark lands in the recording before the integration goes on.
 */
#ifndef MT_BENCH_SERVER_H
#define MT_BENCH_SERVER_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#include "writer/artifact.h"

/* The longest message payload taken: a URI is a benchmark's name (CodSpeed cuts it at 1024). */
#define MT_BENCH_FRAME_MAX (64u << 10)

/* A mark to record: 0, or a negative errno (the mark is lost; the message is still answered). */
typedef int (*mt_bench_mark_fn)(void *arg, const struct mt_artifact_bench *b);

struct mt_bench_server_config {
	const char *ctl_path; /* the integration writes here: MT_FIFO_CTL_PATH */
	const char *ack_path; /* and reads its answers here: MT_FIFO_ACK_PATH */
	uid_t uid;	      /* the FIFOs' owner: the command's user (it opens them read-write) */
	gid_t gid;
	mt_bench_mark_fn mark;
	void *mark_arg;
};

/* What the exchange came to, for the report and the exit status. */
struct mt_bench_server_stats {
	uint64_t frames;	  /* messages read */
	uint64_t marks;		  /* StartProfiler, StopProfiler, CurrentBenchmark, AddMarker */
	uint64_t marks_lost;	  /* of those, the callback could not record */
	uint64_t protocol_errors; /* refused: a version, an unreadable message, garbage */
	uint64_t refused;      /* SetIntegration answered Err: an integration the runner refuses */
	bool garbage;	       /* a frame longer than any message: the rest was discarded */
	char integration[128]; /* "NAME VERSION" of SetIntegration, "" when none came */
};

struct mt_bench_server;

/*
 * Make the two FIFOs, exclusively: a path that exists (a FIFO of another runner, a stale one, a
 * symlink or anything else) is refused, never taken over. Each is made with mode 0600 in its
 * directory, opened without following links, checked to be the FIFO just made, and given to
 * uid:gid. Returns 0, or a negative errno after one sentence on stderr (-EEXIST: already there).
 */
int mt_bench_server_open(struct mt_bench_server **out, const struct mt_bench_server_config *c);
/* Serve on a thread of its own until mt_bench_server_stop. 0 or a negative errno. */
int mt_bench_server_start(struct mt_bench_server *s);
/* Stop serving (what was written before is served first), remove the FIFOs made. */
void mt_bench_server_stop(struct mt_bench_server *s);
const struct mt_bench_server_stats *mt_bench_server_stats(const struct mt_bench_server *s);
void mt_bench_server_free(struct mt_bench_server *s);

/*
 * The protocol alone, without FIFOs (unit tests, fuzzing): the bytes an integration wrote, in
 * any pieces; the answers are appended to out (at most cap bytes, *len of them used). Returns
 * 0, or -ENOMEM. Sentences go to stderr as when serving.
 */
struct mt_bench_server *mt_bench_server_new_detached(mt_bench_mark_fn mark, void *arg);
int mt_bench_server_feed(struct mt_bench_server *s, const uint8_t *buf, size_t n, uint8_t *out,
			 size_t cap, size_t *len);

#endif
