// SPDX-License-Identifier: GPL-2.0
/*
 * The replay's block table (images_int.h). Each address space has tables of its own, found by
 * address, so that an exec or exit releases its blocks by emptying them without looking at
 * anyone else's: a shell that keeps a large heap and runs thousands of commands stays linear.
 *
 * A block takes one 12-byte slot when it packs: its address's low 32 bits, which of the space's
 * few 4 GiB ranges holds it (high), its size below 16 MiB, and the number of its (image, stack)
 * pair in a table of the pairs blocks were allocated with (owners). A larger block, or one in a
 * ninth range, takes a 24-byte slot in the space's wide table. At most 3/4 full, so 12 to 32
 * bytes a live block, 20 at 10 million (docs/PERFORMANCE.md, "Memory at scale"); before, a
 * 40-byte node in a pool and a 4-byte slot found it, 47 bytes a block.
 */
#include <errno.h>
#include <stdlib.h>

#include "aggregate/images_int.h"

#define PACKED_SIZE_BITS 24
#define PACKED_SIZE_MAX	 ((1u << PACKED_SIZE_BITS) - 1)

struct packed_block {
	uint32_t low;	    /* the address's low 32 bits */
	uint32_t size_high; /* the size, and above PACKED_SIZE_BITS its range's index in high */
	uint32_t owner;	    /* its (image, stack) in owners; 0: an empty slot */
};

struct wide_block {
	uint64_t addr; /* 0: an empty slot (no block is at 0) */
	uint64_t size;
	uint32_t image;
	uint32_t stack;
};

/* ---- owners: the (image, stack) pairs of live blocks ----------------------------------------- */

static uint64_t owner_key_hash(uint32_t image, uint32_t stack)
{
	return mt_hash_u64((uint64_t)image << 32 | stack);
}

static bool owner_empty(const void *e)
{
	return !*(const uint32_t *)e;
}

static uint64_t owner_hash(const void *ctx, const void *e)
{
	const struct owner *o = &((const struct mt_images *)ctx)->owners[*(const uint32_t *)e];

	return owner_key_hash(o->image, o->stack);
}

static bool owner_is(const void *ctx, const void *e, const void *key)
{
	const struct owner *o = &((const struct mt_images *)ctx)->owners[*(const uint32_t *)e];
	const struct owner *k = key;

	return o->image == k->image && o->stack == k->stack;
}

static const struct mt_hashtab_ops owner_ops = {
    .entry = sizeof(uint32_t),
    .max_load_pct = 75,
    .min_slots = 64,
    .hash = owner_hash,
    .empty = owner_empty,
};

static uint32_t *owner_slot(struct mt_images *im, uint32_t image, uint32_t stack)
{
	struct owner k = {.image = image, .stack = stack};

	return mt_hashtab_find(&im->owner_ix, &owner_ops, owner_key_hash(image, stack), owner_is,
			       im, &k);
}

/*
 * The number of (image, stack). A pair is kept once made, whether or not a block has it still:
 * there are as many as the report's cells (an image's allocations at one site), and a malloc and
 * its free then look up no pair but the first time (a churn's pairs made and forgotten a pair
 * each: 6.6 % of the samples of a churn's report). 0, or -ENOMEM.
 */
static int owner_get(struct mt_images *im, uint32_t image, uint32_t stack, uint32_t *out)
{
	uint32_t *slot, n;

	if (mt_hashtab_reserve(&im->owner_ix, &owner_ops, im, im->owner_ix.used + 1))
		return -ENOMEM;
	slot = owner_slot(im, image, stack);
	if (*slot) {
		*out = *slot;
		return 0;
	}
	if (im->n_owners >= UINT32_MAX - 1 ||
	    MT_GROW(im->owners, im->cap_owners, im->n_owners + 2, 64))
		return -ENOMEM;
	n = (uint32_t)++im->n_owners;
	im->owners[n] = (struct owner){.image = image, .stack = stack};
	*slot = n;
	mt_hashtab_added(&im->owner_ix);
	*out = n;
	return 0;
}

/* ---- a space's tables ------------------------------------------------------------------------ */

static uint64_t packed_addr(const struct space *sp, const struct packed_block *e)
{
	return (uint64_t)sp->high[e->size_high >> PACKED_SIZE_BITS] << 32 | e->low;
}

static bool packed_empty(const void *e)
{
	return !((const struct packed_block *)e)->owner;
}

static uint64_t packed_hash(const void *ctx, const void *e)
{
	return mt_hash_u64(packed_addr(ctx, e));
}

/* The key of a packed block: its low bits and its range's index. */
struct packed_key {
	uint32_t low;
	uint32_t high_ix;
};

static bool packed_is(const void *ctx, const void *e, const void *key)
{
	const struct packed_block *b = e;
	const struct packed_key *k = key;

	(void)ctx;
	return b->low == k->low && b->size_high >> PACKED_SIZE_BITS == k->high_ix;
}

static const struct mt_hashtab_ops packed_ops = {
    .entry = sizeof(struct packed_block),
    .max_load_pct = 75,
    .min_slots = 16,
    .hash = packed_hash,
    .empty = packed_empty,
};

static bool wide_empty(const void *e)
{
	return !((const struct wide_block *)e)->addr;
}

static uint64_t wide_hash(const void *ctx, const void *e)
{
	(void)ctx;
	return mt_hash_u64(((const struct wide_block *)e)->addr);
}

static bool wide_is(const void *ctx, const void *e, const void *key)
{
	(void)ctx;
	return ((const struct wide_block *)e)->addr == *(const uint64_t *)key;
}

static const struct mt_hashtab_ops wide_ops = {
    .entry = sizeof(struct wide_block),
    .max_load_pct = 75,
    .min_slots = 16,
    .hash = wide_hash,
    .empty = wide_empty,
};

/* The index of addr's 4 GiB range in sp->high, added when add and there is room; else -1. */
static int high_index(struct space *sp, uint64_t addr, bool add)
{
	uint32_t high = (uint32_t)(addr >> 32);

	for (uint32_t i = 0; i < sp->n_high; i++)
		if (sp->high[i] == high)
			return (int)i;
	if (!add || sp->n_high == SPACE_HIGHS)
		return -1;
	sp->high[sp->n_high] = high;
	return (int)sp->n_high++;
}

/* The slot of (addr in range high_ix), or the empty slot where it would go. */
static struct packed_block *packed_slot(struct space *sp, uint64_t addr, int high_ix)
{
	struct packed_key k = {.low = (uint32_t)addr, .high_ix = (uint32_t)high_ix};

	return mt_hashtab_find(&sp->packed, &packed_ops, mt_hash_u64(addr), packed_is, sp, &k);
}

static struct wide_block *wide_slot(struct space *sp, uint64_t addr)
{
	return mt_hashtab_find(&sp->wide, &wide_ops, mt_hash_u64(addr), wide_is, sp, &addr);
}

static struct block packed_unpack(const struct mt_images *im, const struct space *sp,
				  uint32_t space, const struct packed_block *e)
{
	const struct owner *o = &im->owners[e->owner];

	return (struct block){.addr = packed_addr(sp, e),
			      .size = e->size_high & PACKED_SIZE_MAX,
			      .space = space,
			      .image = o->image,
			      .stack = o->stack};
}

static struct block wide_unpack(const struct wide_block *e, uint32_t space)
{
	return (struct block){
	    .addr = e->addr, .size = e->size, .space = space, .image = e->image, .stack = e->stack};
}

static bool take_wide(struct mt_images *im, uint32_t space, uint64_t addr, struct block *out);
static void block_gone(struct mt_images *im, struct space *sp, const struct block *b);

/*
 * b packed into sp, in place of the block live at its address if any (dropped events): 0, -E2BIG
 * when it does not pack, or -ENOMEM. One lookup finds both the old block and b's slot.
 */
static int put_packed(struct mt_images *im, struct space *sp, const struct block *b)
{
	struct packed_block *e;
	struct block old;
	uint32_t owner;
	int high_ix = b->size <= PACKED_SIZE_MAX ? high_index(sp, b->addr, true) : -1;

	if (high_ix < 0)
		return -E2BIG;
	if (mt_hashtab_reserve(&sp->packed, &packed_ops, sp, sp->packed.used + 1) ||
	    owner_get(im, b->image, b->stack, &owner))
		return -ENOMEM;
	e = packed_slot(sp, b->addr, high_ix);
	if (e->owner) {
		old = packed_unpack(im, sp, b->space, e);
		block_gone(im, sp, &old);
	} else {
		if (sp->wide.used)
			take_wide(im, b->space, b->addr, &old);
		mt_hashtab_added(&sp->packed);
	}
	*e = (struct packed_block){.low = (uint32_t)b->addr,
				   .size_high = (uint32_t)b->size | (uint32_t)high_ix
									<< PACKED_SIZE_BITS,
				   .owner = owner};
	return 0;
}

static int put_wide(struct space *sp, const struct block *b)
{
	struct wide_block *e;

	if (mt_hashtab_reserve(&sp->wide, &wide_ops, sp, sp->wide.used + 1))
		return -ENOMEM;
	e = wide_slot(sp, b->addr);
	*e = (struct wide_block){
	    .addr = b->addr, .size = b->size, .image = b->image, .stack = b->stack};
	mt_hashtab_added(&sp->wide);
	return 0;
}

/* ---- the block table ---------------------------------------------------------------------- */

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

/* Block b left its space's tables: the counts follow. */
static void block_gone(struct mt_images *im, struct space *sp, const struct block *b)
{
	sp->blocks--;
	sp->bytes -= b->size;
	charge(im, b, false);
}

int img_block_add(struct mt_images *im, const struct block *nb)
{
	struct space *sp = &im->spaces[nb->space];
	struct block old;
	int err;

	if (!nb->addr)
		return 0;
	/* Handed out twice without a release we saw (dropped events): the new one wins. */
	err = put_packed(im, sp, nb);
	if (err == -E2BIG) {
		img_block_take(im, nb->space, nb->addr, &old);
		err = put_wide(sp, nb);
	}
	if (err)
		return err;
	sp->blocks++;
	sp->bytes += nb->size;
	charge(im, nb, true);
	return 0;
}

/* The live block (space, addr) taken out into *out; false when there is none. */
bool img_block_take(struct mt_images *im, uint32_t space, uint64_t addr, struct block *out)
{
	struct space *sp = &im->spaces[space];
	int high_ix = addr && sp->packed.used ? high_index(sp, addr, false) : -1;

	if (high_ix >= 0) {
		struct packed_block *e = packed_slot(sp, addr, high_ix);

		if (e->owner) {
			*out = packed_unpack(im, sp, space, e);
			mt_hashtab_erase(&sp->packed, &packed_ops, sp, e);
			block_gone(im, sp, out);
			return true;
		}
	}
	return addr && sp->wide.used && take_wide(im, space, addr, out);
}

/* The wide block (space, addr) taken out into *out; false when there is none. */
static bool take_wide(struct mt_images *im, uint32_t space, uint64_t addr, struct block *out)
{
	struct space *sp = &im->spaces[space];
	struct wide_block *e = wide_slot(sp, addr);

	if (!e->addr)
		return false;
	*out = wide_unpack(e, space);
	mt_hashtab_erase(&sp->wide, &wide_ops, sp, e);
	block_gone(im, sp, out);
	return true;
}

void img_block_prefetch(const struct mt_images *im, uint32_t space, uint64_t addr)
{
	const struct space *sp = &im->spaces[space];

	if (sp->packed.slot)
		__builtin_prefetch(
		    mt_hashtab_at(&sp->packed, &packed_ops, mt_hash_u64(addr) & sp->packed.mask));
}

/* An exec or exit: every block of the space is gone, and its tables with them. */
struct mt_released img_space_release(struct mt_images *im, uint32_t space)
{
	struct space *sp = &im->spaces[space];
	struct mt_released r = {sp->blocks, sp->bytes};
	const struct packed_block *p = sp->packed.slot;
	const struct wide_block *w = sp->wide.slot;

	im->ending = true;
	for (size_t i = 0; p && sp->packed.used && i <= sp->packed.mask; i++) {
		struct block b;

		if (!p[i].owner)
			continue;
		b = packed_unpack(im, sp, space, &p[i]);
		charge(im, &b, false);
	}
	for (size_t i = 0; w && sp->wide.used && i <= sp->wide.mask; i++) {
		struct block b = wide_unpack(&w[i], space);

		if (w[i].addr)
			charge(im, &b, false);
	}
	im->ending = false;
	mt_hashtab_free(&sp->packed);
	mt_hashtab_free(&sp->wide);
	sp->n_high = 0;
	sp->blocks = sp->bytes = 0;
	return r;
}

void img_each_block(const struct mt_images *im, void (*fn)(void *arg, const struct block *b),
		    void *arg)
{
	for (size_t s = 0; s < im->n_spaces; s++) {
		const struct space *sp = &im->spaces[s];
		const struct packed_block *p = sp->packed.slot;
		const struct wide_block *w = sp->wide.slot;
		struct block b;

		for (size_t i = 0; p && i <= sp->packed.mask; i++) {
			if (!p[i].owner)
				continue;
			b = packed_unpack(im, sp, (uint32_t)s, &p[i]);
			fn(arg, &b);
		}
		for (size_t i = 0; w && i <= sp->wide.mask; i++) {
			if (!w[i].addr)
				continue;
			b = wide_unpack(&w[i], (uint32_t)s);
			fn(arg, &b);
		}
	}
}

void img_table_free(struct mt_images *im)
{
	for (size_t s = 0; s < im->n_spaces; s++) {
		mt_hashtab_free(&im->spaces[s].packed);
		mt_hashtab_free(&im->spaces[s].wide);
	}
	free(im->owners);
	mt_hashtab_free(&im->owner_ix);
}
