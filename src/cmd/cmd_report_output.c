// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack report FILE: one artifact's report in the form its options ask for, on stdout (the
 * text report, JSON, folded stacks, --callers) or in the files of --html, --svg and --pprof, with
 * --suppressions applied and --strict-leaks' status; CodSpeed's artifact is summarized by
 * cmd_report_codspeed.c.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/bench.h"
#include "aggregate/suppress_parse.h"
#include "base/printable.h"
#include "cmd/cmd.h"
#include "cmd/cmd_report.h"
#include "codspeed/codspeed_read.h"
#include "output/output.h"

/* What a file output holds. */
enum report_file { FILE_SVG, FILE_HTML, FILE_PPROF };

static int write_output(enum report_file what, const struct mt_report *rep,
			const struct mt_bench_split *bench, FILE *f,
			const struct mt_cmd_report_opts *o)
{
	switch (what) {
	case FILE_SVG:
		return mt_output_svg(rep, f);
	case FILE_HTML:
		return mt_output_html_bench(rep, bench, f, o->top);
	case FILE_PPROF:
		return mt_output_pprof(rep, f);
	}
	return -EINVAL;
}

struct report_file_job {
	enum report_file what;
	const struct mt_report *rep;
	const struct mt_bench_split *bench; /* the page's benchmarks, NULL: none */
	const struct mt_cmd_report_opts *o;
};

static int write_job(FILE *f, const void *arg)
{
	const struct report_file_job *j = arg;

	return write_output(j->what, j->rep, j->bench, f, j->o);
}

static int write_file(const char *path, enum report_file what, const struct mt_report *rep,
		      const struct mt_bench_split *bench, const struct mt_cmd_report_opts *o)
{
	struct report_file_job j = {.what = what, .rep = rep, .bench = bench, .o = o};

	return mt_cmd_write_file(path, write_job, &j);
}

/* The files of --html, --svg and --pprof; nothing on stdout. */
static int write_files(struct mt_report *rep, const char *path, const struct mt_cmd_report_opts *o)
{
	struct mt_bench_split *bench;
	int ret = 0;

	if ((o->html || o->pprof) && mt_sites_count(rep->sites))
		ret = mt_sites_symbolize(rep->sites, NULL);
	if (ret) {
		fprintf(stderr, "memtrack: out of memory\n");
		return 1;
	}
	if (o->svg && write_file(o->svg, FILE_SVG, rep, NULL, o))
		return 1;
	if (o->pprof && write_file(o->pprof, FILE_PPROF, rep, NULL, o))
		return 1;
	if (!o->html)
		return 0;
	/* An artifact of memtrack bench: the page gets its benchmark selector. */
	bench = rep->bench_marks ? mt_cmd_bench_for_page(path) : NULL;
	ret = write_file(o->html, FILE_HTML, rep, bench, o);
	mt_bench_split_free(bench);
	return ret;
}

/* print_calls' status when no site passes through the function (said on stderr). */
#define MT_REPORT_NO_MATCH 1

/* --callers FUNC or --callees FUNC, ordered by --sites-by. */
static int print_calls(const struct mt_report *rep, const struct mt_cmd_report_opts *o)
{
	struct mt_calls *c;
	char p[MT_PRINTABLE_MAX];
	int ret = mt_calls_build(rep, o->calls, o->callers, &c);

	if (ret)
		return ret;
	/* As grep does for no match: a sentence and status 1 (a misspelt name, most likely). */
	if (!c->total.sites) {
		fprintf(stderr, "memtrack: no allocation site passes through '%s'\n",
			mt_printable(p, sizeof(p), o->calls));
		mt_calls_free(c);
		return MT_REPORT_NO_MATCH;
	}
	ret = mt_output_calls(c, stdout, o->top, o->sites_by);
	mt_calls_free(c);
	return ret;
}

/* The report of a memtrack artifact, in the form asked for. */
static int print_report(struct mt_report *rep, const struct mt_cmd_report_opts *o)
{
	int ret = 0;

	if (mt_sites_count(rep->sites))
		ret = mt_sites_symbolize(rep->sites, NULL);
	if (ret)
		return ret;
	if (o->folded && o->by_process)
		return mt_output_folded_by_process(rep, o->metric, stdout);
	if (o->folded)
		return mt_output_folded(rep, o->metric, stdout);
	if (o->calls)
		return print_calls(rep, o);
	if (o->json)
		return mt_output_json(rep, stdout);
	ret = mt_output_text(rep, stdout, o->top);
	if (!ret)
		ret = mt_output_sites(rep, stdout, o->top, o->sites_by);
	return ret ? ret : mt_output_leaks(rep, stdout, o->top);
}

/* The files of --suppressions read: 0 and *ss (NULL when none was given), or 1, said. */
static int read_suppressions(const struct mt_cmd_report_opts *o, struct mt_suppressions **ss)
{
	char err[MT_PRINTABLE_MAX + 1200];
	int ret = 0;

	*ss = NULL;
	if (!o->n_supp)
		return 0;
	*ss = mt_supp_new();
	if (!*ss)
		ret = -ENOMEM;
	for (size_t i = 0; !ret && i < o->n_supp; i++)
		ret = mt_supp_read(*ss, o->supp[i], err, sizeof(err));
	if (!ret)
		return 0;
	fprintf(stderr, "memtrack: %s\n", ret == -ENOMEM ? "out of memory" : err);
	mt_supp_free(*ss);
	*ss = NULL;
	return 1;
}

/* The loss records the suppressions match hidden, on their symbolised stacks. 0 or -ENOMEM. */
static int suppress(struct mt_report *rep, struct mt_suppressions *ss)
{
	int ret = 0;

	if (!ss)
		return 0;
	if (mt_sites_count(rep->sites))
		ret = mt_sites_symbolize(rep->sites, NULL);
	return ret ? ret : mt_leaks_suppress(rep->leaks, rep->sites, ss);
}

/* --strict-leaks: said on stderr, the exit status; a run without --leaks is a mistake too. */
static int strict_leaks(const struct mt_report *rep, const char *path)
{
	const struct mt_leak_counts *t = mt_leaks_total(rep->leaks);
	char p[MT_PRINTABLE_MAX];

	if (!mt_leaks_any(rep->leaks)) {
		fprintf(stderr, "memtrack: %s: the run made no leak scan (memtrack run --leaks)\n",
			mt_printable(p, sizeof(p), path));
		return 1;
	}
	if (!t->blocks[MT_LEAK_DEFINITE])
		return 0;
	fprintf(stderr, "memtrack: %" PRIu64 " bytes in %" PRIu64 " blocks are definitely lost\n",
		t->bytes[MT_LEAK_DEFINITE], t->blocks[MT_LEAK_DEFINITE]);
	return MT_EXIT_LEAKED;
}

static int report_loaded(struct mt_report *rep, const char *path,
			 const struct mt_cmd_report_opts *o)
{
	int ret;

	if (o->html || o->svg || o->pprof)
		return write_files(rep, path, o);
	ret = print_report(rep, o);
	if (ret > 0) /* said already: the exit status */
		return ret;
	if (fflush(stdout) && (!ret || ret == -EIO))
		ret = -errno;
	if (ret) {
		fprintf(stderr, "memtrack: cannot write the report: %s\n", strerror(-ret));
		return 1;
	}
	return o->strict_leaks ? strict_leaks(rep, path) : 0;
}

int mt_cmd_report_output(const char *path, const struct mt_cmd_report_opts *o)
{
	bool json = o->json;
	struct mt_suppressions *ss;
	char err[MT_ARTIFACT_ERRLEN];
	struct mt_report *rep;
	int ret;
	char p[MT_PRINTABLE_MAX];

	const char *outs[] = {o->html, o->svg, o->pprof};

	/*
	 * main ignores SIGPIPE for run's sake; a report read through `| head` ends as cat's does,
	 * silently, of SIGPIPE, rather than with a write error.
	 */
	signal(SIGPIPE, SIG_DFL);

	for (size_t i = 0; i < sizeof(outs) / sizeof(outs[0]); i++) {
		const char *out = outs[i];

		if (out && mt_cmd_same_file(out, path)) {
			fprintf(stderr,
				"memtrack: %s: writing there would overwrite the artifact\n",
				mt_printable(p, sizeof(p), out));
			return 1;
		}
	}
	/* memtrack's artifacts start with their own magic, CodSpeed's with a zstd frame. */
	if (mt_codspeed_is_artifact(path) && o->n_supp) {
		fprintf(stderr,
			"memtrack: %s: CodSpeed's memory artifact has no leak scan to "
			"suppress in\n",
			mt_printable(p, sizeof(p), path));
		return 1;
	}
	if (mt_codspeed_is_artifact(path) && (o->folded || o->pprof || o->html || o->svg)) {
		fprintf(stderr, "memtrack: %s: CodSpeed's memory artifact %s\n",
			mt_printable(p, sizeof(p), path),
			o->folded || o->pprof ? "holds no stacks"
					      : "is summarized in text or JSON only");
		return 1;
	}
	if (mt_codspeed_is_artifact(path))
		return mt_cmd_report_codspeed(path, json);
	/* A mistake in a suppressions file is said before the artifact is read. */
	if (read_suppressions(o, &ss))
		return 1;
	/* The page's process selector and time range need the sites per image and bucket. */
	/* The page's views and the exports by process need the sites per image (cells.h). */
	ret = mt_report_load_with(path, o->html || o->pprof || o->by_process ? MT_REPORT_CELLS : 0,
				  &rep, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), path), err);
		mt_supp_free(ss);
		return 1;
	}
	/*
	 * Sites are made of allocation calls: a run that made none (gzip, a tree of shells that
	 * only exec) has no sites and an empty flamegraph, whether or not it ran with --stacks.
	 */
	if ((o->folded || o->pprof || o->calls) && !mt_sites_count(rep->sites) &&
	    rep->totals.allocations + rep->totals.reallocs) {
		fprintf(stderr,
			"memtrack: %s: the run recorded no stacks (memtrack run --stacks records "
			"them)\n",
			mt_printable(p, sizeof(p), path));
		ret = 1;
	} else if (o->folded && o->metric == MT_FOLDED_LEAKED && !mt_leaks_any(rep->leaks)) {
		fprintf(stderr,
			"memtrack: %s: --folded=leaked needs a leak scan (memtrack run --leaks)\n",
			mt_printable(p, sizeof(p), path));
		ret = 1;
	} else if (suppress(rep, ss)) {
		fprintf(stderr, "memtrack: out of memory\n");
		ret = 1;
	} else {
		ret = report_loaded(rep, path, o);
	}
	mt_report_free(rep);
	mt_supp_free(ss);
	return ret;
}
