// SPDX-License-Identifier: GPL-2.0
/*
 * Callers and callees of a function over the allocation sites (callers.h): one row per site that
 * passes through the function, named by its neighbour frame, then sorted by name and merged.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/callers.h"
#include "aggregate/sites.h"
#include "base/printable.h"

static void add_site(struct mt_call_row *r, const struct mt_site *s)
{
	r->sites++;
	r->allocations += s->allocations;
	r->bytes += s->bytes;
	r->live_bytes += s->live_bytes;
	r->peak_bytes += s->peak_bytes;
	r->temporary += s->temporary;
}

/* The outermost frame of s named function, or -1. */
static int64_t outermost(const struct mt_site *s, const char *function)
{
	char buf[MT_PRINTABLE_MAX];

	for (uint32_t k = s->n_frames; s->sym && k-- > 0;)
		if (!strcmp(mt_frame_name(buf, sizeof(buf), &s->sym[k]), function))
			return k;
	return -1;
}

/* The neighbour of frame k that the row is for, to free. */
static char *neighbour(const struct mt_site *s, uint32_t k, bool callers)
{
	char buf[MT_PRINTABLE_MAX];

	if (callers)
		return strdup(k + 1 < s->n_frames ? mt_frame_name(buf, sizeof(buf), &s->sym[k + 1])
						  : "[root]");
	return strdup(k ? mt_frame_name(buf, sizeof(buf), &s->sym[k - 1]) : "[self]");
}

static int by_name(const void *a, const void *b)
{
	return strcmp(((const struct mt_call_row *)a)->name, ((const struct mt_call_row *)b)->name);
}

/* Merge rows of one name, in place; the merged-away names are freed. */
static size_t merge(struct mt_call_row *rows, size_t n)
{
	size_t out = 0;

	qsort(rows, n, sizeof(*rows), by_name);
	for (size_t i = 0; i < n; i++) {
		struct mt_call_row *o = out ? &rows[out - 1] : NULL;

		if (!o || strcmp(o->name, rows[i].name)) {
			rows[out++] = rows[i];
			continue;
		}
		o->sites += rows[i].sites;
		o->allocations += rows[i].allocations;
		o->bytes += rows[i].bytes;
		o->live_bytes += rows[i].live_bytes;
		o->peak_bytes += rows[i].peak_bytes;
		o->temporary += rows[i].temporary;
		free(rows[i].name);
	}
	return out;
}

int mt_calls_build(const struct mt_report *rep, const char *function, bool callers,
		   struct mt_calls **out)
{
	size_t n_sites = mt_sites_count(rep->sites);
	struct mt_calls *c = calloc(1, sizeof(*c));

	if (!c || !(c->total.name = strdup(function ? function : "[allocators]")) ||
	    !(c->rows = calloc(n_sites ? n_sites : 1, sizeof(*c->rows)))) {
		mt_calls_free(c);
		return -ENOMEM;
	}
	c->callers = callers;
	for (size_t i = 0; i < n_sites; i++) {
		const struct mt_site *s = mt_sites_get(rep->sites, i);
		int64_t k = function ? outermost(s, function) : s->sym && s->n_frames ? 0 : -1;
		struct mt_call_row *r;

		if (k < 0)
			continue;
		r = &c->rows[c->n];
		r->name = neighbour(s, (uint32_t)k, callers);
		if (!r->name) {
			mt_calls_free(c);
			return -ENOMEM;
		}
		c->n++;
		add_site(r, s);
		add_site(&c->total, s);
	}
	c->n = merge(c->rows, c->n);
	*out = c;
	return 0;
}

void mt_calls_free(struct mt_calls *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++)
		free(c->rows[i].name);
	free(c->rows);
	free(c->total.name);
	free(c);
}
