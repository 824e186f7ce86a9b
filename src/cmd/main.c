// SPDX-License-Identifier: GPL-2.0
/* memtrack: the command line. Dispatches to the subcommands, and to the installed names. */
#include <errno.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <string.h>

#include "cmd/cmd.h"
#include "base/printable.h"

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: memtrack run [OPTIONS] -- CMD [ARGS...]\n"
	    "       memtrack attach [OPTIONS] PID\n"
	    "       memtrack exec-harness [OPTIONS] -- CMD [ARGS...]\n"
	    "       memtrack exec-harness -    (a JSON list of benchmarks on stdin)\n"
	    "       memtrack report [--json | --folded | --html OUT | --pprof OUT ...] FILE\n"
	    "       memtrack track [--output DIR] [--ipc-server NAME] COMMAND-STRING\n"
	    "       memtrack bench [OPTIONS] -- CMD [ARGS...]\n"
	    "       memtrack help [SUBCOMMAND]\n"
	    "       memtrack --help | --version\n"
	    "\n"
	    "Records every heap allocation of a command and all of its descendants, with ptrace\n"
	    "and BPF uprobes attached on demand; nothing is injected into the command.\n"
	    "\n"
	    "  run           run CMD, write an artifact, print a summary, exit with CMD's status\n"
	    "  attach        record process PID, already running, until Ctrl-C; detach\n"
	    "  exec-harness  benchmark CMD: warm-up and timed rounds, walltime results JSON\n"
	    "  report        read an artifact: summary, sites, JSON, folded stacks, HTML, pprof\n"
	    "  track         CodSpeed's memory tracker (codspeed-memtrack), bash -c COMMAND\n"
	    "  bench         CodSpeed's runner in memory mode: figures per benchmark, compared\n"
	    "\n"
	    "'memtrack SUBCOMMAND --help' describes each. Needs root, or CAP_BPF, CAP_PERFMON,\n"
	    "CAP_SYS_PTRACE and CAP_CHECKPOINT_RESTORE.\n");
}

static int main_option(int c, const char *arg, void *ctx)
{
	(void)arg;
	*(bool *)ctx = c == 'V';
	return c == 'V' ? 0 : -EINVAL;
}

static const struct option main_longopts[] = {
    {"help", no_argument, NULL, 'h'},
    {"version", no_argument, NULL, 'V'},
    {0},
};

static const struct mt_cmd main_cmd = {
    .name = "memtrack",
    .shortopts = "hV",
    .longopts = main_longopts,
    .in_order = true,
    .help = usage,
    .option = main_option,
};

/* The subcommands, as main() dispatches them (argv[0] is the subcommand's name). */
static int dispatch(const char *sub, int argc, char **argv)
{
	if (strcmp(sub, "run") == 0)
		return mt_cmd_run(argc, argv);
	if (strcmp(sub, "attach") == 0)
		return mt_cmd_attach(argc, argv);
	if (strcmp(sub, "exec-harness") == 0)
		return mt_cmd_harness(argc, argv);
	if (strcmp(sub, "report") == 0)
		return mt_cmd_report(argc, argv);
	if (strcmp(sub, "track") == 0)
		return mt_cmd_track(argc, argv);
	if (strcmp(sub, "bench") == 0)
		return mt_cmd_bench(argc, argv);
	return -ENOENT;
}

/* `memtrack help [SUBCOMMAND]`, as git and perf have it: the same text as --help. */
static int help(int argc, char **argv)
{
	char a[MT_PRINTABLE_MAX];
	char *sub_argv[] = {argv[1], "--help", NULL};
	int rc;

	if (argc < 2) {
		usage(stdout);
		return 0;
	}
	if (argc > 2) {
		mt_cmd_usage_error(&main_cmd, "help takes one subcommand, not '%s'",
				   mt_printable(a, sizeof(a), argv[2]));
		return MT_EXIT_USAGE;
	}
	rc = dispatch(argv[1], 2, sub_argv);
	if (rc != -ENOENT)
		return rc;
	mt_cmd_usage_error(&main_cmd, "no subcommand '%s' to help with",
			   mt_printable(a, sizeof(a), argv[1]));
	return MT_EXIT_USAGE;
}

int main(int argc, char **argv)
{
	char a[MT_PRINTABLE_MAX];
	bool version = false;
	int first;

	/* A closed output (-o /dev/stdout | head) is a write error, never memtrack's death. */
	signal(SIGPIPE, SIG_IGN);
	/* Installed as exec-harness (make install's link), memtrack is CodSpeed's exec-harness. */
	if (argc > 0 && strcmp(basename(argv[0]), "exec-harness") == 0)
		return mt_cmd_harness(argc, argv);
	/* And as codspeed-memtrack, CodSpeed's memory tracker (memtrack track). */
	if (argc > 0 && strcmp(basename(argv[0]), "codspeed-memtrack") == 0)
		return mt_cmd_codspeed_memtrack(argc, argv);
	if (argc > 1 && strcmp(argv[1], "help") == 0)
		return help(argc - 1, argv + 1);
	if (argc > 1) {
		int rc = dispatch(argv[1], argc - 1, argv + 1);

		if (rc != -ENOENT)
			return rc;
	}

	first = mt_cmd_options(&main_cmd, argc, argv, &version);
	if (first <= 0)
		return mt_cmd_options_status(first);
	if (version) {
		printf("memtrack %s\n", MT_VERSION);
		return 0;
	}
	if (first < argc)
		mt_cmd_usage_error(&main_cmd, "unknown subcommand '%s'",
				   mt_printable(a, sizeof(a), argv[first]));
	else
		mt_cmd_usage_error(&main_cmd, "a subcommand is needed");
	usage(stderr);
	return MT_EXIT_USAGE;
}
