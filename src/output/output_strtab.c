// SPDX-License-Identifier: GPL-2.0
/* Strings numbered in the order they first come (output_strtab.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/hashtab.h"
#include "output/output_strtab.h"

static bool slot_empty(const void *e)
{
	return !*(const uint32_t *)e;
}

static uint64_t str_hash(const char *s)
{
	return mt_hash_bytes(s, strlen(s));
}

static uint64_t slot_hash(const void *ctx, const void *e)
{
	return str_hash(((const struct mt_strtab *)ctx)->v[*(const uint32_t *)e - 1]);
}

static bool slot_is(const void *ctx, const void *e, const void *key)
{
	return !strcmp(((const struct mt_strtab *)ctx)->v[*(const uint32_t *)e - 1], key);
}

static const struct mt_hashtab_ops slot_ops = {
    .entry = sizeof(uint32_t),
    .max_load_pct = 50,
    .min_slots = 256,
    .hash = slot_hash,
    .empty = slot_empty,
};

int64_t mt_strtab_intern(struct mt_strtab *st, const char *s)
{
	uint32_t *e;

	if (mt_hashtab_reserve(&st->slots, &slot_ops, st, st->n + 1))
		return -ENOMEM;
	e = mt_hashtab_find(&st->slots, &slot_ops, str_hash(s), slot_is, st, s);
	if (*e)
		return *e - 1;
	if (MT_GROW(st->v, st->cap, st->n + 1, 64))
		return -ENOMEM;
	st->v[st->n] = strdup(s);
	if (!st->v[st->n])
		return -ENOMEM;
	*e = (uint32_t)++st->n;
	mt_hashtab_added(&st->slots);
	return (int64_t)st->n - 1;
}

void mt_strtab_drop_slots(struct mt_strtab *st)
{
	mt_hashtab_free(&st->slots);
}

void mt_strtab_free(struct mt_strtab *st)
{
	for (size_t i = 0; i < st->n; i++)
		free(st->v[i]);
	free(st->v);
	mt_strtab_drop_slots(st);
	*st = (struct mt_strtab){0};
}
