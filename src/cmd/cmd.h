/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The command line: one entry point per subcommand (cmd_*.c), each parsing its own options with
 * mt_cmd_options() and calling the parts below it. argv[0] is the subcommand's name; each entry
 * point returns memtrack's exit status.
 */
#ifndef MT_CMD_H
#define MT_CMD_H

#include <getopt.h>
#include <stdbool.h>
#include <stdio.h>

#include "base/outfile.h"

/* A usage error: one sentence on stderr, nothing run. */
#define MT_EXIT_USAGE 2

int mt_cmd_run(int argc, char **argv);
int mt_cmd_report(int argc, char **argv);
int mt_cmd_harness(int argc, char **argv);
int mt_cmd_track(int argc, char **argv);
int mt_cmd_attach(int argc, char **argv);
int mt_cmd_bench(int argc, char **argv);
/* Invoked as codspeed-memtrack: CodSpeed's tracker's command line (track, --version). */
int mt_cmd_codspeed_memtrack(int argc, char **argv);

/* What mt_cmd_options needs to know of a subcommand. */
struct mt_cmd {
	const char *name;	       /* "memtrack run": the start of each of its messages */
	const char *shortopts;	       /* getopt's, without the leading '+' or ':' */
	const struct option *longopts; /* "help" must map to 'h' */
	bool in_order;		       /* options end at the first operand: CMD ARGS follow */
	void (*help)(FILE *out);
	/* One option (never 'h'): 0, or the negative errno of mt_cmd_usage_error(). */
	int (*option)(int c, const char *arg, void *ctx);
};

/* mt_cmd_options' returns other than the first operand's index. */
#define MT_CMD_HELP_SHOWN 0

/*
 * Parse the options of argv with getopt_long, the same way for every subcommand: --help prints
 * the help on stdout; an unknown option, a missing argument or a value cmd->option refuses is
 * one sentence on stderr. Returns the index of the first operand, MT_CMD_HELP_SHOWN, or -EINVAL
 * after a usage error.
 */
int mt_cmd_options(const struct mt_cmd *cmd, int argc, char **argv, void *ctx);

/* "NAME: SENTENCE" on stderr, the bytes of arguments made printable by the caller. -EINVAL. */
__attribute__((format(printf, 2, 3))) int mt_cmd_usage_error(const struct mt_cmd *cmd,
							     const char *fmt, ...);

/*
 * val as one of the n names of option opt: its index, or the usage error's -EINVAL after
 * "OPT takes A, B or C, not 'VAL'" (which the bash completion reads for the names).
 */
int mt_cmd_enum(const struct mt_cmd *cmd, const char *opt, const char *val,
		const char *const *names, int n);

/*
 * --max-increase METRIC=PERCENT, as report --diff and bench take it: *metric from metric_of (a
 * negative one: no such metric), *pct a number of at least 0 with an optional '%'. 0, or the
 * usage error's -EINVAL after "--max-increase takes METRIC=PERCENT (NAMES; 5 or 5%), not 'ARG'".
 */
int mt_cmd_max_increase(const struct mt_cmd *cmd, const char *arg, int (*metric_of)(const char *),
			const char *names, int *metric, double *pct);

/* The names of --watcher (by enum mt_watcher_mode) and --stacks (none, kernel), run's and attach's.
 */
extern const char *const mt_cmd_watchers[3];
extern const char *const mt_cmd_stack_modes[2];

/* The exit status of mt_cmd_options' return when it is not an operand's index. */
static inline int mt_cmd_options_status(int ret)
{
	return ret == MT_CMD_HELP_SHOWN ? 0 : MT_EXIT_USAGE;
}

/* cmd_bench_figures.c: memtrack report --benchmarks FILE, the split of memtrack bench: the status.
 */
int mt_cmd_bench_split(const char *path, bool json);
/*
 * The benchmark windows of path for report --html's page (cmd_bench_figures.c): NULL when it has
 * none, or when they cannot be read (said on stderr: the page is made without them).
 */
struct mt_bench_split;
struct mt_bench_split *mt_cmd_bench_for_page(const char *path);

/* cmd_report_codspeed.c: CodSpeed's artifact (PID.MemtrackArtifact.msgpack), summarized. */
int mt_cmd_report_codspeed(const char *path, bool json);

/* cmd_output.c: the artifact of a recording subcommand (run, attach). */
struct mt_identity;
/*
 * Whether path (option opt) can be written as mode for owner: 0, or a negative errno after one
 * sentence "CMD: cannot write OPT PATH: WHY". Nothing is created.
 */
int mt_cmd_check_writable(const struct mt_cmd *cmd, const char *opt, const char *path,
			  enum mt_outfile_mode mode, const struct mt_identity *owner);
/* memtrack-DATE-TIME-PID.mtk in buf, returned. */
const char *mt_cmd_default_artifact(char *buf, size_t len);
/* The summary of the artifact at path and its name, on stderr; nothing unless a regular file. */
void mt_cmd_artifact_summary(const char *path);
/* Whether path names the file the artifact is (writing there would destroy it). */
bool mt_cmd_same_file(const char *path, const char *artifact);

/*
 * cmd_status.c: the status line of a recording subcommand (run, attach) on a terminal, refreshed
 * by cfg's progress function, which this sets. NULL (cfg untouched) when stderr is no terminal.
 */
struct mt_status;
struct mt_run_config;
struct mt_status *mt_status_start(struct mt_run_config *cfg);
/* The line erased and the terminal's whole screen given back; st freed. NULL: nothing. */
void mt_status_end(struct mt_status *st);

/* The exit status of a --diff whose limit was exceeded (1: an artifact unread, 2: usage). */
#define MT_EXIT_DIFF_EXCEEDED 3
/* memtrack report --strict-leaks: a scan found blocks definitely lost (docs/LEAKS.md). */
#define MT_EXIT_LEAKED	      4

/* What writes a file of memtrack report: 0 or a negative errno. */
typedef int (*mt_cmd_writer)(FILE *f, const void *arg);
/*
 * The picture of --svg, the page of --html or the profile of --pprof (cmd_report_output.c), written
 * whole to path by write, or removed: one sentence when it cannot be. Only a regular file is
 * removed: path may name /dev/null or a stream the shell gave memtrack (/dev/stdout, a >(...)),
 * which were there before memtrack and stay; any other FIFO or device is refused
 * (base/outfile.h). 0 or 1, the exit status.
 */
int mt_cmd_write_file(const char *path, mt_cmd_writer write, const void *arg);

#endif
