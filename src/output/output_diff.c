// SPDX-License-Identifier: GPL-2.0
/*
 * Two runs compared, as text, JSON and an HTML page (output.h, aggregate/diff.h): the tree's
 * counts side by side, then per level the rows that changed, the largest change in bytes first.
 */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <stdlib.h>
#include <string.h>

#include <json.h>

#include "output/output_html_int.h"
#include "base/bytesize.h"
#include "base/printable.h"

static const char *const level_titles[MT_DIFF_LEVELS] = {
    [MT_DIFF_TREE] = "tree",
    [MT_DIFF_IMAGES] = "process images (by program, then arguments and place in the tree)",
    [MT_DIFF_FILES] = "files (by name)",
    [MT_DIFF_FAMILIES] = "allocator families",
    [MT_DIFF_SITES] = "allocation sites (by stack, outermost frame first)",
};

static const char *const in_names[] = {
    [MT_DIFF_IN_BOTH] = "both",
    [MT_DIFF_IN_BASE] = "base",
    [MT_DIFF_IN_NEW] = "new",
};

static bool is_bytes(enum mt_diff_metric m)
{
	return m == MT_DIFF_BYTES || m == MT_DIFF_PEAK || m == MT_DIFF_LIVE;
}

static bool row_changed(const struct mt_diff_row *r)
{
	return r->in != MT_DIFF_IN_BOTH || memcmp(r->base, r->new, sizeof(r->base));
}

/* "+12.5%", "-50.0%", "new" (from nothing), "0%". */
static const char *percent_str(char *buf, size_t n, uint64_t base, uint64_t new)
{
	double p = mt_diff_percent(base, new);

	if (isinf(p))
		snprintf(buf, n, "new");
	else if (p == 0)
		snprintf(buf, n, "0%%");
	else
		snprintf(buf, n, "%+.1f%%", p);
	return buf;
}

/* A count, or bytes with their human form past 1 KiB. */
static const char *value_str(char *buf, size_t n, enum mt_diff_metric m, uint64_t v)
{
	char h[32];

	if (is_bytes(m) && v >= 1024)
		snprintf(buf, n, "%" PRIu64 " (%s)", v, mt_bytesize_human(h, sizeof(h), v));
	else
		snprintf(buf, n, "%" PRIu64, v);
	return buf;
}

static void print_metric(FILE *out, const char *indent, enum mt_diff_metric m, uint64_t base,
			 uint64_t new)
{
	char a[64], b[64], pc[32];

	fprintf(out, "%s%-12s %s -> %s  %+" PRId64 " (%s)\n", indent, mt_diff_metric_name(m),
		value_str(a, sizeof(a), m, base), value_str(b, sizeof(b), m, new),
		(int64_t)(new - base), percent_str(pc, sizeof(pc), base, new));
}

/* The changed rows of a level, largest change in bytes first (ties: key order). */
static int by_bytes_change(const void *a, const void *b)
{
	const struct mt_diff_row *x = *(const struct mt_diff_row *const *)a;
	const struct mt_diff_row *y = *(const struct mt_diff_row *const *)b;
	uint64_t dx = x->new[MT_DIFF_BYTES] > x->base[MT_DIFF_BYTES]
			  ? x->new[MT_DIFF_BYTES] - x->base[MT_DIFF_BYTES]
			  : x->base[MT_DIFF_BYTES] - x->new[MT_DIFF_BYTES];
	uint64_t dy = y->new[MT_DIFF_BYTES] > y->base[MT_DIFF_BYTES]
			  ? y->new[MT_DIFF_BYTES] - y->base[MT_DIFF_BYTES]
			  : y->base[MT_DIFF_BYTES] - y->new[MT_DIFF_BYTES];

	if (dx != dy)
		return dx < dy ? 1 : -1;
	return strcmp(x->key, y->key);
}

/* The rows of a level that changed, largest change in bytes first: to free, NULL: -ENOMEM. */
static const struct mt_diff_row **changed_rows(const struct mt_diff_level *lv, size_t *n)
{
	const struct mt_diff_row **changed = calloc(lv->n ? lv->n : 1, sizeof(*changed));

	*n = 0;
	if (!changed)
		return NULL;
	for (size_t i = 0; i < lv->n; i++)
		if (row_changed(&lv->rows[i]))
			changed[(*n)++] = &lv->rows[i];
	qsort(changed, *n, sizeof(*changed), by_bytes_change);
	return changed;
}

/* An image's executables: "(PATH)", or "(BASE -> NEW)" when the two runs ran other files. */
static void print_programs(FILE *out, const struct mt_diff_row *r)
{
	char p[MT_PRINTABLE_MAX];

	if (!r->exe[0] && !r->exe[1])
		return;
	fprintf(out, "  (%s", mt_printable(p, sizeof(p), r->exe[0] ? r->exe[0] : r->exe[1]));
	if (r->exe[0] && r->exe[1] && strcmp(r->exe[0], r->exe[1]))
		fprintf(out, " -> %s", mt_printable(p, sizeof(p), r->exe[1]));
	fputc(')', out);
}

static int print_level(FILE *out, const struct mt_diff_level *lv, const char *title, size_t top)
{
	char p[MT_PRINTABLE_MAX];
	size_t n, shown;
	const struct mt_diff_row **changed = changed_rows(lv, &n);

	if (!changed)
		return -ENOMEM;
	shown = top && top < n ? top : n;
	fprintf(out, "\n%s: %zu changed of %zu\n", title, n, lv->n);
	for (size_t i = 0; i < shown; i++) {
		const struct mt_diff_row *r = changed[i];

		fprintf(out, "  %s%s", mt_printable(p, sizeof(p), r->key),
			r->in == MT_DIFF_IN_BASE  ? "  [only in base]"
			: r->in == MT_DIFF_IN_NEW ? "  [only in new]"
						  : "");
		print_programs(out, r);
		fputc('\n', out);
		for (int m = 0; m < MT_DIFF_METRICS; m++)
			if ((lv->metrics & (1u << m)) && r->base[m] != r->new[m])
				print_metric(out, "      ", m, r->base[m], r->new[m]);
	}
	if (shown < n)
		fprintf(out, "  ... %zu more (--top 0 shows all)\n", n - shown);
	free(changed);
	return 0;
}

static void print_run(FILE *out, const char *what, const char *path, const struct mt_report *rep)
{
	char p[MT_PRINTABLE_MAX];

	fprintf(out, "%s %s:", what, mt_printable(p, sizeof(p), path));
	for (int i = 0; i < rep->argc; i++)
		fprintf(out, " %s", mt_printable(p, sizeof(p), rep->argv[i]));
	fputc('\n', out);
}

int mt_output_diff_text(const struct mt_diff_view *v, FILE *out)
{
	const struct mt_diff_row *tree = &v->d->level[MT_DIFF_TREE].rows[0];
	int ret = 0;

	print_run(out, "base", v->path[0], v->rep[0]);
	print_run(out, "new ", v->path[1], v->rep[1]);
	fprintf(out, "\n%s\n", level_titles[MT_DIFF_TREE]);
	for (int m = 0; m < MT_DIFF_METRICS; m++)
		print_metric(out, "  ", m, tree->base[m], tree->new[m]);
	for (int l = MT_DIFF_IMAGES; !ret && l < MT_DIFF_LEVELS; l++)
		ret = print_level(out, &v->d->level[l], level_titles[l], v->top);
	for (size_t i = 0; i < v->n_limits; i++) {
		const struct mt_diff_limit *lim = &v->limits[i];

		fprintf(out, "%slimit: %s may grow by %.1f%%: %s\n", i ? "" : "\n",
			mt_diff_metric_name(lim->metric), lim->max_percent,
			lim->exceeded ? "EXCEEDED" : "held");
	}
	if (ret)
		return ret;
	return ferror(out) ? -EIO : 0;
}

/* ---- JSON ------------------------------------------------------------------------------- */

/* A percentage to a tenth, as the text shows it; null for a growth from nothing. */
static struct json_object *json_percent(double p)
{
	char s[64];

	if (isinf(p))
		return NULL;
	snprintf(s, sizeof(s), "%.1f", p);
	return json_object_new_double_s(p, s);
}

static struct json_object *json_metric(uint64_t base, uint64_t new)
{
	struct json_object *o = json_object_new_object();
	double p = mt_diff_percent(base, new);

	json_object_object_add(o, "base", json_object_new_uint64(base));
	json_object_object_add(o, "new", json_object_new_uint64(new));
	json_object_object_add(o, "change", json_object_new_int64((int64_t)(new - base)));
	json_object_object_add(o, "percent", json_percent(p));
	return o;
}

static struct json_object *json_row(const struct mt_diff_level *lv, const struct mt_diff_row *r)
{
	struct json_object *o = json_object_new_object();

	json_object_object_add(o, "key", mt_output_json_string(r->key));
	json_object_object_add(o, "in", json_object_new_string(in_names[r->in]));
	if (r->exe[0] || r->exe[1]) {
		struct json_object *exe = json_object_new_object();

		json_object_object_add(exe, "base",
				       r->exe[0] ? mt_output_json_string(r->exe[0]) : NULL);
		json_object_object_add(exe, "new",
				       r->exe[1] ? mt_output_json_string(r->exe[1]) : NULL);
		json_object_object_add(o, strcmp(lv->name, "files") ? "exe" : "path", exe);
	}
	for (int m = 0; m < MT_DIFF_METRICS; m++)
		if (lv->metrics & (1u << m))
			json_object_object_add(o, mt_diff_metric_name(m),
					       json_metric(r->base[m], r->new[m]));
	return o;
}

static struct json_object *json_run(const char *path, const struct mt_report *rep)
{
	struct json_object *o = json_object_new_object(), *cmd = json_object_new_array();

	for (int i = 0; i < rep->argc; i++)
		json_object_array_add(cmd, mt_output_json_string(rep->argv[i]));
	json_object_object_add(o, "artifact", mt_output_json_string(path));
	json_object_object_add(o, "command", cmd);
	return o;
}

static struct json_object *json_limits(const struct mt_diff_view *v)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < v->n_limits; i++) {
		const struct mt_diff_limit *lim = &v->limits[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "metric",
				       json_object_new_string(mt_diff_metric_name(lim->metric)));
		json_object_object_add(o, "max_increase_percent",
				       json_object_new_double(lim->max_percent));
		json_object_object_add(o, "percent",
				       isinf(lim->percent) ? NULL
							   : json_object_new_double(lim->percent));
		json_object_object_add(o, "exceeded", json_object_new_boolean(lim->exceeded));
		json_object_array_add(a, o);
	}
	return a;
}

int mt_output_diff_json(const struct mt_diff_view *v, FILE *out)
{
	struct json_object *doc = json_object_new_object(), *tree;
	const struct mt_diff_level *tl = &v->d->level[MT_DIFF_TREE];
	const char *text;

	if (!doc)
		return -ENOMEM;
	json_object_object_add(doc, "base", json_run(v->path[0], v->rep[0]));
	json_object_object_add(doc, "new", json_run(v->path[1], v->rep[1]));
	tree = json_row(tl, &tl->rows[0]);
	json_object_object_del(tree, "key");
	json_object_object_del(tree, "in");
	json_object_object_add(doc, "tree", tree);
	for (int l = MT_DIFF_IMAGES; l < MT_DIFF_LEVELS; l++) {
		const struct mt_diff_level *lv = &v->d->level[l];
		struct json_object *a = json_object_new_array();

		for (size_t i = 0; i < lv->n; i++)
			json_object_array_add(a, json_row(lv, &lv->rows[i]));
		json_object_object_add(doc, lv->name, a);
	}
	json_object_object_add(doc, "limits", json_limits(v));
	text = json_object_to_json_string_ext(doc, JSON_C_TO_STRING_PRETTY |
						       JSON_C_TO_STRING_NOSLASHESCAPE);
	if (!text) {
		json_object_put(doc);
		return -ENOMEM;
	}
	fprintf(out, "%s\n", text);
	json_object_put(doc);
	return ferror(out) ? -EIO : 0;
}

/* ---- HTML ------------------------------------------------------------------------------- */

/* A number the page's script formats (bytes in units, a change with its sign). */
static void put_cell(FILE *out, int64_t v, bool bytes, bool delta, const char *title)
{
	fprintf(out, "<td class=\"num%s%s\" data-v=\"%" PRId64 "\"", bytes ? " bytes" : "",
		delta ? " delta" : "", v);
	if (title) {
		fputs(" title=\"", out);
		mt_output_xml_text(out, title);
		fputc('"', out);
	}
	fprintf(out, ">%" PRId64 "</td>", v);
}

/* The tree: one row per metric, base, new, change and percent. */
static void put_tree_html(FILE *out, const struct mt_diff_row *tree)
{
	char pc[32];

	fputs("<section id=\"diff-tree\"><h2>The tree</h2>\n<table class=\"calls\"><thead><tr>"
	      "<th data-sort=\"text\">metric</th><th data-sort=\"num\">base</th>"
	      "<th data-sort=\"num\">new</th><th data-sort=\"num\">change</th>"
	      "<th data-sort=\"text\">percent</th></tr></thead><tbody>\n",
	      out);
	for (int m = 0; m < MT_DIFF_METRICS; m++) {
		fprintf(out, "<tr data-metric=\"%s\"><td class=\"fn\">%s</td>",
			mt_diff_metric_name(m), mt_diff_metric_name(m));
		put_cell(out, (int64_t)tree->base[m], is_bytes(m), false, NULL);
		put_cell(out, (int64_t)tree->new[m], is_bytes(m), false, NULL);
		put_cell(out, (int64_t)(tree->new[m] - tree->base[m]), is_bytes(m), true, NULL);
		fprintf(out, "<td class=\"pc\">%s</td></tr>\n",
			percent_str(pc, sizeof(pc), tree->base[m], tree->new[m]));
	}
	fputs("</tbody></table></section>\n", out);
}

/* An image's executables, in its key's title. */
static void put_programs_title(FILE *out, const struct mt_diff_row *r)
{
	if (!r->exe[0] && !r->exe[1])
		return;
	fputs(" title=\"", out);
	mt_output_xml_text(out, r->exe[0] ? r->exe[0] : r->exe[1]);
	if (r->exe[0] && r->exe[1] && strcmp(r->exe[0], r->exe[1])) {
		fputs(" -> ", out);
		mt_output_xml_text(out, r->exe[1]);
	}
	fputc('"', out);
}

/* A level's changed rows: the change of each metric it keeps, base and new in the title. */
static int put_level_html(FILE *out, const struct mt_diff_level *lv, const char *title)
{
	size_t n;
	const struct mt_diff_row **changed = changed_rows(lv, &n);

	if (!changed)
		return -ENOMEM;
	fprintf(out, "<section class=\"diff-level\" id=\"diff-%s\"><h2>", lv->name);
	mt_output_xml_text(out, title);
	fprintf(out,
		": %zu changed of %zu</h2>\n<table class=\"calls\"><thead><tr>"
		"<th data-sort=\"text\">%s</th><th data-sort=\"text\">in</th>",
		n, lv->n, lv->name);
	for (int m = 0; m < MT_DIFF_METRICS; m++)
		if (lv->metrics & (1u << m))
			fprintf(out, "<th data-sort=\"num\">%s</th>", mt_diff_metric_name(m));
	fputs("</tr></thead><tbody>\n", out);
	for (size_t i = 0; i < n; i++) {
		const struct mt_diff_row *r = changed[i];

		fputs("<tr><td class=\"fn\"", out);
		put_programs_title(out, r);
		fputc('>', out);
		mt_output_xml_text(out, r->key);
		fprintf(out, "</td><td>%s</td>", in_names[r->in]);
		for (int m = 0; m < MT_DIFF_METRICS; m++) {
			char t[128], pc[32];

			if (!(lv->metrics & (1u << m)))
				continue;
			snprintf(t, sizeof(t), "%" PRIu64 " -> %" PRIu64 " (%s)", r->base[m],
				 r->new[m], percent_str(pc, sizeof(pc), r->base[m], r->new[m]));
			put_cell(out, (int64_t)(r->new[m] - r->base[m]), is_bytes(m), true, t);
		}
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table></section>\n", out);
	free(changed);
	return 0;
}

static void put_run_html(FILE *out, const char *what, const char *path, const struct mt_report *rep)
{
	fprintf(out, "<li>%s <code>", what);
	mt_output_xml_text(out, path);
	fputs("</code>: <code>", out);
	for (int i = 0; i < rep->argc; i++) {
		fputs(i ? " " : "", out);
		mt_output_xml_text(out, rep->argv[i]);
	}
	fputs("</code></li>\n", out);
}

int mt_output_diff_html(const struct mt_diff_view *v, FILE *out)
{
	const char *words[] = {"report", "--diff", v->path[0], v->path[1]};
	int err = 0;

	mt_html_begin(out, words, 4);
	fputs("<ul class=\"runs\">\n", out);
	put_run_html(out, "base", v->path[0], v->rep[0]);
	put_run_html(out, "new", v->path[1], v->rep[1]);
	for (size_t i = 0; i < v->n_limits; i++)
		fprintf(out, "<li class=\"%s\">limit: %s may grow by %.1f%%: %s</li>\n",
			v->limits[i].exceeded ? "warning" : "held",
			mt_diff_metric_name(v->limits[i].metric), v->limits[i].max_percent,
			v->limits[i].exceeded ? "exceeded" : "held");
	fputs("</ul>\n<p>Changes are new minus base; hover a change for both values. Click a "
	      "column to sort.</p>\n",
	      out);
	put_tree_html(out, &v->d->level[MT_DIFF_TREE].rows[0]);
	err = mt_html_diff_flame(v, out);
	for (int l = MT_DIFF_IMAGES; !err && l < MT_DIFF_LEVELS; l++)
		err = put_level_html(out, &v->d->level[l], level_titles[l]);
	if (err)
		return err;
	fputs("<script type=\"application/json\" id=\"mt-data\">{}</script>\n", out);
	return mt_html_end(out);
}
