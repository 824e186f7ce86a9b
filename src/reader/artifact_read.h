/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Reading an artifact (docs/FORMAT.md). The reader streams: records come out one at a time and
 * events in bounded batches, so an artifact of any size is read in constant memory. Nothing in the
 * file is trusted: a corrupt or hostile artifact is an error with a message, never a crash, and a
 * run that was cut short reads up to its last complete record and is flagged truncated.
 */
#ifndef MT_ARTIFACT_READ_H
#define MT_ARTIFACT_READ_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "writer/artifact.h"
#include "writer/artifact_format.h"

/* Room for a reader error message: "corrupt artifact: ..." with an offset. */
#define MT_ARTIFACT_ERRLEN 160

/* What the header says. Owned by the reader. */
struct mt_artifact_info {
	uint32_t version;
	uint64_t start_time_ns;
	uint64_t start_mono_ns;
	char watcher[MT_ARTIFACT_WATCHER_MAX + 1];
	int argc;
	char **argv;	/* argc strings then NULL */
	uint32_t flags; /* MT_ARTIFACT_ATTACHED, after the arguments; 0 when absent */
};

enum mt_item_type {
	MT_ITEM_PROCESS = 1,
	MT_ITEM_FILE,
	MT_ITEM_EVENTS, /* a batch: part or all of one event record */
	MT_ITEM_FOOTER,
	MT_ITEM_UNPROBED,
	MT_ITEM_STACK, /* version 4 */
	MT_ITEM_HANDOFF,
	MT_ITEM_MAPPING, /* a mapping system call (type 9) */
	MT_ITEM_LEAKS,	 /* a leak scan at a process's exit, or a part of one (type 10) */
	MT_ITEM_RSS,	 /* a process's resident memory, sampled (type 11) */
	MT_ITEM_BENCH,	 /* a benchmark window's start or stop, or its URI (type 12) */
};

/* One thing read from the stream. The pointers are valid until the next call on the reader. */
struct mt_artifact_item {
	enum mt_item_type type;
	union {
		const struct mt_artifact_process *process;
		const struct mt_artifact_file *file;
		const struct mt_artifact_footer *footer;
		const struct mt_artifact_unprobed *unprobed;
		const struct mt_artifact_stack *stack;
		const struct mt_artifact_handoff *handoff;
		const struct mt_artifact_mapping *mapping;
		const struct mt_artifact_leaks *leaks;
		const struct mt_artifact_rss *rss;
		const struct mt_artifact_bench *bench;
		struct {
			const struct mt_event *events;
			size_t n_events;
		};
	};
};

struct mt_artifact_reader;

/*
 * Open an artifact and read its header. Returns 0 and *r, or a negative errno with a sentence in
 * err (which may be NULL): -EBADMSG for a file that is not an artifact or is corrupt,
 * -EPROTONOSUPPORT for a version this reader does not know, or what open(2)/read(2) said.
 */
int mt_artifact_open(struct mt_artifact_reader **r, const char *path, char *err, size_t errlen);
/* The same over a memory buffer, which must outlive the reader. */
int mt_artifact_open_mem(struct mt_artifact_reader **r, const void *buf, size_t len, char *err,
			 size_t errlen);
void mt_artifact_close(struct mt_artifact_reader *r);

const struct mt_artifact_info *mt_artifact_info(const struct mt_artifact_reader *r);

/*
 * Read the next item. Returns 1 with *it filled, 0 at the end (the footer was read, or the file
 * ended: see mt_artifact_truncated), or a negative errno; mt_artifact_error() then says why, and
 * every later call returns the same error.
 */
int mt_artifact_next(struct mt_artifact_reader *r, struct mt_artifact_item *it);
const char *mt_artifact_error(const struct mt_artifact_reader *r);

/* After the end: true when the file ended without a footer (the run was cut short). */
bool mt_artifact_truncated(const struct mt_artifact_reader *r);
/*
 * Whether a writer still holds the artifact (its lock, docs/FORMAT.md "Writing in progress"):
 * false for a file it ended, left by a writer that was killed, or that is no regular file.
 */
bool mt_artifact_writer_alive(const struct mt_artifact_reader *r);
/*
 * After the end: true when the reading stopped before a record its writer, still alive, had not
 * written whole yet. The artifact is then neither complete nor truncated: it is being written.
 */
bool mt_artifact_in_progress(const struct mt_artifact_reader *r);
/*
 * Follow a regular file as its writer appends to it (report --follow, run's status line): with on,
 * mt_artifact_next returns -EAGAIN where the next record is not in the file whole yet, and reads
 * on from there at the next call; the reader's error is not set. Off again, the next calls read to
 * the end as a plain reading does (once the writer is gone). -ENOTSUP for a pipe or a device.
 */
int mt_artifact_follow(struct mt_artifact_reader *r, bool on);
/* Events read so far. */
uint64_t mt_artifact_events_read(const struct mt_artifact_reader *r);

#endif
