/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What a run allocated: aggregation of an artifact into totals per tree, process image, attached
 * file and allocator family, and a size histogram. Counting only: the outputs built on it are in
 * output.h; exec-harness --memory reads the totals.
 *
 * The counting rules are images.h's, whose replay of the stream this builds on: an image's counts
 * are its own, the tree's are the sums of its images', a file's and a family's count the events
 * made through their functions. Tree live blocks are the blocks never freed: released by an exec
 * or an exit (live at exec, live at exit), or live when the artifact ends. Peak: the largest live
 * byte count of the tree, in stream order; the sites' and the timeline's peak is that one.
 */
#ifndef MT_REPORT_H
#define MT_REPORT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "writer/artifact.h"
#include "reader/artifact_read.h"
#include "base/family.h"
#include "aggregate/images.h"
#include "aggregate/leaks.h"
#include "aggregate/rss.h"
#include "aggregate/sites.h"
#include "aggregate/cells.h"
#include "aggregate/mapped.h"
#include "aggregate/timeline.h"

struct mt_report_totals {
	uint64_t allocations;
	uint64_t frees;
	uint64_t reallocs;
	uint64_t realloc_null; /* of the reallocs: realloc(NULL, n) (images.h) */
	uint64_t realloc_zero; /* of the reallocs: realloc(p, 0), p not NULL */
	uint64_t unmatched_frees;
	uint64_t failed;
	uint64_t bytes_allocated;
	uint64_t temporary;   /* not kept per file or family */
	uint64_t peak_bytes;  /* not kept per file or family */
	uint64_t live_blocks; /* at the end of the artifact; not kept per file or family */
	uint64_t live_bytes;
	uint64_t dropped; /* tree only: requests + events dropped + args lost, 0 when no footer */
	/* of the allocations: those flagged MT_EV_ZEROED (calloc and the like); files and tree only
	 */
	uint64_t zeroed_allocations;
};

/*
 * Bucket b of the size histogram holds requested sizes in [2^(b-1), 2^b): bucket 0 is size 0,
 * bucket 1 size 1, bucket 2 sizes 2-3, ..., bucket 64 sizes from 2^63.
 */
#define MT_REPORT_HIST_BUCKETS 65

/* A process: the sums of its images (a pid reused by another process is another one). */
struct mt_report_process {
	uint32_t pid;
	uint32_t parent;     /* the parent's pid, 0 when not known (the root) */
	int32_t exit_status; /* raw wait status, when exited */
	bool exited;
	const char *exe;      /* of its last image; never NULL */
	const char *position; /* "" when not recorded */
	struct mt_report_totals t;
};

struct mt_report_file {
	uint16_t file_id;
	uint8_t family; /* as recorded: may be out of range in a foreign artifact */
	uint32_t probes;
	bool recorded; /* a file record names it; else events carry an id never described */
	char build_id[41];
	char *path; /* never NULL */
	struct mt_report_totals t;
};

/* A file, or a function of one, that the run could not probe (never NULL strings). */
struct mt_report_unprobed {
	int32_t error;
	char *path;
	char *function; /* "" for the whole file */
	char *reason;
};

/*
 * Calls of an allocator function that the run counted but did not record (enum mt_unrecorded,
 * bpf/memtrack.h), per file and function, from the MT_K_UNRECORDED events.
 */
struct mt_report_not_recorded {
	uint16_t file_id;
	uint64_t function; /* enum mt_unrecorded; a number this version does not know is kept */
	uint64_t calls;
};

/* A block never freed by the program: released by its image's exec or exit, or live at the end. */
struct mt_report_block {
	uint64_t addr;
	uint64_t size;
	uint32_t stack_id; /* of its allocation (sites.h), 0: none */
	size_t image;	   /* that allocated it: an index of images */
	bool at_end;	   /* live when the artifact ended (its image had not exited) */
	uint8_t
	    leak_class; /* what the leak scan at its image's exit found it (MT_LEAK_*), 0: none */
};

/* The largest blocks never freed that the report keeps. */
#define MT_REPORT_LARGEST 20

struct mt_report {
	uint32_t version;
	char watcher[MT_ARTIFACT_WATCHER_MAX + 1];
	int argc;
	char **argv;
	uint64_t start_time_ns;
	uint64_t start_mono_ns;
	bool truncated;
	/* Read while its writer was still writing it: neither complete nor truncated (FORMAT.md) */
	bool in_progress;
	bool attached; /* memtrack attach: a running process, from its attach to its detach */
	bool has_footer;
	struct mt_artifact_footer footer; /* zero without a footer */
	uint64_t events;
	uint64_t unknown_events; /* kinds this version does not know: passed over */
	uint64_t bench_marks;	 /* memtrack bench's marks (type 12): windows bench.h splits */
	uint64_t last_event_ns;	 /* the latest event's time (CLOCK_MONOTONIC), 0: no event */
	struct mt_report_totals totals;
	size_t n_images; /* in order of appearance, owned by the report */
	const struct mt_image *images;
	size_t n_processes; /* in order of appearance */
	struct mt_report_process *processes;
	size_t n_files; /* in order of first appearance */
	struct mt_report_file *files;
	size_t n_unprobed; /* in artifact order */
	struct mt_report_unprobed *unprobed;
	size_t n_not_recorded; /* in order of first call */
	struct mt_report_not_recorded *not_recorded;
	/* Per family; index MT_FAM_MAX collects events of undescribed files or unknown families. */
	struct mt_report_totals families[MT_FAM_MAX + 1];
	uint64_t histogram[MT_REPORT_HIST_BUCKETS];
	/* Allocation sites (artifacts of runs with --stacks); none otherwise. Never NULL. */
	struct mt_sites *sites;
	struct mt_cells *cells;	      /* the sites per image and time bucket; NULL: not asked */
	struct mt_timeline *timeline; /* live bytes over time; never NULL */
	struct mt_mapped *mapped;     /* mapped memory (--mappings), by image; never NULL */
	struct mt_leaks *leaks;	      /* the leak scans (--leaks), by image index; never NULL */
	struct mt_rss *rss;	      /* RSS samples per image and of the tree; never NULL */
	size_t n_largest;	      /* the largest blocks never freed, largest first */
	struct mt_report_block largest[MT_REPORT_LARGEST];
	struct mt_report_index *index; /* lookup tables while aggregating */
};

/*
 * Aggregate a whole artifact. Returns 0 and *rep, or a negative errno with a sentence in err
 * (see mt_artifact_open). A truncated artifact is not an error: rep->truncated says so.
 */
int mt_report_load(const char *path, struct mt_report **rep, char *err, size_t errlen);
/* What mt_report_load_with may count besides, at a cost per event. */
#define MT_REPORT_CELLS 1u /* the sites per process image and time bucket (cells.h) */
int mt_report_load_with(const char *path, unsigned int flags, struct mt_report **rep, char *err,
			size_t errlen);
/* From memory (tests, fuzzing): with every MT_REPORT_* count. */
int mt_report_load_mem(const void *buf, size_t len, struct mt_report **rep, char *err,
		       size_t errlen);
void mt_report_free(struct mt_report *rep);

/*
 * An artifact counted as its writer appends to it (report --follow, run's status line): each
 * read counts what was added since the last, and the figures of the report it holds are those of
 * what was read so far; once the writer is gone (ended, or killed) the last read takes the rest,
 * and the report is whole, as mt_report_load would make it.
 */
struct mt_report_follow;
/* Same returns as mt_report_load_with; -ENOTSUP for a file that is not a regular one. */
int mt_report_follow_open(const char *path, unsigned int flags, struct mt_report_follow **f,
			  char *err, size_t errlen);
/*
 * Count what the writer added, for budget_ns at most (0: no bound). 1: the writer may add more
 * (the figures are those so far), 0: it is gone and the report is whole, or a negative errno with
 * a sentence in err.
 */
int mt_report_follow_read(struct mt_report_follow *f, uint64_t budget_ns, char *err, size_t errlen);
/*
 * The report of what was read so far, in_progress (valid until the next read; the caller may
 * symbolise its sites); NULL once taken.
 */
struct mt_report *mt_report_follow_now(const struct mt_report_follow *f);
/* Whether a writer holds the artifact now (mt_artifact_writer_alive). */
bool mt_report_follow_writing(const struct mt_report_follow *f);
/* Whether a read returned 0: the writer is gone and the report whole. */
bool mt_report_follow_ended(const struct mt_report_follow *f);
/* After a read returned 0: the whole report, the caller's to free. NULL before. */
struct mt_report *mt_report_follow_take(struct mt_report_follow *f);
void mt_report_follow_free(struct mt_report_follow *f);
/* The bytes of the blocks live now in the tree (the heap now, not the blocks never freed), and
 * their count in *blocks. */
uint64_t mt_report_live_now(const struct mt_report *rep, uint64_t *blocks);

/* Just the tree totals of an artifact (exec-harness --memory). Same returns as mt_report_load. */
int mt_report_totals_of(const char *path, struct mt_report_totals *t, char *err, size_t errlen);

unsigned int mt_report_bucket(uint64_t size);
/* Lowest size of a bucket; the highest is mt_report_bucket_min(b + 1) - 1 (b < 64). */
uint64_t mt_report_bucket_min(unsigned int b);
/* Name of a recorded family number, "unknown" when out of range. */
const char *mt_report_family_name(unsigned int family);

/*
 * Whether the artifact holds every allocator call of the run: it has its footer, nothing was
 * dropped or lost, every file was probed, no function whose calls are not recorded was called,
 * and no process handed to a debugger mapped a file with allocators or created a process after
 * its handoff. Recovered attach requests are no loss.
 */
bool mt_report_complete(const struct mt_report *rep);
/*
 * Whether a process handed to a debugger mapped a file with allocators after its handoff: probed
 * without stopping the process, its calls into the file before that may be missing.
 */
bool mt_report_mapped_after_handoff(const struct mt_report *rep);
/* Images created by a process after its handoff, whose allocations were not recorded. */
size_t mt_report_unrecorded_images(const struct mt_report *rep);

#endif
