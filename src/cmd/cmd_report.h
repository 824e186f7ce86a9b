/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memtrack report's own (cmd_report.c, the command): its options, which its files share, parsed
 * by cmd_report_options.c, and its modes: --diff (cmd_diff.c), --follow (cmd_follow.c), one
 * artifact's report (cmd_report_output.c).
 */
#ifndef MT_CMD_REPORT_H
#define MT_CMD_REPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "cmd/cmd.h"
#include "output/output.h"

/* --max-increase limits of `memtrack report --diff`. */
#define MT_CMD_DIFF_LIMITS 8
struct mt_cmd_diff_limits {
	int n;
	int metric[MT_CMD_DIFF_LIMITS]; /* enum mt_diff_metric */
	double max_percent[MT_CMD_DIFF_LIMITS];
};

/* memcheck takes up to 100 files; a report needs far fewer. */
#define MT_CMD_SUPP_FILES 16

struct mt_cmd_report_opts {
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
	bool strict_leaks; /* exit MT_EXIT_LEAKED when a block is definitely lost */
	const char *supp[MT_CMD_SUPP_FILES]; /* --suppressions, in their order */
	size_t n_supp;
	struct mt_cmd_diff_limits limits;
	bool benchmarks; /* split by memtrack bench's windows (cmd_bench_figures.c) */
	bool follow;	 /* the views of a run in progress (cmd_follow.c) */
	bool sites_by_given;
};

/* cmd_report_options.c: the subcommand, its options taken into a struct mt_cmd_report_opts. */
extern const struct mt_cmd mt_cmd_report_cmd;

/* The modes, each after its own checks of the options: the exit status. */
int mt_cmd_diff_mode(const struct mt_cmd_report_opts *o, int n, char **files);	 /* cmd_diff.c */
int mt_cmd_follow_mode(const struct mt_cmd_report_opts *o, int n, char **files); /* cmd_follow.c */
/* cmd_report_output.c: the report of the artifact at path, as o asks. */
int mt_cmd_report_output(const char *path, const struct mt_cmd_report_opts *o);

#endif
