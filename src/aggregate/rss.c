// SPDX-License-Identifier: GPL-2.0
/* RSS per image and for the tree, from the RSS sample records (src/aggregate/rss.h). */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/rss.h"

struct mt_rss *mt_rss_new(void)
{
	return calloc(1, sizeof(struct mt_rss));
}

void mt_rss_free(struct mt_rss *r)
{
	if (!r)
		return;
	free(r->images);
	free(r);
}

static int room(struct mt_rss *r, size_t image)
{
	size_t n;
	struct mt_rss_image *v;

	if (image < r->n_images)
		return 0;
	n = image + 1 > 2 * r->n_images ? image + 1 : 2 * r->n_images;
	v = realloc(r->images, n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	memset(v + r->n_images, 0, (n - r->n_images) * sizeof(*v));
	r->images = v;
	r->n_images = n;
	return 0;
}

uint64_t mt_rss_sum(const struct mt_artifact_rss *s)
{
	/* Hostile sizes stop at what uint64_t holds instead of wrapping. */
	uint64_t sum = s->anon + s->file < s->anon ? UINT64_MAX : s->anon + s->file;

	return sum + s->shmem < sum ? UINT64_MAX : sum + s->shmem;
}

int mt_rss_sample(struct mt_rss *r, size_t image, const struct mt_artifact_rss *s, uint64_t rel_ns,
		  bool own_memory)
{
	struct mt_rss_image *g;
	uint64_t sum;

	if (room(r, image))
		return -ENOMEM;
	g = &r->images[image];
	sum = mt_rss_sum(s);
	r->samples++;
	g->samples++;
	/* tree_now holds g->now unless a hostile sum saturated it: never below 0. */
	r->tree_now -= g->now < r->tree_now ? g->now : r->tree_now;
	g->now = own_memory ? sum : 0;
	r->tree_now = r->tree_now + g->now < g->now ? UINT64_MAX : r->tree_now + g->now;
	if (sum > g->peak || g->samples == 1) {
		g->peak = sum;
		g->peak_ns = rel_ns;
		g->peak_anon = s->anon;
		g->peak_file = s->file;
		g->peak_shmem = s->shmem;
	}
	if (s->hwm > g->hwm)
		g->hwm = s->hwm;
	if (s->why == MT_RSS_EXIT) {
		g->has_exit = true;
		g->exit_anon = s->anon;
		g->exit_file = s->file;
		g->exit_shmem = s->shmem;
	}
	if (r->tree_now > r->tree_peak) {
		r->tree_peak = r->tree_now;
		r->tree_peak_ns = rel_ns;
	}
	return 0;
}

void mt_rss_ended(struct mt_rss *r, size_t image)
{
	if (image >= r->n_images)
		return;
	/* tree_now holds g->now unless it saturated: never go below 0. */
	r->tree_now -= r->images[image].now < r->tree_now ? r->images[image].now : r->tree_now;
	r->images[image].now = 0;
}

const struct mt_rss_image *mt_rss_of(const struct mt_rss *r, size_t image)
{
	return image < r->n_images && r->images[image].samples ? &r->images[image] : NULL;
}

uint64_t mt_rss_image_peak(const struct mt_rss_image *g)
{
	return g->hwm > g->peak ? g->hwm : g->peak;
}
