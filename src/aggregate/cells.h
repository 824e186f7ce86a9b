/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Allocation sites split by process image and by time (the HTML page's process selector and time
 * range): a cell is one site (stack id) in one image, with the site's counts (sites.h: the same
 * counting, by an mt_sites keyed by cell) and the allocations it made in each bucket of the heap
 * over time (timeline.h). Its buckets follow the timeline's as they widen, so a window whose ends
 * are bucket edges gets the exact allocations and bytes made in it.
 */
#ifndef MT_CELLS_H
#define MT_CELLS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate/sites.h"
#include "aggregate/timeline.h"

/* Allocations made in one bucket of the timeline. */
struct mt_cell_bucket {
	uint64_t bucket;
	uint64_t allocations;
	uint64_t bytes;
};

struct mt_cell {
	uint32_t stack_id;
	uint32_t image;		     /* an index of the report's images */
	const struct mt_site *count; /* its allocations, bytes, temporary, live and peak bytes */
	size_t n_buckets;	     /* buckets with allocations, in time order */
	const struct mt_cell_bucket *buckets;
};

struct mt_cells;

struct mt_cells *mt_cells_new(void);
void mt_cells_free(struct mt_cells *c);

/* The calls of sites.h for one image; tl: the timeline at the allocation's time. 0 or -ENOMEM. */
int mt_cells_alloc(struct mt_cells *c, uint32_t stack_id, uint32_t image, uint64_t size, bool live,
		   const struct mt_timeline *tl);
void mt_cells_release(struct mt_cells *c, uint32_t stack_id, uint32_t image, uint64_t size,
		      int sign);
void mt_cells_temporary(struct mt_cells *c, uint32_t stack_id, uint32_t image);
/*
 * Every change of live bytes (stack_id 0 too: it may make the tree's peak), of blocks of size
 * bytes each. 0 or -ENOMEM.
 */
int mt_cells_live(struct mt_cells *c, uint32_t stack_id, uint32_t image, uint64_t size,
		  uint64_t blocks, bool add, bool new_peak);
/* The stream ended: buckets as wide as the timeline's, peaks final. */
void mt_cells_end(struct mt_cells *c, const struct mt_timeline *tl);

/* The cells in order of first appearance. */
size_t mt_cells_count(const struct mt_cells *c);
struct mt_cell mt_cells_get(const struct mt_cells *c, size_t i);

#endif
