// SPDX-License-Identifier: GPL-2.0
/* The one hash table: its growth (see hashtab.h), out of the lookups' inline path. */
#include <errno.h>
#include <stdlib.h>

#include "base/hashtab.h"

static bool fits(const struct mt_hashtab_ops *ops, size_t slots, size_t n)
{
	return slots && n * 100 <= slots * ops->max_load_pct;
}

int mt_hashtab_grow(struct mt_hashtab *t, const struct mt_hashtab_ops *ops, const void *ctx,
		    size_t n)
{
	size_t slots = t->slot ? t->mask + 1 : 0, cap = slots ? slots : ops->min_slots;
	struct mt_hashtab grown = {0};

	if (fits(ops, slots, n))
		return 0;
	while (!fits(ops, cap, n))
		cap *= 2;
	grown.slot = calloc(cap, ops->entry);
	if (!grown.slot)
		return -ENOMEM;
	grown.mask = cap - 1;
	for (size_t i = 0; i < slots; i++) {
		const void *e = mt_hashtab_at(t, ops, i);
		size_t j;

		if (ops->empty(e))
			continue;
		for (j = ops->hash(ctx, e) & grown.mask; !ops->empty(mt_hashtab_at(&grown, ops, j));
		     j = (j + 1) & grown.mask)
			;
		memcpy(mt_hashtab_at(&grown, ops, j), e, ops->entry);
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
