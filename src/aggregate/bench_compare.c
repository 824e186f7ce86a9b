// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack bench --compare (bench_compare.h). The base document is read with json-c, strictly:
 * a "benchmarks" array of objects with a string "uri" and "name" and the metrics as
 * non-negative integers. A benchmark is matched by URI, or by name when both URIs are empty.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "aggregate/bench_compare.h"
#include "base/grow.h"

static const char *const metric_names[MT_BM_N] = {
    [MT_BM_ALLOCATIONS] = "allocations",    [MT_BM_BYTES_ALLOCATED] = "bytes_allocated",
    [MT_BM_AVERAGE] = "average_allocation", [MT_BM_PEAK] = "peak_bytes",
    [MT_BM_LIVE_AT_END] = "live_at_end",
};

const char *mt_bench_metric_name(enum mt_bench_metric m)
{
	return (unsigned int)m < MT_BM_N ? metric_names[m] : NULL;
}

int mt_bench_metric_parse(const char *name)
{
	for (int i = 0; i < MT_BM_N; i++)
		if (!strcmp(name, metric_names[i]))
			return i;
	return -EINVAL;
}

uint64_t mt_bench_metric_of(const struct mt_bench_window *w, enum mt_bench_metric m)
{
	switch (m) {
	case MT_BM_ALLOCATIONS:
		return w->allocations;
	case MT_BM_BYTES_ALLOCATED:
		return w->bytes_allocated;
	case MT_BM_AVERAGE:
		return mt_bench_average(w);
	case MT_BM_PEAK:
		return w->peak_bytes;
	case MT_BM_LIVE_AT_END:
		return w->live_at_end;
	default:
		return 0;
	}
}

double mt_bench_growth(const struct mt_bench_row *r, enum mt_bench_metric m)
{
	if (!r->base[m])
		return r->now[m] ? INFINITY : 0;
	return ((double)r->now[m] - (double)r->base[m]) * 100.0 / (double)r->base[m];
}

struct builder {
	struct mt_bench_cmp *c;
	size_t cap, strs_cap;
	char *err;
	size_t errlen;
};

static const char *keep(struct builder *b, const char *s)
{
	char *copy = strdup(s);

	if (!copy || MT_GROW(b->c->strs, b->strs_cap, b->c->n_strs + 1, 16)) {
		free(copy);
		return NULL;
	}
	b->c->strs[b->c->n_strs++] = copy;
	return copy;
}

static struct mt_bench_row *find(struct mt_bench_cmp *c, const char *uri, const char *name)
{
	for (size_t i = 0; i < c->n; i++) {
		struct mt_bench_row *r = &c->rows[i];

		if (uri[0] ? !strcmp(r->uri, uri) : !r->uri[0] && !strcmp(r->name, name))
			return r;
	}
	return NULL;
}

static struct mt_bench_row *add_row(struct builder *b, const char *uri, const char *name)
{
	struct mt_bench_row *r;

	if (MT_GROW(b->c->rows, b->cap, b->c->n + 1, 16))
		return NULL;
	r = &b->c->rows[b->c->n];
	memset(r, 0, sizeof(*r));
	r->uri = keep(b, uri);
	r->name = keep(b, name);
	if (!r->uri || !r->name)
		return NULL;
	b->c->n++;
	return r;
}

static int bad(struct builder *b, size_t i, const char *what)
{
	snprintf(b->err, b->errlen,
		 "the base is no memtrack bench --json document: benchmark %zu %s", i + 1, what);
	return -EINVAL;
}

static int base_row(struct builder *b, json_object *o, size_t i)
{
	json_object *uri, *name, *v;
	struct mt_bench_row *r;
	int64_t x;

	if (!json_object_is_type(o, json_type_object) ||
	    !json_object_object_get_ex(o, "uri", &uri) ||
	    !json_object_is_type(uri, json_type_string) ||
	    !json_object_object_get_ex(o, "name", &name) ||
	    !json_object_is_type(name, json_type_string))
		return bad(b, i, "has no string \"uri\" and \"name\"");
	r = find(b->c, json_object_get_string(uri), json_object_get_string(name));
	if (r && r->in_base)
		return bad(b, i, "is there twice");
	if (!r)
		r = add_row(b, json_object_get_string(uri), json_object_get_string(name));
	if (!r)
		return -ENOMEM;
	r->in_base = true;
	for (int m = 0; m < MT_BM_N; m++) {
		if (!json_object_object_get_ex(o, metric_names[m], &v) ||
		    !json_object_is_type(v, json_type_int) || (x = json_object_get_int64(v)) < 0) {
			snprintf(b->err, b->errlen,
				 "the base is no memtrack bench --json document: benchmark %zu has "
				 "no count \"%s\"",
				 i + 1, metric_names[m]);
			return -EINVAL;
		}
		r->base[m] = (uint64_t)x;
	}
	return 0;
}

static int read_base(struct builder *b, const char *text, size_t len)
{
	struct json_tokener *tok = json_tokener_new();
	json_object *root = NULL, *list;
	int err = 0;

	if (!tok)
		return -ENOMEM;
	json_tokener_set_flags(tok, JSON_TOKENER_STRICT);
	if (len < INT32_MAX)
		root = json_tokener_parse_ex(tok, text, (int)len);
	if (!root || json_tokener_get_parse_end(tok) != len ||
	    !json_object_object_get_ex(root, "benchmarks", &list) ||
	    !json_object_is_type(list, json_type_array)) {
		snprintf(b->err, b->errlen,
			 "the base is no memtrack bench --json document (no \"benchmarks\" list)");
		err = -EINVAL;
	}
	for (size_t i = 0; !err && i < json_object_array_length(list); i++)
		err = base_row(b, json_object_array_get_idx(list, i), i);
	json_object_put(root);
	json_tokener_free(tok);
	return err;
}

static void judge(struct mt_bench_cmp *c, const struct mt_bench_limits *limits)
{
	for (size_t i = 0; i < c->n; i++) {
		struct mt_bench_row *r = &c->rows[i];
		bool any = false;

		if (!r->in_base || !r->in_new)
			continue;
		for (int k = 0; k < limits->n; k++) {
			enum mt_bench_metric m = limits->metric[k];

			if (mt_bench_growth(r, m) > limits->max_percent[k]) {
				r->exceeded[m] = true;
				any = true;
			}
		}
		c->n_exceeded += any;
	}
}

int mt_bench_compare(const struct mt_bench_split *split, const char *text, size_t len,
		     const struct mt_bench_limits *limits, struct mt_bench_cmp **out, char *err,
		     size_t errlen)
{
	struct builder b = {.c = calloc(1, sizeof(*b.c)), .err = err, .errlen = errlen};
	int ret = b.c ? 0 : -ENOMEM;

	/* The new run's rows first, in its order. */
	for (size_t i = 0; !ret && i < split->n; i++) {
		const struct mt_bench_window *w = &split->w[i];
		struct mt_bench_row *r = find(b.c, w->uri, w->name);

		if (!r)
			r = add_row(&b, w->uri, w->name);
		if (!r) {
			ret = -ENOMEM;
			break;
		}
		r->in_new = true;
		for (int m = 0; m < MT_BM_N; m++)
			r->now[m] = mt_bench_metric_of(w, (enum mt_bench_metric)m);
	}
	if (!ret)
		ret = read_base(&b, text, len);
	if (ret == -ENOMEM)
		snprintf(err, errlen, "out of memory");
	if (ret) {
		mt_bench_cmp_free(b.c);
		return ret;
	}
	judge(b.c, limits);
	*out = b.c;
	return 0;
}

void mt_bench_cmp_free(struct mt_bench_cmp *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n_strs; i++)
		free(c->strs[i]);
	free(c->strs);
	free(c->rows);
	free(c);
}
