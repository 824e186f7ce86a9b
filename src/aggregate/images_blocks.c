// SPDX-License-Identifier: GPL-2.0
/*
 * The replay's block table (images_int.h). Live blocks are nodes in a pool, found by (address
 * space, address) through an open-addressing table and chained per address space, so that an
 * exec or exit releases its blocks without looking at anyone else's: a shell that keeps a large
 * heap and runs thousands of commands stays linear.
 */
#include <errno.h>
#include <stdlib.h>

#include "aggregate/images_int.h"

static uint64_t block_key_hash(uint32_t space, uint64_t addr)
{
	return mt_hash_u64(addr ^ ((uint64_t)space << 40) ^ space);
}

/* ---- the block table ------------------------------------------------------------------------ */

struct block_key {
	uint32_t space;
	uint64_t addr;
};

static bool node_empty(const void *e)
{
	/* Node 0 is no block: nodes may not exist yet while every slot is empty. */
	return !*(const uint32_t *)e;
}

static uint64_t node_hash(const void *ctx, const void *e)
{
	const struct block *b = &((const struct mt_images *)ctx)->nodes[*(const uint32_t *)e];

	return block_key_hash(b->space, b->addr);
}

static bool node_is(const void *ctx, const void *e, const void *key)
{
	const struct block *b = &((const struct mt_images *)ctx)->nodes[*(const uint32_t *)e];
	const struct block_key *k = key;

	return b->addr == k->addr && b->space == k->space;
}

/* At most 3/4 full: a run's live blocks may be millions, and each slot is 4 bytes of them. */
static const struct mt_hashtab_ops node_ops = {
    .entry = sizeof(uint32_t),
    .max_load_pct = 75,
    .min_slots = 1024,
    .hash = node_hash,
    .empty = node_empty,
};

int img_table_reserve(struct mt_images *im, size_t n)
{
	return mt_hashtab_reserve(&im->blocks, &node_ops, im, n);
}

/* The slot of (space, addr), or the empty slot where it would go. */
static uint32_t *slot_of(struct mt_images *im, uint32_t space, uint64_t addr)
{
	struct block_key k = {space, addr};

	return mt_hashtab_find(&im->blocks, &node_ops, block_key_hash(space, addr), node_is, im,
			       &k);
}

/*
 * Live bytes move by a block's size. No real heap comes near 2^64 bytes, but a hostile artifact
 * can: the sums stop at the ends instead of wrapping, so that a line never exceeds its peak.
 */
static void live_add(uint64_t *live, uint64_t size)
{
	*live = *live > UINT64_MAX - size ? UINT64_MAX : *live + size;
}

static void live_sub(uint64_t *live, uint64_t size)
{
	*live = *live > size ? *live - size : 0;
}

static void charge(struct mt_images *im, const struct block *b, bool add)
{
	struct mt_heap_counts *c = &im->img[b->image].c;
	struct mt_live_change ch = {.image = b->image,
				    .stack_id = b->stack,
				    .addr = b->addr,
				    .size = b->size,
				    .add = add,
				    .ended = im->ending};

	if (add) {
		c->live_blocks++;
		live_add(&c->live_bytes, b->size);
		live_add(&im->live_bytes, b->size);
		if (c->live_bytes > c->peak_bytes)
			c->peak_bytes = c->live_bytes;
		ch.new_peak = im->live_bytes > im->peak;
		if (ch.new_peak)
			im->peak = im->live_bytes;
	} else {
		c->live_blocks--;
		live_sub(&c->live_bytes, b->size);
		live_sub(&im->live_bytes, b->size);
	}
	if (!im->live_fn)
		return;
	ch.image_live = c->live_bytes;
	ch.tree_live = im->live_bytes;
	im->live_fn(im->live_arg, &ch);
}

/* Take block n out of the table slot, its space's chain and the counts; the node is freed. */
static void block_remove(struct mt_images *im, uint32_t *slot)
{
	uint32_t n = *slot;
	struct block *b = &im->nodes[n];
	struct space *sp = &im->spaces[b->space];

	if (b->prev)
		im->nodes[b->prev].next = b->next;
	else
		sp->head = b->next;
	if (b->next)
		im->nodes[b->next].prev = b->prev;
	sp->blocks--;
	sp->bytes -= b->size;
	charge(im, b, false);
	mt_hashtab_erase(&im->blocks, &node_ops, im, slot);
	b->next = im->free_node;
	im->free_node = n;
}

int img_block_add(struct mt_images *im, const struct block *nb)
{
	struct space *sp = &im->spaces[nb->space];
	uint32_t *slot, n;

	if (!nb->addr)
		return 0;
	if (img_table_reserve(im, im->blocks.used + 1))
		return -ENOMEM;
	slot = slot_of(im, nb->space, nb->addr);
	/* Handed out twice without a release we saw (dropped events): the new one wins. */
	if (*slot)
		block_remove(im, slot);
	if (im->free_node) {
		n = im->free_node;
		im->free_node = im->nodes[n].next;
	} else {
		if (MT_GROW(im->nodes, im->cap_nodes, im->n_nodes + 2, 1024))
			return -ENOMEM;
		n = (uint32_t)++im->n_nodes;
	}
	slot = slot_of(im, nb->space, nb->addr);
	im->nodes[n] = *nb;
	im->nodes[n].prev = 0;
	im->nodes[n].next = sp->head;
	if (sp->head)
		im->nodes[sp->head].prev = n;
	sp->head = n;
	sp->blocks++;
	sp->bytes += nb->size;
	*slot = n;
	mt_hashtab_added(&im->blocks);
	charge(im, &im->nodes[n], true);
	return 0;
}

/* The live block (space, addr) taken out into *out; false when there is none. */
bool img_block_take(struct mt_images *im, uint32_t space, uint64_t addr, struct block *out)
{
	uint32_t *slot;

	if (!addr || !im->blocks.slot)
		return false;
	slot = slot_of(im, space, addr);
	if (!*slot)
		return false;
	*out = im->nodes[*slot];
	block_remove(im, slot);
	return true;
}

/* An exec or exit: every block of the space is gone. */
struct mt_released img_space_release(struct mt_images *im, uint32_t space)
{
	struct mt_released r = {im->spaces[space].blocks, im->spaces[space].bytes};

	im->ending = true;
	while (im->spaces[space].head) {
		struct block *b = &im->nodes[im->spaces[space].head];

		block_remove(im, slot_of(im, space, b->addr));
	}
	im->ending = false;
	return r;
}
