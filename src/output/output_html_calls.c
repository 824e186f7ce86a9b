// SPDX-License-Identifier: GPL-2.0
/*
 * The HTML report's bottom-up view (output_html_int.h): the functions that allocate (the callers
 * of each site's allocator, aggregate/callers.c as `report --callers` counts them), and for the
 * heaviest of them their callers and callees, as tables the page's script sorts, searches and
 * links to the flamegraph. Numbers are written exact (data-v); the script formats them.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/output_html_int.h"
#include "base/printable.h"
#include "unwind/unwind_shorten.h"

/*
 * Functions whose callers and callees the page holds: each costs two passes over the sites, so a
 * run of a hundred thousand stacks still makes its page in seconds.
 */
#define CALLS_DETAILED 20

static const char *const columns[] = {"sites",	      "allocations",	  "bytes allocated",
				      "live at exit", "live at the peak", "temporary"};

static void put_head(FILE *out, const char *first)
{
	fprintf(out, "<thead><tr><th data-sort=\"text\">%s</th>", first);
	for (size_t k = 0; k < sizeof(columns) / sizeof(*columns); k++)
		fprintf(out, "<th data-sort=\"num\">%s</th>", columns[k]);
	fputs("</tr></thead>\n", out);
}

static void put_num(FILE *out, uint64_t v, bool bytes)
{
	fprintf(out, "<td class=\"num%s\" data-v=\"%" PRIu64 "\">%" PRIu64 "</td>",
		bytes ? " bytes" : "", v, v);
}

void mt_html_function(FILE *out, const char *name)
{
	char buf[MT_PRINTABLE_MAX], short_buf[MT_PRINTABLE_MAX];
	const char *whole = mt_printable(buf, sizeof(buf), name);
	const char *shown = mt_short_name(short_buf, sizeof(short_buf), whole);

	if (!strcmp(shown, whole)) {
		mt_output_xml_text(out, whole);
		return;
	}
	fputs("<span title=\"", out);
	mt_output_xml_text(out, whole);
	fputs("\">", out);
	mt_output_xml_text(out, shown);
	fputs("</span>", out);
}

/* A row; link: its name selects the function (its callers, callees and frames). */
static void put_row(FILE *out, const struct mt_call_row *r, bool link)
{
	char buf[MT_PRINTABLE_MAX];
	const char *name = mt_printable(buf, sizeof(buf), r->name);

	fputs("<tr><td class=\"fn\">", out);
	if (link) {
		fputs("<button type=\"button\" class=\"fn\" data-function=\"", out);
		mt_output_xml_text(out, name);
		fputs("\">", out);
	}
	mt_html_function(out, name);
	fputs(link ? "</button></td>" : "</td>", out);
	put_num(out, r->sites, false);
	put_num(out, r->allocations, false);
	put_num(out, r->bytes, true);
	put_num(out, r->live_bytes, true);
	put_num(out, r->peak_bytes, true);
	put_num(out, r->temporary, false);
	fputs("</tr>\n", out);
}

/* A table of c's rows, heaviest in bytes first; link as for put_row. */
static int put_table(FILE *out, const struct mt_calls *c, const char *id, const char *first,
		     bool link)
{
	const struct mt_call_row **v = mt_output_calls_sorted(c, MT_FOLDED_BYTES);

	if (!v)
		return -ENOMEM;
	fprintf(out, "<table class=\"calls\"%s%s%s>", id ? " id=\"" : "", id ? id : "",
		id ? "\"" : "");
	put_head(out, first);
	fputs("<tbody>\n", out);
	for (size_t i = 0; i < c->n; i++)
		put_row(out, v[i], link);
	fputs("</tbody></table>\n", out);
	free(v);
	return 0;
}

/* The callers and callees of function, hidden until the function is chosen. */
static int put_detail(const struct mt_report *rep, FILE *out, const char *function)
{
	struct mt_calls *callers = NULL, *callees = NULL;
	int err = mt_calls_build(rep, function, true, &callers);

	if (!err)
		err = mt_calls_build(rep, function, false, &callees);
	if (!err) {
		fputs("<div class=\"calls-of\" data-function=\"", out);
		mt_output_xml_text(out, function);
		fputs("\" hidden><h3>Callers of <code>", out);
		mt_output_xml_text(out, function);
		fputs("</code></h3>\n", out);
		err = put_table(out, callers, NULL, "caller", true);
	}
	if (!err) {
		fputs("<h3>Callees (<code>[self]</code>: it is the allocator)</h3>\n", out);
		err = put_table(out, callees, NULL, "callee", true);
		fputs("</div>\n", out);
	}
	mt_calls_free(callers);
	mt_calls_free(callees);
	return err;
}

int mt_html_calls(const struct mt_report *rep, FILE *out)
{
	struct mt_calls *top = NULL;
	const struct mt_call_row **v = NULL;
	int err;

	if (!mt_sites_count(rep->sites))
		return 0;
	err = mt_calls_build(rep, NULL, true, &top);
	if (!err && !(v = mt_output_calls_sorted(top, MT_FOLDED_BYTES)))
		err = -ENOMEM;
	if (err)
		goto out;
	fputs("<section id=\"functions\"><h2>Functions that allocate (bottom-up)</h2>\n"
	      "<p>The callers of the allocators over the whole run and every process, as "
	      "<code>memtrack report --callers</code> counts them: a site counts once per "
	      "function. Choose one for its callers and callees (the heaviest have them) and its "
	      "frames in the flamegraph; click a column to sort.</p>\n"
	      "<div class=\"controls\"><input id=\"calls-search\" type=\"search\" "
	      "placeholder=\"search functions\"> <span id=\"calls-shown\"></span></div>\n",
	      out);
	err = put_table(out, top, "bottom-up", "function", true);
	fputs("<div id=\"calls-detail\">\n", out);
	for (size_t i = 0; !err && i < top->n && i < CALLS_DETAILED; i++)
		err = put_detail(rep, out, v[i]->name);
	fputs("</div></section>\n", out);
out:
	free(v);
	mt_calls_free(top);
	return err;
}
