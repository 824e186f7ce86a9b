/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Writing CodSpeed's memory artifact (ROOTPID.MemtrackArtifact.msgpack) from memtrack's own: what
 * exec-harness's memory mode and `memtrack track` (codspeed-memtrack) leave for CodSpeed's runner.
 */
#ifndef MT_CODSPEED_WRITE_H
#define MT_CODSPEED_WRITE_H

#include <limits.h>
#include <msgpack.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "reader/artifact_read.h"

struct mt_identity;

/* A recording window, CLOCK_MONOTONIC ns: an event at start_ns <= ts < end_ns is written. */
struct mt_codspeed_window {
	uint64_t start_ns;
	uint64_t end_ns;
};

struct mt_codspeed_job {
	const char *mtk; /* memtrack's artifact, read */
	const char *dir; /* where ROOTPID.MemtrackArtifact.msgpack is written */
	/* gated: only the events inside one of these windows (none: no event); else all. */
	const struct mt_codspeed_window *windows;
	size_t n_windows;
	bool gated;
	/* the user the file is made for (base/outfile.h), NULL: whoever memtrack runs as */
	const struct mt_identity *owner;
	/* Out: the root's pid (the file's name; memtrack's own pid when no record names one), the
	 * events written, the file, and on failure a sentence (else ""). */
	uint32_t root;
	uint64_t events;
	char path[PATH_MAX + 64];
	char err[MT_ARTIFACT_ERRLEN];
	char tmp[PATH_MAX + 64]; /* the converted file until it is published; "" when none */
};

/*
 * Convert job->mtk into DIR/ROOT.MemtrackArtifact.msgpack, written under another name and
 * renamed when whole (the runner reads any file named so). Mapping records become Mmap, Munmap
 * and Brk events as CodSpeed records them. Returns 0 or a negative errno, job->err saying why
 * when the artifact could not be read.
 */
int mt_codspeed_write_artifact(struct mt_codspeed_job *job);

/*
 * The same in two steps, for a caller that decides later whether the file is to be published:
 * convert into job->tmp (a name the runner does not read; job->path is set), then publish
 * (rename it to job->path) or discard (remove it). Each returns 0 or a negative errno; a failed
 * step leaves no file.
 */
int mt_codspeed_convert(struct mt_codspeed_job *job);
int mt_codspeed_publish(struct mt_codspeed_job *job);
void mt_codspeed_discard(struct mt_codspeed_job *job);

/* A MessagePack string, as CodSpeed's files key their maps. */
void mt_codspeed_pack_str(msgpack_packer *pk, const char *s);

#endif
