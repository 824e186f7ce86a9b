/* SPDX-License-Identifier: GPL-2.0 */
/*
 * RSS over time: the RSS sample records (docs/FORMAT.md, type 11) counted per process
 * image and for the tree, during the one replay. An image's RSS is its latest sample's sum of
 * anonymous, file and shared resident bytes; its peak the largest of its samples' sums and of the
 * kernel's own high-water mark (VmHWM) they carry. The tree's RSS is the sum, over the images
 * running in memory of their own, of their latest samples: its peak is that sum at its largest,
 * so it is as fine as the sampling (docs/PERFORMANCE.md, section 19), and counts each address
 * space once (a vfork child's samples are its parent's memory).
 */
#ifndef MT_RSS_H
#define MT_RSS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "writer/artifact.h"

struct mt_rss_image {
	uint64_t samples;   /* 0: none; the fields below are then 0 */
	uint64_t now;	    /* the latest sample's sum; 0 once the image ended */
	uint64_t peak;	    /* the largest sampled sum */
	uint64_t peak_ns;   /* when it was first reached, from the run's start */
	uint64_t hwm;	    /* the largest VmHWM its samples carried */
	bool has_exit;	    /* a sample at its last thread's exit stop */
	uint64_t exit_anon; /* that sample */
	uint64_t exit_file;
	uint64_t exit_shmem;
	uint64_t peak_anon; /* the sample at peak, split */
	uint64_t peak_file;
	uint64_t peak_shmem;
};

struct mt_rss {
	struct mt_rss_image *images; /* by image index (mt_images_get) */
	size_t n_images;
	uint64_t samples;
	uint64_t tree_now;
	uint64_t tree_peak;
	uint64_t tree_peak_ns; /* from the run's start */
};

struct mt_rss *mt_rss_new(void);
void mt_rss_free(struct mt_rss *r);

/*
 * A sample of image, at rel_ns from the run's start. An image in its parent's memory (vfork,
 * until its exec) has its parent's RSS: own_memory false keeps it out of the tree's sum, where
 * the parent counts it. 0 or -ENOMEM.
 */
int mt_rss_sample(struct mt_rss *r, size_t image, const struct mt_artifact_rss *s, uint64_t rel_ns,
		  bool own_memory);
/* A sample's resident bytes: anonymous, file and shared (UINT64_MAX when they overflow it). */
uint64_t mt_rss_sum(const struct mt_artifact_rss *s);
/* image ended (exec, exit): it no longer counts in the tree's RSS. */
void mt_rss_ended(struct mt_rss *r, size_t image);
/* image's figures; NULL when it has no sample. */
const struct mt_rss_image *mt_rss_of(const struct mt_rss *r, size_t image);
/* An image's peak RSS: its largest sample or its kernel high-water mark, whichever is larger. */
uint64_t mt_rss_image_peak(const struct mt_rss_image *g);

#endif
