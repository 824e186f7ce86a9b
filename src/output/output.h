/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The outputs of an aggregated run (report.h): the text report and the end-of-run summary
 * (output_text.c), one JSON document (output_json.c), the allocation sites and folded stacks
 * (output_sites.c), the heap over time as SVG (output_svg.c), the HTML report (output_html.c).
 * They print what aggregation counted and count nothing themselves.
 */
#ifndef MT_OUTPUT_H
#define MT_OUTPUT_H

#include <stddef.h>
#include <stdint.h>
#include <stdio.h>

#include "aggregate/report.h"
#include "aggregate/callers.h"
#include "aggregate/diff.h"

struct json_object;

/* One frame of a stack for people: the function, else where it is, then "at FILE:LINE". */
void mt_output_frame(FILE *out, const struct mt_frame_info *f);

/*
 * The leak scans (--leaks, output_leaks.c): per image bytes and blocks in memcheck's classes,
 * then the loss records of the lost and possibly lost blocks as memcheck prints them, biggest
 * first (with their stacks when the run recorded them; top bounds them, 0: all). Nothing for a
 * run without --leaks. 0 or -EIO.
 */
int mt_output_leaks(const struct mt_report *rep, FILE *out, size_t top);
/* An image's tree position, with its exec number after the first: "0.1", "0.1+1". */
const char *mt_output_image_pos(char *buf, size_t n, const struct mt_image *g);

/* output_handoffs.c: the report's section of the handoffs, and the summary's lines of them. */
void mt_output_handoffs(const struct mt_report *rep, FILE *out);
void mt_output_handoffs_summary(const struct mt_report *rep, FILE *out);

/* The end-of-run summary's line of the scans (nothing without --leaks). */
void mt_output_leaks_summary(const struct mt_report *rep, FILE *out);
/*
 * Resident memory (output_rss.c): the tree's peak RSS and each image's (peak, split, high-water
 * mark, at exit), top of them (0: all); nothing for an artifact without RSS samples. 0, -ENOMEM
 * or -EIO.
 */
int mt_output_rss(const struct mt_report *rep, FILE *out, size_t top);
/* The end-of-run summary's line of the tree's peak RSS (nothing without samples). */
void mt_output_rss_summary(const struct mt_report *rep, FILE *out);
struct json_object;
/* report --json: an image's "rss" object (NULL: no sample), the run's. */
struct json_object *mt_output_json_rss_image(const struct mt_report *rep, size_t image);
struct json_object *mt_output_json_rss(const struct mt_report *rep);
/* The same for the JSON document: the counts of one image's scan (NULL when not scanned). */
struct json_object *mt_output_json_leak_counts(const struct mt_leak_counts *c);
/* ... and the tree's loss records, every class (those suppressed left out). */
struct json_object *mt_output_json_loss_records(const struct mt_report *rep);

/*
 * Mapped memory (--mappings, output_mapped.c): the tree's peaks, then the images that mapped
 * anything, by their peak beyond the heap (top bounds them, 0: all). Nothing for a run without
 * mapping records. 0, -ENOMEM or -EIO.
 */
int mt_output_mapped(const struct mt_report *rep, FILE *out, size_t top);
/* The end-of-run summary's line of it (nothing without mapping records). */
void mt_output_mapped_summary(const struct mt_report *rep, FILE *out);
/* The JSON object of one image's or the tree's counts c; NULL without mapping records. */
struct json_object *mt_output_json_mapped(const struct mt_report *rep,
					  const struct mt_mapped_counts *c);

/*
 * What the calls of a function the run counted but did not record (mt_report_not_recorded) leave
 * out of the figures, one sentence for people, into buf: the function, its allocator, its file,
 * the count of calls.
 */
void mt_output_not_recorded_reason(const struct mt_report *rep,
				   const struct mt_report_not_recorded *u, char *buf, size_t len);
/* The file of an id in rep's files, NULL when no record describes it. */
const struct mt_report_file *mt_output_file_of(const struct mt_report *rep, uint16_t file_id);

/* Human report; top bounds the process and file tables (0: all). Returns 0 or -EIO. */
int mt_output_text(const struct mt_report *rep, FILE *out, size_t top);
/*
 * One JSON document (json-c), its sites written one at a time. Returns 0, -ENOMEM, or the errno of
 * a write that failed (-ENOSPC, -EPIPE): then it stops there.
 */
int mt_output_json(const struct mt_report *rep, FILE *out);

/* What a site weighs: a folded stack's weight, the order of the top sites. */
enum mt_folded_metric {
	MT_FOLDED_ALLOCATIONS = 0, /* allocations and reallocs made from it */
	MT_FOLDED_BYTES,	   /* their bytes */
	MT_FOLDED_LIVE,		   /* bytes of its blocks never freed */
	MT_FOLDED_PEAK,		   /* bytes of its blocks live at the tree's peak */
	MT_FOLDED_TEMPORARY,	   /* its temporary allocations (aggregate/images.h) */
	MT_FOLDED_LEAKED,	   /* --folded only: its bytes definitely and indirectly lost */
};

/*
 * The callers or callees of a function (report --callers/--callees, aggregate/callers.h), heaviest
 * by first, top of them (0: all). 0, -ENOMEM or -EIO.
 */
int mt_output_calls(const struct mt_calls *c, FILE *out, size_t top, enum mt_folded_metric by);
/* c's rows, heaviest by first (ties by name): an array to free, NULL when out of memory. */
const struct mt_call_row **mt_output_calls_sorted(const struct mt_calls *c,
						  enum mt_folded_metric by);

/*
 * The top allocation sites (--stacks), symbolised (mt_sites_symbolize), heaviest by first.
 * 0, -ENOMEM or -EIO.
 */
int mt_output_sites(const struct mt_report *rep, FILE *out, size_t top, enum mt_folded_metric by);

/*
 * Folded stacks, one line per distinct symbolised stack: frames from the outermost to the
 * allocator's caller, ';'-separated, a space, the weight (flamegraph.pl, inferno). Stacks of
 * weight 0 are left out. MT_FOLDED_LEAKED weighs a stack by its loss records (aggregate/leaks.h)
 * of the two lost classes, suppressed ones left out. 0, -ENOMEM or -EIO.
 */
int mt_output_folded(const struct mt_report *rep, enum mt_folded_metric metric, FILE *out);
/*
 * The same per process image, under a root frame "PROGRAM (pid N)" (the executable's last
 * component): for a report loaded with its cells (MT_REPORT_CELLS), whose sites per image it
 * weighs; leaked weighs each image's loss records. 0, -ENOMEM or -EIO.
 */
int mt_output_folded_by_process(const struct mt_report *rep, enum mt_folded_metric metric,
				FILE *out);

/*
 * The allocation sites, symbolised, as a pprof profile (gzip'd profile.proto,
 * src/output/output_pprof.c): sample types alloc_objects, alloc_space, inuse_objects, inuse_space
 * (blocks never freed). 0, -ENOMEM or a negative errno of writing.
 */
int mt_output_pprof(const struct mt_report *rep, FILE *out);

/*
 * The heap over time (timeline.h) as an SVG document: the tree's line, the images with the
 * largest peaks, the peak marked, the allocation rate. 0, -ENOMEM or -EIO.
 */
int mt_output_svg(const struct mt_report *rep, FILE *out);
/* The same picture as an <svg> element, to embed in HTML. */
int mt_output_svg_plot(const struct mt_report *rep, FILE *out);
/*
 * The images whose lines the picture draws, largest peak first, into *images (to free; room for
 * one more); *hidden: images with a line not drawn. Returns their number, or -ENOMEM.
 */
int mt_output_svg_lines(const struct mt_report *rep, size_t **images, size_t *hidden);
/* The same for the images' RSS lines (timeline.h's rss_images), by their RSS peak. */
int mt_output_svg_rss_lines(const struct mt_report *rep, size_t **images, size_t *hidden);
/* s as XML or HTML text: each line made printable (printable.h), markup escaped. */
void mt_output_xml_text(FILE *out, const char *s);

/* The flamegraph's weights, the page's views of the sites. */
enum mt_flame_weight {
	MT_FLAME_ALLOCATIONS = 0, /* allocations and reallocs */
	MT_FLAME_BYTES,		  /* their bytes */
	MT_FLAME_LIVE,		  /* bytes never freed (live at exit) */
	MT_FLAME_PEAK,		  /* bytes live at the tree's peak */
	MT_FLAME_TEMPORARY,	  /* temporary allocations */
	MT_FLAME_DEFINITE,	  /* bytes definitely lost (run --leaks: the loss records) */
	MT_FLAME_INDIRECT,	  /* bytes indirectly lost */
	MT_FLAME_WEIGHTS,
};

/* A node: one frame name on one path from the outermost frame; weights of the sites below. */
struct mt_flame_node {
	uint32_t name;	 /* index of names; UINT32_MAX for the root */
	uint32_t parent; /* index of nodes; UINT32_MAX for the root */
	uint32_t depth;	 /* 0 for the root */
	uint64_t w[MT_FLAME_WEIGHTS];
};

/* The sites (symbolised) merged into a tree by frame names, as folded stacks merge them. */
struct mt_flame {
	char **names;
	size_t n_names;
	struct mt_flame_node *nodes; /* nodes[0] is the root; a parent comes before its children */
	size_t n_nodes, cap_nodes;
	uint32_t *site_node; /* by site index: the node its path ends at, UINT32_MAX: none */
};

int mt_flame_build(const struct mt_report *rep, struct mt_flame **fl);
void mt_flame_free(struct mt_flame *fl);

/*
 * The HTML report, one self-contained file: the summary (the text report, top as there), the
 * heap over time, the flamegraph of allocation sites (symbolised; its weights come from the
 * cells: rep loaded with MT_REPORT_CELLS), the bottom-up tables, the largest blocks never freed.
 * 0, -ENOMEM or -EIO.
 */
int mt_output_html(const struct mt_report *rep, FILE *out, size_t top);

/*
 * The few lines `memtrack run` prints when the command is done. Returns 0, or a negative errno
 * after printing "memtrack: PATH: REASON" on stderr.
 */
int mt_output_summary(const char *artifact_path, FILE *out);

/* ---- two runs compared (memtrack report --diff, aggregate/diff.h) ---- */

/* A --max-increase limit on a tree metric, and what the comparison found. */
struct mt_diff_limit {
	enum mt_diff_metric metric;
	double max_percent; /* the largest growth allowed */
	double percent;	    /* the growth found (mt_diff_percent) */
	bool exceeded;
};

struct mt_diff_view {
	const struct mt_diff *d;
	const char *path[2];		/* base, new */
	const struct mt_report *rep[2]; /* base, new */
	const struct mt_diff_limit *limits;
	size_t n_limits;
	size_t top; /* rows of each level shown in text, 0: all */
};

/* The comparison as text: the tree, then the rows of each level that changed. 0 or -EIO. */
int mt_output_diff_text(const struct mt_diff_view *v, FILE *out);
/* The comparison as one JSON document, every row. 0, -ENOMEM or -EIO. */
int mt_output_diff_json(const struct mt_diff_view *v, FILE *out);
/*
 * The comparison as one self-contained HTML page: the tree, then each level's changed rows in
 * tables the page's script sorts. 0, -ENOMEM or -EIO.
 */
int mt_output_diff_html(const struct mt_diff_view *v, FILE *out);
/* A string of the traced program (any bytes) as a JSON string, UTF-8; NULL when out of memory. */
struct json_object *mt_output_json_string(const char *s);

/* memtrack bench (output_bench.c, docs/BENCH.md): 0 or -EIO. */
struct mt_bench_split;
/*
 * The HTML report of an artifact of memtrack bench, with its benchmark selector
 * (output_html_bench.c); bench NULL or with no window: mt_output_html's page.
 */
int mt_output_html_bench(const struct mt_report *rep, const struct mt_bench_split *bench, FILE *out,
			 size_t top);
struct mt_bench_cmp;
struct mt_bench_limits;
/* The table of benchmarks, and with --stacks each one's top sites. */
int mt_output_bench_text(const struct mt_bench_split *s, FILE *out);
/* {"benchmarks": [{"uri", "name", "allocations", ...}], ...} */
int mt_output_bench_json(const struct mt_bench_split *s, FILE *out);
/* Each benchmark's metrics, base and new, and which exceed a limit. */
int mt_output_bench_compare_text(const struct mt_bench_cmp *c, FILE *out);
/* A pull request's comment: the table, with the comparison when c is not NULL. */
int mt_output_bench_markdown(const struct mt_bench_split *s, const struct mt_bench_cmp *c,
			     const struct mt_bench_limits *limits, FILE *out);

#endif
