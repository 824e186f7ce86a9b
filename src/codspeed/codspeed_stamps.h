/* SPDX-License-Identifier: GPL-2.0 */
/*
 * CodSpeed's ExecutionTimestamps (crates/runner-shared/src/artifacts/execution_timestamps.rs):
 * what the runner notes of an integration's FIFO messages and saves as
 * ExecutionTimestamps.msgpack, rmp-serde with named fields: the MessagePack map
 * {"uri_by_ts": [[ts, uri], ...], "markers": [{"SampleStart": ts}, {"SampleEnd": ts}, ...]}
 * (also "RoundStart", "RoundEnd": the markers integrations add, carried as they came).
 * Written for exec-harness's memory mode (harness_codspeed.c) and for memtrack bench's profile
 * folder, which also takes them from the benchmark marks of a memtrack artifact as the runner
 * takes them from the FIFO (src/executor/shared/fifo.rs, handle_fifo_messages).
 */
#ifndef MT_CODSPEED_STAMPS_H
#define MT_CODSPEED_STAMPS_H

#include <stddef.h>
#include <stdint.h>

#include "codspeed/codspeed_write.h"

struct mt_identity;

struct mt_codspeed_uri {
	uint64_t ts_ns; /* CLOCK_MONOTONIC when the runner was told */
	char *uri;
};

/* A marker of MarkerType, numbered as its variants (the runner notes the first two itself). */
enum mt_codspeed_marker_kind {
	MT_CS_SAMPLE_START,
	MT_CS_SAMPLE_END,
	MT_CS_ROUND_START,
	MT_CS_ROUND_END,
};

struct mt_codspeed_marker {
	enum mt_codspeed_marker_kind kind;
	uint64_t ts_ns;
};

struct mt_codspeed_stamps {
	struct mt_codspeed_uri *uris; /* in the order told */
	size_t n_uris, cap_uris;
	struct mt_codspeed_marker *markers;
	size_t n_markers, cap_markers;
	/* What the runner's tracker recorded: enabled at each SampleStart, disabled at the next
	 * SampleEnd (one never disabled: to the end, UINT64_MAX). */
	struct mt_codspeed_window *windows;
	size_t n_windows, cap_windows;
};

/*
 * Note a URI (copied); a sample the runner notes itself (MT_CS_SAMPLE_START or _END: a window of
 * its tracker too); an integration's AddMarker, any kind, only added to the markers, where the
 * runner adds it. 0 or -ENOMEM.
 */
int mt_codspeed_stamps_uri(struct mt_codspeed_stamps *s, uint64_t ts_ns, const char *uri);
int mt_codspeed_stamps_marker(struct mt_codspeed_stamps *s, enum mt_codspeed_marker_kind kind,
			      uint64_t ts_ns);
int mt_codspeed_stamps_added(struct mt_codspeed_stamps *s, enum mt_codspeed_marker_kind kind,
			     uint64_t ts_ns);
void mt_codspeed_stamps_free(struct mt_codspeed_stamps *s);

/*
 * The runner's notes of the benchmark marks of memtrack's artifact mtk (docs/FORMAT.md, type
 * 12): a StartProfiler is a SampleStart unless one is open (the runner ignores it), a
 * StopProfiler a SampleEnd when one is open, every CurrentBenchmark a URI, every AddMarker its
 * marker, in the order of the marks. 0, or a negative errno with a sentence in err.
 */
int mt_codspeed_stamps_of(const char *mtk, struct mt_codspeed_stamps *s, char *err, size_t errlen);

/*
 * Write s as path (a temporary name beside it, renamed when whole; made as base/outfile.h makes
 * files, for owner). 0, or a negative errno with a sentence in err.
 */
int mt_codspeed_write_stamps(const char *path, const struct mt_codspeed_stamps *s,
			     const struct mt_identity *owner, char *err, size_t errlen);

#endif
