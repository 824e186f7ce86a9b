/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The heap over time: live bytes of the tree and of each process image, and bytes allocated, in
 * time buckets, followed during the one replay that counts (images.h's live hook), never
 * recounted. Times are the events' (CLOCK_MONOTONIC ns, docs/FORMAT.md) from the run's start.
 *
 * Buckets start MT_TIMELINE_FIRST_WIDTH_NS wide; when the run outgrows MT_TIMELINE_MAX_BUCKETS of
 * them, neighbours merge in pairs and the width doubles, so a line never has more points than
 * that, however long the run, and a short run keeps a fine grain. A bucket holds the largest
 * live byte count reached in it (so the peak is a point of the line, exactly) and the bytes
 * allocated in it (allocations and reallocs, as bytes_allocated counts them).
 */
#ifndef MT_TIMELINE_H
#define MT_TIMELINE_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate/images.h"

#define MT_TIMELINE_MAX_BUCKETS	   2000
#define MT_TIMELINE_FIRST_WIDTH_NS 1000

/* One line: buckets [first, first + n) of the timeline. */
struct mt_timeline_series {
	size_t first;
	size_t n;
	uint64_t *max; /* the largest live byte count in each bucket */
	uint64_t now;  /* live bytes after the last change */
	size_t cap;
};

struct mt_timeline {
	uint64_t start_ns; /* the run's start: bucket 0 begins there */
	uint64_t width_ns; /* of a bucket */
	uint64_t last_ns;  /* the latest event time seen, from start_ns */
	size_t n_buckets;  /* up to the bucket of last_ns */
	struct mt_timeline_series tree;
	struct mt_timeline_series *images; /* by image index (mt_images_get); n 0: no change */
	size_t n_images;
	uint64_t *allocated; /* bytes allocated per bucket, n_buckets of them */
	size_t cap_allocated;
	uint64_t peak_bytes; /* the tree's peak (mt_images_peak) */
	uint64_t peak_ns;    /* when the tree first reached it, from start_ns */
	/* RSS over time (rss.h): the tree's sum and each image's, by image index; n 0: none */
	struct mt_timeline_series rss_tree;
	struct mt_timeline_series *rss_images;
	size_t n_rss_images;
};

/*
 * A timeline of a run that started at start_ns (the header's start_mono_ns; 0: at the first
 * event). NULL: ENOMEM.
 */
struct mt_timeline *mt_timeline_new(uint64_t start_ns);
void mt_timeline_free(struct mt_timeline *tl);

/*
 * The time of the events that follow. Events of several CPUs reach the stream nearly, not
 * exactly, in time order: a time before the latest one seen counts as the latest. 0 or -ENOMEM.
 */
int mt_timeline_at(struct mt_timeline *tl, uint64_t time_ns);
/* A change of live bytes, from images.h's live hook. 0 or -ENOMEM. */
int mt_timeline_live(struct mt_timeline *tl, const struct mt_live_change *c);
/*
 * An RSS sample at the current time: image's RSS is now image_rss, the tree's tree_rss (rss.h);
 * an image that ended is given 0. 0 or -ENOMEM.
 */
int mt_timeline_rss(struct mt_timeline *tl, size_t image, uint64_t image_rss, uint64_t tree_rss);
/* bytes allocated by the event at the current time. */
void mt_timeline_allocated(struct mt_timeline *tl, uint64_t bytes);
/* The stream ended: lines still above 0 run to its last bucket. 0 or -ENOMEM. */
int mt_timeline_end(struct mt_timeline *tl);

/* The value of a series in bucket b (its max there), 0 outside it. */
uint64_t mt_timeline_value(const struct mt_timeline_series *s, size_t b);

#endif
