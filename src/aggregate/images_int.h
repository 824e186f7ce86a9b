/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The replay's private state (images.c), shared with its block table (images_blocks.c): the
 * images, their address spaces and the live blocks. Included by the aggregation part only.
 */
#ifndef MT_IMAGES_INT_H
#define MT_IMAGES_INT_H

#include <errno.h>
#include <stdlib.h>

#include "aggregate/images.h"
#include "base/grow.h"
#include "base/hashtab.h"

/* A live block; nodes are numbered from 1, 0 is "none". */
struct block {
	uint64_t addr;
	uint64_t size;
	uint32_t space;
	uint32_t image; /* the image that allocated it: its live and peak count it */
	uint32_t prev, next;
	uint32_t stack; /* the allocation's stack id, 0: none */
};

struct space {
	uint32_t head; /* first block, 0 when none */
	uint64_t blocks, bytes;
};

/* A realloc entered (MT_K_REALLOC_RELEASE) whose return is not seen yet: its block, if live. */
struct pending {
	uint32_t tid;
	bool found;
	bool was_last; /* b was its image's last allocation when released: temporary, if it succeeds
			*/
	struct block b;
};

/* pid -> index + 1 of its latest image, in the pid table; idx1 0 marks an empty slot. */
struct pid_slot {
	uint32_t pid;
	uint32_t idx1;
};

struct mt_images {
	struct mt_image *img;
	uint32_t *img_space; /* the address space of each image */
	uint64_t *img_last;  /* each image's last allocated block while it is live, else 0 */
	size_t n_img, cap_img;
	struct space *spaces;
	size_t n_spaces, cap_spaces;
	struct block *nodes; /* nodes[0] unused */
	size_t n_nodes, cap_nodes;
	uint32_t free_node;	  /* a chain through next */
	struct mt_hashtab blocks; /* node numbers (uint32_t) by (space, addr); 0 empty */
	struct mt_hashtab pids;	  /* struct pid_slot */
	struct pending *pend;
	size_t n_pend, cap_pend;
	uint64_t live_bytes, peak;
	mt_images_release_fn release_fn;
	void *release_arg;
	mt_images_live_fn live_fn;
	void *live_arg;
	mt_images_temporary_fn temporary_fn;
	void *temporary_arg;
	bool ending; /* an address space is being released */
};

/*
 * The block table (images_blocks.c): live blocks by (address space, address), each charged to
 * the image that allocated it as it comes and goes.
 */
/* The table made, with room for n blocks: 0 or -ENOMEM. */
int img_table_reserve(struct mt_images *im, size_t n);
/* Add a live block (a NULL one is no block); the one it replaces at its address is removed. */
int img_block_add(struct mt_images *im, const struct block *nb);
/* The live block (space, addr) taken out into *out; false when there is none. */
bool img_block_take(struct mt_images *im, uint32_t space, uint64_t addr, struct block *out);
/* An exec or exit: every block of the space is gone. */
struct mt_released img_space_release(struct mt_images *im, uint32_t space);

#endif
