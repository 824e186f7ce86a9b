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

static size_t block_hash(uint32_t space, uint64_t addr)
{
	return (size_t)img_mix(addr ^ ((uint64_t)space << 40) ^ space);
}

/* ---- the block table ------------------------------------------------------------------------ */

int img_table_grow(struct mt_images *im)
{
	size_t cap = im->table ? (im->mask + 1) * 2 : 1024, i, j;
	uint32_t *t = calloc(cap, sizeof(*t));

	if (!t)
		return -ENOMEM;
	for (i = 0; im->table && i <= im->mask; i++) {
		const struct block *b;

		if (!im->table[i])
			continue;
		b = &im->nodes[im->table[i]];
		for (j = block_hash(b->space, b->addr) & (cap - 1); t[j]; j = (j + 1) & (cap - 1))
			;
		t[j] = im->table[i];
	}
	free(im->table);
	im->table = t;
	im->mask = cap - 1;
	return 0;
}

/* The slot of (space, addr), or the empty slot where it would go. */
static uint32_t *slot_of(struct mt_images *im, uint32_t space, uint64_t addr)
{
	size_t j = block_hash(space, addr) & im->mask;

	for (;; j = (j + 1) & im->mask) {
		const struct block *b;

		/* Node 0 is no block: nodes may not exist yet while every slot is empty. */
		if (!im->table[j])
			return &im->table[j];
		b = &im->nodes[im->table[j]];
		if (b->addr == addr && b->space == space)
			return &im->table[j];
	}
}

/*
 * Empty a slot by shifting back the entries of its probe chain, so the table needs no tombstones
 * and lookups stay short however many blocks come and go.
 */
static void slot_erase(struct mt_images *im, uint32_t *slot)
{
	size_t hole = (size_t)(slot - im->table), j = hole;

	for (;;) {
		struct block *b;
		size_t home;

		j = (j + 1) & im->mask;
		if (!im->table[j])
			break;
		b = &im->nodes[im->table[j]];
		home = block_hash(b->space, b->addr) & im->mask;
		/* Move j into the hole unless its home lies cyclically in (hole, j]. */
		if (((j - home) & im->mask) >= ((j - hole) & im->mask)) {
			im->table[hole] = im->table[j];
			hole = j;
		}
	}
	im->table[hole] = 0;
	im->used--;
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
	slot_erase(im, slot);
	b->next = im->free_node;
	im->free_node = n;
}

int img_block_add(struct mt_images *im, const struct block *nb)
{
	struct space *sp = &im->spaces[nb->space];
	uint32_t *slot, n;

	if (!nb->addr)
		return 0;
	if ((im->used + 1) * 4 > (im->mask + 1) * 3 && img_table_grow(im))
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
	im->used++;
	charge(im, &im->nodes[n], true);
	return 0;
}

/* The live block (space, addr) taken out into *out; false when there is none. */
bool img_block_take(struct mt_images *im, uint32_t space, uint64_t addr, struct block *out)
{
	uint32_t *slot;

	if (!addr || !im->table)
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
