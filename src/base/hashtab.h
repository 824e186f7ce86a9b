/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The one hash table of memtrack: open addressing with linear probing over fixed-size entries
 * kept in the slots themselves, a power-of-two number of slots, grown before it passes its load,
 * and emptied by shifting back the rest of a probe run (no tombstones, so lookups stay short
 * however many entries come and go: the replay of a run frees as often as it allocates).
 *
 * What an entry is belongs to its user, described by a struct mt_hashtab_ops: its size, the
 * hash of a stored entry, and whether a slot is empty. An all-zero slot must be empty: a new or
 * emptied slot is zeroed. Many users store an index + 1 into an array of their own (a uint32_t,
 * 0 empty), others the record itself.
 *
 * The lookups are inline so that the compiler sees the user's functions and calls none of them
 * through a pointer: the replay and the live table look up once per event.
 */
#ifndef MT_HASHTAB_H
#define MT_HASHTAB_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <string.h>

struct mt_hashtab {
	void *slot;    /* NULL until the first mt_hashtab_reserve */
	size_t mask;   /* slots - 1 */
	size_t used;   /* entries stored */
	size_t mapped; /* bytes of slot when it is a mapping of its own (a large table), else 0 */
};

struct mt_hashtab_ops {
	size_t entry;	       /* bytes of one slot */
	unsigned max_load_pct; /* grown before more than this % of the slots are used */
	size_t min_slots;      /* slots at first (a power of two) */
	uint64_t (*hash)(const void *ctx, const void *entry); /* of a stored entry */
	bool (*empty)(const void *entry);
};

/*
 * A 64-bit key spread over the low bits the table uses (keys such as addresses and ids differ
 * in a few bits, low or high): half of a 64-bit finaliser, one multiply with the high half
 * folded in before and after. Measured against one multiply folded once, it keeps the block
 * table's probe runs short enough to cost fewer instructions in all.
 */
static inline uint64_t mt_hash_u64(uint64_t x)
{
	x ^= x >> 33;
	x *= 0xff51afd7ed558ccdULL;
	x ^= x >> 33;
	return x;
}

/* FNV-1a, 64 bits, of the len bytes at s. */
static inline uint64_t mt_hash_bytes(const void *s, size_t len)
{
	const unsigned char *p = s;
	uint64_t h = 0xcbf29ce484222325ULL;

	for (size_t i = 0; i < len; i++)
		h = (h ^ p[i]) * 0x100000001b3ULL;
	return h;
}

static inline void *mt_hashtab_at(const struct mt_hashtab *t, const struct mt_hashtab_ops *ops,
				  size_t j)
{
	return (char *)t->slot + j * ops->entry;
}

/*
 * The slots doubled in place until n entries fit, every entry placed again where it belongs now:
 * 0 or -ENOMEM (unchanged).
 */
int mt_hashtab_grow(struct mt_hashtab *t, const struct mt_hashtab_ops *ops, const void *ctx,
		    size_t n);

/*
 * Room for n entries within the load, grown when not. Slot pointers taken before are stale
 * after a growth. 0, or -ENOMEM (the table unchanged).
 */
static inline int mt_hashtab_reserve(struct mt_hashtab *t, const struct mt_hashtab_ops *ops,
				     const void *ctx, size_t n)
{
	if (t->slot && n * 100 <= (t->mask + 1) * ops->max_load_pct)
		return 0;
	return mt_hashtab_grow(t, ops, ctx, n);
}

/*
 * The slots of a table (the block table's too: src/aggregate/images_blocks.c) made bytes long
 * from old bytes, the added bytes zero: from 4 MiB a mapping of its own (*mapped its bytes, else
 * 0) grown in place by mremap, with huge pages asked for. 0, or -ENOMEM (unchanged).
 */
int mt_slots_resize(void **slot, size_t *mapped, size_t old, size_t bytes);
/* Slots made by mt_slots_resize given back. */
void mt_slots_free(void *slot, size_t mapped);

/* Every slot freed; the table is empty and may be used again. */
void mt_hashtab_free(struct mt_hashtab *t);

/*
 * The slot whose entry `is` says is key's, or the empty slot where it would go (then the caller
 * may fill it and count it with mt_hashtab_added). The table must have slots.
 */
static inline void *mt_hashtab_find(const struct mt_hashtab *t, const struct mt_hashtab_ops *ops,
				    uint64_t hash,
				    bool (*is)(const void *ctx, const void *entry, const void *key),
				    const void *ctx, const void *key)
{
	for (size_t j = hash & t->mask;; j = (j + 1) & t->mask) {
		void *e = mt_hashtab_at(t, ops, j);

		if (ops->empty(e) || is(ctx, e, key))
			return e;
	}
}

/* An empty slot found by mt_hashtab_find was filled. */
static inline void mt_hashtab_added(struct mt_hashtab *t)
{
	t->used++;
}

/*
 * Empty the slot e: the entries after it in its probe run move back into the hole unless their
 * home slot lies cyclically after it, so that every entry stays reachable from its home.
 */
static inline void mt_hashtab_erase(struct mt_hashtab *t, const struct mt_hashtab_ops *ops,
				    const void *ctx, void *e)
{
	size_t hole = (size_t)((char *)e - (char *)t->slot) / ops->entry, j = hole;

	for (;;) {
		void *next;
		size_t home;

		j = (j + 1) & t->mask;
		next = mt_hashtab_at(t, ops, j);
		if (ops->empty(next))
			break;
		home = (size_t)ops->hash(ctx, next) & t->mask;
		if (((j - home) & t->mask) >= ((j - hole) & t->mask)) {
			memcpy(mt_hashtab_at(t, ops, hole), next, ops->entry);
			hole = j;
		}
	}
	memset(mt_hashtab_at(t, ops, hole), 0, ops->entry);
	t->used--;
}

#endif
