// SPDX-License-Identifier: GPL-2.0
/* memtrack: the command line. Dispatches to the three subcommands. */
#include <getopt.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>

#include "harness.h"
#include "cmd.h"
#include "run.h"

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: memtrack run [OPTIONS] -- CMD [ARGS...]\n"
	    "       memtrack exec-harness [OPTIONS] -- CMD [ARGS...]\n"
	    "       memtrack exec-harness -    (a JSON list of benchmarks on stdin)\n"
	    "       memtrack report [--json] FILE\n"
	    "       memtrack --help | --version\n"
	    "\n"
	    "Records every heap allocation of a command and all of its descendants, with ptrace\n"
	    "and BPF uprobes attached on demand; nothing is injected into the command.\n"
	    "\n"
	    "  run           run CMD, write an artifact, print a summary, exit with CMD's status\n"
	    "  exec-harness  benchmark CMD: warm-up and timed rounds, walltime results JSON\n"
	    "  report        read an artifact: summary, per process, per file, histogram, JSON\n"
	    "\n"
	    "'memtrack SUBCOMMAND --help' describes each. Needs root, or CAP_BPF, CAP_PERFMON,\n"
	    "CAP_SYS_PTRACE and CAP_CHECKPOINT_RESTORE.\n");
}

int main(int argc, char **argv)
{
	static const struct option opts[] = {
	    {"help", no_argument, NULL, 'h'},
	    {"version", no_argument, NULL, 'V'},
	    {0},
	};
	int c;

	/* A closed output (-o /dev/stdout | head) is a write error, never memtrack's death. */
	signal(SIGPIPE, SIG_IGN);
	if (argc > 1 && strcmp(argv[1], "run") == 0)
		return mt_run_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "exec-harness") == 0)
		return mt_harness_main(argc - 1, argv + 1);
	if (argc > 1 && strcmp(argv[1], "report") == 0)
		return mt_cmd_report(argc - 1, argv + 1);

	while ((c = getopt_long(argc, argv, "+hV", opts, NULL)) != -1) {
		switch (c) {
		case 'h':
			usage(stdout);
			return 0;
		case 'V':
			printf("memtrack %s\n", MT_VERSION);
			return 0;
		default:
			usage(stderr);
			return 2;
		}
	}
	if (optind < argc)
		fprintf(stderr, "memtrack: unknown subcommand '%s'\n", argv[optind]);
	else
		fprintf(stderr, "memtrack: a subcommand is needed\n");
	usage(stderr);
	return 2;
}
