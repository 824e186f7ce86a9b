// SPDX-License-Identifier: GPL-2.0
/*
 * The HTML report's leaks view (output_html_int.h): what the leak scans of a `run --leaks` found
 * at each process's exit, as the text report prints it (output_leaks.c): memcheck's four classes
 * per process image and in the tree, what suppressions hid, what a scan could not do, then the
 * loss records with their stacks, biggest first. Figures are written exact (data-v); the view's
 * own script and style sheet (output_html_leaks.js, .css, linked in as output_html.c links the
 * page's) format them and show the records of the classes chosen; the page's process selector
 * shows one image's rows, as it does the largest blocks' (rows with data-image).
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "output/output_html_int.h"
#include "base/printable.h"

__asm__(".pushsection .rodata\n"
	".global mt_html_leaks_script\n"
	".hidden mt_html_leaks_script\n"
	"mt_html_leaks_script:\n"
	".incbin \"src/output/output_html_leaks.js\"\n"
	".byte 0\n"
	".global mt_html_leaks_style\n"
	".hidden mt_html_leaks_style\n"
	"mt_html_leaks_style:\n"
	".incbin \"src/output/output_html_leaks.css\"\n"
	".byte 0\n"
	".popsection\n");
extern const char mt_html_leaks_script[];
extern const char mt_html_leaks_style[];

/*
 * Loss records shown (the biggest), per process image and on the page, lost ones and still
 * reachable ones apart: a page of a tree of a thousand processes, each with hundreds of records,
 * stays a page, not a log of every block.
 */
#define LOST_PER_IMAGE	    200
#define LOST_ON_PAGE	    2000
#define REACHABLE_PER_IMAGE 50
#define REACHABLE_ON_PAGE   500
/* Suppressions listed with what each hid. */
#define SUPPRESSIONS_SHOWN  100

/* The classes as report --json names them (data-class), in the table's order. */
static const char *const class_keys[] = {
    [MT_LEAK_DEFINITE] = "definitely_lost",
    [MT_LEAK_INDIRECT] = "indirectly_lost",
    [MT_LEAK_POSSIBLE] = "possibly_lost",
    [MT_LEAK_REACHABLE] = "still_reachable",
};

static void put_num(FILE *out, const char *cls, const char *unit, uint64_t v)
{
	fprintf(out,
		"<td class=\"num\" data-class=\"%s\" data-unit=\"%s\" data-v=\"%" PRIu64
		"\">%" PRIu64 "</td>",
		cls, unit, v, v);
}

static void put_program(FILE *out, const struct mt_image *g)
{
	char p[MT_PRINTABLE_MAX];

	fputs("<td class=\"exe\">", out);
	mt_output_xml_text(out, mt_printable(p, sizeof(p), g->exe[0] ? g->exe : "?"));
	fputs("</td>", out);
}

/* A row of the classes' table: an image's (image >= 0) or the tree's. */
static void put_counts(FILE *out, const struct mt_report *rep, ptrdiff_t image,
		       const struct mt_leak_counts *c)
{
	if (image >= 0) {
		const struct mt_image *g = &rep->images[image];

		fprintf(out, "<tr data-image=\"%td\" data-pid=\"%" PRIu32 "\"><td>", image, g->pid);
		mt_output_xml_text(out, g->position[0] ? g->position : "?");
		fprintf(out, "</td><td class=\"num\">%" PRIu32 "</td>", g->pid);
		put_program(out, g);
	} else {
		fputs("<tr class=\"tree\" data-tree=\"1\"><td>tree</td><td></td><td></td>", out);
	}
	for (unsigned int k = MT_LEAK_DEFINITE; k <= MT_LEAK_CLASSES; k++) {
		put_num(out, class_keys[k], "bytes", c->bytes[k]);
		put_num(out, class_keys[k], "blocks", c->blocks[k]);
	}
	put_num(out, "suppressed", "bytes", c->suppressed_bytes);
	put_num(out, "suppressed", "blocks", c->suppressed_blocks);
	fputs("</tr>\n", out);
}

static void put_classes(FILE *out, const struct mt_report *rep)
{
	fputs("<table class=\"leak-classes\"><thead><tr><th rowspan=\"2\">position</th>"
	      "<th rowspan=\"2\">pid</th><th rowspan=\"2\">program</th>",
	      out);
	for (unsigned int k = MT_LEAK_DEFINITE; k <= MT_LEAK_CLASSES; k++)
		fprintf(out, "<th colspan=\"2\" class=\"%s\">%s</th>", class_keys[k],
			mt_leak_class_name(k));
	fputs("<th colspan=\"2\">suppressed</th></tr>\n<tr>", out);
	for (unsigned int k = MT_LEAK_DEFINITE; k <= MT_LEAK_CLASSES + 1; k++)
		fputs("<th>bytes</th><th>blocks</th>", out);
	fputs("</tr></thead><tbody>\n", out);
	for (size_t i = 0; i < rep->n_images; i++)
		if (mt_leaks_of(rep->leaks, i)->scanned)
			put_counts(out, rep, (ptrdiff_t)i, mt_leaks_of(rep->leaks, i));
	put_counts(out, rep, -1, mt_leaks_total(rep->leaks));
	fputs("</tbody></table>\n", out);
}

/* What a scan could not do (output_leaks.c says it under its table). */
static void put_caveats(FILE *out, const struct mt_report *rep)
{
	bool any = false;

	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_leak_counts *c = mt_leaks_of(rep->leaks, i);
		uint32_t pid = rep->images[i].pid;

		if (!(c->flags & (MT_LEAKS_SHARED | MT_LEAKS_INEXACT)) && !c->unreadable_regions &&
		    !c->unreadable_bytes)
			continue;
		fputs(any ? "" : "<ul class=\"leak-caveats\">\n", out);
		any = true;
		if (c->flags & MT_LEAKS_SHARED)
			fprintf(out,
				"<li>pid %" PRIu32 ": not scanned, it ran in its parent's memory"
				"</li>\n",
				pid);
		if (c->flags & MT_LEAKS_INEXACT)
			fprintf(out,
				"<li class=\"warning\">pid %" PRIu32 ": memtrack lost track of its "
				"blocks (out of memory): its classes are not exact</li>\n",
				pid);
		if (c->unreadable_regions || c->unreadable_bytes)
			fprintf(out,
				"<li>pid %" PRIu32 ": %" PRIu64 " bytes could not be read (%" PRIu32
				" root regions): pointers there were not seen</li>\n",
				pid, c->unreadable_bytes, c->unreadable_regions);
	}
	fputs(any ? "</ul>\n" : "", out);
}

/* The suppressions that hid records, with what each hid (memcheck -v's used_suppression). */
static void put_suppressions(FILE *out, const struct mt_report *rep)
{
	const struct mt_suppressions *ss = mt_leaks_suppressions(rep->leaks);
	char p[MT_PRINTABLE_MAX];
	size_t shown = 0;

	if (!ss)
		return;
	fprintf(out,
		"<p class=\"leak-suppressed\">%zu suppressions read; those that hid loss "
		"records:</p>\n<table class=\"leak-suppressions\"><thead><tr><th>suppression</th>"
		"<th>file:line</th><th>records</th><th>bytes</th><th>blocks</th></tr></thead>"
		"<tbody>\n",
		ss->n);
	for (size_t i = 0; i < ss->n && shown < SUPPRESSIONS_SHOWN; i++) {
		const struct mt_supp *sp = &ss->v[i];

		if (!sp->records)
			continue;
		shown++;
		fputs("<tr><td>", out);
		mt_output_xml_text(out, mt_printable(p, sizeof(p), sp->name));
		fputs("</td><td>", out);
		mt_output_xml_text(out, mt_printable(p, sizeof(p), ss->files[sp->file]));
		fprintf(out, ":%u</td>", sp->line);
		put_num(out, "suppressed", "records", sp->records);
		put_num(out, "suppressed", "bytes", sp->bytes);
		put_num(out, "suppressed", "blocks", sp->blocks);
		fputs("</tr>\n", out);
	}
	fputs("</tbody></table>\n", out);
}

/* One class group's records on the page: lost (definitely, indirectly, possibly) or reachable. */
struct records_pass {
	bool reachable;
	size_t per_image, left; /* rows an image may have, rows the page may still have */
	size_t hidden;		/* records left out */
};

static void put_record(FILE *out, const struct mt_report *rep, const struct mt_loss_record *r,
		       size_t k, size_t of)
{
	const struct mt_image *g = &rep->images[r->image];
	bool reach = r->cls == MT_LEAK_REACHABLE;

	fprintf(out,
		"<tr class=\"loss\" data-image=\"%zu\" data-class=\"%s\"><td>pid %" PRIu32 "</td>",
		r->image, class_keys[r->cls], g->pid);
	put_program(out, g);
	fprintf(out, "<td class=\"cls\">%s</td>", mt_leak_class_name(r->cls));
	put_num(out, class_keys[r->cls], "bytes", r->bytes);
	put_num(out, class_keys[r->cls], "blocks", r->blocks);
	fprintf(out, "<td class=\"num\">%zu of %zu%s</td><td>", k, of, reach ? " reachable" : "");
	mt_html_stack(rep, r->stack, out);
	fputs("</td></tr>\n", out);
}

/*
 * The records of the pass's classes of one image, from index first of v, numbered among them as
 * the text numbers the lost ones; returns the index after the image's records.
 */
static size_t put_image_records(FILE *out, const struct mt_report *rep,
				const struct mt_loss_record *v, size_t n, size_t first,
				struct records_pass *pass)
{
	size_t end = first, of = 0, k = 0;

	while (end < n && v[end].image == v[first].image)
		of += (v[end++].cls == MT_LEAK_REACHABLE) == pass->reachable;
	for (size_t i = first; i < end; i++) {
		if ((v[i].cls == MT_LEAK_REACHABLE) != pass->reachable)
			continue;
		if (k == pass->per_image || !pass->left) {
			pass->hidden += of - k;
			break;
		}
		put_record(out, rep, &v[i], ++k, of);
		pass->left--;
	}
	return end;
}

static void put_records(FILE *out, const struct mt_report *rep)
{
	const struct mt_loss_record *v;
	size_t n = mt_leaks_records(rep->leaks, &v);
	struct records_pass pass[] = {
	    {.reachable = false, .per_image = LOST_PER_IMAGE, .left = LOST_ON_PAGE},
	    {.reachable = true, .per_image = REACHABLE_PER_IMAGE, .left = REACHABLE_ON_PAGE},
	};

	fputs("<h3>Loss records</h3>\n<p>The blocks of one process image, one class and one "
	      "allocation stack, biggest first, numbered per image as <code>memtrack report</code> "
	      "numbers them. Show: ",
	      out);
	for (unsigned int k = MT_LEAK_DEFINITE; k <= MT_LEAK_CLASSES; k++)
		fprintf(out,
			"<label><input type=\"checkbox\" class=\"leak-class\" value=\"%s\"%s> %s"
			"</label> ",
			class_keys[k], k == MT_LEAK_REACHABLE ? "" : " checked",
			mt_leak_class_name(k));
	fputs("<span id=\"leak-shown\"></span></p>\n<table class=\"loss-records\"><thead><tr>"
	      "<th>process</th><th>program</th><th>class</th><th>bytes</th><th>blocks</th>"
	      "<th>record</th><th>allocated from</th></tr></thead><tbody>\n",
	      out);
	for (size_t p = 0; p < 2; p++)
		for (size_t i = 0; i < n;)
			i = put_image_records(out, rep, v, n, i, &pass[p]);
	fputs("</tbody></table>\n", out);
	for (size_t p = 0; p < 2; p++)
		if (pass[p].hidden)
			fprintf(out,
				"<p class=\"more\">... %zu more %s records, the smallest "
				"(<code>memtrack "
				"report --top 0</code> lists every lost one)</p>\n",
				pass[p].hidden, pass[p].reachable ? "still reachable" : "lost");
}

int mt_html_leaks(const struct mt_report *rep, FILE *out)
{
	fputs("<section id=\"leaks\"><h2>Leaks at exit (memcheck's classes)</h2>\n", out);
	if (!mt_leaks_any(rep->leaks)) {
		fputs("<p>The run made no leak scan (<code>memtrack run --leaks</code> classifies "
		      "the blocks each process leaves at its exit).</p></section>\n",
		      out);
		return ferror(out) ? -EIO : 0;
	}
	fprintf(
	    out,
	    "<style>\n%s</style>\n<p>At each process's exit, memtrack scanned its registers, "
	    "stacks and data for pointers to the blocks it left, as memcheck's "
	    "<code>--leak-check=full</code> does: <b>definitely lost</b>, no pointer to the "
	    "block; <b>indirectly lost</b>, pointed to only from lost blocks; <b>possibly "
	    "lost</b>, only pointers into its interior; <b>still reachable</b>, a pointer to it "
	    "from a root. Bytes and blocks, per process image and in the tree "
	    "(docs/LEAKS.md).</p>\n",
	    mt_html_leaks_style);
	put_classes(out, rep);
	put_suppressions(out, rep);
	put_caveats(out, rep);
	put_records(out, rep);
	fprintf(out, "<script>\n%s</script>\n</section>\n", mt_html_leaks_script);
	return ferror(out) ? -EIO : 0;
}
