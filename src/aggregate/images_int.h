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

/* A live block, as the replay hands it to the block table and takes it back. */
struct block {
	uint64_t addr;
	uint64_t size;
	uint32_t space;
	uint32_t image; /* the image that allocated it: its live and peak count it */
	uint32_t stack; /* the allocation's stack id, 0: none */
};

/*
 * The packed blocks of a space (images_blocks.c): slots in the order of their key, a block's
 * home at the same fraction of the homes as its key of the keys, and its probe run ending in the
 * tail rather than wrapping, so that the table grows in place by half or less at a time.
 */
struct block_slots {
	void *slot;    /* struct packed_block; NULL until the first block */
	size_t homes;  /* slots a block's home can be */
	size_t n;      /* slots: the homes and the tail after them */
	size_t used;   /* blocks in them */
	size_t mapped; /* bytes of slot when it is a mapping of its own, else 0 */
};

struct packed_block {
	uint32_t key; /* packed_key of the address */
	uint32_t cls; /* its class in im->cls; 0: an empty slot */
};

/*
 * A packed block's key: its address's low 32 bits, with its high 32 bits folded in, mixed (for a
 * given high half a bijection, so the slot keeps the key and not the bits), then its class's high
 * 32 bits. The slots are in the order of the keys, and a key's home is at the same fraction of
 * the homes as the key is of 2^32: growing the homes moves every block forward, none back, which
 * lets the table grow in place by any step. The high half folded in spreads blocks at the same
 * offset of many 4 GiB ranges over the table instead of one run. The mixer's multipliers are
 * those of the published 32-bit "lowbias32".
 */
static inline uint32_t high_fold(uint32_t high)
{
	return high * 0x9e3779b1U;
}

static inline uint32_t packed_key(uint64_t addr)
{
	uint32_t x = (uint32_t)addr ^ high_fold((uint32_t)(addr >> 32));

	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

static inline size_t packed_home(const struct block_slots *t, uint32_t key)
{
	return (size_t)(((uint64_t)key * t->homes) >> 32);
}

/* The ordered slots' upkeep (images_slots.c). */
uint64_t img_packed_key_addr(uint32_t key, uint32_t high);
int img_packed_insert(struct block_slots *t, struct packed_block *e, struct packed_block b);
void img_packed_erase(struct block_slots *t, struct packed_block *e);
int img_packed_grow(struct block_slots *t, size_t need);
int img_packed_reserve(struct block_slots *t, size_t need);
void img_packed_free(struct block_slots *t);

/*
 * An address space's live blocks (images_blocks.c): packed, 8 bytes a slot, those whose size
 * is below 4 GiB; wide, 24 bytes a slot, the rest. Freed whole when the space ends.
 */
struct space {
	struct block_slots packed; /* struct packed_block */
	struct mt_hashtab wide;	   /* struct wide_block */
	uint64_t blocks, bytes;
};

/*
 * What blocks allocated alike share, named by a packed block: few in a heap of many blocks (an
 * allocation site's few sizes). On the free list, image links the next free one.
 */
struct block_class {
	uint32_t image;
	uint32_t stack;
	uint32_t size;
	uint32_t high; /* the addresses' high 32 bits */
	uint32_t live; /* blocks of the class in the tables */
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
	struct block_class *cls; /* cls[0] unused */
	size_t n_cls, cap_cls;
	struct mt_hashtab cls_ix; /* class numbers (uint32_t) by all their fields; 0 empty */
	uint32_t cls_free;	  /* the first class on the free list, 0: none */
	size_t cls_idle;	  /* classes in cls_ix without a block */
	struct mt_hashtab pids;	  /* struct pid_slot */
	struct pid_slot last_pid; /* the slot latest() found last: most events are its pid's */
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
/* Every live block of every space, to fn, in no order. */
void img_each_block(const struct mt_images *im, void (*fn)(void *arg, const struct block *b),
		    void *arg);
/* Every space's blocks and the classes freed (mt_images_free). */
void img_table_free(struct mt_images *im);
/* Add a live block (a NULL one is no block); the one it replaces at its address is removed. */
int img_block_add(struct mt_images *im, const struct block *nb);
/* The live block (space, addr) taken out into *out; false when there is none. */
bool img_block_take(struct mt_images *im, uint32_t space, uint64_t addr, struct block *out);
/* The slot of (space, addr) fetched into the cache: no change. */
void img_block_prefetch(const struct mt_images *im, uint32_t space, uint64_t addr);
/* An exec or exit: every block of the space is gone. */
struct mt_released img_space_release(struct mt_images *im, uint32_t space);

#endif
