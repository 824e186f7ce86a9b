// SPDX-License-Identifier: GPL-2.0
/*
 * Two runs compared (diff.h). Each level's rows of both reports are gathered into one array with
 * their keys, sorted by key, and rows of equal keys are merged: the base's values from its rows,
 * the new run's from its own, and the row is in both runs when both gave one.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/diff.h"
#include "aggregate/sites.h"
#include "base/grow.h"
#include "base/printable.h"

static const char *const metric_names[MT_DIFF_METRICS] = {
    [MT_DIFF_ALLOCATIONS] = "allocations",
    [MT_DIFF_BYTES] = "bytes",
    [MT_DIFF_PEAK] = "peak",
    [MT_DIFF_LIVE] = "live",
    [MT_DIFF_TEMPORARY] = "temporary",
};

const char *mt_diff_metric_name(enum mt_diff_metric m)
{
	return m < MT_DIFF_METRICS ? metric_names[m] : "?";
}

int mt_diff_metric_of(const char *name)
{
	for (int m = 0; m < MT_DIFF_METRICS; m++)
		if (!strcmp(name, metric_names[m]))
			return m;
	return -1;
}

double mt_diff_percent(uint64_t base, uint64_t new)
{
	if (!base)
		return new ? INFINITY : 0;
	return ((double)new - (double)base) * 100.0 / (double)base;
}

/* The rows of one level from both runs, before they are merged. */
struct gather {
	struct mt_diff_row *rows;
	size_t n, cap;
	int err;
};

/* A row of one side (in: MT_DIFF_IN_BASE or MT_DIFF_IN_NEW), its key taken over. */
static void gather_add(struct gather *g, char *key, enum mt_diff_in in,
		       const uint64_t v[MT_DIFF_METRICS])
{
	struct mt_diff_row *r;

	if (!key || g->err) {
		free(key);
		g->err = -ENOMEM;
		return;
	}
	if (MT_GROW(g->rows, g->cap, g->n + 1, 64)) {
		free(key);
		g->err = -ENOMEM;
		return;
	}
	r = &g->rows[g->n++];
	memset(r, 0, sizeof(*r));
	r->key = key;
	r->in = in;
	memcpy(in == MT_DIFF_IN_BASE ? r->base : r->new, v, sizeof(r->base));
}

static int by_key(const void *a, const void *b)
{
	return strcmp(((const struct mt_diff_row *)a)->key, ((const struct mt_diff_row *)b)->key);
}

/* Sort and merge the gathered rows into lv. */
static int merge(struct gather *g, struct mt_diff_level *lv)
{
	size_t out = 0;

	if (g->err)
		return g->err;
	/* A level with no row (a run without sites) has no array: qsort's may not be NULL. */
	if (g->n)
		qsort(g->rows, g->n, sizeof(*g->rows), by_key);
	for (size_t i = 0; i < g->n; i++) {
		struct mt_diff_row *r = &g->rows[i], *o = out ? &g->rows[out - 1] : NULL;

		if (!o || strcmp(o->key, r->key)) {
			g->rows[out++] = *r;
			continue;
		}
		for (int m = 0; m < MT_DIFF_METRICS; m++) {
			o->base[m] += r->base[m];
			o->new[m] += r->new[m];
		}
		if (o->in != r->in)
			o->in = MT_DIFF_IN_BOTH;
		free(r->key);
	}
	lv->rows = g->rows;
	lv->n = out;
	g->rows = NULL;
	return 0;
}

static void add_tree(struct gather *g, const struct mt_report *rep, enum mt_diff_in in)
{
	const struct mt_report_totals *t = &rep->totals;
	uint64_t v[MT_DIFF_METRICS] = {
	    [MT_DIFF_ALLOCATIONS] = t->allocations + t->reallocs,
	    [MT_DIFF_BYTES] = t->bytes_allocated,
	    [MT_DIFF_PEAK] = t->peak_bytes,
	    [MT_DIFF_LIVE] = t->live_bytes,
	    [MT_DIFF_TEMPORARY] = t->temporary,
	};

	gather_add(g, strdup("tree"), in, v);
}

/* "POSITION PROGRAM", with "(exec N)" for an image its process exec'd into. */
static char *image_key(const struct mt_image *g)
{
	const char *pos = g->position[0] ? g->position : "?";
	char *key = NULL;
	int n = g->exec_seq ? asprintf(&key, "%s (exec %u) %s", pos, g->exec_seq, g->exe)
			    : asprintf(&key, "%s %s", pos, g->exe);

	return n < 0 ? NULL : key;
}

static void add_images(struct gather *g, const struct mt_report *rep, enum mt_diff_in in)
{
	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_image *im = &rep->images[i];
		uint64_t v[MT_DIFF_METRICS] = {
		    [MT_DIFF_ALLOCATIONS] = im->c.allocations + im->c.reallocs,
		    [MT_DIFF_BYTES] = im->c.bytes_allocated,
		    [MT_DIFF_PEAK] = im->c.peak_bytes,
		    [MT_DIFF_LIVE] = im->c.live_bytes + im->released.bytes,
		    [MT_DIFF_TEMPORARY] = im->c.temporary,
		};

		gather_add(g, image_key(im), in, v);
	}
}

static void add_files(struct gather *g, const struct mt_report *rep, enum mt_diff_in in)
{
	for (size_t i = 0; i < rep->n_files; i++) {
		const struct mt_report_totals *t = &rep->files[i].t;
		uint64_t v[MT_DIFF_METRICS] = {
		    [MT_DIFF_ALLOCATIONS] = t->allocations + t->reallocs,
		    [MT_DIFF_BYTES] = t->bytes_allocated,
		};

		gather_add(g, strdup(rep->files[i].path), in, v);
	}
}

static void add_families(struct gather *g, const struct mt_report *rep, enum mt_diff_in in)
{
	for (unsigned int f = 0; f <= MT_FAM_MAX; f++) {
		const struct mt_report_totals *t = &rep->families[f];
		uint64_t v[MT_DIFF_METRICS] = {
		    [MT_DIFF_ALLOCATIONS] = t->allocations + t->reallocs,
		    [MT_DIFF_BYTES] = t->bytes_allocated,
		};

		if (v[MT_DIFF_ALLOCATIONS] || t->frees || t->unmatched_frees)
			gather_add(g, strdup(mt_report_family_name(f)), in, v);
	}
}

/* A frame as a site's key names it (mt_frame_name), an address when not symbolised. */
static void put_frame(FILE *f, const struct mt_site *s, uint32_t k)
{
	char buf[MT_PRINTABLE_MAX];

	if (s->sym)
		fputs(mt_frame_name(buf, sizeof(buf), &s->sym[k]), f);
	else
		fprintf(f, "0x%llx", (unsigned long long)s->frames[k]);
}

/* The site's stack, outermost frame first, ';' between frames (the folded stacks' order). */
static char *site_key(const struct mt_site *s)
{
	char *key = NULL;
	size_t len;
	FILE *f = open_memstream(&key, &len);

	if (!f)
		return NULL;
	if (!s->n_frames)
		fputs("[no stack record]", f);
	for (uint32_t k = s->n_frames; k-- > 0;) {
		put_frame(f, s, k);
		fputs(k ? ";" : "", f);
	}
	if (fclose(f)) {
		free(key);
		return NULL;
	}
	return key;
}

static void add_sites(struct gather *g, const struct mt_report *rep, enum mt_diff_in in)
{
	for (size_t i = 0; i < mt_sites_count(rep->sites); i++) {
		const struct mt_site *s = mt_sites_get(rep->sites, i);
		uint64_t v[MT_DIFF_METRICS] = {
		    [MT_DIFF_ALLOCATIONS] = s->allocations, [MT_DIFF_BYTES] = s->bytes,
		    [MT_DIFF_PEAK] = s->peak_bytes,	    [MT_DIFF_LIVE] = s->live_bytes,
		    [MT_DIFF_TEMPORARY] = s->temporary,
		};

		gather_add(g, site_key(s), in, v);
	}
}

typedef void (*add_level_fn)(struct gather *g, const struct mt_report *rep, enum mt_diff_in in);

static const struct {
	const char *name;
	unsigned int metrics;
	add_level_fn add;
} levels[MT_DIFF_LEVELS] = {
    [MT_DIFF_TREE] = {"tree", MT_DIFF_ALL, add_tree},
    [MT_DIFF_IMAGES] = {"images", MT_DIFF_ALL, add_images},
    [MT_DIFF_FILES] = {"files", MT_DIFF_CALLS_ONLY, add_files},
    [MT_DIFF_FAMILIES] = {"families", MT_DIFF_CALLS_ONLY, add_families},
    [MT_DIFF_SITES] = {"sites", MT_DIFF_ALL, add_sites},
};

int mt_diff_build(const struct mt_report *base, const struct mt_report *new, struct mt_diff **out)
{
	struct mt_diff *d = calloc(1, sizeof(*d));
	int ret = d ? 0 : -ENOMEM;

	for (int l = 0; !ret && l < MT_DIFF_LEVELS; l++) {
		struct gather g = {0};

		d->level[l].name = levels[l].name;
		d->level[l].metrics = levels[l].metrics;
		levels[l].add(&g, base, MT_DIFF_IN_BASE);
		levels[l].add(&g, new, MT_DIFF_IN_NEW);
		ret = merge(&g, &d->level[l]);
		for (size_t i = 0; ret && i < g.n; i++)
			free(g.rows[i].key);
		free(g.rows);
	}
	if (ret) {
		mt_diff_free(d);
		return ret;
	}
	*out = d;
	return 0;
}

void mt_diff_free(struct mt_diff *d)
{
	if (!d)
		return;
	for (int l = 0; l < MT_DIFF_LEVELS; l++) {
		for (size_t i = 0; i < d->level[l].n; i++)
			free(d->level[l].rows[i].key);
		free(d->level[l].rows);
	}
	free(d);
}
