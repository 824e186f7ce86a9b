// SPDX-License-Identifier: GPL-2.0
/*
 * The allocation sites of a run recorded with --stacks (sites.h): the text report's top sites,
 * and folded stacks, the input of flamegraph.pl and inferno (`memtrack report --folded`).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "bpf/unwind_row.h"
#include "base/bytesize.h"
#include "output/output.h"
#include "base/printable.h"
#include "unwind/unwind_shorten.h"

void mt_output_frame(FILE *out, const struct mt_frame_info *f)
{
	char p[MT_PRINTABLE_MAX], short_name[MT_PRINTABLE_MAX];

	/* C++'s template arguments shortened: the whole name is the JSON's and the page's hover. */
	if (f->function)
		fprintf(out, "%s",
			mt_printable(p, sizeof(p),
				     mt_short_name(short_name, sizeof(short_name), f->function)));
	else if (f->path)
		fprintf(out, "%s+0x%" PRIx64, mt_printable(p, sizeof(p), f->path), f->offset);
	else
		fprintf(out, "0x%" PRIx64, f->offset);
	/* As heaptrack marks a function the compiler inlined into the next frame's. */
	if (f->inlined)
		fputs(" (inlined)", out);
	/* Where heaptrack and Valgrind put it: after the function, as "at FILE:LINE". */
	if (f->source)
		fprintf(out, " at %s:%u", mt_printable(p, sizeof(p), f->source), f->line);
}

static const char *stop_note(uint32_t stop)
{
	switch (stop) {
	case MT_UNWIND_COMPLETE:
		return "";
	case MT_UNWIND_TRUNCATED:
		return " (truncated: callers beyond the frame limit are missing)";
	default:
		return " (cut: the stack could not be unwound further)";
	}
}

static uint64_t weight_of(const struct mt_site *s, enum mt_folded_metric m);

/* Heavier first by the metric, then by bytes and allocations; the stack id ends ties. */
static int by_weight(const void *a, const void *b, void *metric)
{
	const struct mt_site *x = *(const struct mt_site *const *)a;
	const struct mt_site *y = *(const struct mt_site *const *)b;
	enum mt_folded_metric m = *(const enum mt_folded_metric *)metric;

	if (weight_of(x, m) != weight_of(y, m))
		return weight_of(x, m) < weight_of(y, m) ? 1 : -1;
	if (x->bytes != y->bytes)
		return x->bytes < y->bytes ? 1 : -1;
	if (x->allocations != y->allocations)
		return x->allocations < y->allocations ? 1 : -1;
	return x->stack_id < y->stack_id ? -1 : x->stack_id > y->stack_id;
}

static const char *metric_title(enum mt_folded_metric m)
{
	switch (m) {
	case MT_FOLDED_ALLOCATIONS:
		return "allocations";
	case MT_FOLDED_LIVE:
		return "bytes live at exit";
	case MT_FOLDED_PEAK:
		return "bytes live at the peak";
	case MT_FOLDED_TEMPORARY:
		return "temporary allocations";
	default:
		return "bytes allocated";
	}
}

int mt_output_sites(const struct mt_report *rep, FILE *out, size_t top, enum mt_folded_metric by)
{
	size_t n = mt_sites_count(rep->sites), shown;
	const struct mt_site **v;
	char b1[32], b2[32], b3[32];

	if (!n) {
		/* Where a program allocates is the first question: say how to get the answer. */
		if (rep->totals.allocations + rep->totals.reallocs)
			fputs("\nTop allocation sites: none, the run recorded no call stacks "
			      "(memtrack run --stacks -- CMD records them; docs/STACKS.md)\n",
			      out);
		return 0;
	}
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++)
		v[i] = mt_sites_get(rep->sites, i);
	qsort_r(v, n, sizeof(*v), by_weight, &by);
	shown = top && top < n ? top : n;
	fprintf(out, "\nTop allocation sites (%zu distinct stacks, by %s)\n", n,
		rep->in_progress && by == MT_FOLDED_LIVE ? "bytes live now" : metric_title(by));
	for (size_t i = 0; i < shown; i++) {
		const struct mt_site *s = v[i];

		fprintf(out,
			"  #%zu  %" PRIu64 " allocations, %s; %s: %" PRIu64
			" blocks, %s; at the peak: %" PRIu64 " blocks, %s%s\n",
			i + 1, s->allocations, mt_bytesize_human(b1, sizeof(b1), s->bytes),
			rep->in_progress ? "live now" : "live at exit", s->live_blocks,
			mt_bytesize_human(b2, sizeof(b2), s->live_bytes), s->peak_blocks,
			mt_bytesize_human(b3, sizeof(b3), s->peak_bytes), stop_note(s->stop));
		if (!s->n_frames)
			fprintf(out, "      (no record of stack %" PRIu32 ")\n", s->stack_id);
		for (uint32_t k = 0; s->sym && k < s->n_frames; k++) {
			fprintf(out, "      ");
			mt_output_frame(out, &s->sym[k]);
			fputc('\n', out);
		}
	}
	if (shown < n)
		fprintf(out, "  ... %zu more (--top 0 shows all)\n", n - shown);
	free(v);
	return ferror(out) ? -EIO : 0;
}

/* ---- callers and callees ------------------------------------------------------------------- */

static uint64_t call_weight(const struct mt_call_row *r, enum mt_folded_metric m)
{
	switch (m) {
	case MT_FOLDED_BYTES:
		return r->bytes;
	case MT_FOLDED_LIVE:
		return r->live_bytes;
	case MT_FOLDED_PEAK:
		return r->peak_bytes;
	case MT_FOLDED_TEMPORARY:
		return r->temporary;
	default:
		return r->allocations;
	}
}

static int by_call_weight(const void *a, const void *b, void *arg)
{
	const struct mt_call_row *x = *(const struct mt_call_row *const *)a;
	const struct mt_call_row *y = *(const struct mt_call_row *const *)b;
	enum mt_folded_metric m = *(const enum mt_folded_metric *)arg;

	if (call_weight(x, m) != call_weight(y, m))
		return call_weight(x, m) < call_weight(y, m) ? 1 : -1;
	return strcmp(x->name, y->name);
}

const struct mt_call_row **mt_output_calls_sorted(const struct mt_calls *c,
						  enum mt_folded_metric by)
{
	const struct mt_call_row **v = malloc((c->n ? c->n : 1) * sizeof(*v));

	if (!v)
		return NULL;
	for (size_t i = 0; i < c->n; i++)
		v[i] = &c->rows[i];
	qsort_r(v, c->n, sizeof(*v), by_call_weight, &by);
	return v;
}

/* "12 allocations, 4.0 KiB; live at exit 2.2 KiB; 5 temporary; 8 sites" */
static void put_call_counts(FILE *out, const struct mt_call_row *r)
{
	char b1[32], b2[32];

	fprintf(out,
		"%" PRIu64 " allocations, %s; live at exit %s; %" PRIu64 " temporary; %" PRIu64
		" site%s",
		r->allocations, mt_bytesize_human(b1, sizeof(b1), r->bytes),
		mt_bytesize_human(b2, sizeof(b2), r->live_bytes), r->temporary, r->sites,
		r->sites == 1 ? "" : "s");
}

static void put_call_row(FILE *out, const struct mt_call_row *r, uint64_t total,
			 enum mt_folded_metric by)
{
	char p[MT_PRINTABLE_MAX];

	fprintf(out, "  %5.1f%%  ",
		total ? 100.0 * (double)call_weight(r, by) / (double)total : 0.0);
	put_call_counts(out, r);
	fprintf(out, "  %s\n", mt_printable(p, sizeof(p), r->name));
}

int mt_output_calls(const struct mt_calls *c, FILE *out, size_t top, enum mt_folded_metric by)
{
	const struct mt_call_row **v = mt_output_calls_sorted(c, by);
	char p[MT_PRINTABLE_MAX];
	size_t shown = top && top < c->n ? top : c->n;

	if (!v)
		return -ENOMEM;
	fprintf(out, "%s of %s (%zu, by %s)\n", c->callers ? "Callers" : "Callees",
		mt_printable(p, sizeof(p), c->total.name), c->n, metric_title(by));
	for (size_t i = 0; i < shown; i++)
		put_call_row(out, v[i], call_weight(&c->total, by), by);
	if (shown < c->n)
		fprintf(out, "  ... %zu more (--top 0 shows all)\n", c->n - shown);
	fprintf(out, "  in all  ");
	put_call_counts(out, &c->total);
	fputc('\n', out);
	free(v);
	return ferror(out) ? -EIO : 0;
}

/* ---- folded stacks -------------------------------------------------------------------------- */

struct folded {
	char *line; /* frames, outermost first, ';'-separated */
	uint64_t weight;
};

struct buf {
	char *p;
	size_t n, cap;
};

static int put(struct buf *b, const char *s, size_t n)
{
	if (MT_GROW(b->p, b->cap, b->n + n + 1, 2 * (b->n + n + 1)))
		return -ENOMEM;
	memcpy(b->p + b->n, s, n);
	b->n += n;
	b->p[b->n] = '\0';
	return 0;
}

/* A frame as folded stacks name it: no ';' (the separator) and no newline. */
static int put_folded_frame(struct buf *b, const struct mt_frame_info *f)
{
	char p[MT_PRINTABLE_MAX];
	const char *s = mt_frame_name(p, sizeof(p), f);
	size_t start = b->n;
	int err;

	err = put(b, s, strlen(s));
	for (size_t i = start; !err && i < b->n; i++)
		if (b->p[i] == ';' || b->p[i] == '\n')
			b->p[i] = ':';
	return err;
}

/* The stack of s, outermost first, down to the allocator's caller. */
static char *folded_line(const struct mt_site *s)
{
	struct buf b = {0};
	int err = put(&b, "", 0);

	if (!err && s->stop == MT_UNWIND_TRUNCATED)
		err = put(&b, "[truncated];", 12);
	else if (!err && s->stop != MT_UNWIND_COMPLETE)
		err = put(&b, "[cut];", 6);
	for (uint32_t k = s->n_frames; !err && k-- > 1;) {
		err = put_folded_frame(&b, &s->sym[k]);
		if (!err && k > 1)
			err = put(&b, ";", 1);
	}
	if (!err && s->n_frames <= 1)
		err = put(&b, "[unknown]", 9);
	if (err) {
		free(b.p);
		return NULL;
	}
	return b.p;
}

static uint64_t weight_of(const struct mt_site *s, enum mt_folded_metric m)
{
	switch (m) {
	case MT_FOLDED_BYTES:
		return s->bytes;
	case MT_FOLDED_LIVE:
		return s->live_bytes;
	case MT_FOLDED_PEAK:
		return s->peak_bytes;
	case MT_FOLDED_TEMPORARY:
		return s->temporary;
	default:
		return s->allocations;
	}
}

/* The bytes of a site's blocks definitely and indirectly lost, in every image's scan. */
static uint64_t leaked_bytes(const struct mt_report *rep, const struct mt_site *s)
{
	return mt_leaks_of_stack(rep->leaks, s->stack_id, SIZE_MAX, MT_LEAK_DEFINITE).bytes +
	       mt_leaks_of_stack(rep->leaks, s->stack_id, SIZE_MAX, MT_LEAK_INDIRECT).bytes;
}

static int by_line(const void *a, const void *b)
{
	return strcmp(((const struct folded *)a)->line, ((const struct folded *)b)->line);
}

/*
 * The k lines of v, unless err: sorted, those of one stack added together, printed. The lines
 * and v freed either way: err, or -EIO when the output failed.
 */
static int end_folded(struct folded *v, size_t k, int err, FILE *out)
{
	if (!err)
		qsort(v, k, sizeof(*v), by_line);
	/* Two stacks that symbolise alike (two calls in one function) make one line. */
	for (size_t i = 0; !err && i < k; i++) {
		uint64_t w = v[i].weight;

		while (i + 1 < k && !strcmp(v[i].line, v[i + 1].line))
			w += v[++i].weight;
		fprintf(out, "%s %" PRIu64 "\n", v[i].line, w);
	}
	for (size_t i = 0; i < k; i++)
		free(v[i].line);
	free(v);
	if (err)
		return err;
	return ferror(out) ? -EIO : 0;
}

int mt_output_folded(const struct mt_report *rep, enum mt_folded_metric metric, FILE *out)
{
	size_t n = mt_sites_count(rep->sites), k = 0;
	struct folded *v = calloc(n ? n : 1, sizeof(*v));
	int err = 0;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < n && !err; i++) {
		const struct mt_site *s = mt_sites_get(rep->sites, i);

		v[k].weight =
		    metric == MT_FOLDED_LEAKED ? leaked_bytes(rep, s) : weight_of(s, metric);
		if (!v[k].weight || !s->sym)
			continue;
		v[k].line = folded_line(s);
		err = v[k].line ? 0 : -ENOMEM;
		k++;
	}
	return end_folded(v, k, err, out);
}

/* s's stack under its image's root frame, "PROGRAM (pid N)": a line to free, NULL: -ENOMEM. */
static char *process_line(const struct mt_report *rep, size_t image, const struct mt_site *s)
{
	const struct mt_image *g = &rep->images[image];
	const char *base = strrchr(g->exe, '/');
	char p[MT_PRINTABLE_MAX], *stack = folded_line(s), *line = NULL;

	if (!stack)
		return NULL;
	mt_printable(p, sizeof(p), base ? base + 1 : g->exe[0] ? g->exe : "?");
	for (char *c = p; *c; c++)
		if (*c == ';')
			*c = ':';
	if (asprintf(&line, "%s (pid %" PRIu32 ");%s", p, g->pid, stack) < 0)
		line = NULL;
	free(stack);
	return line;
}

/* A stack of one image and its weight, when it has one. 0 or -ENOMEM. */
static int add_process_line(const struct mt_report *rep, size_t image, uint32_t stack,
			    uint64_t weight, struct folded *v, size_t *k)
{
	const struct mt_site *s = stack ? mt_sites_of(rep->sites, stack) : NULL;

	if (!weight || !s || !s->sym)
		return 0;
	v[*k].weight = weight;
	v[*k].line = process_line(rep, image, s);
	return v[(*k)++].line ? 0 : -ENOMEM;
}

int mt_output_folded_by_process(const struct mt_report *rep, enum mt_folded_metric metric,
				FILE *out)
{
	const struct mt_loss_record *r;
	size_t nr = mt_leaks_records(rep->leaks, &r), k = 0;
	size_t n = metric == MT_FOLDED_LEAKED ? nr : rep->cells ? mt_cells_count(rep->cells) : 0;
	struct folded *v = calloc(n ? n : 1, sizeof(*v));
	int err = v ? 0 : -ENOMEM;

	for (size_t i = 0; !err && metric != MT_FOLDED_LEAKED && i < n; i++) {
		struct mt_cell c = mt_cells_get(rep->cells, i);

		err = add_process_line(rep, c.image, c.stack_id,
				       c.count ? weight_of(c.count, metric) : 0, v, &k);
	}
	for (size_t i = 0; !err && metric == MT_FOLDED_LEAKED && i < n; i++)
		if (r[i].cls == MT_LEAK_DEFINITE || r[i].cls == MT_LEAK_INDIRECT)
			err = add_process_line(rep, r[i].image, r[i].stack, r[i].bytes, v, &k);
	return end_folded(v, k, err, out);
}
