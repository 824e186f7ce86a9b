// SPDX-License-Identifier: GPL-2.0
/*
 * The differential flamegraph of the comparison's page (output_html_int.h), as Brendan Gregg
 * draws his: the new run's flamegraph, each frame as wide as its weight in the new run and
 * colored by its change against the base, red where it grew, blue where it shrank, the deeper
 * the larger the change; and his second picture, the base run's widths with the same colors,
 * where what the new run no longer does shows. Its data are the comparison's sites
 * (aggregate/diff.h: matched by their symbolised stack, so two builds of a program compare), each
 * with its stack (the numbers of its frames' names, each name written once) and both runs' weights;
 * its own script (output_diff_flame.js) merges them into the tree by frame name and draws it, its
 * style sheet (output_diff_flame.css) is its own too.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/output_html_int.h"
#include "output/output_strtab.h"

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
#define DIFF_FLAME_SITES 5000

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

/* A stack (diff.h's key: frames ';'-separated) as the numbers of its frames' names. */
static int put_path(FILE *m, struct mt_strtab *names, const char *key)
{
	char *copy = strdup(key), *save = NULL;
	size_t k = 0;

	if (!copy)
		return -ENOMEM;
	fputc('[', m);
	for (char *f = strtok_r(copy, ";", &save); f; f = strtok_r(NULL, ";", &save)) {
		int64_t id = mt_strtab_intern(names, f);

		if (id < 0) {
			free(copy);
			return -ENOMEM;
		}
		fprintf(m, "%s%" PRId64, k++ ? "," : "", id);
	}
	fputc(']', m);
	free(copy);
	return 0;
}

static int put_site(FILE *m, struct mt_strtab *names, const char *key, const uint64_t *base,
		    const uint64_t *new, bool first)
{
	int err;

	fputs(first ? "[" : ",[", m);
	err = put_path(m, names, key);
	fputc(',', m);
	put_weights(m, base);
	fputc(',', m);
	put_weights(m, new);
	fputc(']', m);
	return err;
}

/*
 * "sites": [path, base weights, new weights], the heaviest first, the path the numbers of its
 * frames in "names" (each frame name once: deep stacks repeat them). Written to memory first,
 * the names being known only at the end.
 */
static int put_sites(const struct mt_diff_row **v, size_t n, struct mt_strtab *names, FILE *m)
{
	uint64_t rest[2][MT_DIFF_METRICS] = {{0}};
	size_t shown = n < DIFF_FLAME_SITES ? n : DIFF_FLAME_SITES;
	int err = 0;

	for (size_t i = 0; !err && i < shown; i++)
		err = put_site(m, names, v[i]->key, v[i]->base, v[i]->new, !i);
	for (size_t i = shown; i < n; i++)
		for (int k = 0; k < MT_DIFF_METRICS; k++) {
			rest[0][k] += v[i]->base[k];
			rest[1][k] += v[i]->new[k];
		}
	if (!err && shown < n)
		err = put_site(m, names, "[smaller sites]", rest[0], rest[1], !shown);
	return err;
}

static int put_data(const struct mt_diff_level *lv, FILE *out)
{
	const struct mt_diff_row **v = malloc((lv->n ? lv->n : 1) * sizeof(*v));
	struct mt_strtab names = {0};
	char *sites = NULL;
	size_t len = 0;
	FILE *m = v ? open_memstream(&sites, &len) : NULL;
	int err = m ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < lv->n; i++)
		v[i] = &lv->rows[i];
	if (!err) {
		qsort(v, lv->n, sizeof(*v), by_weight);
		err = put_sites(v, lv->n, &names, m);
	}
	if (m && fclose(m) && !err)
		err = -ENOMEM;
	if (!err) {
		fputs("<script type=\"application/json\" id=\"diff-flame-data\">{\"metrics\":[",
		      out);
		for (int k = 0; k < MT_DIFF_METRICS; k++) {
			fputs(k ? "," : "", out);
			mt_html_jstr(out, mt_diff_metric_name(k));
		}
		fputs("],\"names\":[", out);
		for (size_t i = 0; i < names.n; i++) {
			fputs(i ? "," : "", out);
			mt_html_jstr(out, names.v[i]);
		}
		fprintf(out, "],\"sites\":[%s]}</script>\n", sites ? sites : "");
	}
	free(sites);
	mt_strtab_free(&names);
	free(v);
	return err;
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
		"white unchanged. What the new run no longer does has no width there: the base "
		"run's widths, with the same colors, show it. Click a frame to zoom.</p>\n"
		"<div class=\"controls\">weight: <span id=\"diff-flame-weights\"></span> widths: "
		"<span id=\"diff-flame-sides\"><button type=\"button\" data-side=\"now\">new "
		"run</button><button type=\"button\" data-side=\"base\">base run</button></span> "
		"<button id=\"diff-flame-reset\" "
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
