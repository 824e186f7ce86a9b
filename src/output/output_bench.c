// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack bench's outputs (docs/BENCH.md): the table of benchmarks, its JSON document, the
 * comparison with a base run, and that comparison as Markdown for a pull request's comment.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include <json-c/json.h>

#include "aggregate/bench.h"
#include "aggregate/bench_compare.h"
#include "aggregate/sites.h"
#include "base/bytesize.h"
#include "base/printable.h"
#include "output/output.h"

/* Frames shown per site in the text table. */
#define SITE_FRAMES 6

static void notes(const struct mt_bench_window *w, char *buf, size_t len)
{
	size_t used = 0;

	buf[0] = '\0';
	if (w->not_closed)
		used += snprintf(buf + used, len - used, " (never closed: ends with the run)");
	if (w->nested && used < len)
		used += snprintf(buf + used, len - used, " (%u nested StartProfiler ignored)",
				 w->nested);
	if (!w->uri[0] && used < len)
		snprintf(buf + used, len - used, " (no CurrentBenchmark: the whole tree)");
}

static void print_sites(const struct mt_bench_split *s, const struct mt_bench_window *w, FILE *out)
{
	for (size_t i = 0; i < w->n_sites; i++) {
		const struct mt_site *site = mt_sites_of(s->stacks, w->sites[i].stack_id);

		fprintf(out, "      site %zu: %" PRIu64 " allocations, %" PRIu64 " bytes\n", i + 1,
			w->sites[i].allocations, w->sites[i].bytes);
		/* Frame 0 is the allocator's entry: its callers say where. */
		for (uint32_t f = 1; site && site->sym && f < site->n_frames && f <= SITE_FRAMES;
		     f++) {
			fprintf(out, "        ");
			mt_output_frame(out, &site->sym[f]);
			fputc('\n', out);
		}
	}
}

int mt_output_bench_text(const struct mt_bench_split *s, FILE *out)
{
	char name[MT_PRINTABLE_MAX], note[160];

	fprintf(out, "%-32s %12s %14s %10s %12s %12s\n", "benchmark", "allocations", "bytes",
		"average", "peak", "live at end");
	for (size_t i = 0; i < s->n; i++) {
		const struct mt_bench_window *w = &s->w[i];

		notes(w, note, sizeof(note));
		fprintf(out,
			"%-32s %12" PRIu64 " %14" PRIu64 " %10" PRIu64 " %12" PRIu64 " %12" PRIu64
			"%s\n",
			mt_printable(name, sizeof(name), w->name), w->allocations,
			w->bytes_allocated, mt_bench_average(w), w->peak_bytes, w->live_at_end,
			note);
		if (s->stacks)
			print_sites(s, w, out);
	}
	if (!s->n)
		fprintf(out, "(no benchmark window: no StartProfiler reached the runner FIFO)\n");
	if (s->stray_stops)
		fprintf(out, "%" PRIu64 " StopProfiler with no window open (ignored)\n",
			s->stray_stops);
	if (s->stray_uris)
		fprintf(out, "%" PRIu64 " CurrentBenchmark with no window to name (ignored)\n",
			s->stray_uris);
	if (s->truncated)
		fprintf(out, "the artifact is truncated: the figures end where it does\n");
	return ferror(out) ? -EIO : 0;
}

static json_object *u64(uint64_t v)
{
	return json_object_new_int64(v > INT64_MAX ? INT64_MAX : (int64_t)v);
}

static json_object *sites_json(const struct mt_bench_split *s, const struct mt_bench_window *w)
{
	json_object *a = json_object_new_array();
	char fn[MT_PRINTABLE_MAX];

	for (size_t i = 0; i < w->n_sites; i++) {
		const struct mt_site *site = mt_sites_of(s->stacks, w->sites[i].stack_id);
		json_object *o = json_object_new_object(), *frames = json_object_new_array();

		json_object_object_add(o, "stack_id", u64(w->sites[i].stack_id));
		json_object_object_add(o, "allocations", u64(w->sites[i].allocations));
		json_object_object_add(o, "bytes", u64(w->sites[i].bytes));
		for (uint32_t f = 0; site && site->sym && f < site->n_frames; f++)
			json_object_array_add(frames, json_object_new_string(mt_frame_name(
							  fn, sizeof(fn), &site->sym[f])));
		json_object_object_add(o, "frames", frames);
		json_object_array_add(a, o);
	}
	return a;
}

/* [[t_ns, live_bytes], ...]: ns from the window's start, its processes' live bytes. */
static json_object *timeline_json(const struct mt_bench_window *w)
{
	json_object *a = json_object_new_array();

	for (size_t i = 0; i < w->n_timeline; i++) {
		json_object *p = json_object_new_array();

		json_object_array_add(p, u64(w->timeline[i].t_ns));
		json_object_array_add(p, u64(w->timeline[i].live_bytes));
		json_object_array_add(a, p);
	}
	return a;
}

static json_object *window_json(const struct mt_bench_split *s, const struct mt_bench_window *w)
{
	json_object *o = json_object_new_object();

	json_object_object_add(o, "uri", json_object_new_string(w->uri));
	json_object_object_add(o, "name", json_object_new_string(w->name));
	json_object_object_add(o, "pid", json_object_new_int(w->pid));
	json_object_object_add(o, "allocations", u64(w->allocations));
	json_object_object_add(o, "reallocs", u64(w->reallocs));
	json_object_object_add(o, "frees", u64(w->frees));
	json_object_object_add(o, "bytes_allocated", u64(w->bytes_allocated));
	json_object_object_add(o, "average_allocation", u64(mt_bench_average(w)));
	json_object_object_add(o, "peak_bytes", u64(w->peak_bytes));
	json_object_object_add(o, "heap_at_start", u64(w->heap_at_start));
	json_object_object_add(o, "live_at_end", u64(w->live_at_end));
	json_object_object_add(o, "live_blocks_at_end", u64(w->live_blocks_at_end));
	json_object_object_add(o, "start_ns", u64(w->start_ns));
	json_object_object_add(o, "stop_ns", u64(w->stop_ns));
	json_object_object_add(o, "closed", json_object_new_boolean(!w->not_closed));
	json_object_object_add(o, "nested", json_object_new_int((int)w->nested));
	json_object_object_add(o, "sites", s->stacks ? sites_json(s, w) : NULL);
	json_object_object_add(o, "timeline", timeline_json(w));
	return o;
}

int mt_output_bench_json(const struct mt_bench_split *s, FILE *out)
{
	json_object *root = json_object_new_object(), *list = json_object_new_array();
	int err;

	for (size_t i = 0; i < s->n; i++)
		json_object_array_add(list, window_json(s, &s->w[i]));
	json_object_object_add(root, "benchmarks", list);
	json_object_object_add(root, "stray_stops", u64(s->stray_stops));
	json_object_object_add(root, "stray_uris", u64(s->stray_uris));
	json_object_object_add(root, "calls_outside_windows", u64(s->outside));
	json_object_object_add(root, "truncated", json_object_new_boolean(s->truncated));
	fputs(json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_NOSLASHESCAPE),
	      out);
	fputc('\n', out);
	json_object_put(root);
	err = ferror(out) ? -EIO : 0;
	return err;
}

static void growth_text(const struct mt_bench_row *r, enum mt_bench_metric m, char *buf, size_t len)
{
	double g = mt_bench_growth(r, m);

	if (!r->in_base)
		snprintf(buf, len, "new");
	else if (!r->in_new)
		snprintf(buf, len, "gone");
	else if (isinf(g))
		snprintf(buf, len, "from 0");
	else
		snprintf(buf, len, "%+.1f%%", g);
}

int mt_output_bench_compare_text(const struct mt_bench_cmp *c, FILE *out)
{
	char name[MT_PRINTABLE_MAX], g[32];

	fprintf(out, "\n%-32s %-18s %14s %14s %10s\n", "benchmark", "metric", "base", "new",
		"change");
	for (size_t i = 0; i < c->n; i++) {
		const struct mt_bench_row *r = &c->rows[i];

		mt_printable(name, sizeof(name), r->name);
		for (int m = 0; m < MT_BM_N; m++) {
			growth_text(r, (enum mt_bench_metric)m, g, sizeof(g));
			fprintf(out, "%-32s %-18s %14" PRIu64 " %14" PRIu64 " %10s%s\n",
				m ? "" : name, mt_bench_metric_name((enum mt_bench_metric)m),
				r->base[m], r->now[m], g,
				r->exceeded[m] ? "  exceeds its limit" : "");
		}
	}
	return ferror(out) ? -EIO : 0;
}

/* A cell of a Markdown table: its pipes and line breaks would end the cell. */
static void md_cell(FILE *out, const char *s)
{
	char p[MT_PRINTABLE_MAX];

	for (const char *c = mt_printable(p, sizeof(p), s); *c; c++) {
		if (*c == '|' || *c == '\\' || *c == '`' || *c == '*' || *c == '_')
			fputc('\\', out);
		fputc(*c, out);
	}
}

int mt_output_bench_markdown(const struct mt_bench_split *s, const struct mt_bench_cmp *c,
			     const struct mt_bench_limits *limits, FILE *out)
{
	static const enum mt_bench_metric shown[] = {MT_BM_ALLOCATIONS, MT_BM_BYTES_ALLOCATED,
						     MT_BM_PEAK, MT_BM_LIVE_AT_END};
	char g[32];

	fprintf(out, "### memtrack bench: memory per benchmark\n\n");
	if (c)
		fprintf(out, "%zu of %zu benchmarks exceed a limit.\n\n", c->n_exceeded, c->n);
	fprintf(out, "| benchmark | allocations | bytes allocated | peak | live at end |%s\n",
		c ? " status |" : "");
	fprintf(out, "| --- | ---: | ---: | ---: | ---: |%s\n", c ? " --- |" : "");
	if (!c) {
		for (size_t i = 0; i < s->n; i++) {
			const struct mt_bench_window *w = &s->w[i];

			fprintf(out, "| ");
			md_cell(out, w->name);
			fprintf(out, " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " | %" PRIu64 " |\n",
				w->allocations, w->bytes_allocated, w->peak_bytes, w->live_at_end);
		}
		return ferror(out) ? -EIO : 0;
	}
	for (size_t i = 0; i < c->n; i++) {
		const struct mt_bench_row *r = &c->rows[i];
		bool over = false;

		fprintf(out, "| ");
		md_cell(out, r->name);
		for (size_t k = 0; k < sizeof(shown) / sizeof(shown[0]); k++) {
			enum mt_bench_metric m = shown[k];

			growth_text(r, m, g, sizeof(g));
			over |= r->exceeded[m];
			fprintf(out, " | %s%" PRIu64 " (%s)%s", r->exceeded[m] ? "**" : "",
				r->now[m], g, r->exceeded[m] ? "**" : "");
		}
		for (int m = 0; m < MT_BM_N; m++)
			over |= r->exceeded[m];
		fprintf(out, " | %s |\n", over ? "exceeds a limit" : r->in_base ? "ok" : "new");
	}
	if (limits->n) {
		fprintf(out, "\nLimits:");
		for (int k = 0; k < limits->n; k++)
			fprintf(out, " %s +%g%%%s", mt_bench_metric_name(limits->metric[k]),
				limits->max_percent[k], k + 1 < limits->n ? "," : "");
		fputc('\n', out);
	}
	return ferror(out) ? -EIO : 0;
}
