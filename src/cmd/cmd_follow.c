// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack report --follow FILE: the report of an artifact while memtrack writes it, every second,
 * read on from where the last second stopped (aggregate/report.h, mt_report_follow_*): the tree's
 * figures so far, its heap live now and its peak, and the top sites by the bytes they hold live
 * now. On a terminal each view replaces the last (the screen is cleared); elsewhere the views
 * follow one another, each from its first line. Once the writer is gone (its run ended, or it was
 * killed) the whole report follows, as memtrack report prints it; SIGINT or SIGTERM end the
 * watch at once, with status 0, the last view left as it is. The wait between views is the
 * signals' (sigtimedwait, one second at most): no sleep, no thread. First the options of report
 * that --follow takes are checked (mt_cmd_follow_mode).
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "aggregate/report.h"
#include "base/bytesize.h"
#include "base/printable.h"
#include "cmd/cmd.h"
#include "cmd/cmd_report.h"
#include "output/output.h"

#define FOLLOW_PERIOD_S 1

/* What the views show. */
struct mt_follow_opts {
	size_t top;   /* sites shown (0: all) */
	int sites_by; /* enum mt_folded_metric: their order */
};

/* One view of what was read so far. 0 or a negative errno. */
static int put_view(struct mt_report *rep, const char *path, const struct mt_follow_opts *o,
		    bool tty)
{
	char p[MT_PRINTABLE_MAX], live[32], peak[32], bytes[32];
	const struct mt_report_totals *t = &rep->totals;
	uint64_t blocks, now = mt_report_live_now(rep, &blocks);
	int err = mt_sites_count(rep->sites) ? mt_sites_symbolize(rep->sites, NULL) : 0;

	if (err)
		return err;
	if (tty)
		fputs("\033[H\033[J", stdout);
	printf("memtrack report --follow %s: in progress, %.1f s recorded (Ctrl-C stops)\n",
	       mt_printable(p, sizeof(p), path),
	       rep->last_event_ns > rep->start_mono_ns
		   ? (double)(rep->last_event_ns - rep->start_mono_ns) / 1e9
		   : 0.0);
	printf("  %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
	       " reallocs, %s allocated; %zu process%s\n",
	       t->allocations, t->frees, t->reallocs,
	       mt_bytesize_human(bytes, sizeof(bytes), t->bytes_allocated), rep->n_processes,
	       rep->n_processes == 1 ? "" : "es");
	printf("  heap live now %s in %" PRIu64 " blocks; peak %s\n",
	       mt_bytesize_human(live, sizeof(live), now), blocks,
	       mt_bytesize_human(peak, sizeof(peak), t->peak_bytes));
	err = mt_output_sites(rep, stdout, o->top, o->sites_by);
	if (!tty)
		putchar('\n');
	if (fflush(stdout) && !err)
		err = -errno;
	return err;
}

/* Wait up to a second for SIGINT or SIGTERM (blocked): the signal, or 0 when none came. */
static int wait_a_view(const sigset_t *stop)
{
	struct timespec ts = {FOLLOW_PERIOD_S, 0};
	int sig = sigtimedwait(stop, NULL, &ts);

	return sig > 0 ? sig : 0;
}

/* The whole report once the writer is gone: as memtrack report prints it. */
static int put_final(struct mt_report_follow *f, bool tty)
{
	struct mt_report *rep = mt_report_follow_take(f);
	int err = mt_sites_count(rep->sites) ? mt_sites_symbolize(rep->sites, NULL) : 0;

	if (tty)
		fputs("\033[H\033[J", stdout);
	if (!err)
		err = mt_output_text(rep, stdout, 20);
	if (!err)
		err = mt_output_sites(rep, stdout, 20, MT_FOLDED_BYTES);
	if (!err)
		err = mt_output_leaks(rep, stdout, 20);
	mt_report_free(rep);
	return err;
}

static int follow(struct mt_report_follow *f, const char *path, const struct mt_follow_opts *o,
		  const sigset_t *stop)
{
	char err[MT_ARTIFACT_ERRLEN], p[MT_PRINTABLE_MAX];
	bool tty = isatty(STDOUT_FILENO);
	int ret;

	do {
		ret = mt_report_follow_read(f, 0, err, sizeof(err));
		if (ret < 0) {
			fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), path),
				err);
			return 1;
		}
		ret = ret ? put_view(mt_report_follow_now(f), path, o, tty) : put_final(f, tty);
		if (ret) {
			fprintf(stderr, "memtrack: cannot write the report: %s\n", strerror(-ret));
			return 1;
		}
	} while (!mt_report_follow_ended(f) && !wait_a_view(stop));
	return 0;
}

static int report_follow(const char *path, const struct mt_follow_opts *o)
{
	char err[MT_ARTIFACT_ERRLEN], p[MT_PRINTABLE_MAX];
	struct mt_report_follow *f;
	sigset_t stop, old;
	int ret;

	/* A view read through `| head` ends as cat's does, silently, of SIGPIPE. */
	signal(SIGPIPE, SIG_DFL);
	sigemptyset(&stop);
	sigaddset(&stop, SIGINT);
	sigaddset(&stop, SIGTERM);
	sigprocmask(SIG_BLOCK, &stop, &old);
	ret = mt_report_follow_open(path, 0, &f, err, sizeof(err));
	if (ret) {
		fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), path), err);
		ret = 1;
	} else {
		ret = follow(f, path, o, &stop);
		mt_report_follow_free(f);
	}
	sigprocmask(SIG_SETMASK, &old, NULL);
	return ret;
}

/* --follow FILE: text views with --top and --sites-by (default: live now), nothing else. */
int mt_cmd_follow_mode(const struct mt_cmd_report_opts *o, int n, char **files)
{
	struct mt_follow_opts fo = {.top = o->top == 20 ? 10 : o->top,
				    .sites_by = o->sites_by_given ? o->sites_by : MT_FOLDED_LIVE};
	char a[MT_PRINTABLE_MAX];

	if (o->json || o->folded || o->html || o->svg || o->pprof || o->diff || o->limits.n ||
	    o->calls || o->strict_leaks || o->n_supp || o->benchmarks || o->over_time) {
		mt_cmd_usage_error(&mt_cmd_report_cmd,
				   "--follow prints the views of a run in progress, in text: with "
				   "--top and --sites-by only");
		return MT_EXIT_USAGE;
	}
	if (n != 1) {
		mt_cmd_usage_error(&mt_cmd_report_cmd,
				   "--follow watches one artifact, not '%s' too",
				   mt_printable(a, sizeof(a), files[1]));
		return MT_EXIT_USAGE;
	}
	return report_follow(files[0], &fo);
}
