// SPDX-License-Identifier: GPL-2.0
/*
 * Sites per image and per time bucket (cells.h). A cell is found by (stack id, image) in an
 * open-addressing table; its number + 1 is its id in an mt_sites of its own, which counts it as
 * sites.h counts a site. Its buckets are appended in time order at the timeline's width of the
 * moment, and merged in pairs when the timeline's buckets have widened since.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/cells.h"
#include "base/grow.h"
#include "base/hashtab.h"

struct cell {
	uint32_t stack_id, image;
	uint64_t width_ns; /* of its buckets */
	struct mt_cell_bucket *b;
	size_t n, cap;
};

struct mt_cells {
	struct cell *v;
	size_t n, cap;
	struct mt_hashtab by_key; /* index + 1 of v (uint32_t); 0 empty */
	struct mt_sites *count;	  /* by cell index + 1 */
};

struct mt_cells *mt_cells_new(void)
{
	struct mt_cells *c = calloc(1, sizeof(*c));

	if (c && !(c->count = mt_sites_new())) {
		free(c);
		return NULL;
	}
	return c;
}

void mt_cells_free(struct mt_cells *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->v[i].b);
	free(c->v);
	mt_hashtab_free(&c->by_key);
	mt_sites_free(c->count);
	free(c);
}

static uint64_t cell_key(uint32_t stack_id, uint32_t image)
{
	return (uint64_t)image << 32 | stack_id;
}

static bool slot_empty(const void *e)
{
	return !*(const uint32_t *)e;
}

static uint64_t slot_hash(const void *ctx, const void *e)
{
	const struct cell *x = &((const struct mt_cells *)ctx)->v[*(const uint32_t *)e - 1];

	return mt_hash_u64(cell_key(x->stack_id, x->image));
}

static bool slot_is(const void *ctx, const void *e, const void *key)
{
	const struct cell *x = &((const struct mt_cells *)ctx)->v[*(const uint32_t *)e - 1];

	return cell_key(x->stack_id, x->image) == *(const uint64_t *)key;
}

static const struct mt_hashtab_ops by_key_ops = {
    .entry = sizeof(uint32_t),
    .max_load_pct = 50,
    .min_slots = 256,
    .hash = slot_hash,
    .empty = slot_empty,
};

/* The id of the cell (its index + 1), made when new; 0: out of memory. */
static uint32_t cell_id(struct mt_cells *c, uint32_t stack_id, uint32_t image)
{
	uint64_t key = cell_key(stack_id, image);
	uint32_t *e;

	if (mt_hashtab_reserve(&c->by_key, &by_key_ops, c, c->n + 1))
		return 0;
	e = mt_hashtab_find(&c->by_key, &by_key_ops, mt_hash_u64(key), slot_is, c, &key);
	if (*e)
		return *e;
	if (MT_GROW(c->v, c->cap, c->n + 1, 64))
		return 0;
	c->v[c->n] = (struct cell){.stack_id = stack_id, .image = image};
	*e = (uint32_t)++c->n;
	mt_hashtab_added(&c->by_key);
	return *e;
}

/* Buckets as wide as width_ns: neighbours merged, as the timeline merges its own. */
static void widen(struct cell *x, uint64_t width_ns)
{
	while (x->width_ns && x->width_ns < width_ns) {
		size_t out = 0;

		for (size_t i = 0; i < x->n; i++) {
			uint64_t b = x->b[i].bucket / 2;

			if (out && x->b[out - 1].bucket == b) {
				x->b[out - 1].allocations += x->b[i].allocations;
				x->b[out - 1].bytes += x->b[i].bytes;
			} else {
				x->b[out] = x->b[i];
				x->b[out++].bucket = b;
			}
		}
		x->n = out;
		x->width_ns *= 2;
	}
	x->width_ns = width_ns;
}

static int add_to_bucket(struct cell *x, const struct mt_timeline *tl, uint64_t size)
{
	uint64_t b = tl->n_buckets ? tl->n_buckets - 1 : 0;

	widen(x, tl->width_ns);
	if (!x->n || x->b[x->n - 1].bucket != b) {
		if (MT_GROW(x->b, x->cap, x->n + 1, 4))
			return -ENOMEM;
		x->b[x->n++] = (struct mt_cell_bucket){.bucket = b};
	}
	x->b[x->n - 1].allocations++;
	x->b[x->n - 1].bytes += size;
	return 0;
}

int mt_cells_alloc(struct mt_cells *c, uint32_t stack_id, uint32_t image, uint64_t size, bool live,
		   const struct mt_timeline *tl)
{
	uint32_t id = cell_id(c, stack_id, image);

	if (!id || mt_sites_alloc(c->count, id, size, live))
		return -ENOMEM;
	return add_to_bucket(&c->v[id - 1], tl, size);
}

void mt_cells_release(struct mt_cells *c, uint32_t stack_id, uint32_t image, uint64_t size,
		      int sign)
{
	uint32_t id = cell_id(c, stack_id, image);

	if (id)
		mt_sites_release(c->count, id, size, sign);
}

void mt_cells_temporary(struct mt_cells *c, uint32_t stack_id, uint32_t image)
{
	uint32_t id = cell_id(c, stack_id, image);

	if (id)
		mt_sites_temporary(c->count, id);
}

int mt_cells_live(struct mt_cells *c, uint32_t stack_id, uint32_t image, uint64_t size,
		  uint64_t blocks, bool add, bool new_peak)
{
	uint32_t id = stack_id ? cell_id(c, stack_id, image) : 0;

	if (stack_id && !id)
		return -ENOMEM;
	return mt_sites_live(c->count, id, size, blocks, add, new_peak);
}

void mt_cells_end(struct mt_cells *c, const struct mt_timeline *tl)
{
	for (size_t i = 0; i < c->n; i++)
		widen(&c->v[i], tl->width_ns);
	mt_sites_end(c->count);
}

size_t mt_cells_count(const struct mt_cells *c)
{
	return c->n;
}

struct mt_cell mt_cells_get(const struct mt_cells *c, size_t i)
{
	const struct cell *x = &c->v[i];

	return (struct mt_cell){.stack_id = x->stack_id,
				.image = x->image,
				.count = mt_sites_of(c->count, (uint32_t)i + 1),
				.n_buckets = x->n,
				.buckets = x->b};
}
