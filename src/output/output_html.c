// SPDX-License-Identifier: GPL-2.0
/*
 * The HTML report (`memtrack report --html OUT.html`): one file that opens anywhere, without the
 * network: no external script, style sheet, font or image. The summary is the text report's own
 * lines; the heap over time is output_svg.c's picture, made interactive by the page's script; the
 * flamegraph is drawn by the script from the data of output_html_data.c, for the process image
 * and the time range chosen; the bottom-up tables are output_html_calls.c's. The script and the
 * style sheet (output_html.js, output_html.css) are linked into memtrack as they are, to be read
 * and edited as the files they are; so is what the scripts of every page share
 * (output_html_page.js), written once at the top of each page.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/output_html_int.h"
#include "base/bytesize.h"
#include "base/printable.h"

__asm__(".pushsection .rodata\n"
	".global mt_html_script\n"
	".hidden mt_html_script\n"
	"mt_html_script:\n"
	".incbin \"src/output/output_html.js\"\n"
	".byte 0\n"
	".global mt_html_style\n"
	".hidden mt_html_style\n"
	"mt_html_style:\n"
	".incbin \"src/output/output_html.css\"\n"
	".byte 0\n"
	".global mt_html_page_script\n"
	".hidden mt_html_page_script\n"
	"mt_html_page_script:\n"
	".incbin \"src/output/output_html_page.js\"\n"
	".byte 0\n"
	".popsection\n");
extern const char mt_html_script[];
extern const char mt_html_style[];
extern const char mt_html_page_script[];

/* ---- the summary ---------------------------------------------------------------------------- */

/* v with its digits grouped by three: 334,081,748. */
static const char *grouped(char *buf, size_t n, uint64_t v)
{
	char digits[32];
	size_t len = (size_t)snprintf(digits, sizeof(digits), "%" PRIu64, v), at = 0;

	for (size_t i = 0; i < len && at + 2 < n; i++) {
		if (i && (len - i) % 3 == 0)
			buf[at++] = ',';
		buf[at++] = digits[i];
	}
	buf[at] = '\0';
	return buf;
}

/*
 * A headline figure: a count grouped, a byte count in binary units (its exact value in the
 * tooltip); data-value is the exact number, for scripts and tests.
 */
static void put_figure(FILE *out, const char *name, const char *key, uint64_t v, bool bytes)
{
	char g[40], h[32];

	fprintf(out,
		"<div class=\"figure\"><div class=\"value\" data-key=\"%s\" data-value=\"%" PRIu64
		"\" title=\"%s%s\">%s</div><div class=\"name\">%s</div></div>\n",
		key, v, grouped(g, sizeof(g), v), bytes ? " bytes" : "",
		bytes ? mt_bytesize_human(h, sizeof(h), v) : g, name);
}

/* A run with --leaks: the tree's bytes in each of memcheck's classes (the leaks view below). */
static void put_leak_figures(const struct mt_report *rep, FILE *out)
{
	static const char *const keys[] = {
	    [MT_LEAK_DEFINITE] = "definitely_lost",
	    [MT_LEAK_INDIRECT] = "indirectly_lost",
	    [MT_LEAK_POSSIBLE] = "possibly_lost",
	    [MT_LEAK_REACHABLE] = "still_reachable",
	};
	const struct mt_leak_counts *t = mt_leaks_total(rep->leaks);

	if (!mt_leaks_any(rep->leaks))
		return;
	for (unsigned int k = MT_LEAK_DEFINITE; k <= MT_LEAK_CLASSES; k++)
		put_figure(out, mt_leak_class_name(k), keys[k], t->bytes[k], true);
}

static void put_figures(const struct mt_report *rep, FILE *out)
{
	const struct mt_report_totals *t = &rep->totals;

	fputs("<div class=\"figures\">\n", out);
	put_figure(out, "allocations", "allocations", t->allocations, false);
	put_figure(out, "reallocs", "reallocs", t->reallocs, false);
	put_figure(out, "frees", "frees", t->frees, false);
	put_figure(out, "temporary", "temporary", t->temporary, false);
	put_figure(out, "bytes allocated", "bytes_allocated", t->bytes_allocated, true);
	put_figure(out, "peak", "peak_bytes", t->peak_bytes, true);
	put_figure(out, "blocks never freed", "live_blocks", t->live_blocks, false);
	put_figure(out, "bytes never freed", "live_bytes", t->live_bytes, true);
	put_figure(out, "processes", "processes", rep->n_processes, false);
	if (rep->has_footer)
		put_figure(out, "calls dropped or lost", "dropped", t->dropped, false);
	put_figure(out, "files not probed", "unprobed", rep->n_unprobed, false);
	put_leak_figures(rep, out);
	fputs("</div>\n", out);
	if (rep->in_progress)
		fputs("<p>The run is in progress: this page shows what it recorded so far.</p>\n",
		      out);
	else if (!mt_report_complete(rep))
		fputs(
		    "<p class=\"warning\">This artifact does not hold every allocator call of the "
		    "run: the text report below says what is missing.</p>\n",
		    out);
}

/* The text report's own lines: the same figures, per process image, file and family. */
static int put_text_report(const struct mt_report *rep, FILE *out, size_t top)
{
	char *buf = NULL;
	size_t len = 0;
	FILE *m = open_memstream(&buf, &len);
	int err;

	if (!m)
		return -ENOMEM;
	err = mt_output_text(rep, m, top);
	if (!err)
		err = mt_output_sites(rep, m, top, MT_FOLDED_BYTES);
	if (fclose(m) && !err)
		err = -ENOMEM;
	if (!err) {
		fputs("<section id=\"text\"><h2>The text report (<code>memtrack report</code>)"
		      "</h2>\n<pre id=\"text-report\">",
		      out);
		mt_output_xml_text(out, buf);
		fputs("</pre></section>\n", out);
	}
	free(buf);
	return err;
}

/* ---- the largest blocks never freed ------------------------------------------------------ */

static const char *block_end(const struct mt_report *rep, const struct mt_report_block *b)
{
	if (b->at_end)
		return "live at the end";
	return rep->images[b->image].end == MT_IMAGE_EXEC ? "its exec" : "its exit";
}

/* A block's class, as its image's scan at exit found it (run --leaks). */
static const char *block_class(const struct mt_report_block *b)
{
	return b->leak_class ? mt_leak_class_name(b->leak_class) : "not scanned";
}

static void put_largest(const struct mt_report *rep, FILE *out)
{
	bool leaks = mt_leaks_any(rep->leaks);

	fputs("<section id=\"largest\"><h2>Largest blocks never freed</h2>\n", out);
	if (!rep->n_largest) {
		fputs("<p>None: the program freed every block it allocated.</p></section>\n", out);
		return;
	}
	fprintf(out,
		"<table class=\"blocks\"><tr><th>bytes</th><th>allocated by</th>"
		"<th>released by</th>%s<th>address</th><th>allocated from</th></tr>\n",
		leaks ? "<th>class at exit</th>" : "");
	for (size_t i = 0; i < rep->n_largest; i++) {
		const struct mt_report_block *b = &rep->largest[i];
		const struct mt_image *g = &rep->images[b->image];
		const char *base = strrchr(g->exe, '/');

		fprintf(out,
			"<tr data-bytes=\"%" PRIu64
			"\" data-image=\"%zu\"><td class=\"num\">%" PRIu64 "</td><td>pid %" PRIu32
			" ",
			b->size, b->image, b->size, g->pid);
		mt_output_xml_text(out, base ? base + 1 : g->exe);
		fprintf(out, "</td><td>%s</td>", block_end(rep, b));
		if (leaks)
			fprintf(out, "<td class=\"leak-class\" data-class=\"%u\">%s</td>",
				b->leak_class, block_class(b));
		fprintf(out, "<td><code>0x%" PRIx64 "</code></td><td>", b->addr);
		mt_html_stack(rep, b->stack_id, out);
		fputs("</td></tr>\n", out);
	}
	fputs("</table></section>\n", out);
}

/* The flamegraph's frame and controls: the script draws into it. */
static void put_sites(const struct mt_report *rep, FILE *out)
{
	fputs("<section id=\"sites\"><h2>Allocation sites</h2>\n", out);
	if (!mt_sites_count(rep->sites)) {
		fputs("<p>The run recorded no stacks (<code>memtrack run --stacks</code> records "
		      "them).</p></section>\n",
		      out);
		return;
	}
	fputs("<div class=\"controls\">weight: <span id=\"flame-weights\"></span> "
	      "<input id=\"flame-search\" type=\"search\" placeholder=\"search frames\"> "
	      "<button id=\"flame-reset\" type=\"button\">zoom out</button> "
	      "<span id=\"flame-match\"></span></div>\n"
	      "<div id=\"flame\"></div><div id=\"flame-tip\" class=\"tip\" hidden></div>\n"
	      "</section>\n",
	      out);
}

/*
 * What the flamegraph and the tables show: one process image or the whole tree, the whole run
 * or a time range (dragged on the heap over time, or typed), filled in by the script.
 */
static void put_view(FILE *out)
{
	fputs("<div class=\"view controls\">process: <select id=\"image-select\">"
	      "<option value=\"-1\">whole tree</option></select> "
	      "time range: <input id=\"range-from\" type=\"number\" min=\"0\" step=\"any\"> to "
	      "<input id=\"range-to\" type=\"number\" min=\"0\" step=\"any\"> ms "
	      "<button id=\"range-clear\" type=\"button\">whole run</button> "
	      "<span id=\"range-shown\"></span></div>\n",
	      out);
}

static void put_words(FILE *out, const char *const *words, int n)
{
	for (int i = 0; i < n; i++) {
		fputs(i ? " " : "", out);
		mt_output_xml_text(out, words[i]);
	}
}

void mt_html_begin(FILE *out, const char *const *words, int n)
{
	fputs("<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
	      "<meta http-equiv=\"Content-Security-Policy\" content=\"default-src 'none'; "
	      "script-src 'unsafe-inline'; style-src 'unsafe-inline'; img-src data:\">\n<title>"
	      "memtrack: ",
	      out);
	put_words(out, words, n);
	fprintf(out,
		"</title>\n<style>\n%s</style>\n</head><body>\n<script>\n%s</script>\n"
		"<h1>memtrack: <code>",
		mt_html_style, mt_html_page_script);
	put_words(out, words, n);
	fputs("</code></h1>\n", out);
}

int mt_html_end(FILE *out)
{
	fprintf(out, "<script>\n%s</script>\n</body></html>\n", mt_html_script);
	return ferror(out) ? -EIO : 0;
}

int mt_output_html(const struct mt_report *rep, FILE *out, size_t top)
{
	return mt_output_html_bench(rep, NULL, out, top);
}

int mt_output_html_bench(const struct mt_report *rep, const struct mt_bench_split *bench, FILE *out,
			 size_t top)
{
	int err;

	mt_html_begin(out, (const char *const *)rep->argv, rep->argc);
	fputs("<section id=\"summary\"><h2>Summary</h2>\n", out);
	put_figures(rep, out);
	fputs("<p>Per process image, file and family, with what was dropped and what could not be "
	      "probed: the text report, at the end of this page.</p>\n</section>\n",
	      out);
	mt_html_bench(rep, bench, out);
	fputs("<section id=\"over-time\"><h2>Heap over time</h2>\n", out);
	put_view(out);
	fputs("<div class=\"plot\">\n", out);
	err = mt_output_svg_plot(rep, out);
	if (err)
		return err;
	fputs("<div id=\"plot-tip\" class=\"tip\" hidden></div></div>\n</section>\n", out);
	err = mt_html_leaks(rep, out);
	if (err)
		return err;
	put_sites(rep, out);
	err = mt_html_calls(rep, out);
	if (err)
		return err;
	put_largest(rep, out);
	err = put_text_report(rep, out, top);
	if (err)
		return err;
	err = mt_html_data(rep, out);
	if (err)
		return err;
	return mt_html_end(out);
}
