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
static struct mt_diff_row *gather_add(struct gather *g, char *key, enum mt_diff_in in,
				      const uint64_t v[MT_DIFF_METRICS])
{
	struct mt_diff_row *r;

	if (!key || g->err || MT_GROW(g->rows, g->cap, g->n + 1, 64)) {
		free(key);
		g->err = -ENOMEM;
		return NULL;
	}
	r = &g->rows[g->n++];
	memset(r, 0, sizeof(*r));
	r->key = key;
	r->in = in;
	memcpy(in == MT_DIFF_IN_BASE ? r->base : r->new, v, sizeof(r->base));
	return r;
}

static void row_free(struct mt_diff_row *r)
{
	free(r->key);
	free(r->exe[0]);
	free(r->exe[1]);
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
		for (int k = 0; k < 2; k++)
			if (!o->exe[k]) {
				o->exe[k] = r->exe[k];
				r->exe[k] = NULL;
			}
		row_free(r);
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

/* ---- process images, paired by program ------------------------------------------------ */

static const char *program_name(const struct mt_image *g)
{
	const char *base = strrchr(g->exe, '/');

	return base ? base + 1 : g->exe[0] ? g->exe : "?";
}

/* The arguments of an image, where the artifact has them: the command's, of its first image. */
static bool is_command(const struct mt_image *g)
{
	return !strcmp(g->position, "0") && !g->exec_seq;
}

static bool same_arguments(const struct mt_report *a, const struct mt_image *ga,
			   const struct mt_report *b, const struct mt_image *gb)
{
	if (!is_command(ga) || !is_command(gb) || a->argc != b->argc)
		return false;
	for (int i = 1; i < a->argc; i++)
		if (strcmp(a->argv[i], b->argv[i]))
			return false;
	return true;
}

static bool same_place(const struct mt_image *ga, const struct mt_image *gb)
{
	return !strcmp(ga->position, gb->position) && ga->exec_seq == gb->exec_seq;
}

/*
 * Both runs' images: each run's in order of program name (then of appearance), how many of its
 * images run each one's program, and which image of the other run each one is paired with
 * (SIZE_MAX: none).
 */
struct pairing {
	const struct mt_report *rep[2];
	size_t *by_name[2];
	size_t *named[2];
	size_t *other[2];
};

static int by_program(const void *a, const void *b, void *arg)
{
	const struct mt_report *rep = arg;
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	int c = strcmp(program_name(&rep->images[x]), program_name(&rep->images[y]));

	return c ? c : x < y ? -1 : x > y;
}

typedef bool (*pair_test)(const struct mt_report *a, const struct mt_image *ga,
			  const struct mt_report *b, const struct mt_image *gb);

static bool place_test(const struct mt_report *a, const struct mt_image *ga,
		       const struct mt_report *b, const struct mt_image *gb)
{
	(void)a;
	(void)b;
	return same_place(ga, gb);
}

static bool any_test(const struct mt_report *a, const struct mt_image *ga,
		     const struct mt_report *b, const struct mt_image *gb)
{
	(void)a;
	(void)ga;
	(void)b;
	(void)gb;
	return true;
}

/*
 * Within one program's images, base's by_name[i0, i1) and new's by_name[k0, k1): pair each of
 * the base's not paired yet with the first of new's that test accepts.
 */
static void pair_by(struct pairing *p, pair_test test, size_t i0, size_t i1, size_t k0, size_t k1)
{
	const struct mt_report *a = p->rep[0], *b = p->rep[1];

	for (size_t i = i0; i < i1; i++) {
		size_t x = p->by_name[0][i];

		for (size_t k = k0; k < k1 && p->other[0][x] == SIZE_MAX; k++) {
			size_t y = p->by_name[1][k];

			if (p->other[1][y] != SIZE_MAX || !test(a, &a->images[x], b, &b->images[y]))
				continue;
			p->other[0][x] = y;
			p->other[1][y] = x;
		}
	}
}

/* The end of side's images of one program, from by_name[at]; each of them learns how many. */
static size_t group_end(const struct pairing *p, int side, size_t at)
{
	const struct mt_report *r = p->rep[side];
	const char *name = program_name(&r->images[p->by_name[side][at]]);
	size_t end = at;

	while (end < r->n_images && !strcmp(program_name(&r->images[p->by_name[side][end]]), name))
		end++;
	for (size_t k = at; k < end; k++)
		p->named[side][p->by_name[side][k]] = end - at;
	return end;
}

/* Walk both runs' images by program name, pairing those of one name. */
static void pair_all(struct pairing *p)
{
	size_t i = 0, k = 0;

	while (i < p->rep[0]->n_images || k < p->rep[1]->n_images) {
		int c = i == p->rep[0]->n_images ? 1
			: k == p->rep[1]->n_images
			    ? -1
			    : strcmp(program_name(&p->rep[0]->images[p->by_name[0][i]]),
				     program_name(&p->rep[1]->images[p->by_name[1][k]]));
		size_t i1 = c <= 0 ? group_end(p, 0, i) : i, k1 = c >= 0 ? group_end(p, 1, k) : k;

		pair_by(p, same_arguments, i, i1, k, k1);
		pair_by(p, place_test, i, i1, k, k1);
		pair_by(p, any_test, i, i1, k, k1);
		i = i1;
		k = k1;
	}
}

static int pairing_init(struct pairing *p, int side)
{
	const struct mt_report *r = p->rep[side];
	size_t n = r->n_images + 1;

	p->by_name[side] = malloc(n * sizeof(size_t));
	p->named[side] = malloc(n * sizeof(size_t));
	p->other[side] = malloc(n * sizeof(size_t));
	if (!p->by_name[side] || !p->named[side] || !p->other[side])
		return -ENOMEM;
	for (size_t i = 0; i < r->n_images; i++) {
		p->by_name[side][i] = i;
		p->other[side][i] = SIZE_MAX;
	}
	if (r->n_images)
		qsort_r(p->by_name[side], r->n_images, sizeof(size_t), by_program, (void *)r);
	return 0;
}

/*
 * An image's row key: its program's name, and where several images of either run run that
 * program, the place of the image (the base's, of a pair): "cc1 at 0.2", "sh at 0 (exec 1)".
 */
static char *image_key(const struct pairing *p, int side, size_t i)
{
	const struct mt_image *g = &p->rep[side]->images[i];
	size_t k = p->other[side][i];
	char *key = NULL;
	int n;

	if (side == 1 && k != SIZE_MAX)
		g = &p->rep[0]->images[k];
	if (p->named[side][i] < 2 && (k == SIZE_MAX || p->named[!side][k] < 2))
		return strdup(program_name(g));
	n = g->exec_seq
		? asprintf(&key, "%s at %s (exec %u)", program_name(g),
			   g->position[0] ? g->position : "?", g->exec_seq)
		: asprintf(&key, "%s at %s", program_name(g), g->position[0] ? g->position : "?");
	return n < 0 ? NULL : key;
}

static void add_image(struct gather *g, const struct pairing *p, int side, size_t i)
{
	const struct mt_image *im = &p->rep[side]->images[i];
	uint64_t v[MT_DIFF_METRICS] = {
	    [MT_DIFF_ALLOCATIONS] = im->c.allocations + im->c.reallocs,
	    [MT_DIFF_BYTES] = im->c.bytes_allocated,
	    [MT_DIFF_PEAK] = im->c.peak_bytes,
	    [MT_DIFF_LIVE] = im->c.live_bytes + im->released.bytes,
	    [MT_DIFF_TEMPORARY] = im->c.temporary,
	};
	struct mt_diff_row *r =
	    gather_add(g, image_key(p, side, i), side ? MT_DIFF_IN_NEW : MT_DIFF_IN_BASE, v);

	if (r && !(r->exe[side] = strdup(im->exe)))
		g->err = -ENOMEM;
}

/*
 * Images are paired by program name (the executable's last component, so that two builds of a
 * program at two paths match), then among the images of one name: the command's own when its
 * arguments are the same, those at the same place in the tree, then the rest in their order.
 */
static void add_images(struct gather *g, const struct mt_report *base, const struct mt_report *new)
{
	struct pairing p = {.rep = {base, new}};

	if (pairing_init(&p, 0) || pairing_init(&p, 1)) {
		g->err = -ENOMEM;
		goto out;
	}
	pair_all(&p);
	for (int side = 0; side < 2; side++)
		for (size_t i = 0; i < p.rep[side]->n_images; i++)
			add_image(g, &p, side, i);
out:
	for (int side = 0; side < 2; side++) {
		free(p.by_name[side]);
		free(p.named[side]);
		free(p.other[side]);
	}
}

/* ---- files, matched by name ------------------------------------------------------------ */

static const char *file_name(const char *path)
{
	const char *base = strrchr(path, '/');

	return base && base[1] ? base + 1 : path;
}

static int by_name(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

/* The names of rep's files, sorted (to free), NULL: -ENOMEM. */
static const char **file_names(const struct mt_report *rep)
{
	const char **v = malloc((rep->n_files + 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < rep->n_files; i++)
		v[i] = file_name(rep->files[i].path);
	if (rep->n_files)
		qsort(v, rep->n_files, sizeof(*v), by_name);
	return v;
}

/* How many of the n sorted names are name. */
static size_t count_name(const char **names, size_t n, const char *name)
{
	size_t lo = 0, hi = n, k;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (strcmp(names[mid], name) < 0)
			lo = mid + 1;
		else
			hi = mid;
	}
	for (k = lo; k < n && !strcmp(names[k], name); k++)
		;
	return k - lo;
}

/*
 * A file's key: its name (the path's last component, so that a program built at two paths,
 * and its libraries, match), or its path where either run has two files of that name.
 */
static void add_file(struct gather *g, const struct mt_report *rep, size_t i, int side,
		     const char **names[2], const struct mt_report *other)
{
	const struct mt_report_file *f = &rep->files[i];
	const char *name = file_name(f->path);
	bool by_name = count_name(names[side], rep->n_files, name) == 1 &&
		       count_name(names[!side], other->n_files, name) <= 1;
	uint64_t v[MT_DIFF_METRICS] = {
	    [MT_DIFF_ALLOCATIONS] = f->t.allocations + f->t.reallocs,
	    [MT_DIFF_BYTES] = f->t.bytes_allocated,
	};
	struct mt_diff_row *r = gather_add(g, strdup(by_name ? name : f->path),
					   side ? MT_DIFF_IN_NEW : MT_DIFF_IN_BASE, v);

	if (r && by_name && !(r->exe[side] = strdup(f->path)))
		g->err = -ENOMEM;
}

static void add_files(struct gather *g, const struct mt_report *base, const struct mt_report *new)
{
	const struct mt_report *rep[2] = {base, new};
	const char **names[2] = {file_names(base), file_names(new)};

	if (!names[0] || !names[1])
		g->err = -ENOMEM;
	for (int side = 0; !g->err && side < 2; side++)
		for (size_t i = 0; i < rep[side]->n_files; i++)
			add_file(g, rep[side], i, side, names, rep[!side]);
	free(names[0]);
	free(names[1]);
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
    [MT_DIFF_IMAGES] = {"images", MT_DIFF_ALL, NULL},	   /* add_images: both runs at once */
    [MT_DIFF_FILES] = {"files", MT_DIFF_CALLS_ONLY, NULL}, /* add_files: both runs at once */
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
		if (levels[l].add) {
			levels[l].add(&g, base, MT_DIFF_IN_BASE);
			levels[l].add(&g, new, MT_DIFF_IN_NEW);
		} else if (l == MT_DIFF_IMAGES) {
			add_images(&g, base, new);
		} else {
			add_files(&g, base, new);
		}
		ret = merge(&g, &d->level[l]);
		for (size_t i = 0; ret && i < g.n; i++)
			row_free(&g.rows[i]);
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
			row_free(&d->level[l].rows[i]);
		free(d->level[l].rows);
	}
	free(d);
}
