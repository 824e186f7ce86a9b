// SPDX-License-Identifier: GPL-2.0
/*
 * The heap over time (timeline.h). A series is filled lazily: a line that does not change keeps
 * its value, written into the buckets it crossed only at its next change (or at the end), so an
 * event costs the same whether one image or thousands are alive.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "aggregate/timeline.h"

static int push(uint64_t **v, size_t *n, size_t *cap, uint64_t x)
{
	if (MT_GROW(*v, *cap, *n + 1, 16))
		return -ENOMEM;
	(*v)[(*n)++] = x;
	return 0;
}

/* Extend s to bucket b with the value it holds now. Rare: out of the live hook's path. */
static __attribute__((cold, noinline)) int extend(struct mt_timeline_series *s, size_t b)
{
	if (!s->n)
		s->first = b;
	while (s->first + s->n <= b)
		if (push(&s->max, &s->n, &s->cap, s->now))
			return -ENOMEM;
	return 0;
}

/* s holds v from bucket b on. Most changes fall in the bucket of the one before. */
static inline int touch(struct mt_timeline_series *s, size_t b, uint64_t v)
{
	if ((!s->n || s->first + s->n <= b) && extend(s, b))
		return -ENOMEM;
	s->now = v;
	if (v > s->max[b - s->first])
		s->max[b - s->first] = v;
	return 0;
}

/* Buckets twice as wide: neighbours g and g + 1 (g even) become one, their largest value. */
static void halve(struct mt_timeline_series *s)
{
	size_t nf = s->first / 2;

	if (!s->n)
		return;
	for (size_t j = 0; j < s->n; j++) {
		size_t g = s->first + j, k = g / 2 - nf;
		uint64_t v = s->max[j];

		if (j == 0 || g % 2 == 0 || v > s->max[k])
			s->max[k] = v;
	}
	s->n = (s->first + s->n - 1) / 2 - nf + 1;
	s->first = nf;
}

/* The bytes allocated in two neighbours are the sum of theirs. */
static void halve_sums(uint64_t *v, size_t n)
{
	for (size_t j = 0; j < n; j++)
		v[j / 2] = j % 2 ? v[j / 2] + v[j] : v[j];
}

static void merge(struct mt_timeline *tl)
{
	tl->width_ns *= 2;
	halve(&tl->tree);
	for (size_t i = 0; i < tl->n_images; i++)
		halve(&tl->images[i]);
	halve(&tl->rss_tree);
	for (size_t i = 0; i < tl->n_rss_images; i++)
		halve(&tl->rss_images[i]);
	halve_sums(tl->allocated, tl->n_buckets);
	tl->n_buckets = (tl->n_buckets - 1) / 2 + 1;
}

int mt_timeline_at(struct mt_timeline *tl, uint64_t time_ns)
{
	uint64_t rel;
	size_t b;

	if (!tl->start_ns) /* no start recorded: the first event's time */
		tl->start_ns = time_ns;
	rel = time_ns > tl->start_ns ? time_ns - tl->start_ns : 0;
	if (rel < tl->last_ns)
		rel = tl->last_ns;
	tl->last_ns = rel;
	/* Most events fall in the current bucket: no division for them. */
	if (rel < (uint64_t)tl->n_buckets * tl->width_ns)
		return 0;
	while (rel / tl->width_ns >= MT_TIMELINE_MAX_BUCKETS)
		merge(tl);
	b = (size_t)(rel / tl->width_ns);
	while (tl->n_buckets <= b)
		if (push(&tl->allocated, &tl->n_buckets, &tl->cap_allocated, 0))
			return -ENOMEM;
	return 0;
}

/* Room in *v (of *n series) for series i, which is not there yet. */
static __attribute__((cold, noinline)) int series_grow(struct mt_timeline_series **v, size_t *n,
						       size_t i)
{
	size_t k = i + 1 > 2 * *n ? i + 1 : 2 * *n;
	struct mt_timeline_series *nv;

	nv = realloc(*v, k * sizeof(*nv));
	if (!nv)
		return -ENOMEM;
	memset(nv + *n, 0, (k - *n) * sizeof(*nv));
	*v = nv;
	*n = k;
	return 0;
}

/* Room in *v (of *n series) for series i. */
static inline int series_room(struct mt_timeline_series **v, size_t *n, size_t i)
{
	return i < *n ? 0 : series_grow(v, n, i);
}

int mt_timeline_live(struct mt_timeline *tl, const struct mt_live_change *c)
{
	size_t b = tl->n_buckets - 1;

	if (series_room(&tl->images, &tl->n_images, c->image))
		return -ENOMEM;
	if (touch(&tl->images[c->image], b, c->image_live) || touch(&tl->tree, b, c->tree_live))
		return -ENOMEM;
	if (c->new_peak) {
		tl->peak_bytes = c->tree_live;
		tl->peak_ns = tl->last_ns;
	}
	return 0;
}

int mt_timeline_rss(struct mt_timeline *tl, size_t image, uint64_t image_rss, uint64_t tree_rss)
{
	size_t b = tl->n_buckets - 1;

	if (series_room(&tl->rss_images, &tl->n_rss_images, image))
		return -ENOMEM;
	if (touch(&tl->rss_images[image], b, image_rss) || touch(&tl->rss_tree, b, tree_rss))
		return -ENOMEM;
	return 0;
}

void mt_timeline_allocated(struct mt_timeline *tl, uint64_t bytes)
{
	tl->allocated[tl->n_buckets - 1] += bytes;
}

int mt_timeline_end(struct mt_timeline *tl)
{
	size_t last = tl->n_buckets - 1;

	for (size_t i = 0; i < tl->n_images; i++)
		if (tl->images[i].n && tl->images[i].now && extend(&tl->images[i], last))
			return -ENOMEM;
	for (size_t i = 0; i < tl->n_rss_images; i++)
		if (tl->rss_images[i].n && tl->rss_images[i].now &&
		    extend(&tl->rss_images[i], last))
			return -ENOMEM;
	if (tl->rss_tree.n && tl->rss_tree.now && extend(&tl->rss_tree, last))
		return -ENOMEM;
	return extend(&tl->tree, last);
}

uint64_t mt_timeline_value(const struct mt_timeline_series *s, size_t b)
{
	return b >= s->first && b < s->first + s->n ? s->max[b - s->first] : 0;
}

struct mt_timeline *mt_timeline_new(uint64_t start_ns)
{
	struct mt_timeline *tl = calloc(1, sizeof(*tl));

	if (!tl)
		return NULL;
	tl->start_ns = start_ns;
	tl->width_ns = MT_TIMELINE_FIRST_WIDTH_NS;
	/* Bucket 0 exists from the start, and the tree's line starts there, at 0 bytes. */
	if (push(&tl->allocated, &tl->n_buckets, &tl->cap_allocated, 0) || extend(&tl->tree, 0)) {
		mt_timeline_free(tl);
		return NULL;
	}
	return tl;
}

void mt_timeline_free(struct mt_timeline *tl)
{
	if (!tl)
		return;
	for (size_t i = 0; i < tl->n_images; i++)
		free(tl->images[i].max);
	free(tl->images);
	for (size_t i = 0; i < tl->n_rss_images; i++)
		free(tl->rss_images[i].max);
	free(tl->rss_images);
	free(tl->rss_tree.max);
	free(tl->tree.max);
	free(tl->allocated);
	free(tl);
}
