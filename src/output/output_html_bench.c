// SPDX-License-Identifier: GPL-2.0
/*
 * The HTML report's benchmarks (an artifact of memtrack bench, docs/BENCH.md): a table of the
 * benchmark windows with their figures (aggregate/bench.h), and their data, one
 * <script type="application/json" id="mt-bench">, from which the page's script (its
 * "benchmarks" section in output_html.js) makes the table a selector: choosing a benchmark sets
 * the page's time range to its window (the band on the heap over time, the flamegraph of that
 * range), and draws the benchmark's own heap over time.
 *
 * Times in the data are ns from the run's start, as the page's time range has them (the
 * timeline's start_ns); each benchmark's timeline is bench.h's, ns from its window's start.
 */
#include <inttypes.h>
#include <stdio.h>

#include "aggregate/bench.h"
#include "base/bytesize.h"
#include "output/output_html_int.h"

/* t (CLOCK_MONOTONIC ns) from the run's start, 0 before it. */
static uint64_t from_start(const struct mt_report *rep, uint64_t t)
{
	uint64_t start = rep->timeline->start_ns;

	return t > start ? t - start : 0;
}

/* A window never closed ends with the artifact: at its last event. */
static uint64_t window_end(const struct mt_report *rep, const struct mt_bench_window *w)
{
	return w->not_closed ? rep->last_event_ns : w->stop_ns;
}

/* A byte count in binary units, its exact value in the tooltip. */
static void put_bytes(FILE *out, uint64_t v)
{
	char h[32];

	fprintf(out, "<td class=\"num\" title=\"%" PRIu64 " bytes\">%s</td>", v,
		mt_bytesize_human(h, sizeof(h), v));
}

static void put_row(const struct mt_report *rep, const struct mt_bench_window *w, size_t k,
		    FILE *out)
{
	fprintf(out,
		"<tr class=\"bench\" data-bench=\"%zu\" data-allocations=\"%" PRIu64
		"\" data-bytes-allocated=\"%" PRIu64 "\" data-peak-bytes=\"%" PRIu64
		"\" data-live-at-end=\"%" PRIu64 "\"><td><button type=\"button\" "
		"class=\"bench-pick\" data-bench=\"%zu\" title=\"",
		k, w->allocations, w->bytes_allocated, w->peak_bytes, w->live_at_end, k);
	mt_output_xml_text(out, w->uri[0] ? w->uri : w->name);
	fputs("\">", out);
	mt_output_xml_text(out, w->name);
	fprintf(out, "</button></td><td class=\"num\">%" PRIu64 "</td>", w->allocations);
	put_bytes(out, w->bytes_allocated);
	put_bytes(out, w->peak_bytes);
	put_bytes(out, w->live_at_end);
	fprintf(out, "<td class=\"num\">%.3f ms%s</td></tr>\n",
		(double)(window_end(rep, w) - w->start_ns) / 1e6,
		w->not_closed ? " (never closed)" : "");
}

static void put_table(const struct mt_report *rep, const struct mt_bench_split *s, FILE *out)
{
	fputs("<table class=\"bench\" id=\"bench-table\"><thead><tr><th>benchmark</th>"
	      "<th>allocations</th><th>bytes allocated</th><th>peak</th><th>live at end</th>"
	      "<th>window</th></tr></thead><tbody>\n",
	      out);
	for (size_t k = 0; k < s->n; k++)
		put_row(rep, &s->w[k], k, out);
	fputs("</tbody></table>\n", out);
}

static void put_window_data(const struct mt_report *rep, const struct mt_bench_window *w,
			    bool first, FILE *out)
{
	fputs(first ? "{\"name\":" : ",{\"name\":", out);
	mt_html_jstr(out, w->name);
	fputs(",\"uri\":", out);
	mt_html_jstr(out, w->uri);
	fprintf(out,
		",\"pid\":%" PRId32 ",\"from_ns\":%" PRIu64 ",\"to_ns\":%" PRIu64
		",\"allocations\":%" PRIu64 ",\"bytes_allocated\":%" PRIu64
		",\"heap_at_start\":%" PRIu64 ",\"peak_bytes\":%" PRIu64 ",\"live_at_end\":%" PRIu64
		",\"closed\":%s,\"timeline\":[",
		w->pid, from_start(rep, w->start_ns), from_start(rep, window_end(rep, w)),
		w->allocations, w->bytes_allocated, w->heap_at_start, w->peak_bytes, w->live_at_end,
		w->not_closed ? "false" : "true");
	for (size_t i = 0; i < w->n_timeline; i++)
		fprintf(out, "%s[%" PRIu64 ",%" PRIu64 "]", i ? "," : "", w->timeline[i].t_ns,
			w->timeline[i].live_bytes);
	fputs("]}", out);
}

void mt_html_bench(const struct mt_report *rep, const struct mt_bench_split *s, FILE *out)
{
	if (!s || !s->n)
		return;
	fputs("<section id=\"benchmarks\"><h2>Benchmarks (<code>memtrack bench</code>)</h2>\n"
	      "<p>Each benchmark's window, from its <code>StartProfiler</code> to its "
	      "<code>StopProfiler</code>, counting its processes only. Choose one: the page's "
	      "time range becomes its window (whole buckets of the heap over time).</p>\n",
	      out);
	put_table(rep, s, out);
	fputs("<div id=\"bench-shown\"></div><div id=\"bench-plot\" class=\"plot\"></div>\n"
	      "<script type=\"application/json\" id=\"mt-bench\">{\"benchmarks\":[",
	      out);
	for (size_t k = 0; k < s->n; k++)
		put_window_data(rep, &s->w[k], k == 0, out);
	fputs("]}</script>\n</section>\n", out);
}
