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

struct packed_block {
	uint32_t key; /* packed_key of the address */
	uint32_t cls; /* its class in im->cls; 0: an empty slot */
};

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
 * A packed block's key: its address's low 32 bits, with its high 32 bits folded in, mixed (for a
 * given high half a bijection, so the slot keeps the key and not the bits), then its class's high
 * 32 bits. The slots are in the order of the keys, and a key's home is at the same fraction of
 * the homes as the key is of 2^32: growing the homes moves every block forward, none back, which
 * lets the table grow in place by any step. The high half folded in spreads blocks at the same
 * offset of many 4 GiB ranges over the table instead of one run. The mixer's multipliers are
 * those of the published 32-bit "lowbias32".
 */
static uint32_t high_fold(uint32_t high)
{
	return high * 0x9e3779b1U;
}

static uint32_t packed_key(uint64_t addr)
{
	uint32_t x = (uint32_t)addr ^ high_fold((uint32_t)(addr >> 32));

	x ^= x >> 16;
	x *= 0x7feb352dU;
	x ^= x >> 15;
	x *= 0x846ca68bU;
	x ^= x >> 16;
	return x;
}

/* The address whose packed_key is key, of high half high: the multipliers' inverses mod 2^32. */
static uint64_t packed_key_addr(uint32_t key, uint32_t high)
{
	uint32_t x = key;

	x ^= x >> 16;
	x *= 0x43021123U;
	x ^= x >> 15 ^ x >> 30;
	x *= 0x1d69e2a5U;
	x ^= x >> 16;
	return (uint64_t)high << 32 | (x ^ high_fold(high));
}

static size_t packed_home(const struct block_slots *t, uint32_t key)
{
	return (size_t)(((uint64_t)key * t->homes) >> 32);
}

/*
 * At most 85 % of the homes used; they grow by half the power of two at or below them (16, 24,
 * 32, 48, 64, ...): 9.4 to 14.1 bytes a packed block, where doubling at 75 % was 10.7 to 21.3.
 * Growing by a quarter (16, 20, 24, 28, 32, ...) moved the blocks twice as often: 6 to 14 %
 * more of report's CPU time at 10 million blocks. The tail takes the runs that reach the end:
 * as many slots as the homes, at most 1024, counted from the end of the last run when it
 * passes the homes.
 */
#define PACKED_LOAD_PCT	 85
#define PACKED_MIN_HOMES 16
#define PACKED_MAX_TAIL	 1024

static bool packed_fit(size_t homes, size_t n)
{
	return n * 100 <= homes * PACKED_LOAD_PCT;
}

static size_t packed_next(size_t homes)
{
	size_t top = PACKED_MIN_HOMES;

	if (homes < PACKED_MIN_HOMES)
		return PACKED_MIN_HOMES;
	while (top * 2 <= homes)
		top *= 2;
	return homes + top / 2;
}

static size_t packed_slots(size_t homes)
{
	return homes + (homes < PACKED_MAX_TAIL ? homes : PACKED_MAX_TAIL);
}

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

/*
 * Block b put at slot e, the run from it moved one slot on (each slot taking the one before it):
 * 0, or -ENOSPC when the last slot is taken, where the run from e could reach past the tail.
 */
static int packed_insert(struct block_slots *t, struct packed_block *e, struct packed_block b)
{
	struct packed_block *s = t->slot;

	if (s[t->n - 1].cls)
		return -ENOSPC;
	for (;; e++) {
		struct packed_block was = *e;

		*e = b;
		if (!was.cls)
			break;
		b = was;
	}
	t->used++;
	return 0;
}

/* Slot e emptied: the blocks after it that are past their home move back one. */
static void packed_erase(struct block_slots *t, struct packed_block *e)
{
	struct packed_block *s = t->slot, *end = s + t->n;

	for (; e + 1 < end && e[1].cls && packed_home(t, e[1].key) <= (size_t)(e - s); e++)
		*e = e[1];
	*e = (struct packed_block){0};
	t->used--;
}

/* Slots visited per chunk while the table grows: each chunk's place is known before its move. */
#define PACKED_CHUNK 4096u

/*
 * Where the blocks of t go with homes homes, in order: the first slot from its home after the
 * block before it. The first free slot before each chunk of PACKED_CHUNK into carry; returns
 * the first free slot after the last block.
 */
static size_t packed_plan(const struct block_slots *t, size_t homes, size_t *carry)
{
	const struct block_slots g = {.homes = homes};
	const struct packed_block *s = t->slot;
	size_t next = 0;

	for (size_t i = 0; i < t->n; i++) {
		size_t h;

		if (i % PACKED_CHUNK == 0)
			carry[i / PACKED_CHUNK] = next;
		if (!s[i].cls)
			continue;
		h = packed_home(&g, s[i].key);
		next = (h > next ? h : next) + 1;
	}
	return next;
}

/*
 * The blocks moved to where packed_plan put them, the chunks from the last one and each from its
 * last block: a block never goes back, so it moves into a slot whose block has moved already.
 */
static void packed_move(struct block_slots *t, const size_t *carry, size_t old_n)
{
	struct packed_block *s = t->slot;
	uint32_t to[PACKED_CHUNK];

	for (size_t c = (old_n + PACKED_CHUNK - 1) / PACKED_CHUNK; c-- > 0;) {
		size_t start = c * PACKED_CHUNK, stop = start + PACKED_CHUNK, next = carry[c];

		if (stop > old_n)
			stop = old_n;
		for (size_t i = start; i < stop; i++) {
			size_t h;

			if (!s[i].cls)
				continue;
			h = packed_home(t, s[i].key);
			to[i - start] = (uint32_t)(h > next ? h : next);
			next = to[i - start] + 1;
		}
		for (size_t i = stop; i-- > start;) {
			if (!s[i].cls || to[i - start] == i)
				continue;
			s[to[i - start]] = s[i];
			s[i] = (struct packed_block){0};
		}
	}
}

/*
 * t grown in place until need blocks fit, with a whole tail after the last run (its homes kept
 * when they hold need already: a run reached the last slot, one of blocks that share a key, or
 * of many keys at the end): 0, or -ENOMEM (unchanged).
 */
static int packed_grow(struct block_slots *t, size_t need)
{
	size_t homes = t->homes, old_n = t->n, chunks = (old_n + PACKED_CHUNK - 1) / PACKED_CHUNK;
	size_t one = 0, *carry = chunks > 1 ? calloc(chunks, sizeof(*carry)) : &one;
	size_t n, end;
	int err = -ENOMEM;

	if (!carry)
		return -ENOMEM;
	if (!homes)
		homes = PACKED_MIN_HOMES;
	while (!packed_fit(homes, need))
		if ((homes = packed_next(homes)) > UINT32_MAX)
			goto out;
	end = packed_plan(t, homes, carry);
	n = packed_slots(homes);
	if (end + (n - homes) > n)
		n = end + (n - homes);
	if (n > UINT32_MAX ||
	    mt_slots_resize(&t->slot, &t->mapped, old_n * sizeof(struct packed_block),
			    n * sizeof(struct packed_block)))
		goto out;
	t->homes = homes;
	t->n = n;
	if (old_n)
		packed_move(t, carry, old_n);
	err = 0;
out:
	if (carry != &one)
		free(carry);
	return err;
}

static int packed_reserve(struct block_slots *t, size_t need)
{
	if (t->slot && packed_fit(t->homes, need))
		return 0;
	return packed_grow(t, need);
}

static void packed_free(struct block_slots *t)
{
	mt_slots_free(t->slot, t->mapped);
	*t = (struct block_slots){0};
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
	return packed_at(im, space, e, packed_key_addr(e->key, im->cls[e->cls].high));
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
	if (packed_reserve(&sp->packed, sp->packed.used + 1) || class_get(im, &k, &c))
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
		while (packed_insert(&sp->packed, e, (struct packed_block){.key = key, .cls = c})) {
			if (packed_grow(&sp->packed, sp->packed.used + 1))
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
			packed_erase(&sp->packed, e);
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
	packed_free(&sp->packed);
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
		packed_free(&im->spaces[s].packed);
		mt_hashtab_free(&im->spaces[s].wide);
	}
	free(im->cls);
	mt_hashtab_free(&im->cls_ix);
}
