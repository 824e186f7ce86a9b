// SPDX-License-Identifier: GPL-2.0
/*
 * The replay's block table (images_int.h). Each address space has tables of its own, found by
 * address, so that an exec or exit releases its blocks by emptying them without looking at
 * anyone else's: a shell that keeps a large heap and runs thousands of commands stays linear.
 *
 * A block takes one 8-byte slot when its size is below 4 GiB: its address's low 32 bits (a key),
 * and the number of its class, what it shares with blocks allocated alike: its image, stack, size
 * and address's high 32 bits. A larger block takes a 24-byte slot in the space's wide table. The
 * packed slots are kept in order and grow in place by half or less, at most 85 % full: 9.4 to
 * 14.1 bytes a live block, 10.1 at 10 million (docs/PERFORMANCE.md, "Memory at scale"), while
 * blocks share few classes: one alone in its class pays for that too (20 bytes and an index
 * slot). Before, a doubling hash table at most 3/4 full (10.7 to 21.3 bytes a block, 13.4 at 10
 * million); before that 12-byte slots with the size in them, and a 40-byte node in a pool that a
 * 4-byte slot found, 47 bytes a block.
 */
#include <errno.h>
#include <stdlib.h>

#include "aggregate/images_int.h"

struct wide_block {
	uint64_t addr; /* 0: an empty slot (no block is at 0) */
	uint64_t size;
	uint32_t image;
	uint32_t stack;
};

/* ---- classes: what blocks allocated alike share ---------------------------------------------- */

static uint64_t class_key_hash(const struct block_class *k)
{
	return mt_hash_u64(((uint64_t)k->image << 32 | k->stack) ^
			   mt_hash_u64((uint64_t)k->size << 32 | k->high));
}

static bool class_empty(const void *e)
{
	return !*(const uint32_t *)e;
}

static uint64_t class_hash(const void *ctx, const void *e)
{
	return class_key_hash(&((const struct mt_images *)ctx)->cls[*(const uint32_t *)e]);
}

static bool class_is(const void *ctx, const void *e, const void *key)
{
	const struct block_class *c = &((const struct mt_images *)ctx)->cls[*(const uint32_t *)e];
	const struct block_class *k = key;

	return c->image == k->image && c->stack == k->stack && c->size == k->size &&
	       c->high == k->high;
}

static const struct mt_hashtab_ops class_ops = {
    .entry = sizeof(uint32_t),
    .max_load_pct = 75,
    .min_slots = 64,
    .hash = class_hash,
    .empty = class_empty,
};

/*
 * The classes without a block leave the index for the free list (linked through their image):
 * done when they are half the classes and the array is full, so that the classes stay within
 * twice the live ones (a realloc growing a buffer byte by byte makes a class a call), and a
 * churn's classes, made again and again, are made again only after as many others.
 */
static int class_sweep(struct mt_images *im)
{
	im->cls_free = 0;
	im->cls_idle = 0;
	mt_hashtab_free(&im->cls_ix);
	if (mt_hashtab_reserve(&im->cls_ix, &class_ops, im, im->n_cls))
		return -ENOMEM;
	for (uint32_t c = (uint32_t)im->n_cls; c > 0; c--) {
		uint32_t *slot;

		if (!im->cls[c].live) {
			im->cls[c].image = im->cls_free;
			im->cls_free = c;
			continue;
		}
		slot = mt_hashtab_find(&im->cls_ix, &class_ops, class_key_hash(&im->cls[c]),
				       class_is, im, &im->cls[c]);
		*slot = c;
		mt_hashtab_added(&im->cls_ix);
	}
	return 0;
}

/* A number for a new class: one of the free list's, or a new one. 0 on ENOMEM. */
static uint32_t class_new(struct mt_images *im)
{
	uint32_t c = im->cls_free;

	if (c) {
		im->cls_free = im->cls[c].image;
		return c;
	}
	if (im->n_cls >= UINT32_MAX - 1 || MT_GROW(im->cls, im->cap_cls, im->n_cls + 2, 64))
		return 0;
	return (uint32_t)++im->n_cls;
}

/* The class of k, made when there is none, with one more block: 0, or -ENOMEM. */
static int class_get(struct mt_images *im, const struct block_class *k, uint32_t *out)
{
	uint32_t *slot, c;

	if (!im->cls_free && im->n_cls + 2 > im->cap_cls && im->cls_idle >= im->n_cls / 2 &&
	    im->n_cls && class_sweep(im))
		return -ENOMEM;
	if (mt_hashtab_reserve(&im->cls_ix, &class_ops, im, im->cls_ix.used + 1))
		return -ENOMEM;
	slot = mt_hashtab_find(&im->cls_ix, &class_ops, class_key_hash(k), class_is, im, k);
	if (*slot) {
		c = *slot;
		im->cls_idle -= !im->cls[c].live++;
		*out = c;
		return 0;
	}
	c = class_new(im);
	if (!c)
		return -ENOMEM;
	im->cls[c] = *k;
	im->cls[c].live = 1;
	*slot = c;
	mt_hashtab_added(&im->cls_ix);
	*out = c;
	return 0;
}

/* A block of class c left the tables. */
static void class_put(struct mt_images *im, uint32_t c)
{
	im->cls_idle += !--im->cls[c].live;
}

/* ---- a space's tables ------------------------------------------------------------------------ */

/*
 * The slot of (key, high), or where it would go (an empty slot, a larger key's, or one past the
 * last slot when the run fills the tail): *found says which.
 */
static inline struct packed_block *packed_find(const struct mt_images *im,
					       const struct block_slots *t, uint32_t key,
					       uint32_t high, bool *found)
{
	struct packed_block *s = t->slot;
	size_t j = packed_home(t, key);

	*found = false;
	for (; j < t->n && s[j].cls; j++) {
		uint32_t h;

		if (s[j].key < key)
			continue;
		if (s[j].key > key)
			break;
		h = im->cls[s[j].cls].high;
		if (h >= high) {
			*found = h == high;
			break;
		}
	}
	return &s[j];
}

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

static struct wide_block *wide_slot(struct space *sp, uint64_t addr)
{
	return mt_hashtab_find(&sp->wide, &wide_ops, mt_hash_u64(addr), wide_is, sp, &addr);
}

/* The block in slot e, whose address is addr. */
static inline struct block packed_at(const struct mt_images *im, uint32_t space,
				     const struct packed_block *e, uint64_t addr)
{
	const struct block_class *c = &im->cls[e->cls];

	return (struct block){
	    .addr = addr, .size = c->size, .space = space, .image = c->image, .stack = c->stack};
}

/* The block in slot e, its address made again from its key and class. */
static struct block packed_unpack(const struct mt_images *im, uint32_t space,
				  const struct packed_block *e)
{
	return packed_at(im, space, e, img_packed_key_addr(e->key, im->cls[e->cls].high));
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
	struct block_class k = {.image = b->image,
				.stack = b->stack,
				.size = (uint32_t)b->size,
				.high = (uint32_t)(b->addr >> 32)};
	uint32_t key = packed_key(b->addr), c;
	struct packed_block *e;
	struct block old;
	bool found;

	if (b->size > UINT32_MAX)
		return -E2BIG;
	if (img_packed_reserve(&sp->packed, sp->packed.used + 1) || class_get(im, &k, &c))
		return -ENOMEM;
	e = packed_find(im, &sp->packed, key, k.high, &found);
	if (found) {
		old = packed_at(im, b->space, e, b->addr);
		class_put(im, e->cls);
		block_gone(im, sp, &old);
	} else {
		if (sp->wide.used)
			take_wide(im, b->space, b->addr, &old);
		/* A run that could pass the tail: the tail grows (rare), and the run is found
		 * again. */
		while (img_packed_insert(&sp->packed, e,
					 (struct packed_block){.key = key, .cls = c})) {
			if (img_packed_grow(&sp->packed, sp->packed.used + 1))
				return -ENOMEM;
			e = packed_find(im, &sp->packed, key, k.high, &found);
		}
		return 0;
	}
	*e = (struct packed_block){.key = key, .cls = c};
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
				    .blocks = 1,
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

	if (addr && sp->packed.used) {
		bool found;
		struct packed_block *e =
		    packed_find(im, &sp->packed, packed_key(addr), (uint32_t)(addr >> 32), &found);

		if (found) {
			*out = packed_at(im, space, e, addr);
			class_put(im, e->cls);
			img_packed_erase(&sp->packed, e);
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

/* A table smaller than this many slots (512 KiB) stays in the cache: no prefetch for it. */
#define PREFETCH_MIN_SLOTS (1u << 16)

void img_block_prefetch(const struct mt_images *im, uint32_t space, uint64_t addr)
{
	const struct space *sp = &im->spaces[space];

	if (sp->packed.n >= PREFETCH_MIN_SLOTS)
		__builtin_prefetch((struct packed_block *)sp->packed.slot +
				   packed_home(&sp->packed, packed_key(addr)));
}

/* An ending's packed block b, told alone: its counts go with its class's (class_released). */
static void tell_released(struct mt_images *im, const struct block *b)
{
	if (im->live_fn)
		im->live_fn(im->live_arg, &(struct mt_live_change){.image = b->image,
								   .stack_id = b->stack,
								   .addr = b->addr,
								   .size = b->size,
								   .blocks = 1,
								   .ended = true,
								   .counted_apart = true});
}

/*
 * Every block of class c released at once: all of them are in the space being released (a
 * class is of one image, an image of one space). One change for them instead of one each: a
 * shell's exit released a million blocks with a million changes of the heap's lines.
 */
static void class_released(struct mt_images *im, uint32_t c)
{
	const struct block_class *k = &im->cls[c];
	struct mt_heap_counts *hc = &im->img[k->image].c;
	uint64_t n = k->live, bytes = n * k->size; /* below 2^32 blocks of below 4 GiB */

	hc->live_blocks -= n;
	live_sub(&hc->live_bytes, bytes);
	live_sub(&im->live_bytes, bytes);
	im->cls[c].live = 0;
	im->cls_idle++;
	if (im->live_fn)
		im->live_fn(im->live_arg, &(struct mt_live_change){.image = k->image,
								   .stack_id = k->stack,
								   .size = k->size,
								   .blocks = n,
								   .ended = true,
								   .image_live = hc->live_bytes,
								   .tree_live = im->live_bytes,
								   .summed = true});
}

/* An exec or exit: every block of the space is gone, and its tables with them. */
struct mt_released img_space_release(struct mt_images *im, uint32_t space)
{
	struct space *sp = &im->spaces[space];
	struct mt_released r = {sp->blocks, sp->bytes};
	const struct packed_block *p = sp->packed.slot;
	const struct wide_block *w = sp->wide.slot;

	im->ending = true;
	for (size_t i = 0; p && sp->packed.used && i < sp->packed.n; i++) {
		struct block b;

		if (!p[i].cls)
			continue;
		b = packed_unpack(im, space, &p[i]);
		tell_released(im, &b);
		/* Its class's first block met here: the class goes, all its blocks with it. */
		if (im->cls[p[i].cls].live)
			class_released(im, p[i].cls);
	}
	for (size_t i = 0; w && sp->wide.used && i <= sp->wide.mask; i++) {
		struct block b = wide_unpack(&w[i], space);

		if (w[i].addr)
			charge(im, &b, false);
	}
	im->ending = false;
	img_packed_free(&sp->packed);
	mt_hashtab_free(&sp->wide);
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

		for (size_t i = 0; p && i < sp->packed.n; i++) {
			if (!p[i].cls)
				continue;
			b = packed_unpack(im, (uint32_t)s, &p[i]);
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
		img_packed_free(&im->spaces[s].packed);
		mt_hashtab_free(&im->spaces[s].wide);
	}
	free(im->cls);
	mt_hashtab_free(&im->cls_ix);
}
