// SPDX-License-Identifier: GPL-2.0
/* memtrack report's options: its help, and each option taken into its options (cmd_report.h). */
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/diff.h"
#include "base/printable.h"
#include "cmd/cmd.h"
#include "cmd/cmd_report.h"
#include "output/output.h"

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
	    &mt_cmd_report_cmd, "%s takes allocations, bytes, live, peak%s or temporary, not '%s'",
	    opt, folded ? ", leaked" : "", mt_printable(a, sizeof(a), arg));
}

/* --max-increase METRIC=PERCENT: how much a tree metric may grow under --diff. */
static int parse_limit(const char *arg, struct mt_cmd_diff_limits *l)
{
	double pct;
	int m, err;

	err = mt_cmd_max_increase(&mt_cmd_report_cmd, arg, mt_diff_metric_of,
				  "allocations, bytes, peak, live or temporary", &m, &pct);
	if (err)
		return err;
	if (l->n == MT_CMD_DIFF_LIMITS)
		return mt_cmd_usage_error(&mt_cmd_report_cmd, "at most %d --max-increase limits",
					  MT_CMD_DIFF_LIMITS);
	l->metric[l->n] = m;
	l->max_percent[l->n++] = pct;
	return 0;
}

static int report_option(int c, const char *arg, void *ctx)
{
	struct mt_cmd_report_opts *o = ctx;
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
			return mt_cmd_usage_error(&mt_cmd_report_cmd,
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
		if (o->n_supp == MT_CMD_SUPP_FILES)
			return mt_cmd_usage_error(&mt_cmd_report_cmd,
						  "at most %d --suppressions files",
						  MT_CMD_SUPP_FILES);
		o->supp[o->n_supp++] = arg;
		return 0;
	case OPT_MAX_INCREASE:
		return parse_limit(arg, &o->limits);
	case 't':
		if (!parse_top(arg, &o->top))
			return mt_cmd_usage_error(&mt_cmd_report_cmd,
						  "--top needs a number, not '%s'",
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
    {"benchmarks", no_argument, NULL, OPT_BENCHMARKS},		 /* cmd_bench_figures.c */
    {"follow", no_argument, NULL, OPT_FOLLOW},			 /* cmd_follow.c */
    {"suppressions", required_argument, NULL, OPT_SUPPRESSIONS}, /* aggregate/suppress.h */
    {"by-process", no_argument, NULL, OPT_BY_PROCESS},		 /* output_sites.c */
    {"help", no_argument, NULL, 'h'},
    {NULL, 0, NULL, 0},
};

const struct mt_cmd mt_cmd_report_cmd = {
    .name = "memtrack report",
    .shortopts = "h",
    .longopts = report_longopts,
    .help = usage,
    .option = report_option,
};
