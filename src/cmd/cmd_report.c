// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack report: the command line of reading an artifact. This file checks the options'
 * combinations (cmd_report_options.c parses them) and runs the mode they ask for: --follow
 * (cmd_follow.c), --diff (cmd_diff.c), --benchmarks (cmd_bench_figures.c), or one artifact's
 * report (cmd_report_output.c).
 */
#include <stdbool.h>
#include <stdio.h>
#include <string.h>
#include <sys/stat.h>

#include "base/printable.h"
#include "base/privileges.h"
#include "cmd/cmd.h"
#include "cmd/cmd_report.h"

/*
 * Two of --html, --svg and --pprof naming one regular file, existing or not (the last would
 * replace the first): said. A device (/dev/null) may take several.
 */
static bool output_twice(const struct mt_cmd_report_opts *o)
{
	const char *paths[] = {o->html, o->svg, o->pprof};
	const char *names[] = {"--html", "--svg", "--pprof"};
	char a[MT_PRINTABLE_MAX];
	struct stat st;

	for (size_t i = 0; i < sizeof(paths) / sizeof(paths[0]); i++) {
		for (size_t j = 0; j < i; j++) {
			if (!paths[i] || !paths[j] ||
			    (strcmp(paths[i], paths[j]) && !mt_cmd_same_file(paths[i], paths[j])) ||
			    (!stat(paths[i], &st) && !S_ISREG(st.st_mode)))
				continue;
			mt_cmd_usage_error(&mt_cmd_report_cmd,
					   "%s and %s both write %s: one file each", names[j],
					   names[i], mt_printable(a, sizeof(a), paths[i]));
			return true;
		}
	}
	return false;
}

int mt_cmd_report(int argc, char **argv)
{
	struct mt_cmd_report_opts o = {.top = 20, .sites_by = MT_FOLDED_BYTES};
	int first = mt_cmd_options(&mt_cmd_report_cmd, argc, argv, &o);
	char a[MT_PRINTABLE_MAX];

	/* A report needs no privilege: a setcap'd memtrack reads only what its user may. */
	if (mt_drop_elevation())
		return 1;
	if (first <= 0)
		return mt_cmd_options_status(first);
	if (o.by_process && !o.folded) {
		mt_cmd_usage_error(&mt_cmd_report_cmd,
				   "--by-process splits --folded's stacks: add --folded");
		return MT_EXIT_USAGE;
	}
	if (first == argc) {
		mt_cmd_usage_error(&mt_cmd_report_cmd, "no artifact given");
		return MT_EXIT_USAGE;
	}
	if (o.follow)
		return mt_cmd_follow_mode(&o, argc - first, argv + first);
	if (o.diff || o.limits.n)
		return mt_cmd_diff_mode(&o, argc - first, argv + first);
	if (argc - first > 1) {
		mt_cmd_usage_error(&mt_cmd_report_cmd, "one artifact at a time, not '%s' too",
				   mt_printable(a, sizeof(a), argv[first + 1]));
		return MT_EXIT_USAGE;
	}
	if (o.benchmarks &&
	    (o.folded || o.html || o.svg || o.pprof || o.calls || o.strict_leaks || o.n_supp)) {
		mt_cmd_usage_error(&mt_cmd_report_cmd, "--benchmarks prints text or --json, alone");
		return MT_EXIT_USAGE;
	}
	if (o.benchmarks)
		return mt_cmd_bench_split(argv[first], o.json);
	if (o.json && o.folded) {
		mt_cmd_usage_error(&mt_cmd_report_cmd,
				   "--json and --folded are two outputs: choose one");
		return MT_EXIT_USAGE;
	}
	if (o.calls && (o.json || o.folded || o.html || o.svg || o.pprof)) {
		mt_cmd_usage_error(&mt_cmd_report_cmd, "--%s prints text: not with --%s",
				   o.callers ? "callers" : "callees",
				   o.json     ? "json"
				   : o.folded ? "folded"
				   : o.html   ? "html"
				   : o.svg    ? "svg"
					      : "pprof");
		return MT_EXIT_USAGE;
	}
	if ((o.html || o.svg || o.pprof) && (o.json || o.folded)) {
		mt_cmd_usage_error(&mt_cmd_report_cmd,
				   "--%s writes a file, --%s prints: choose one",
				   o.html  ? "html"
				   : o.svg ? "svg"
					   : "pprof",
				   o.json ? "json" : "folded");
		return MT_EXIT_USAGE;
	}
	if (output_twice(&o))
		return MT_EXIT_USAGE;
	if (o.over_time != !!o.svg) {
		mt_cmd_usage_error(&mt_cmd_report_cmd,
				   o.svg ? "--svg draws --over-time: add it"
					 : "--over-time is a picture: --svg OUT.svg "
					   "says where to write it");
		return MT_EXIT_USAGE;
	}
	return mt_cmd_report_output(argv[first], &o);
}
