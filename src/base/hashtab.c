// SPDX-License-Identifier: GPL-2.0
/* The one hash table: its growth (see hashtab.h), out of the lookups' inline path. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/hashtab.h"

static bool fits(const struct mt_hashtab_ops *ops, size_t slots, size_t n)
{
	return slots && n * 100 <= slots * ops->max_load_pct;
}

/*
 * A table of this many bytes or more is a mapping of its own: it doubles by mremap, which moves
 * its pages rather than copying them and adds pages the kernel zeroes, so that a doubling holds
 * the new size only, not the old slots beside the new (the replay's 10 million blocks: 128 MiB,
 * not 192), and zeroes only the added half.
 */
#define MAPPED_MIN (4u << 20)
#define HUGE_PAGE  (2u << 20)

/*
 * A large table's lookups land anywhere in it: each one a TLB miss with small pages (the replay
 * of 10 million live blocks spent most of its time there). Its slots ask for huge pages, where
 * the system gives them on request (transparent_hugepage "madvise").
 */
static void want_huge_pages(void *slot, size_t bytes)
{
	uintptr_t huge = HUGE_PAGE, start = ((uintptr_t)slot + huge - 1) / huge * huge;
	uintptr_t end = ((uintptr_t)slot + bytes) / huge * huge;

	if (bytes >= 2 * huge && end > start)
		madvise((void *)start, end - start, MADV_HUGEPAGE);
}

/* A mapping of bytes with the old bytes of slot copied in (slot given back), or MAP_FAILED. */
static void *copied_to_mapping(void *slot, size_t mapped, size_t old, size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return p;
	if (old)
		memcpy(p, slot, old);
	mt_slots_free(slot, mapped);
	return p;
}

int mt_slots_resize(void **slot, size_t *mapped, size_t old, size_t bytes)
{
	void *p;

	if (bytes < MAPPED_MIN) {
		p = realloc(*slot, bytes);
		if (!p)
			return -ENOMEM;
		memset((char *)p + old, 0, bytes - old);
	} else {
		/*
		 * Whole huge pages: the kernel aligns such a mapping to them, so that the huge
		 * pages asked for cover all of it and do not split it, which mremap refuses.
		 */
		bytes = (bytes + HUGE_PAGE - 1) / HUGE_PAGE * HUGE_PAGE;
		p = *mapped ? mremap(*slot, *mapped, bytes, MREMAP_MAYMOVE) : MAP_FAILED;
		/* From the heap, or where mremap cannot (valgrind's address space): a copy. */
		if (p == MAP_FAILED)
			p = copied_to_mapping(*slot, *mapped, old, bytes);
		if (p == MAP_FAILED)
			return -ENOMEM;
	}
	*slot = p;
	*mapped = bytes >= MAPPED_MIN ? bytes : 0;
	want_huge_pages(p, *mapped);
	return 0;
}

void mt_slots_free(void *slot, size_t mapped)
{
	if (mapped)
		munmap(slot, mapped);
	else
		free(slot);
}

/*
 * After a doubling, the entry at slot i moved to where it belongs now: the first free slot from
 * its new home (its old home, or that plus the old size), or i itself when the run from its home
 * reaches i first.
 */
static void place_again(struct mt_hashtab *t, const struct mt_hashtab_ops *ops, const void *ctx,
			size_t i)
{
	void *e = mt_hashtab_at(t, ops, i);
	size_t j = ops->hash(ctx, e) & t->mask;

	while (j != i && !ops->empty(mt_hashtab_at(t, ops, j)))
		j = (j + 1) & t->mask;
	if (j == i)
		return;
	memcpy(mt_hashtab_at(t, ops, j), e, ops->entry);
	memset(e, 0, ops->entry);
}

/*
 * Every entry of the old slots placed again, in order from a free slot: an entry's home then
 * comes before it, so the run from its home holds only entries placed already (and the slot it
 * leaves is free), and none is moved past the slots still to visit but to the added half, or
 * around the end into a slot that the walk visits and places again.
 */
static void place_all_again(struct mt_hashtab *t, const struct mt_hashtab_ops *ops, const void *ctx,
			    size_t old_slots)
{
	size_t free_slot = 0;

	/* There is one: a table is grown before it is full (max_load_pct is below 100). */
	while (!ops->empty(mt_hashtab_at(t, ops, free_slot)))
		free_slot++;
	for (size_t k = 1; k < old_slots; k++) {
		size_t i = (free_slot + k) & (old_slots - 1);

		if (!ops->empty(mt_hashtab_at(t, ops, i)))
			place_again(t, ops, ctx, i);
	}
}

int mt_hashtab_grow(struct mt_hashtab *t, const struct mt_hashtab_ops *ops, const void *ctx,
		    size_t n)
{
	size_t slots = t->slot ? t->mask + 1 : 0, cap = slots ? slots : ops->min_slots;

	if (fits(ops, slots, n))
		return 0;
	while (!fits(ops, cap, n))
		cap *= 2;
	if (mt_slots_resize(&t->slot, &t->mapped, slots * ops->entry, cap * ops->entry))
		return -ENOMEM;
	t->mask = cap - 1;
	if (slots)
		place_all_again(t, ops, ctx, slots);
	return 0;
}

void mt_hashtab_free(struct mt_hashtab *t)
{
	mt_slots_free(t->slot, t->mapped);
	*t = (struct mt_hashtab){0};
}
