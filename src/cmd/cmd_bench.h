/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memtrack bench's own (cmd_bench.c, the command): its options, which its files share, parsed by
 * cmd_bench_options.c; what it sets up around the command as CodSpeed's runner does
 * (cmd_bench_profile.c); its figures (cmd_bench_figures.c).
 */
#ifndef MT_CMD_BENCH_H
#define MT_CMD_BENCH_H

#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <sys/types.h>

#include "aggregate/bench_compare.h"
#include "cmd/cmd.h"
#include "supervisor/supervisor.h"

struct mt_cmd_bench_opts {
	struct mt_run_config cfg;
	const char *output;
	char default_path[64];
	/* -o DIR: CodSpeed's profile folder, its absolute path; "" for -o FILE or none */
	char profile[PATH_MAX];
	char profile_artifact[PATH_MAX + 128]; /* DIR/memtrack/memtrack-...mtk */
	bool json;
	const char *json_path; /* --json=FILE, NULL: stdout */
	const char *markdown;
	const char *compare;
	const char *from; /* split this artifact, run nothing */
	bool no_introspection;
	bool quiet;
	struct mt_bench_limits limits;
};

/* cmd_bench_options.c: the subcommand, and its options parsed into o. */
extern const struct mt_cmd mt_cmd_bench_cmd;
/* Returns -1 to go on, or the exit status. */
int mt_cmd_bench_parse(int argc, char **argv, struct mt_cmd_bench_opts *o);

/* cmd_bench_profile.c: the user the command runs as, who gets the FIFOs and the profile folder. */
void mt_cmd_bench_user(const struct mt_cmd_bench_opts *o, uid_t *uid, gid_t *gid);
/* The runner's environment set, the profile folder made (or -o DIR's): 0 or a negative errno. */
int mt_cmd_bench_set_env(const struct mt_cmd_bench_opts *o, uid_t uid, gid_t gid);
/* Whether -o names a profile folder: an existing directory, or a name ending in '/'. */
bool mt_cmd_bench_output_is_folder(const char *output);
/* -o DIR: the folder, its results/ and memtrack/, and the artifact's name in memtrack/. */
int mt_cmd_bench_prepare_profile(struct mt_cmd_bench_opts *o);
/* -o DIR: what CodSpeed's runner leaves in results/ after a memory run. 0 or 1 (said). */
int mt_cmd_bench_write_profile(const struct mt_cmd_bench_opts *o);

/*
 * cmd_bench_figures.c: artifact's benchmarks printed, written and compared as o asks (JSON on
 * json_out): the exit status.
 */
int mt_cmd_bench_report(const struct mt_cmd_bench_opts *o, const char *artifact, FILE *json_out);

#endif
