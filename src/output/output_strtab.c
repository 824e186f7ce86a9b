// SPDX-License-Identifier: GPL-2.0
/* Strings numbered in the order they first come (output_strtab.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "output/output_strtab.h"

/* FNV-1a, 64 bits. */
static uint64_t str_hash(const char *s)
{
	uint64_t h = 0xcbf29ce484222325ULL;

	for (; *s; s++)
		h = (h ^ (unsigned char)*s) * 0x100000001b3ULL;
	return h;
}

/* The lookup table doubled (256 slots at first), kept at most half full. */
static int slots_grow(struct mt_strtab *st)
{
	size_t cap = st->slot ? 2 * (st->mask + 1) : 256;
	uint32_t *slot = calloc(cap, sizeof(*slot));

	if (!slot)
		return -ENOMEM;
	for (size_t i = 0; i < st->n; i++) {
		size_t j = str_hash(st->v[i]) & (cap - 1);

		while (slot[j])
			j = (j + 1) & (cap - 1);
		slot[j] = (uint32_t)i + 1;
	}
	free(st->slot);
	st->slot = slot;
	st->mask = cap - 1;
	return 0;
}

int64_t mt_strtab_intern(struct mt_strtab *st, const char *s)
{
	size_t j;

	if ((st->n + 1) * 2 > (st->slot ? st->mask + 1 : 0) && slots_grow(st))
		return -ENOMEM;
	for (j = str_hash(s) & st->mask; st->slot[j]; j = (j + 1) & st->mask)
		if (!strcmp(st->v[st->slot[j] - 1], s))
			return st->slot[j] - 1;
	if (MT_GROW(st->v, st->cap, st->n + 1, 64))
		return -ENOMEM;
	st->v[st->n] = strdup(s);
	if (!st->v[st->n])
		return -ENOMEM;
	st->slot[j] = (uint32_t)++st->n;
	return (int64_t)st->n - 1;
}

void mt_strtab_drop_slots(struct mt_strtab *st)
{
	free(st->slot);
	st->slot = NULL;
	st->mask = 0;
}

void mt_strtab_free(struct mt_strtab *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->v[i]);
	free(st->v);
	mt_strtab_drop_slots(st);
	*st = (struct mt_strtab){0};
}
