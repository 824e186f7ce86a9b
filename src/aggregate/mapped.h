/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Mapped memory: what the tree maps itself with mmap, mremap and brk (the mapping records of a
 * run with --mappings, docs/FORMAT.md type 9), replayed over the process images of the one
 * replay (images.h) into bytes mapped now, at peak and at each image's end, per class, and the
 * bytes beyond the heap over time.
 *
 * Counting rules (docs/FORMAT.md, "Mapped memory"):
 * - bytes are pages (4096 bytes, x86-64): a mapping of 12,388 bytes maps 16,384. Address space,
 *   not residency: a PROT_NONE reservation counts, a page never touched counts.
 * - an image counts the ranges it mapped, until they are unmapped (munmap, mremap, a fixed
 *   mapping over them) or its address space ends (exec, exit). A range mapped before its image
 *   was recorded (by the kernel at exec, by the parent before a fork) is not counted, and its
 *   unmapping changes nothing. A vfork child maps into its parent's address space: its parent's.
 * - the allocator's own: a mapping or break moved inside an allocating call of a probed
 *   allocator (MT_MAP_IN_ALLOCATOR: glibc's blocks above its mmap threshold, its arenas, the
 *   main arena's break) counts in MT_MAPPED_ALLOC_*, apart, since the heap counts its blocks; a
 *   fixed mapping over a range of the allocator's stays the allocator's (glibc's shrink_heap
 *   from free, which has no return probe); mremap keeps the class of the range it moves.
 * - brk: the break's growth beyond where the image's break was (its start_brk after an exec, its
 *   parent's break after a fork) is a range of its own, above the last, removed as it shrinks.
 * - "mapped" is the four mmap classes outside the allocator; "beyond the heap" is those and the
 *   break moved outside it: the line drawn beside the heap; "all" is every class, the
 *   allocator's included (what Massif's --pages-as-heap counts of the calls the image made).
 */
#ifndef MT_MAPPED_H
#define MT_MAPPED_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate/timeline.h"
#include "writer/artifact.h"

#define MT_MAPPED_PAGE 4096ULL

enum mt_mapped_class {
	MT_MAPPED_ANON_PRIVATE = 0,
	MT_MAPPED_ANON_SHARED,
	MT_MAPPED_FILE_PRIVATE,
	MT_MAPPED_FILE_SHARED,
	MT_MAPPED_BRK,	      /* the break, moved outside the allocator */
	MT_MAPPED_ALLOC_MMAP, /* mapped by the allocator, inside an allocating call */
	MT_MAPPED_ALLOC_BRK,  /* the break, moved by the allocator */
	MT_MAPPED_CLASSES,
};

/* The classes that make "mapped": mmap outside the allocator. */
#define MT_MAPPED_MMAP_CLASSES 4

struct mt_mapped_counts {
	uint64_t now[MT_MAPPED_CLASSES];  /* bytes per class now; once ended: at the end */
	uint64_t peak[MT_MAPPED_CLASSES]; /* the most each class held at once */
	uint64_t mapped, peak_mapped;	  /* the mmap classes outside the allocator */
	uint64_t beyond, peak_beyond;	  /* mapped plus MT_MAPPED_BRK: beyond the heap */
	uint64_t all, peak_all;		  /* every class: Massif's --pages-as-heap measure */
	uint64_t calls[5];		  /* records by enum mt_map_what (index 0: unknown) */
	bool ended;			  /* its address space ended (exec, exit): now is at then */
};

struct mt_mapped;

/* Mapped memory of a run that started at start_ns (as mt_timeline_new). NULL: ENOMEM. */
struct mt_mapped *mt_mapped_new(uint64_t start_ns);
void mt_mapped_free(struct mt_mapped *mp);

/* The time of the records that follow (the timeline's, mt_timeline_at). 0 or -ENOMEM. */
int mt_mapped_at(struct mt_mapped *mp, uint64_t time_ns);
/* A mapping record of image (the address space it maps in). 0 or -ENOMEM. */
int mt_mapped_record(struct mt_mapped *mp, uint32_t image, const struct mt_artifact_mapping *m);
/* image child was forked from image parent: its break starts at its parent's. 0 or -ENOMEM. */
int mt_mapped_fork(struct mt_mapped *mp, uint32_t parent, uint32_t child);
/* image's address space ended (exec, exit): its counts now are its counts at the end. */
int mt_mapped_end(struct mt_mapped *mp, uint32_t image);
/* The stream ended. 0 or -ENOMEM. */
int mt_mapped_finish(struct mt_mapped *mp);

/* Whether any mapping record was replayed (a run with --mappings, or memtrack track). */
bool mt_mapped_any(const struct mt_mapped *mp);
/* image's counts (all 0 for an image that mapped nothing). */
const struct mt_mapped_counts *mt_mapped_image(const struct mt_mapped *mp, size_t image);
/* The tree's: now the sum over images, peaks of the sums at one moment of the stream. */
const struct mt_mapped_counts *mt_mapped_tree(const struct mt_mapped *mp);
/* Bytes beyond the heap over time (the tree's and each image's series). Never NULL. */
const struct mt_timeline *mt_mapped_timeline(const struct mt_mapped *mp);

#endif
