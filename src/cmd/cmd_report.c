// SPDX-License-Identifier: GPL-2.0
/* memtrack report: the command line of reading an artifact. */
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <signal.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "cmd/cmd.h"
#include "codspeed/codspeed_read.h"
#include "output/output.h"
#include "aggregate/bench.h"
#include "aggregate/suppress_parse.h"
#include "base/outfile.h"
#include "base/printable.h"
#include "base/privileges.h"

static void usage(FILE *out)
{
	fprintf(out,
		"usage: memtrack report [--json | --folded[=METRIC] [--by-process]] [--top N]\n"
		"                       [--sites-by METRIC] FILE\n"
		"       memtrack report [--html OUT.html] [--svg OUT.svg --over-time] "
		"[--pprof OUT.pb.gz]\n"
		"                       [--top N] FILE\n"
		"       memtrack report --follow [--top N] [--sites-by METRIC] FILE\n"
		"       memtrack report --diff [--json | --html OUT.html] [--top N]\n"
		"                       [--max-increase METRIC=PERCENT] BASE NEW\n"
		"Read an artifact written by 'memtrack run' and print what the run allocated.\n"
		"FILE may also be CodSpeed's memory artifact (PID.MemtrackArtifact.msgpack, "
		"written by\n"
		"'exec-harness -m memory' or CodSpeed's memtrack): its events are summarized.\n"
		"\n"
		"  --json      one JSON document instead of the human report\n"
		"  --folded[=METRIC]\n"
		"              folded stacks of a run recorded with --stacks (flamegraph.pl,\n"
		"              inferno), weighted by METRIC: allocations (default), bytes,\n"
		"              live (bytes never freed), peak (bytes live at the tree's peak),\n"
		"              temporary (blocks freed right after their allocation) or\n"
		"              leaked (bytes definitely and indirectly lost: run --leaks)\n"
		"  --by-process\n"
		"              with --folded: each process image's stacks apart, under a root\n"
		"              frame 'PROGRAM (pid N)'\n"
		"  --html OUT.html\n"
		"              write the report as one self-contained HTML page: summary, heap\n"
		"              over time, flamegraph of allocation sites (per process image and\n"
		"              time range), bottom-up tables, largest blocks at exit\n"
		"  --svg OUT.svg --over-time\n"
		"              write the heap over time (live bytes per process image and in\n"
		"              all, the peak, the allocation rate) as an SVG picture\n"
		"  --pprof OUT.pb.gz\n"
		"              write the sites of a run recorded with --stacks as a gzip'd\n"
		"              pprof profile (go tool pprof, Pyroscope, Speedscope)\n"
		"  --top N     rows of the process, file and site tables (default 20, 0: all),\n"
		"              in the text report and in the page of --html\n"
		"  --sites-by METRIC\n"
		"              order of the text report's top sites: allocations, bytes\n"
		"              (default), live, peak or temporary, as for --folded\n"
		"  --callers FUNC, --callees FUNC\n"
		"              who calls FUNC, or what it calls, over the allocation sites\n"
		"              (--stacks): their allocations, bytes, live at exit, ordered\n"
		"              by --sites-by\n"
		"  --diff BASE NEW\n"
		"              compare two artifacts: the tree, process images, files,\n"
		"              families and sites, with each change (text, --json, or a\n"
		"              page with --html OUT.html)\n"
		"  --max-increase METRIC=PERCENT\n"
		"              with --diff: exit 3 when the tree's METRIC (allocations,\n"
		"              bytes, peak, live, temporary) grew by more than PERCENT\n"
		"  --strict-leaks\n"
		"              exit 4 when a leak scan (memtrack run --leaks) found a block\n"
		"              definitely lost; 1 when the run made none\n"
		"  --suppressions FILE\n"
		"              hide the loss records FILE's Memcheck:Leak suppressions match\n"
		"              (memcheck's syntax; docs/LEAKS.md); they are counted as\n"
		"              suppressed, and --strict-leaks ignores them (up to 16 files)\n"
		"  --follow    watch FILE while memtrack run (or attach) writes it: every\n"
		"              second, the figures so far, the heap live now and the top\n"
		"              sites by bytes live now (--top, default 10; --sites-by);\n"
		"              the whole report once the run ends; Ctrl-C stops watching\n"
		"  --benchmarks\n"
		"              split an artifact of 'memtrack bench' by benchmark window:\n"
		"              each benchmark's figures (text, or --json; docs/BENCH.md)\n"
		"  -h, --help  this help\n");
}

static bool parse_top(const char *s, size_t *top)
{
	char *end;
	unsigned long long v;

	if (*s < '0' || *s > '9')
		return false;
	errno = 0;
	v = strtoull(s, &end, 10);
	if (errno || *end || v > SIZE_MAX)
		return false;
	*top = (size_t)v;
	return true;
}

/* The options without a letter. */
enum {
	OPT_HTML = 256,
	OPT_SVG,
	OPT_OVER_TIME,
	OPT_PPROF,
	OPT_BY_PROCESS,
	OPT_SITES_BY,
	OPT_DIFF,
	OPT_MAX_INCREASE,
	OPT_CALLERS,
	OPT_CALLEES,
	OPT_STRICT_LEAKS,
	OPT_SUPPRESSIONS,
	OPT_BENCHMARKS,
	OPT_FOLLOW,
};

/* memcheck takes up to 100 files; a report needs far fewer. */
#define MAX_SUPP_FILES 16

struct report_opts {
	bool json;
	bool folded;
	enum mt_folded_metric metric;
	bool by_process;		/* --folded's stacks under a root frame per process image */
	enum mt_folded_metric sites_by; /* the top sites' order */
	size_t top;
	const char *html; /* --html: the page's path */
	const char *svg;  /* --svg: the picture's path */
	bool over_time;
	const char *pprof; /* --pprof: the profile's path */
	bool diff;	   /* --diff BASE NEW */
	const char *calls; /* --callers or --callees: the function */
	bool callers;
	bool strict_leaks;		  /* exit MT_EXIT_LEAKED when a block is definitely lost */
	const char *supp[MAX_SUPP_FILES]; /* --suppressions, in their order */
	size_t n_supp;
	struct mt_cmd_diff_limits limits;
	bool benchmarks; /* split by memtrack bench's windows (cmd_bench.c) */
	bool follow;	 /* the views of a run in progress (cmd_follow.c) */
	bool sites_by_given;
};

/* What a file output holds. */
enum report_file { FILE_SVG, FILE_HTML, FILE_PPROF };

static int write_output(enum report_file what, const struct mt_report *rep,
			const struct mt_bench_split *bench, FILE *f, const struct report_opts *o)
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

/* Whether path names the file the artifact is (writing there would destroy it). */
static bool same_file(const char *path, const char *artifact)
{
	struct stat a, b;

	return !stat(path, &a) && !stat(artifact, &b) && a.st_dev == b.st_dev &&
	       a.st_ino == b.st_ino;
}

struct report_file_job {
	enum report_file what;
	const struct mt_report *rep;
	const struct mt_bench_split *bench; /* the page's benchmarks, NULL: none */
	const struct report_opts *o;
};

static int write_job(FILE *f, const void *arg)
{
	const struct report_file_job *j = arg;

	return write_output(j->what, j->rep, j->bench, f, j->o);
}

static int write_file(const char *path, enum report_file what, const struct mt_report *rep,
		      const struct mt_bench_split *bench, const struct report_opts *o)
{
	struct report_file_job j = {.what = what, .rep = rep, .bench = bench, .o = o};

	return mt_cmd_write_file(path, write_job, &j);
}

/* The files of --html, --svg and --pprof; nothing on stdout. */
static int write_files(struct mt_report *rep, const char *path, const struct report_opts *o)
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
static int print_calls(const struct mt_report *rep, const struct report_opts *o)
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
static int print_report(struct mt_report *rep, const struct report_opts *o)
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
static int read_suppressions(const struct report_opts *o, struct mt_suppressions **ss)
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

static int report_loaded(struct mt_report *rep, const char *path, const struct report_opts *o)
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

static int run_report(const char *path, const struct report_opts *o)
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

		if (out && same_file(out, path)) {
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

static const struct mt_cmd report_cmd;

/*
 * A site metric's name (NULL: allocations, --folded's default). 0 or the usage error. leaked
 * weighs folded stacks only: the top sites and --callers are not ordered by it.
 */
static int parse_metric(const char *opt, const char *arg, enum mt_folded_metric *m)
{
	bool folded = !strcmp(opt, "--folded");

	static const char *const names[] = {
	    [MT_FOLDED_ALLOCATIONS] = "allocations",
	    [MT_FOLDED_BYTES] = "bytes",
	    [MT_FOLDED_LIVE] = "live",
	    [MT_FOLDED_PEAK] = "peak",
	    [MT_FOLDED_TEMPORARY] = "temporary",
	    [MT_FOLDED_LEAKED] = "leaked",
	};
	char a[MT_PRINTABLE_MAX];

	for (size_t i = 0; i < sizeof(names) / sizeof(names[0]); i++) {
		if (i == MT_FOLDED_LEAKED && !folded)
			continue;
		if (!arg ? i == MT_FOLDED_ALLOCATIONS : !strcmp(arg, names[i])) {
			*m = i;
			return 0;
		}
	}
	return mt_cmd_usage_error(
	    &report_cmd, "%s takes allocations, bytes, live, peak%s or temporary, not '%s'", opt,
	    folded ? ", leaked" : "", mt_printable(a, sizeof(a), arg));
}

/* --max-increase METRIC=PERCENT: how much a tree metric may grow under --diff. */
static int parse_limit(const char *arg, struct mt_cmd_diff_limits *l)
{
	double pct;
	int m, err;

	err = mt_cmd_max_increase(&report_cmd, arg, mt_diff_metric_of,
				  "allocations, bytes, peak, live or temporary", &m, &pct);
	if (err)
		return err;
	if (l->n == MT_CMD_DIFF_LIMITS)
		return mt_cmd_usage_error(&report_cmd, "at most %d --max-increase limits",
					  MT_CMD_DIFF_LIMITS);
	l->metric[l->n] = m;
	l->max_percent[l->n++] = pct;
	return 0;
}

static int report_option(int c, const char *arg, void *ctx)
{
	struct report_opts *o = ctx;
	char a[MT_PRINTABLE_MAX];

	switch (c) {
	case 'j':
		o->json = true;
		return 0;
	case 'f':
		o->folded = true;
		return parse_metric("--folded", arg, &o->metric);
	case OPT_SITES_BY:
		o->sites_by_given = true;
		return parse_metric("--sites-by", arg, &o->sites_by);
	case OPT_FOLLOW:
		o->follow = true;
		return 0;
	case OPT_HTML:
		o->html = arg;
		return 0;
	case OPT_SVG:
		o->svg = arg;
		return 0;
	case OPT_OVER_TIME:
		o->over_time = true;
		return 0;
	case OPT_PPROF:
		o->pprof = arg;
		return 0;
	case OPT_DIFF:
		o->diff = true;
		return 0;
	case OPT_CALLERS:
	case OPT_CALLEES:
		if (o->calls)
			return mt_cmd_usage_error(&report_cmd,
						  "one of --callers and --callees at a time");
		o->calls = arg;
		o->callers = c == OPT_CALLERS;
		return 0;
	case OPT_STRICT_LEAKS:
		o->strict_leaks = true;
		return 0;
	case OPT_BENCHMARKS:
		o->benchmarks = true;
		return 0;
	case OPT_BY_PROCESS:
		o->by_process = true;
		return 0;
	case OPT_SUPPRESSIONS:
		if (o->n_supp == MAX_SUPP_FILES)
			return mt_cmd_usage_error(&report_cmd, "at most %d --suppressions files",
						  MAX_SUPP_FILES);
		o->supp[o->n_supp++] = arg;
		return 0;
	case OPT_MAX_INCREASE:
		return parse_limit(arg, &o->limits);
	case 't':
		if (!parse_top(arg, &o->top))
			return mt_cmd_usage_error(&report_cmd, "--top needs a number, not '%s'",
						  mt_printable(a, sizeof(a), arg));
		return 0;
	}
	return -EINVAL;
}

static const struct option report_longopts[] = {
    {"json", no_argument, NULL, 'j'},
    {"top", required_argument, NULL, 't'},
    {"folded", optional_argument, NULL, 'f'},
    {"html", required_argument, NULL, OPT_HTML},     /* output_html.c */
    {"svg", required_argument, NULL, OPT_SVG},	     /* output_svg.c */
    {"over-time", no_argument, NULL, OPT_OVER_TIME}, /* the one picture --svg draws */
    {"pprof", required_argument, NULL, OPT_PPROF},   /* output_pprof.c */
    {"sites-by", required_argument, NULL, OPT_SITES_BY},
    {"callers", required_argument, NULL, OPT_CALLERS}, /* aggregate/callers.c */
    {"callees", required_argument, NULL, OPT_CALLEES},
    {"diff", no_argument, NULL, OPT_DIFF},			 /* cmd_diff.c */
    {"max-increase", required_argument, NULL, OPT_MAX_INCREASE}, /* with --diff */
    {"strict-leaks", no_argument, NULL, OPT_STRICT_LEAKS},	 /* output_leaks.c */
    {"benchmarks", no_argument, NULL, OPT_BENCHMARKS},		 /* cmd_bench.c */
    {"follow", no_argument, NULL, OPT_FOLLOW},			 /* cmd_follow.c */
    {"suppressions", required_argument, NULL, OPT_SUPPRESSIONS}, /* aggregate/suppress.h */
    {"by-process", no_argument, NULL, OPT_BY_PROCESS},		 /* output_sites.c */
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

static const struct mt_cmd report_cmd = {
    .name = "memtrack report",
    .shortopts = "h",
    .longopts = report_longopts,
    .help = usage,
    .option = report_option,
};

/*
 * Two of --html, --svg and --pprof naming one regular file, existing or not (the last would
 * replace the first): said. A device (/dev/null) may take several.
 */
static bool output_twice(const struct report_opts *o)
{
	const char *paths[] = {o->html, o->svg, o->pprof};
	const char *names[] = {"--html", "--svg", "--pprof"};
	char a[MT_PRINTABLE_MAX];
	struct stat st;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		for (size_t j = 0; j < i; j++) {
			if (!paths[i] || !paths[j] ||
			    (strcmp(paths[i], paths[j]) && !same_file(paths[i], paths[j])) ||
			    (!stat(paths[i], &st) && !S_ISREG(st.st_mode)))
				continue;
			mt_cmd_usage_error(&report_cmd, "%s and %s both write %s: one file each",
					   names[j], names[i],
					   mt_printable(a, sizeof(a), paths[i]));
			return true;
		}
	}
	return false;
}

/* --diff BASE NEW: two artifacts, text or --json, --top; the outputs of one run do not apply. */
static int diff_mode(const struct report_opts *o, int n, char **files)
{
	char a[MT_PRINTABLE_MAX];

	if (!o->diff) {
		mt_cmd_usage_error(&report_cmd, "--max-increase limits a --diff");
		return MT_EXIT_USAGE;
	}
	if (o->n_supp || o->strict_leaks) {
		mt_cmd_usage_error(&report_cmd, "--%s applies to one run's leaks, not to --diff",
				   o->n_supp ? "suppressions" : "strict-leaks");
		return MT_EXIT_USAGE;
	}
	if (n != 2) {
		mt_cmd_usage_error(&report_cmd, "--diff compares two artifacts, BASE and NEW%s%s%s",
				   n > 2 ? ", not '" : "",
				   n > 2 ? mt_printable(a, sizeof(a), files[2]) : "",
				   n > 2 ? "' too" : "");
		return MT_EXIT_USAGE;
	}
	if (o->folded || o->svg || o->pprof || o->over_time) {
		mt_cmd_usage_error(&report_cmd,
				   "--diff prints text or --json, or writes --html, not --%s",
				   o->folded  ? "folded"
				   : o->svg   ? "svg"
				   : o->pprof ? "pprof"
					      : "over-time");
		return MT_EXIT_USAGE;
	}
	if (o->html && o->json) {
		mt_cmd_usage_error(&report_cmd, "--html writes a file, --json prints: choose one");
		return MT_EXIT_USAGE;
	}
	for (int i = 0; o->html && i < 2; i++)
		if (same_file(o->html, files[i])) {
			fprintf(stderr, "memtrack: --html %s is the artifact %s: not overwritten\n",
				mt_printable(a, sizeof(a), o->html), i ? "NEW" : "BASE");
			return 1;
		}
	return mt_cmd_diff(files[0], files[1], o->json, o->html, o->top, &o->limits);
}

/* --follow FILE: text views with --top and --sites-by (default: live now), nothing else. */
static int follow_mode(const struct report_opts *o, int n, char **files)
{
	struct mt_follow_opts fo = {.top = o->top == 20 ? 10 : o->top,
				    .sites_by = o->sites_by_given ? o->sites_by : MT_FOLDED_LIVE};
	char a[MT_PRINTABLE_MAX];

	if (o->json || o->folded || o->html || o->svg || o->pprof || o->diff || o->limits.n ||
	    o->calls || o->strict_leaks || o->n_supp || o->benchmarks || o->over_time) {
		mt_cmd_usage_error(&report_cmd,
				   "--follow prints the views of a run in progress, in text: with "
				   "--top and --sites-by only");
		return MT_EXIT_USAGE;
	}
	if (n != 1) {
		mt_cmd_usage_error(&report_cmd, "--follow watches one artifact, not '%s' too",
				   mt_printable(a, sizeof(a), files[1]));
		return MT_EXIT_USAGE;
	}
	return mt_cmd_report_follow(files[0], &fo);
}

int mt_cmd_report(int argc, char **argv)
{
	struct report_opts o = {.top = 20, .sites_by = MT_FOLDED_BYTES};
	int first = mt_cmd_options(&report_cmd, argc, argv, &o);
	char a[MT_PRINTABLE_MAX];

	/* A report needs no privilege: a setcap'd memtrack reads only what its user may. */
	if (mt_drop_elevation())
		return 1;
	if (first <= 0)
		return mt_cmd_options_status(first);
	if (o.by_process && !o.folded) {
		mt_cmd_usage_error(&report_cmd,
				   "--by-process splits --folded's stacks: add --folded");
		return MT_EXIT_USAGE;
	}
	if (first == argc) {
		mt_cmd_usage_error(&report_cmd, "no artifact given");
		return MT_EXIT_USAGE;
	}
	if (o.follow)
		return follow_mode(&o, argc - first, argv + first);
	if (o.diff || o.limits.n)
		return diff_mode(&o, argc - first, argv + first);
	if (argc - first > 1) {
		mt_cmd_usage_error(&report_cmd, "one artifact at a time, not '%s' too",
				   mt_printable(a, sizeof(a), argv[first + 1]));
		return MT_EXIT_USAGE;
	}
	if (o.benchmarks &&
	    (o.folded || o.html || o.svg || o.pprof || o.calls || o.strict_leaks || o.n_supp)) {
		mt_cmd_usage_error(&report_cmd, "--benchmarks prints text or --json, alone");
		return MT_EXIT_USAGE;
	}
	if (o.benchmarks)
		return mt_cmd_bench_split(argv[first], o.json);
	if (o.json && o.folded) {
		mt_cmd_usage_error(&report_cmd, "--json and --folded are two outputs: choose one");
		return MT_EXIT_USAGE;
	}
	if (o.calls && (o.json || o.folded || o.html || o.svg || o.pprof)) {
		mt_cmd_usage_error(&report_cmd, "--%s prints text: not with --%s",
				   o.callers ? "callers" : "callees",
				   o.json     ? "json"
				   : o.folded ? "folded"
				   : o.html   ? "html"
				   : o.svg    ? "svg"
					      : "pprof");
		return MT_EXIT_USAGE;
	}
	if ((o.html || o.svg || o.pprof) && (o.json || o.folded)) {
		mt_cmd_usage_error(&report_cmd, "--%s writes a file, --%s prints: choose one",
				   o.html  ? "html"
				   : o.svg ? "svg"
					   : "pprof",
				   o.json ? "json" : "folded");
		return MT_EXIT_USAGE;
	}
	if (output_twice(&o))
		return MT_EXIT_USAGE;
	if (o.over_time != !!o.svg) {
		mt_cmd_usage_error(&report_cmd, o.svg ? "--svg draws --over-time: add it"
						      : "--over-time is a picture: --svg OUT.svg "
							"says where to write it");
		return MT_EXIT_USAGE;
	}
	return run_report(argv[first], &o);
}
