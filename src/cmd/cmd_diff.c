// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack report --diff BASE NEW: two artifacts aggregated, symbolised and compared
 * (aggregate/diff.h), printed as text or JSON or written as a page, and the --max-increase
 * limits checked on the tree's counts, for CI: "exit non-zero when the peak grows by more than
 * 5%". First the options of report that --diff takes are checked (mt_cmd_diff_mode).
 */
#include <errno.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "cmd/cmd_report.h"
#include "output/output.h"
#include "base/printable.h"

/* Load and symbolise one artifact; one sentence when it cannot be read. */
static struct mt_report *load(const char *path)
{
	char err[MT_ARTIFACT_ERRLEN], p[MT_PRINTABLE_MAX];
	struct mt_report *rep;
	int ret = mt_report_load(path, &rep, err, sizeof(err));

	if (ret) {
		fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), path), err);
		return NULL;
	}
	if (mt_sites_count(rep->sites) && mt_sites_symbolize(rep->sites, NULL)) {
		fprintf(stderr, "memtrack: out of memory\n");
		mt_report_free(rep);
		return NULL;
	}
	return rep;
}

/* Each limit against the tree's growth; the number exceeded. */
static size_t check_limits(const struct mt_diff *d, const struct mt_cmd_diff_limits *l,
			   struct mt_diff_limit *out)
{
	const struct mt_diff_row *tree = &d->level[MT_DIFF_TREE].rows[0];
	size_t exceeded = 0;

	for (int i = 0; i < l->n; i++) {
		enum mt_diff_metric m = l->metric[i];

		out[i] = (struct mt_diff_limit){
		    .metric = m,
		    .max_percent = l->max_percent[i],
		    .percent = mt_diff_percent(tree->base[m], tree->new[m]),
		};
		out[i].exceeded = out[i].percent > out[i].max_percent;
		exceeded += out[i].exceeded;
	}
	return exceeded;
}

static void say_exceeded(const struct mt_diff_limit *lim, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (!lim[i].exceeded)
			continue;
		if (lim[i].percent == (double)INFINITY)
			fprintf(stderr, "memtrack: %s grew from nothing (at most %.1f%% allowed)\n",
				mt_diff_metric_name(lim[i].metric), lim[i].max_percent);
		else
			fprintf(stderr, "memtrack: %s grew by %.1f%% (at most %.1f%% allowed)\n",
				mt_diff_metric_name(lim[i].metric), lim[i].percent,
				lim[i].max_percent);
	}
}

static int write_page(FILE *f, const void *v)
{
	return mt_output_diff_html(v, f);
}

/* memtrack report --diff BASE NEW, html its page's path or NULL: the exit status. */
static int run_diff(const char *base, const char *new, bool json, const char *html, size_t top,
		    const struct mt_cmd_diff_limits *limits)
{
	struct mt_diff_limit lim[MT_CMD_DIFF_LIMITS];
	struct mt_report *rep[2] = {NULL, NULL};
	struct mt_diff *d = NULL;
	size_t exceeded = 0;
	int ret = 1;

	/* As a report read through `| head`: SIGPIPE ends it silently. */
	signal(SIGPIPE, SIG_DFL);
	if (!(rep[0] = load(base)) || !(rep[1] = load(new)))
		goto out;
	if (mt_diff_build(rep[0], rep[1], &d)) {
		fprintf(stderr, "memtrack: out of memory\n");
		goto out;
	}
	exceeded = check_limits(d, limits, lim);
	{
		struct mt_diff_view v = {.d = d,
					 .path = {base, new},
					 .rep = {rep[0], rep[1]},
					 .limits = lim,
					 .n_limits = (size_t)limits->n,
					 .top = top};
		int err;

		if (html) {
			if (mt_cmd_write_file(html, write_page, &v))
				goto out;
			say_exceeded(lim, (size_t)limits->n);
			ret = exceeded ? MT_EXIT_DIFF_EXCEEDED : 0;
			goto out;
		}
		err = json ? mt_output_diff_json(&v, stdout) : mt_output_diff_text(&v, stdout);
		if (fflush(stdout) && (!err || err == -EIO))
			err = -errno;
		if (err) {
			fprintf(stderr, "memtrack: cannot write the comparison: %s\n",
				strerror(-err));
			goto out;
		}
	}
	say_exceeded(lim, (size_t)limits->n);
	ret = exceeded ? MT_EXIT_DIFF_EXCEEDED : 0;
out:
	mt_diff_free(d);
	mt_report_free(rep[1]);
	mt_report_free(rep[0]);
	return ret;
}

/* --diff BASE NEW: two artifacts, text or --json, --top; the outputs of one run do not apply. */
int mt_cmd_diff_mode(const struct mt_cmd_report_opts *o, int n, char **files)
{
	char a[MT_PRINTABLE_MAX];

	if (!o->diff) {
		mt_cmd_usage_error(&mt_cmd_report_cmd, "--max-increase limits a --diff");
		return MT_EXIT_USAGE;
	}
	if (o->n_supp || o->strict_leaks) {
		mt_cmd_usage_error(&mt_cmd_report_cmd,
				   "--%s applies to one run's leaks, not to --diff",
				   o->n_supp ? "suppressions" : "strict-leaks");
		return MT_EXIT_USAGE;
	}
	if (n != 2) {
		mt_cmd_usage_error(
		    &mt_cmd_report_cmd, "--diff compares two artifacts, BASE and NEW%s%s%s",
		    n > 2 ? ", not '" : "", n > 2 ? mt_printable(a, sizeof(a), files[2]) : "",
		    n > 2 ? "' too" : "");
		return MT_EXIT_USAGE;
	}
	if (o->folded || o->svg || o->pprof || o->over_time) {
		mt_cmd_usage_error(&mt_cmd_report_cmd,
				   "--diff prints text or --json, or writes --html, not --%s",
				   o->folded  ? "folded"
				   : o->svg   ? "svg"
				   : o->pprof ? "pprof"
					      : "over-time");
		return MT_EXIT_USAGE;
	}
	if (o->html && o->json) {
		mt_cmd_usage_error(&mt_cmd_report_cmd,
				   "--html writes a file, --json prints: choose one");
		return MT_EXIT_USAGE;
	}
	for (int i = 0; o->html && i < 2; i++)
		if (mt_cmd_same_file(o->html, files[i])) {
			fprintf(stderr, "memtrack: --html %s is the artifact %s: not overwritten\n",
				mt_printable(a, sizeof(a), o->html), i ? "NEW" : "BASE");
			return 1;
		}
	return run_diff(files[0], files[1], o->json, o->html, o->top, &o->limits);
}
