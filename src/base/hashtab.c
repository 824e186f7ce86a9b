// SPDX-License-Identifier: GPL-2.0
/* The one hash table: its growth (see hashtab.h), out of the lookups' inline path. */
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <unistd.h>

#include "base/hashtab.h"

static bool fits(const struct mt_hashtab_ops *ops, size_t slots, size_t n)
{
	return slots && n * 100 <= slots * ops->max_load_pct;
}

/* Old slots are given back in steps of this many bytes as the growth moves past them. */
#define RELEASE_STEP (1u << 20)

/*
 * The old slot array's pages that the move has passed, from *done on, up to (not into) its
 * last page, given back to the kernel: a table that doubles then holds the new slots and what
 * is left of the old, not both whole (the replay's 10 million blocks: 201 MiB, not 302). Its
 * first and last pages stay, whatever the move: malloc keeps its own words beside a block.
 */
static void release_moved(const void *old, size_t bytes, size_t moved, uintptr_t *done)
{
	uintptr_t page = (uintptr_t)sysconf(_SC_PAGESIZE);
	uintptr_t start = (uintptr_t)old, first = (start + 2 * page - 1) / page * page;
	uintptr_t last = (start + bytes) / page * page - page;
	uintptr_t to = (start + moved) / page * page;

	if (!*done)
		*done = first;
	if (to > last)
		to = last;
	if (to < *done + RELEASE_STEP)
		return;
	madvise((void *)*done, to - *done, MADV_DONTNEED);
	*done = to;
}

/*
 * A large table's lookups land anywhere in it: each one a TLB miss with small pages (the replay
 * of 10 million live blocks spent most of its time there). Its slots ask for huge pages, where
 * the system gives them on request (transparent_hugepage "madvise").
 */
static void want_huge_pages(void *slot, size_t bytes)
{
	uintptr_t huge = 2u << 20, start = ((uintptr_t)slot + huge - 1) / huge * huge;
	uintptr_t end = ((uintptr_t)slot + bytes) / huge * huge;

	if (bytes >= 2 * huge && end > start)
		madvise((void *)start, end - start, MADV_HUGEPAGE);
}

int mt_hashtab_grow(struct mt_hashtab *t, const struct mt_hashtab_ops *ops, const void *ctx,
		    size_t n)
{
	size_t slots = t->slot ? t->mask + 1 : 0, cap = slots ? slots : ops->min_slots;
	struct mt_hashtab grown = {0};
	uintptr_t released = 0;

	if (fits(ops, slots, n))
		return 0;
	while (!fits(ops, cap, n))
		cap *= 2;
	grown.slot = calloc(cap, ops->entry);
	if (!grown.slot)
		return -ENOMEM;
	grown.mask = cap - 1;
	want_huge_pages(grown.slot, cap * ops->entry);
	for (size_t i = 0; i < slots; i++) {
		const void *e = mt_hashtab_at(t, ops, i);
		size_t j;

		if (ops->empty(e))
			continue;
		for (j = ops->hash(ctx, e) & grown.mask; !ops->empty(mt_hashtab_at(&grown, ops, j));
		     j = (j + 1) & grown.mask)
			;
		memcpy(mt_hashtab_at(&grown, ops, j), e, ops->entry);
		if ((i + 1) % 4096 == 0 && slots * ops->entry >= 4 * RELEASE_STEP)
			release_moved(t->slot, slots * ops->entry, (i + 1) * ops->entry, &released);
	}
	grown.used = t->used;
	free(t->slot);
	*t = grown;
	return 0;
}

void mt_hashtab_free(struct mt_hashtab *t)
{
	free(t->slot);
	*t = (struct mt_hashtab){0};
}
