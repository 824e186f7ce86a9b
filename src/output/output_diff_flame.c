// SPDX-License-Identifier: GPL-2.0
/*
 * The differential flamegraph of the comparison's page (output_html_int.h), as Brendan Gregg
 * draws his: the new run's flamegraph, each frame as wide as its weight in the new run and
 * colored by its change against the base, red where it grew, blue where it shrank, the deeper
 * the larger the change. Its data are the comparison's sites (aggregate/diff.h: matched by their
 * symbolised stack, so two builds of a program compare), each with its stack and both runs'
 * weights; its own script (output_diff_flame.js) merges them into the tree by frame name and
 * draws it, its style sheet (output_diff_flame.css) is its own too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>

#include "output/output_html_int.h"

__asm__(".pushsection .rodata\n"
	".global mt_diff_flame_script\n"
	".hidden mt_diff_flame_script\n"
	"mt_diff_flame_script:\n"
	".incbin \"src/output/output_diff_flame.js\"\n"
	".byte 0\n"
	".global mt_diff_flame_style\n"
	".hidden mt_diff_flame_style\n"
	"mt_diff_flame_style:\n"
	".incbin \"src/output/output_diff_flame.css\"\n"
	".byte 0\n"
	".popsection\n");
extern const char mt_diff_flame_script[];
extern const char mt_diff_flame_style[];

/*
 * Sites the page holds, the heaviest in either run; the others are summed into one
 * "[smaller sites]" stack, so a run of hundreds of thousands of stacks still gives a page.
 */
#define DIFF_FLAME_SITES 20000

static uint64_t heavier(const struct mt_diff_row *r)
{
	uint64_t b = r->base[MT_DIFF_BYTES], n = r->new[MT_DIFF_BYTES];

	return b > n ? b : n;
}

static int by_weight(const void *a, const void *b)
{
	uint64_t x = heavier(*(const struct mt_diff_row *const *)a);
	uint64_t y = heavier(*(const struct mt_diff_row *const *)b);

	return x < y ? 1 : x > y ? -1 : 0;
}

static void put_weights(FILE *out, const uint64_t *v)
{
	fputc('[', out);
	for (int m = 0; m < MT_DIFF_METRICS; m++)
		fprintf(out, "%s%" PRIu64, m ? "," : "", v[m]);
	fputc(']', out);
}

/* "sites": [stack, base weights, new weights], the stack frames ';'-separated (diff.h's key). */
static int put_data(const struct mt_diff_level *lv, FILE *out)
{
	const struct mt_diff_row **v = malloc((lv->n ? lv->n : 1) * sizeof(*v));
	uint64_t rest[2][MT_DIFF_METRICS] = {{0}};
	size_t shown = lv->n < DIFF_FLAME_SITES ? lv->n : DIFF_FLAME_SITES;

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < lv->n; i++)
		v[i] = &lv->rows[i];
	qsort(v, lv->n, sizeof(*v), by_weight);
	fputs("<script type=\"application/json\" id=\"diff-flame-data\">{\"metrics\":[", out);
	for (int m = 0; m < MT_DIFF_METRICS; m++) {
		fputs(m ? "," : "", out);
		mt_html_jstr(out, mt_diff_metric_name(m));
	}
	fputs("],\"sites\":[", out);
	for (size_t i = 0; i < shown; i++) {
		fputs(i ? ",[" : "[", out);
		mt_html_jstr(out, v[i]->key);
		fputc(',', out);
		put_weights(out, v[i]->base);
		fputc(',', out);
		put_weights(out, v[i]->new);
		fputc(']', out);
	}
	for (size_t i = shown; i < lv->n; i++)
		for (int m = 0; m < MT_DIFF_METRICS; m++) {
			rest[0][m] += v[i]->base[m];
			rest[1][m] += v[i]->new[m];
		}
	if (shown < lv->n) {
		fputs(shown ? ",[\"[smaller sites]\"," : "[\"[smaller sites]\",", out);
		put_weights(out, rest[0]);
		fputc(',', out);
		put_weights(out, rest[1]);
		fputc(']', out);
	}
	fputs("]}</script>\n", out);
	free(v);
	return 0;
}

int mt_html_diff_flame(const struct mt_diff_view *v, FILE *out)
{
	const struct mt_diff_level *lv = &v->d->level[MT_DIFF_SITES];
	int err;

	fputs("<section id=\"diff-flame\"><h2>Differential flamegraph</h2>\n", out);
	if (!lv->n) {
		fputs("<p>Neither run recorded stacks (<code>memtrack run --stacks</code> records "
		      "them).</p></section>\n",
		      out);
		return ferror(out) ? -EIO : 0;
	}
	fprintf(out,
		"<style>\n%s</style>\n<p>The new run's allocation sites, merged by frame name "
		"from the outermost frame; each frame is as wide as its weight in the new run and "
		"colored by its change against the base: <span class=\"grew\">red, grown</span>, "
		"<span class=\"shrank\">blue, shrunk</span>, the deeper the larger the change, "
		"white unchanged. What the new run no longer does has no width here: the tables "
		"below list it. Click a frame to zoom.</p>\n<div class=\"controls\">weight: "
		"<span id=\"diff-flame-weights\"></span> <button id=\"diff-flame-reset\" "
		"type=\"button\">zoom out</button> <span id=\"diff-flame-total\"></span></div>\n"
		"<div id=\"diff-flame-box\"></div><div id=\"diff-flame-tip\" class=\"tip\" "
		"hidden></div>\n",
		mt_diff_flame_style);
	err = put_data(lv, out);
	if (err)
		return err;
	fprintf(out, "<script>\n%s</script>\n</section>\n", mt_diff_flame_script);
	return ferror(out) ? -EIO : 0;
}
