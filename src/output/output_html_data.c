// SPDX-License-Identifier: GPL-2.0
/*
 * The HTML report's data (output_html_int.h): one JSON document in a <script> element, which the
 * page's script draws from. "over_time": the heap over time (output_svg.c's lines, exactly),
 * with "rss", resident memory over time (its dashed paths), when the artifact has RSS samples;
 * "images": the process images, for the process selector; "flame": the flamegraph's names and
 * nodes, cut to what a page can draw (nodes too small to see under every weight are folded into
 * one "[smaller frames]" node per parent, so a run of hundreds of thousands of stacks gives a page
 * of a few thousand nodes); "cells": the weights of each node per image and per time bucket
 * (aggregate/cells.h), from which the script sums the flamegraph for the image and the time
 * range chosen; "leaks": the nodes' bytes definitely and indirectly lost per image (run --leaks).
 * The nodes carry no weights of their own: the sums are the script's, one way.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/output_html_int.h"
#include "base/printable.h"
#include "unwind/unwind_shorten.h"

/*
 * A node is drawn when it is at least 1/FLAME_GRAIN of the total under some weight (a quarter of
 * a pixel on a 1000-pixel page, zoomed out); the grain coarsens until at most FLAME_MAX_NODES are.
 */
#define FLAME_GRAIN	4000
#define FLAME_MAX_NODES 20000

void mt_html_jstr(FILE *out, const char *s)
{
	char *u = mt_utf8_dup(s);

	fputc('"', out);
	for (const unsigned char *p = (const unsigned char *)(u ? u : "?"); *p; p++) {
		if (*p == '"' || *p == '\\')
			fprintf(out, "\\%c", *p);
		else if (*p < 0x20 || *p == '<' || *p == '>' || *p == '&' || *p == 0x7f)
			fprintf(out, "\\u%04x", *p);
		else
			fputc(*p, out);
	}
	fputc('"', out);
	free(u);
}

static void put_u64s(FILE *out, const uint64_t *v, size_t n)
{
	fputc('[', out);
	for (size_t i = 0; i < n; i++)
		fprintf(out, "%s%" PRIu64, i ? "," : "", v[i]);
	fputc(']', out);
}

/* ---- the stacks of the page's tables (the largest blocks, the loss records) ------------- */

void mt_html_stack(const struct mt_report *rep, uint32_t stack_id, FILE *out)
{
	const struct mt_site *s = stack_id ? mt_sites_of(rep->sites, stack_id) : NULL;
	char buf[MT_PRINTABLE_MAX];

	if (!s || !s->sym) {
		fputs(stack_id ? "(no record of its stack)" : "(no stack: run with --stacks)", out);
		return;
	}
	fputs("<details><summary>", out);
	mt_html_function(out, mt_frame_name(buf, sizeof(buf), &s->sym[s->n_frames > 1 ? 1 : 0]));
	fputs("</summary><ol class=\"stack\">", out);
	for (uint32_t k = 0; k < s->n_frames; k++) {
		fputs("<li>", out);
		mt_html_function(out, mt_frame_name(buf, sizeof(buf), &s->sym[k]));
		if (s->sym[k].inlined)
			fputs(" (inlined)", out);
		if (s->sym[k].source) {
			fputs(" <span class=\"src\">at ", out);
			mt_output_xml_text(out, mt_printable(buf, sizeof(buf), s->sym[k].source));
			fprintf(out, ":%u</span>", s->sym[k].line);
		}
		fputs("</li>", out);
	}
	fputs("</ol></details>", out);
}

/* ---- the heap over time --------------------------------------------------------------------- */

static void put_label(FILE *out, const struct mt_image *g)
{
	char label[MT_PRINTABLE_MAX + 64];
	const char *base = strrchr(g->exe, '/');

	snprintf(label, sizeof(label), "pid %" PRIu32 " %s", g->pid,
		 base	   ? base + 1
		 : *g->exe ? g->exe
			   : "?");
	mt_html_jstr(out, label);
}

/* RSS over time (the SVG's dashed paths): "rss": the tree's and the drawn images' lines. */
static int put_rss_data(const struct mt_report *rep, FILE *out)
{
	const struct mt_timeline *tl = rep->timeline;
	size_t *img, hidden;
	int n;

	if (!tl->rss_tree.n)
		return 0;
	n = mt_output_svg_rss_lines(rep, &img, &hidden);
	if (n < 0)
		return n;
	fprintf(out, ",\"rss\":{\"tree_first\":%zu,\"tree\":", tl->rss_tree.first);
	put_u64s(out, tl->rss_tree.max, tl->rss_tree.n);
	fputs(",\"lines\":[", out);
	for (int k = 0; k < n; k++) {
		const struct mt_timeline_series *sr = &tl->rss_images[img[k]];

		fprintf(out, "%s{\"label\":", k ? "," : "");
		put_label(out, &rep->images[img[k]]);
		fprintf(out, ",\"first\":%zu,\"max\":", sr->first);
		put_u64s(out, sr->max, sr->n);
		fputc('}', out);
	}
	fputs("]}", out);
	free(img);
	return 0;
}

static int put_over_time_data(const struct mt_report *rep, FILE *out)
{
	const struct mt_timeline *tl = rep->timeline;
	size_t *img, hidden;
	int n = mt_output_svg_lines(rep, &img, &hidden);

	if (n < 0)
		return n;
	fprintf(out,
		"\"over_time\":{\"bucket_ns\":%" PRIu64 ",\"buckets\":%zu,\"peak_bytes\":%" PRIu64
		",\"peak_ns\":%" PRIu64 ",\"tree\":",
		tl->width_ns, tl->n_buckets, tl->peak_bytes, tl->peak_ns);
	put_u64s(out, tl->tree.max, tl->tree.n);
	fputs(",\"allocated\":", out);
	put_u64s(out, tl->allocated, tl->n_buckets);
	fputs(",\"lines\":[", out);
	for (int k = 0; k < n; k++) {
		fprintf(out, "%s{\"label\":", k ? "," : "");
		put_label(out, &rep->images[img[k]]);
		fprintf(out, ",\"first\":%zu,\"max\":", tl->images[img[k]].first);
		put_u64s(out, tl->images[img[k]].max, tl->images[img[k]].n);
		fputc('}', out);
	}
	fputc(']', out);
	/* --mappings: the tree's bytes beyond the heap, on buckets of their own width. */
	if (mt_mapped_any(rep->mapped)) {
		const struct mt_timeline *ml = mt_mapped_timeline(rep->mapped);

		fprintf(out, ",\"mapped\":{\"bucket_ns\":%" PRIu64 ",\"first\":%zu,\"max\":",
			ml->width_ns, ml->tree.first);
		put_u64s(out, ml->tree.max, ml->tree.n);
		fputc('}', out);
	}
	free(img);
	n = put_rss_data(rep, out);
	fputc('}', out);
	return n < 0 ? n : 0;
}

/* ---- the flamegraph ------------------------------------------------------------------------- */

/* Whether node i is big enough under some weight, at grain g. */
static bool big(const struct mt_flame *fl, size_t i, uint64_t g)
{
	for (int m = 0; m < MT_FLAME_WEIGHTS; m++)
		if (fl->nodes[0].w[m] && fl->nodes[i].w[m] * g >= fl->nodes[0].w[m])
			return true;
	return false;
}

/* keep[i]: node i is drawn (its parent too). Returns how many are, with an "other" per parent. */
static size_t mark(const struct mt_flame *fl, uint64_t g, bool *keep, bool *other)
{
	size_t n = 1;

	keep[0] = true;
	other[0] = false;
	for (size_t i = 1; i < fl->n_nodes; i++) {
		size_t p = fl->nodes[i].parent;

		other[i] = false;
		keep[i] = keep[p] && big(fl, i, g);
		n += keep[i];
		if (keep[p] && !keep[i] && !other[p]) {
			other[p] = true;
			n++;
		}
	}
	return n;
}

static void put_node(FILE *out, bool first, int64_t name, size_t parent)
{
	fprintf(out, "%s[%" PRId64 ",%zu]", first ? "" : ",", name, parent);
}

/* Which nodes are drawn, and where each one's weights go on the page. */
struct drawn {
	bool *keep;  /* drawn */
	bool *other; /* has children not drawn: gets a "[smaller frames]" node */
	size_t *at;  /* the page's node that holds node i's own weights */
	size_t n;    /* nodes on the page */
};

static void drawn_free(struct drawn *d)
{
	free(d->keep);
	free(d->other);
	free(d->at);
}

/*
 * The page's nodes: the drawn ones in order, then the "[smaller frames]" ones in the order of
 * their parents. A node not drawn is held by its nearest drawn ancestor's "[smaller frames]".
 */
static int drawn_mark(const struct mt_flame *fl, struct drawn *d)
{
	size_t *other_at = calloc(fl->n_nodes, sizeof(*other_at)), n = 0;
	uint64_t g = FLAME_GRAIN;

	d->keep = calloc(fl->n_nodes, sizeof(*d->keep));
	d->other = calloc(fl->n_nodes, sizeof(*d->other));
	d->at = calloc(fl->n_nodes, sizeof(*d->at));
	if (!other_at || !d->keep || !d->other || !d->at) {
		free(other_at);
		return -ENOMEM;
	}
	while ((d->n = mark(fl, g, d->keep, d->other)) > FLAME_MAX_NODES && g > 1)
		g /= 2;
	for (size_t i = 0; i < fl->n_nodes; i++)
		if (d->keep[i])
			d->at[i] = n++;
	for (size_t i = 0; i < fl->n_nodes; i++)
		if (d->keep[i] && d->other[i])
			other_at[i] = n++;
	for (size_t i = 1; i < fl->n_nodes; i++) {
		size_t p = fl->nodes[i].parent;

		if (!d->keep[i])
			d->at[i] = d->keep[p] ? other_at[p] : d->at[p];
	}
	free(other_at);
	return 0;
}

/*
 * "flame": names, and nodes as [name, parent] with the parent before its children; name -1 is
 * the root, -2 the smaller frames folded together.
 */
static void put_flame(const struct mt_flame *fl, const struct drawn *d, FILE *out)
{
	fputs("\"flame\":{\"names\":[", out);
	for (size_t i = 0; i < fl->n_names; i++) {
		fputs(i ? "," : "", out);
		mt_html_jstr(out, fl->names[i]);
	}
	/* The names C++'s template arguments make long, shortened for the frames' labels. */
	fputs("],\"short\":{", out);
	for (size_t i = 0, first = 1; i < fl->n_names; i++) {
		char buf[MT_PRINTABLE_MAX];

		if (!strcmp(mt_short_name(buf, sizeof(buf), fl->names[i]), fl->names[i]))
			continue;
		fprintf(out, "%s\"%zu\":", first ? "" : ",", i);
		mt_html_jstr(out, buf);
		first = 0;
	}
	fputs("},\"nodes\":[", out);
	for (size_t i = 0; i < fl->n_nodes; i++)
		if (d->keep[i])
			put_node(out, i == 0, i ? (int64_t)fl->nodes[i].name : -1,
				 i ? d->at[fl->nodes[i].parent] : 0);
	for (size_t i = 0; i < fl->n_nodes; i++)
		if (d->keep[i] && d->other[i])
			put_node(out, false, -2, d->at[i]);
	fputs("]}", out);
}

/*
 * "cells": [node, image, allocations, bytes, live, peak, temporary, buckets] per site and image,
 * buckets a flat list of (bucket - the previous one's, allocations, bytes) in time order.
 */
static void put_cells(const struct mt_report *rep, const struct mt_flame *fl, const struct drawn *d,
		      FILE *out)
{
	bool first = true;

	fputs("\"cells\":[", out);
	for (size_t i = 0; rep->cells && i < mt_cells_count(rep->cells); i++) {
		struct mt_cell c = mt_cells_get(rep->cells, i);
		size_t site = mt_sites_index(rep->sites, c.stack_id);
		uint64_t prev = 0;

		if (!c.count || site == SIZE_MAX || fl->site_node[site] == UINT32_MAX)
			continue;
		fprintf(out,
			"%s[%zu,%" PRIu32 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64 ",%" PRIu64
			",%" PRIu64 ",[",
			first ? "" : ",", d->at[fl->site_node[site]], c.image, c.count->allocations,
			c.count->bytes, c.count->live_bytes, c.count->peak_bytes,
			c.count->temporary);
		for (size_t k = 0; k < c.n_buckets; k++) {
			const struct mt_cell_bucket *b = &c.buckets[k];

			fprintf(out, "%s%" PRIu64 ",%" PRIu64 ",%" PRIu64, k ? "," : "",
				b->bucket - prev, b->allocations, b->bytes);
			prev = b->bucket;
		}
		fputs("]]", out);
		first = false;
	}
	fputc(']', out);
}

/*
 * "leaks": [node, image, definitely, indirectly] per loss record of the two lost classes (bytes,
 * suppressed records left out); null for a run without --leaks. Of the whole run: no time range.
 */
static void put_leaks(const struct mt_report *rep, const struct mt_flame *fl, const struct drawn *d,
		      FILE *out)
{
	const struct mt_loss_record *v;
	size_t n = mt_leaks_records(rep->leaks, &v);
	bool first = true;

	if (!mt_leaks_any(rep->leaks)) {
		fputs("\"leaks\":null", out);
		return;
	}
	fputs("\"leaks\":[", out);
	for (size_t i = 0; i < n; i++) {
		size_t site = v[i].stack ? mt_sites_index(rep->sites, v[i].stack) : SIZE_MAX;
		bool def = v[i].cls == MT_LEAK_DEFINITE;

		if ((!def && v[i].cls != MT_LEAK_INDIRECT) || site == SIZE_MAX ||
		    fl->site_node[site] == UINT32_MAX)
			continue;
		fprintf(out, "%s[%zu,%zu,%" PRIu64 ",%" PRIu64 "]", first ? "" : ",",
			d->at[fl->site_node[site]], v[i].image, def ? v[i].bytes : 0,
			def ? 0 : v[i].bytes);
		first = false;
	}
	fputc(']', out);
}

static int put_sites_data(const struct mt_report *rep, FILE *out)
{
	struct mt_flame *fl = NULL;
	struct drawn d = {0};
	int err = mt_flame_build(rep, &fl);

	if (!err)
		err = drawn_mark(fl, &d);
	if (!err) {
		fputc(',', out);
		put_flame(fl, &d, out);
		fputc(',', out);
		put_cells(rep, fl, &d, out);
		fputc(',', out);
		put_leaks(rep, fl, &d, out);
	}
	drawn_free(&d);
	mt_flame_free(fl);
	return err;
}

/* "images": [pid, exe, position, exec] in the report's order (the cells' image numbers). */
static void put_images(const struct mt_report *rep, FILE *out)
{
	fputs(",\"images\":[", out);
	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_image *g = &rep->images[i];

		fprintf(out, "%s[%" PRIu32 ",", i ? "," : "", g->pid);
		mt_html_jstr(out, g->exe);
		fputc(',', out);
		mt_html_jstr(out, g->position);
		fprintf(out, ",%" PRIu32 "]", g->exec_seq);
	}
	fputc(']', out);
}

int mt_html_data(const struct mt_report *rep, FILE *out)
{
	int err;

	fputs("<script type=\"application/json\" id=\"mt-data\">{", out);
	err = put_over_time_data(rep, out);
	if (!err)
		put_images(rep, out);
	if (!err && mt_sites_count(rep->sites))
		err = put_sites_data(rep, out);
	fputs("}</script>\n", out);
	return err;
}
