/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading CodSpeed's memory artifact (PID.MemtrackArtifact.msgpack, as exec-harness's memory mode
 * and CodSpeed's memtrack write it: concatenated zstd frames of MessagePack maps, one per event;
 * docs/HARNESS.md), so that `memtrack report` shows what a CodSpeed run uploads. Streaming, in
 * bounded memory apart from the live blocks; nothing in the file is trusted.
 */
#ifndef MT_CODSPEED_READ_H
#define MT_CODSPEED_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

/* CodSpeed's MemtrackEventKind, in its declaration order. */
enum mt_codspeed_type {
	MT_CS_MALLOC,
	MT_CS_FREE,
	MT_CS_REALLOC,
	MT_CS_CALLOC,
	MT_CS_ALIGNED_ALLOC,
	MT_CS_MMAP,
	MT_CS_MUNMAP,
	MT_CS_BRK,
	MT_CS_TYPES,
};

struct mt_codspeed_summary {
	uint64_t events;
	uint64_t by_type[MT_CS_TYPES];
	uint64_t processes;	  /* distinct pids */
	uint64_t bytes_allocated; /* sizes of Malloc, Calloc, AlignedAlloc and Realloc */
	uint64_t live_blocks;	  /* at the end: allocated, not freed (heap events only) */
	uint64_t live_bytes;
	uint64_t peak_bytes; /* the largest live byte count, in file order */
	uint64_t first_ns, last_ns;
};

/*
 * Whether the file starts with a zstd frame's magic number (CodSpeed's artifact does); false for
 * a file that is not a regular one (a pipe: memtrack report /dev/stdin), which is not read.
 */
bool mt_codspeed_is_artifact(const char *path);

/* Name of a type ("Malloc", ...), as in the artifact. */
const char *mt_codspeed_type_name(enum mt_codspeed_type t);

/*
 * Read the whole artifact into *s. Returns 0, or a negative errno with one sentence in err:
 * -EBADMSG for bytes that are not zstd frames of CodSpeed events, or what open/read said.
 */
int mt_codspeed_summarize(const char *path, struct mt_codspeed_summary *s, char *err,
			  size_t errlen);

#endif
