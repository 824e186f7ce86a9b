// SPDX-License-Identifier: GPL-2.0
/*
 * The heap over time as a static SVG (`memtrack report --svg OUT.svg --over-time`): live bytes
 * against time, the tree's line and one line per process image (the largest ones), the tree's
 * peak marked with its exact value, the allocation rate beneath; resident memory (RSS samples)
 * dashed on the same axis, per image and for the tree. The HTML report embeds the same
 * picture (output_html.c). It draws timeline.h's buckets and computes nothing of its own.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>

#include "base/bytesize.h"
#include "output/output.h"
#include "base/printable.h"

/* The picture's frame, in SVG user units. */
#define SVG_W	    960
#define PLOT_L	    80
#define PLOT_R	    (SVG_W - 20)
#define PLOT_T	    44
#define PLOT_H	    260
#define RATE_T	    (PLOT_T + PLOT_H + 44)
#define RATE_H	    60
#define LEGEND_T    (RATE_T + RATE_H + 30)
#define LEGEND_ROW  18
#define IMAGE_LINES 8 /* images drawn, the largest peaks first; the tree's line is always drawn */

static const char *const palette[IMAGE_LINES] = {
    "#1f77b4", "#ff7f0e", "#2ca02c", "#d62728", "#9467bd", "#8c564b", "#e377c2", "#17becf",
};

/* One line of text (no newline in it), escaped. */
static void put_xml_line(FILE *out, const char *s, size_t len)
{
	char *p = malloc(2 * (len + 1));
	const char *t = "?";

	if (p) {
		memcpy(p, s, len);
		p[len] = '\0';
		t = mt_printable(p + len + 1, len + 1, p);
	}
	for (; *t; t++) {
		switch (*t) {
		case '&':
			fputs("&amp;", out);
			break;
		case '<':
			fputs("&lt;", out);
			break;
		case '>':
			fputs("&gt;", out);
			break;
		case '"':
			fputs("&quot;", out);
			break;
		case '\'':
			fputs("&#39;", out);
			break;
		default:
			fputc(*t, out);
		}
	}
	free(p);
}

void mt_output_xml_text(FILE *out, const char *s)
{
	for (const char *nl; (nl = strchr(s, '\n')); s = nl + 1) {
		put_xml_line(out, s, (size_t)(nl - s));
		fputc('\n', out);
	}
	put_xml_line(out, s, strlen(s));
}

/* The largest live byte count of a line. */
static uint64_t series_peak(const struct mt_timeline_series *s)
{
	uint64_t m = 0;

	for (size_t j = 0; j < s->n; j++)
		if (s->max[j] > m)
			m = s->max[j];
	return m;
}

struct line {
	size_t image;
	uint64_t peak;
};

static int by_peak(const void *a, const void *b)
{
	const struct line *x = a, *y = b;

	if (x->peak != y->peak)
		return x->peak < y->peak ? 1 : -1;
	return x->image < y->image ? -1 : x->image > y->image;
}

/* The largest of series v[0 .. n) with points (at most IMAGE_LINES), as mt_output_svg_lines. */
static int pick_lines(const struct mt_timeline_series *v, size_t n_v, size_t n_images,
		      size_t **images, size_t *hidden)
{
	struct line *l = calloc(n_v ? n_v : 1, sizeof(*l));
	size_t n = 0;

	*images = NULL;
	*hidden = 0;
	if (!l)
		return -ENOMEM;
	for (size_t i = 0; i < n_v && i < n_images; i++)
		if (v[i].n)
			l[n++] = (struct line){i, series_peak(&v[i])};
	qsort(l, n, sizeof(*l), by_peak);
	*hidden = n > IMAGE_LINES ? n - IMAGE_LINES : 0;
	*images = calloc(IMAGE_LINES + 1, sizeof(**images));
	if (!*images) {
		free(l);
		return -ENOMEM;
	}
	for (size_t i = 0; i < n - *hidden; i++)
		(*images)[i] = l[i].image;
	free(l);
	return (int)(n - *hidden);
}

int mt_output_svg_lines(const struct mt_report *rep, size_t **images, size_t *hidden)
{
	const struct mt_timeline *tl = rep->timeline;

	return pick_lines(tl->images, tl->n_images, rep->n_images, images, hidden);
}

int mt_output_svg_rss_lines(const struct mt_report *rep, size_t **images, size_t *hidden)
{
	const struct mt_timeline *tl = rep->timeline;

	return pick_lines(tl->rss_images, tl->n_rss_images, rep->n_images, images, hidden);
}

/* A step of the time axis: 1, 2 or 5 times a power of ten, at least x. */
static uint64_t nice_step(uint64_t x)
{
	uint64_t p = 1;

	while (p <= UINT64_MAX / 10 && p * 10 <= x)
		p *= 10;
	if (x <= p)
		return p;
	if (x <= 2 * p)
		return 2 * p;
	if (x <= 5 * p)
		return 5 * p;
	return p <= UINT64_MAX / 10 ? 10 * p : p;
}

/* A step of the bytes axis, at least x, that reads well in binary units: 1, 2, 5 ... 500 KiB. */
static uint64_t nice_bytes(uint64_t x)
{
	static const unsigned int m[] = {1, 2, 5, 10, 20, 50, 100, 200, 500};

	for (uint64_t u = 1; u <= (UINT64_MAX >> 10) / 500; u <<= 10)
		for (size_t i = 0; i < sizeof(m) / sizeof(m[0]); i++)
			if (m[i] * u >= x)
				return m[i] * u;
	return x;
}

struct frame {
	size_t buckets;
	uint64_t ystep; /* between two lines of the bytes axis */
	uint64_t ymax;	/* the first line at or above the peak: the plot's top */
};

static double xb(const struct frame *f, size_t b)
{
	return PLOT_L + ((double)b + 0.5) * (PLOT_R - PLOT_L) / (double)f->buckets;
}

static double yv(const struct frame *f, uint64_t v)
{
	return PLOT_T + PLOT_H - (double)v * PLOT_H / (double)f->ymax;
}

static void put_time(FILE *out, uint64_t ns)
{
	if (ns >= 1000000000u)
		fprintf(out, "%g s", (double)ns / 1e9);
	else if (ns >= 1000000u)
		fprintf(out, "%g ms", (double)ns / 1e6);
	else if (ns >= 1000u)
		fprintf(out, "%g \xc2\xb5s", (double)ns / 1e3);
	else
		fprintf(out, ns ? "%" PRIu64 " ns" : "0", ns);
}

static void put_axes(const struct mt_report *rep, const struct frame *f, FILE *out)
{
	const struct mt_timeline *tl = rep->timeline;
	/* At most MT_TIMELINE_MAX_BUCKETS buckets of a width that fits the run: no overflow. */
	uint64_t span = (uint64_t)f->buckets * tl->width_ns, ystep = f->ystep, tstep;
	char h[32];

	fprintf(out, "<g class=\"axes\" font-size=\"11\" fill=\"#444\">\n");
	for (uint64_t k = 0; k <= f->ymax / ystep; k++) {
		uint64_t v = k * ystep;

		fprintf(out,
			"<line x1=\"%d\" x2=\"%d\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>"
			"<text x=\"%d\" y=\"%.1f\" text-anchor=\"end\">%s</text>\n",
			PLOT_L, PLOT_R, yv(f, v), yv(f, v), PLOT_L - 6, yv(f, v) + 4,
			mt_bytesize_human(h, sizeof(h), v));
	}
	tstep = nice_step(span / 6 ? span / 6 : 1);
	for (uint64_t k = 0; k <= span / tstep; k++) {
		uint64_t t = k * tstep;
		double x = PLOT_L + (double)t * (PLOT_R - PLOT_L) / (double)span;

		fprintf(out,
			"<line x1=\"%.1f\" x2=\"%.1f\" y1=\"%d\" y2=\"%d\" stroke=\"#ddd\"/>"
			"<text x=\"%.1f\" y=\"%d\" text-anchor=\"middle\">",
			x, x, PLOT_T, PLOT_T + PLOT_H + 4, x, PLOT_T + PLOT_H + 16);
		put_time(out, t);
		fputs("</text>\n", out);
	}
	fprintf(
	    out,
	    "<text x=\"%d\" y=\"%d\" text-anchor=\"end\">time since the start of the run</text>\n"
	    "<text x=\"%d\" y=\"%d\">%s</text>\n</g>\n",
	    PLOT_R, PLOT_T + PLOT_H + 30, PLOT_L - 70, PLOT_T - 8,
	    tl->rss_tree.n ? "live bytes; RSS dashed" : "live bytes");
}

/* The whole tree's line: wide and pale, under the images' lines. */
#define TREE_COLOR "#9e9e9e"

static void put_polyline(const struct frame *f, const struct mt_timeline_series *s,
			 const char *color, double width, FILE *out)
{
	fprintf(out, "fill=\"none\" stroke=\"%s\" stroke-width=\"%g\" points=\"", color, width);
	for (size_t j = 0; j < s->n; j++)
		fprintf(out, "%s%.1f,%.1f", j ? " " : "", xb(f, s->first + j), yv(f, s->max[j]));
	fputs("\"/>\n", out);
}

/* An image's name in the legend: its pid, its exe's last component, its exec number. */
static void put_image_name(const struct mt_image *g, FILE *out)
{
	const char *base = strrchr(g->exe, '/');

	fprintf(out, "pid %" PRIu32 " ", g->pid);
	mt_output_xml_text(out, base ? base + 1 : *g->exe ? g->exe : "?");
	if (g->exec_seq)
		fprintf(out, " (after exec %" PRIu32 ")", g->exec_seq);
}

static void put_lines(const struct mt_report *rep, const struct frame *f, const size_t *img, int n,
		      FILE *out)
{
	const struct mt_timeline *tl = rep->timeline;

	/*
	 * The tree under the images, wide and pale, so that an image whose line is the tree's (the
	 * one process that allocates) is still seen on it; the largest image last, on top.
	 */
	fprintf(out, "<polyline class=\"tree\" data-peak=\"%" PRIu64 "\" ", series_peak(&tl->tree));
	put_polyline(f, &tl->tree, TREE_COLOR, 5, out);
	for (int k = n - 1; k >= 0; k--) {
		fprintf(out,
			"<polyline class=\"image\" data-image=\"%zu\" data-peak=\"%" PRIu64 "\" ",
			img[k], series_peak(&tl->images[img[k]]));
		put_polyline(f, &tl->images[img[k]], palette[k], 1.5, out);
	}
}

/*
 * Resident memory (RSS samples, aggregate/rss.h), beside the heap on the same axis: a dashed
 * path per image, in its heap line's colour (dark grey when it has none), and the tree's sum
 * dashed in grey. Paths, not polylines: the heap's lines stay what they were.
 */
#define RSS_TREE_COLOR	"#616161"
#define RSS_IMAGE_COLOR "#424242"

struct rss_lines {
	size_t *img; /* the images drawn, largest RSS peak first */
	int n;
	size_t hidden;
};

static const char *rss_color(const size_t *heap, int n_heap, size_t image)
{
	for (int k = 0; k < n_heap; k++)
		if (heap[k] == image)
			return palette[k];
	return RSS_IMAGE_COLOR;
}

static void put_rss_path(const struct frame *f, const struct mt_timeline_series *s,
			 const char *color, double width, FILE *out)
{
	fprintf(out,
		"fill=\"none\" stroke=\"%s\" stroke-width=\"%g\" stroke-dasharray=\"6 3\" "
		"d=\"",
		color, width);
	for (size_t j = 0; j < s->n; j++)
		fprintf(out, "%s%.1f %.1f", j ? "L" : "M", xb(f, s->first + j), yv(f, s->max[j]));
	fputs("\"/>\n", out);
}

static void put_rss(const struct mt_report *rep, const struct frame *f, const size_t *heap,
		    int n_heap, const struct rss_lines *r, FILE *out)
{
	const struct mt_timeline *tl = rep->timeline;

	if (!tl->rss_tree.n)
		return;
	fprintf(out, "<path class=\"rss-tree\" data-peak=\"%" PRIu64 "\" ",
		series_peak(&tl->rss_tree));
	put_rss_path(f, &tl->rss_tree, RSS_TREE_COLOR, 2, out);
	for (int k = r->n - 1; k >= 0; k--) {
		fprintf(out, "<path class=\"rss\" data-image=\"%zu\" data-peak=\"%" PRIu64 "\" ",
			r->img[k], series_peak(&tl->rss_images[r->img[k]]));
		put_rss_path(f, &tl->rss_images[r->img[k]], rss_color(heap, n_heap, r->img[k]), 1.2,
			     out);
	}
}

static void put_peak(const struct mt_report *rep, const struct frame *f, FILE *out)
{
	const struct mt_timeline *tl = rep->timeline;
	size_t b = (size_t)(tl->peak_ns / tl->width_ns);
	double x = xb(f, b), y = yv(f, tl->peak_bytes);
	char h[32];

	if (!tl->peak_bytes) {
		fprintf(out,
			"<text class=\"peak\" x=\"%d\" y=\"%d\" font-size=\"12\">nothing was "
			"ever live</text>\n",
			PLOT_L + 10, PLOT_T + PLOT_H - 10);
		return;
	}
	fprintf(out,
		"<g class=\"peak\"><circle cx=\"%.1f\" cy=\"%.1f\" r=\"4\" fill=\"#d62728\"/>"
		"<text x=\"%.1f\" y=\"%.1f\" font-size=\"12\" fill=\"#d62728\" text-anchor=\"%s\">"
		"peak %" PRIu64 " bytes (%s) at ",
		x, y, x + (x > (PLOT_L + PLOT_R) / 2 ? -8 : 8), y < PLOT_T + 14 ? y + 14 : y - 6,
		x > (PLOT_L + PLOT_R) / 2 ? "end" : "start", tl->peak_bytes,
		mt_bytesize_human(h, sizeof(h), tl->peak_bytes));
	put_time(out, tl->peak_ns);
	fputs("</text></g>\n", out);
}

/* Bytes allocated per second in each bucket, as bars under the plot. */
static void put_rate(const struct mt_report *rep, const struct frame *f, FILE *out)
{
	const struct mt_timeline *tl = rep->timeline;
	double secs = (double)tl->width_ns / 1e9, bar = (double)(PLOT_R - PLOT_L) / f->buckets;
	uint64_t top = 0, per_s;
	char h[32];

	for (size_t b = 0; b < tl->n_buckets; b++)
		if (tl->allocated[b] > top)
			top = tl->allocated[b];
	/* Sizes from a hostile artifact can make a rate no uint64_t holds. */
	per_s = (double)top / secs < 1.8e19 ? (uint64_t)((double)top / secs + 0.5) : UINT64_MAX;
	fprintf(out,
		"<g class=\"rate\"><text x=\"%d\" y=\"%d\" font-size=\"11\" fill=\"#444\">"
		"allocation rate, up to %s/s</text>\n"
		"<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"#999\"/>\n",
		PLOT_L, RATE_T - 6, mt_bytesize_human(h, sizeof(h), per_s), PLOT_L, PLOT_R,
		RATE_T + RATE_H, RATE_T + RATE_H);
	if (!top) {
		fputs("</g>\n", out);
		return;
	}
	fprintf(out, "<path fill=\"none\" stroke=\"#7f7f7f\" stroke-width=\"%.2f\" d=\"",
		bar < 1 ? 1 : bar);
	for (size_t b = 0; b < tl->n_buckets; b++)
		if (tl->allocated[b])
			fprintf(out, "M%.1f %dV%.1f", xb(f, b), RATE_T + RATE_H,
				RATE_T + RATE_H - (double)tl->allocated[b] * RATE_H / (double)top);
	fputs("\"/></g>\n", out);
}

static void put_legend(const struct mt_report *rep, const size_t *img, int n, size_t hidden,
		       FILE *out)
{
	const struct mt_timeline *tl = rep->timeline;
	char h[32];
	int row = 0;

	fprintf(out, "<g class=\"legend\" font-size=\"12\">\n");
	fprintf(out,
		"<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"5\" fill=\"" TREE_COLOR "\"/>"
		"<text x=\"%d\" y=\"%d\">whole tree (peak %s)</text>\n",
		PLOT_L, LEGEND_T + row * LEGEND_ROW - 4, PLOT_L + 20, LEGEND_T + row * LEGEND_ROW,
		mt_bytesize_human(h, sizeof(h), series_peak(&tl->tree)));
	for (int k = 0; k < n; k++) {
		row++;
		fprintf(out,
			"<rect x=\"%d\" y=\"%d\" width=\"14\" height=\"4\" fill=\"%s\"/>"
			"<text x=\"%d\" y=\"%d\"><title>",
			PLOT_L, LEGEND_T + row * LEGEND_ROW - 4, palette[k], PLOT_L + 20,
			LEGEND_T + row * LEGEND_ROW);
		mt_output_xml_text(out, rep->images[img[k]].exe);
		fputs("</title>", out);
		put_image_name(&rep->images[img[k]], out);
		fprintf(out, " (peak %s)</text>\n",
			mt_bytesize_human(h, sizeof(h), series_peak(&tl->images[img[k]])));
	}
	if (hidden)
		fprintf(out,
			"<text x=\"%d\" y=\"%d\">%zu more images with smaller peaks, not "
			"drawn</text>\n",
			PLOT_L, LEGEND_T + ++row * LEGEND_ROW, hidden);
	fputs("</g>\n", out);
}

/* The RSS rows of the legend, under the heap's (first_row of them): see put_rss(). */
static void put_rss_legend(const struct mt_report *rep, const struct rss_lines *r, int first_row,
			   FILE *out)
{
	const struct mt_timeline *tl = rep->timeline;
	int row = first_row;
	char h[32];

	if (!tl->rss_tree.n)
		return;
	fprintf(out, "<g class=\"rss-legend\" font-size=\"12\">\n");
	fprintf(out,
		"<line x1=\"%d\" x2=\"%d\" y1=\"%d\" y2=\"%d\" stroke=\"" RSS_TREE_COLOR "\" "
		"stroke-width=\"2\" stroke-dasharray=\"6 3\"/>"
		"<text x=\"%d\" y=\"%d\">resident memory (RSS, dashed): whole tree (peak %s)",
		PLOT_L, PLOT_L + 14, LEGEND_T + row * LEGEND_ROW - 4,
		LEGEND_T + row * LEGEND_ROW - 4, PLOT_L + 20, LEGEND_T + row * LEGEND_ROW,
		mt_bytesize_human(h, sizeof(h), series_peak(&tl->rss_tree)));
	for (int k = 0; k < r->n; k++) {
		fprintf(out, "; ");
		put_image_name(&rep->images[r->img[k]], out);
		fprintf(out, " %s",
			mt_bytesize_human(h, sizeof(h), series_peak(&tl->rss_images[r->img[k]])));
		if (k == 2 && r->n > 3) {
			fprintf(out, " ...");
			break;
		}
	}
	fputs("</text>\n</g>\n", out);
}

static int legend_rows(const struct mt_report *rep, int n, size_t hidden)
{
	return 1 + n + (hidden ? 1 : 0) + (rep->timeline->rss_tree.n ? 1 : 0);
}

/* The tree's bytes beyond the heap (--mappings, aggregate/mapped.h): dashed, on its own timeline.
 */
#define MAPPED_COLOR "#000"

static uint64_t mapped_peak(const struct mt_report *rep)
{
	return mt_mapped_any(rep->mapped) ? series_peak(&mt_mapped_timeline(rep->mapped)->tree) : 0;
}

/* Its line, and its legend in row row; nothing for a run without mapping records. */
static void put_mapped(const struct mt_report *rep, const struct frame *f, int row, FILE *out)
{
	const struct mt_timeline *ml = mt_mapped_timeline(rep->mapped);
	double span = (double)f->buckets * (double)rep->timeline->width_ns;
	char h[32];

	if (!mt_mapped_any(rep->mapped))
		return;
	fprintf(out,
		"<polyline class=\"mapped\" data-peak=\"%" PRIu64
		"\" fill=\"none\" stroke=\"" MAPPED_COLOR
		"\" stroke-width=\"1.5\" stroke-dasharray=\"6 3\" points=\"",
		mapped_peak(rep));
	for (size_t j = 0; j < ml->tree.n; j++) {
		double t = ((double)(ml->tree.first + j) + 0.5) * (double)ml->width_ns;
		double x = PLOT_L + t * (PLOT_R - PLOT_L) / span;

		fprintf(out, "%s%.1f,%.1f", j ? " " : "", x < PLOT_R ? x : PLOT_R,
			yv(f, ml->tree.max[j]));
	}
	fputs("\"/>\n", out);
	fprintf(out,
		"<g class=\"legend\" font-size=\"12\"><rect x=\"%d\" y=\"%d\" width=\"14\" "
		"height=\"2\" "
		"fill=\"" MAPPED_COLOR
		"\"/><text x=\"%d\" y=\"%d\">mapped beyond the heap: mmap and "
		"brk outside the allocator, whole tree (peak %s)</text></g>\n",
		PLOT_L, LEGEND_T + row * LEGEND_ROW - 3, PLOT_L + 20, LEGEND_T + row * LEGEND_ROW,
		mt_bytesize_human(h, sizeof(h), mapped_peak(rep)));
}

int mt_output_svg_plot(const struct mt_report *rep, FILE *out)
{
	const struct mt_timeline *tl = rep->timeline;
	struct frame f = {.buckets = tl->n_buckets};
	uint64_t peak = series_peak(&tl->tree), ystep;
	struct rss_lines r = {0};
	size_t *img, hidden;
	int n = mt_output_svg_lines(rep, &img, &hidden), rows, mapped = mt_mapped_any(rep->mapped);

	if (n < 0)
		return n;
	r.n = mt_output_svg_rss_lines(rep, &r.img, &r.hidden);
	if (r.n < 0) {
		free(img);
		return r.n;
	}
	/* One axis for the heap, the RSS and what is mapped: the plot's top is the largest peak. */
	if (series_peak(&tl->rss_tree) > peak)
		peak = series_peak(&tl->rss_tree);
	rows = legend_rows(rep, n, hidden) + mapped;
	if (mapped_peak(rep) > peak)
		peak = mapped_peak(rep);
	/*
	 * About four lines, the top one the first at or above the peak: the plot fills its height
	 * (four lines of a step rounded up could reach twice the peak).
	 */
	ystep = nice_bytes(peak / 4 ? peak / 4 + 1 : 1);
	if (ystep > UINT64_MAX / 4) /* a hostile artifact's sizes */
		ystep = UINT64_MAX / 4;
	f.ystep = ystep;
	/* ystep > peak / 4: at most 4 steps, no overflow. */
	f.ymax = ystep * (peak ? peak / ystep + (peak % ystep != 0) : 1);
	fprintf(
	    out,
	    "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"over-time\" width=\"%d\" "
	    "height=\"%d\" viewBox=\"0 0 %d %d\" font-family=\"sans-serif\" "
	    "data-peak-bytes=\"%" PRIu64 "\" data-peak-ns=\"%" PRIu64 "\" data-lines=\"%d\" "
	    "data-buckets=\"%zu\" data-bucket-ns=\"%" PRIu64 "\" data-plot-left=\"%d\" "
	    "data-plot-right=\"%d\" data-plot-top=\"%d\" data-plot-bottom=\"%d\">\n"
	    "<rect width=\"100%%\" height=\"100%%\" fill=\"#fff\"/>\n"
	    "<text x=\"%d\" y=\"22\" font-size=\"15\" font-weight=\"bold\">Heap over time</text>\n",
	    SVG_W, LEGEND_T + rows * LEGEND_ROW, SVG_W, LEGEND_T + rows * LEGEND_ROW,
	    tl->peak_bytes, tl->peak_ns, n + 1 + mapped, tl->n_buckets, tl->width_ns, PLOT_L,
	    PLOT_R, PLOT_T, PLOT_T + PLOT_H, PLOT_L);
	put_axes(rep, &f, out);
	put_lines(rep, &f, img, n, out);
	put_rss(rep, &f, img, n, &r, out);
	put_peak(rep, &f, out);
	put_rate(rep, &f, out);
	put_legend(rep, img, n, hidden, out);
	put_rss_legend(rep, &r, legend_rows(rep, n, hidden) - 1, out);
	put_mapped(rep, &f, legend_rows(rep, n, hidden), out);
	fputs("</svg>\n", out);
	free(img);
	free(r.img);
	return ferror(out) ? -EIO : 0;
}

int mt_output_svg(const struct mt_report *rep, FILE *out)
{
	fputs("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n", out);
	return mt_output_svg_plot(rep, out);
}
