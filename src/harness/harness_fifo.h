/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The integration's side of CodSpeed's runner FIFO, as exec-harness 1.3.0 speaks it through
 * instrument-hooks (docs/HARNESS.md, "Under CodSpeed's runner"). The runner creates
 * /tmp/runner.ctl.fifo (integration to runner) and /tmp/runner.ack.fifo (runner to
 * integration); every message is a frame of a u32 little-endian length and a bincode-1
 * `Command` of the runner's crates/runner-shared/src/fifo.rs, and every message the
 * integration sends is answered by one frame: Ack, Err, or for GetIntegrationMode the mode.
 */
#ifndef MT_HARNESS_FIFO_H
#define MT_HARNESS_FIFO_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

#define MT_FIFO_CTL_PATH	 "/tmp/runner.ctl.fifo"
#define MT_FIFO_ACK_PATH	 "/tmp/runner.ack.fifo"
/* instrument-hooks' PROTOCOL_VERSION (v2 added GetIntegrationMode), which runner 5.0.2 is at. */
#define MT_FIFO_PROTOCOL_VERSION 2

/* The variants of `Command`, numbered as bincode numbers them: by declaration order. */
enum mt_fifo_cmd {
	MT_FIFO_CURRENT_BENCHMARK, /* {pid: i32, uri: String} */
	MT_FIFO_START_PROFILER,
	MT_FIFO_STOP_PROFILER,
	MT_FIFO_ACK,
	MT_FIFO_PING_PROFILER,	 /* deprecated, never sent */
	MT_FIFO_SET_INTEGRATION, /* {name: String, version: String} */
	MT_FIFO_ERR,
	MT_FIFO_ADD_MARKER,		   /* {pid: i32, marker: MarkerType} */
	MT_FIFO_SET_VERSION,		   /* (u64) */
	MT_FIFO_GET_INTEGRATION_MODE,	   /* answered by the next one, not by Ack */
	MT_FIFO_INTEGRATION_MODE_RESPONSE, /* (IntegrationMode) */
	MT_FIFO_N_CMDS,
};

/* `MarkerType`: each variant carries a CLOCK_MONOTONIC timestamp in ns (u64). */
enum mt_fifo_marker {
	MT_MARKER_SAMPLE_START,
	MT_MARKER_SAMPLE_END,
	MT_MARKER_ROUND_START,
	MT_MARKER_ROUND_END,
};

/* `IntegrationMode`: what the runner measures (memory mode answers Analysis). */
enum mt_fifo_mode {
	MT_FIFO_MODE_WALLTIME,
	MT_FIFO_MODE_SIMULATION,
	MT_FIFO_MODE_ANALYSIS,
	MT_FIFO_N_MODES,
};

/* One message; the fields its variant does not carry are ignored. */
struct mt_fifo_msg {
	enum mt_fifo_cmd cmd;
	int32_t pid;	  /* CurrentBenchmark, AddMarker */
	const char *str;  /* CurrentBenchmark's uri, SetIntegration's name */
	const char *str2; /* SetIntegration's version */
	enum mt_fifo_marker marker;
	uint64_t value; /* the marker's timestamp, SetVersion's version */
	enum mt_fifo_mode mode;
};

/*
 * The frame of m (length and payload) into buf: a message of the integration's, or the runner's
 * answer (Ack, Err, IntegrationModeResponse). Returns its size, or -ENOSPC when cap is too
 * small, -EINVAL for PingProfiler, which nobody sends any more.
 */
ssize_t mt_fifo_encode(const struct mt_fifo_msg *m, uint8_t *buf, size_t cap);
/*
 * Any message from a frame's payload, as the runner's bincode::deserialize reads it: the
 * variant, its fields, nothing left over; strings valid UTF-8. They are copied into strs (cap
 * bytes), NUL-terminated, and m's pointers point there; a string with a NUL byte is refused.
 * Returns 0, or -EPROTO with m->cmd the variant read (MT_FIFO_N_CMDS: none).
 */
int mt_fifo_decode(const uint8_t *payload, size_t len, struct mt_fifo_msg *m, char *strs,
		   size_t cap);
/* The variant's name as the runner's Debug prints it ("StartProfiler"); "?" when unknown. */
const char *mt_fifo_cmd_name(enum mt_fifo_cmd cmd);
/*
 * A runner's answer from a frame's payload: Ack, Err or IntegrationModeResponse. Returns 0, or
 * -EPROTO for anything else (a bad length, another variant, an unknown mode).
 */
int mt_fifo_decode_answer(const uint8_t *payload, size_t len, struct mt_fifo_msg *m);
const char *mt_fifo_mode_name(enum mt_fifo_mode mode);

/* The connection to a runner. */
struct mt_fifo {
	int ctl;		/* written: O_WRONLY, so that a runner gone is EPIPE, not silence */
	int ack;		/* read: O_RDONLY, so that a runner gone is a hang-up */
	int timeout_ms;		/* for each answer, and for each write to go through */
	enum mt_fifo_mode mode; /* the runner's answer to GetIntegrationMode */
};

/*
 * Connect to the runner whose FIFOs are ctl_path and ack_path. Returns 1 when connected, 0 when
 * there is no runner (no FIFO, or a FIFO nobody reads: one left by an earlier run; or a FIFO of
 * another user than root, memtrack's own or serves, the user it runs benchmarks for: said, never
 * opened), or a negative errno after one sentence on stderr.
 */
int mt_fifo_connect(struct mt_fifo *f, const char *ctl_path, const char *ack_path, int timeout_ms,
		    uid_t serves);
void mt_fifo_close(struct mt_fifo *f);
/*
 * Send m and read its answer: 0 on Ack (for GetIntegrationMode, on a mode, stored in f->mode).
 * A runner that answers Err, answers something else, closes its FIFO or does not answer in
 * time gets one sentence on stderr and -EPROTO, -EPIPE or -ETIMEDOUT.
 */
int mt_fifo_call(struct mt_fifo *f, const struct mt_fifo_msg *m);

#endif
