/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The leak scans of a run (--leaks, docs/LEAKS.md) counted: per process image, bytes and blocks
 * in each of memcheck's classes, and its loss records (blocks of one image, class and allocation
 * stack), as memcheck groups them. It counts; it prints nothing.
 */
#ifndef MT_LEAKS_H
#define MT_LEAKS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "writer/artifact.h"
#include "aggregate/sites.h"
#include "aggregate/suppress.h"

/* What the scans of one image found; index 0 of blocks and bytes counts unknown classes. */
struct mt_leak_counts {
	bool scanned;
	uint32_t flags; /* MT_LEAKS_* of its scan */
	uint32_t threads, regions, unreadable_regions;
	uint64_t unreadable_bytes, scanned_bytes, scan_ns, scan_cpu_ns;
	uint64_t blocks[MT_LEAK_CLASSES + 1];
	uint64_t bytes[MT_LEAK_CLASSES + 1];
	/* Suppressed (mt_leaks_suppress), as memcheck counts them: no longer in blocks and bytes.
	 */
	uint64_t suppressed_blocks, suppressed_bytes;
};

/* memcheck's loss record: the blocks of one image, class and stack. */
struct mt_loss_record {
	size_t image;
	uint8_t cls;
	uint32_t stack; /* 0: recorded without stacks */
	uint64_t blocks, bytes;
	uint64_t addr; /* the block's, while records are one per block (before mt_leaks_end) */
};

struct mt_leaks;

struct mt_leaks *mt_leaks_new(void);
void mt_leaks_free(struct mt_leaks *lk);
/* A leak record of image `image`. 0 or -ENOMEM. */
int mt_leaks_add(struct mt_leaks *lk, size_t image, const struct mt_artifact_leaks *l);
/*
 * The class (MT_LEAK_*) the scan of image gave the block at addr, 0 when it scanned none there:
 * what the report's largest blocks never freed were, as each enters them. Before mt_leaks_end,
 * which merges the blocks into loss records; a search from the latest scan back, for a few
 * blocks.
 */
unsigned int mt_leaks_block_class(const struct mt_leaks *lk, size_t image, uint64_t addr);
/* Once every record is in: the loss records, per image, biggest first. 0 or -ENOMEM. */
int mt_leaks_end(struct mt_leaks *lk);

/*
 * Hide the loss records that a suppression of ss matches (their stacks symbolised: sites after
 * mt_sites_symbolize; a record without a stack has no frames): they leave the records and their
 * classes' counts, and are counted as suppressed, per image, in the tree and by each
 * suppression, as memcheck does. After mt_leaks_end. 0 or -ENOMEM.
 */
int mt_leaks_suppress(struct mt_leaks *lk, const struct mt_sites *sites,
		      struct mt_suppressions *ss);
/* What the loss records of one allocation stack weigh in a class. */
struct mt_leak_weight {
	uint64_t blocks, bytes;
};

/*
 * The blocks and bytes of class cls (MT_LEAK_*) allocated from stack, in image's scan (SIZE_MAX:
 * in every image's): the weights of a site in --folded=leaked, the page and pprof. Suppressed
 * records weigh nothing. After mt_leaks_end.
 */
struct mt_leak_weight mt_leaks_of_stack(const struct mt_leaks *lk, uint32_t stack, size_t image,
					unsigned int cls);

/* The suppressions mt_leaks_suppress applied, with what each hid; NULL when none was. */
const struct mt_suppressions *mt_leaks_suppressions(const struct mt_leaks *lk);

/* Whether any scan is recorded (the run had --leaks). */
bool mt_leaks_any(const struct mt_leaks *lk);
/* The counts of an image; all zero (not scanned) for one without a scan. */
const struct mt_leak_counts *mt_leaks_of(const struct mt_leaks *lk, size_t image);
/* The whole tree's counts. */
const struct mt_leak_counts *mt_leaks_total(const struct mt_leaks *lk);
/* The loss records of the lost and possibly lost blocks (and, with reachable, of those too). */
size_t mt_leaks_records(const struct mt_leaks *lk, const struct mt_loss_record **v);

/* memcheck's words for a class: "definitely lost", ...; "?" for others. */
const char *mt_leak_class_name(unsigned int cls);

#endif
