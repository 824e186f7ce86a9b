// SPDX-License-Identifier: GPL-2.0
/* memtrack attach: record a process already running until Ctrl-C, SIGTERM or --duration. */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/duration.h"
#include "base/utf8.h"
#include "base/printable.h"
#include "base/privileges.h"
#include "cmd/cmd.h"
#include "harness/harness_duration.h"
#include "supervisor/supervisor.h"

enum {
	OPT_TREE = 256,
	OPT_DURATION,
	OPT_STACKS,
	OPT_WATCHER,
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: memtrack attach [OPTIONS] PID\n"
		"\n"
		"Record every allocation of process PID, already running, from now until Ctrl-C,\n"
		"SIGTERM or --duration; then detach and leave it running as it was. Its new\n"
		"threads and children are followed. Blocks allocated before the attach are\n"
		"unknown: their frees are counted apart, and blocks still live at the detach are\n"
		"reported as such.\n"
		"\n"
		"  -o, --output FILE          artifact path (default: memtrack-DATE-TIME-PID.mtk)\n"
		"      --tree                 its descendants too (the children of every thread)\n"
		"      --duration D           detach after D (seconds, or 500ms, 1m30s ...)\n"
		"      --stacks[=MODE]        kernel: record each allocation's call stack; none\n"
		"                             (default): no stacks (docs/STACKS.md)\n"
		"      --watcher MODE         auto (default), fentry or tracepoint\n"
		"  -q, --quiet                say nothing but errors\n"
		"  -v, --verbose              say what is attached where, and why\n"
		"  -h, --help                 this help\n");
}

struct attach_opts {
	struct mt_run_config cfg;
	const char *output;
	bool quiet;
	char default_path[128];
	char *cmdline; /* the process's command line, NUL-separated (cfg.argv points into it) */
	char **argv;
};

static const struct mt_cmd attach_cmd;

static int attach_option(int c, const char *arg, void *ctx)
{
	struct attach_opts *o = ctx;
	char err[128], a[MT_PRINTABLE_MAX];
	int v;

	switch (c) {
	case 'o':
		o->output = arg;
		return 0;
	case OPT_TREE:
		o->cfg.attach_tree = true;
		return 0;
	case OPT_DURATION:
		if (!mt_utf8_valid(arg, strlen(arg)) ||
		    mt_harness_parse_duration(arg, &o->cfg.duration_ns, err, sizeof(err)) ||
		    !o->cfg.duration_ns)
			return mt_cmd_usage_error(&attach_cmd,
						  "invalid --duration '%s' (more than 0: seconds, "
						  "or 500ms, 1m30s ...)",
						  mt_printable(a, sizeof(a), arg));
		return 0;
	case OPT_STACKS:
		v = mt_cmd_enum(&attach_cmd, "--stacks", arg ? arg : "kernel", mt_cmd_stack_modes,
				2);
		if (v >= 0)
			o->cfg.stacks = v == 1;
		return v < 0 ? v : 0;
	case OPT_WATCHER:
		v = mt_cmd_enum(&attach_cmd, "--watcher", arg, mt_cmd_watchers, 3);
		if (v >= 0)
			o->cfg.watcher = (enum mt_watcher_mode)v;
		return v < 0 ? v : 0;
	case 'q':
		o->quiet = o->cfg.quiet = true;
		return 0;
	case 'v':
		o->cfg.verbose = true;
		return 0;
	}
	return -EINVAL;
}

static const struct option attach_longopts[] = {
    {"output", required_argument, NULL, 'o'},
    {"tree", no_argument, NULL, OPT_TREE},
    {"duration", required_argument, NULL, OPT_DURATION},
    {"stacks", optional_argument, NULL, OPT_STACKS},
    {"watcher", required_argument, NULL, OPT_WATCHER},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static const struct mt_cmd attach_cmd = {
    .name = "memtrack attach",
    .shortopts = "o:qvh",
    .longopts = attach_longopts,
    .help = usage,
    .option = attach_option,
};

/* The process's command line (/proc/PID/cmdline) as the artifact's argv; its name if empty. */
static int read_cmdline(pid_t pid, struct attach_opts *o)
{
	size_t len = 0, cap = 4096, n = 0;
	char path[64];
	ssize_t k;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/cmdline", pid);
	o->cmdline = malloc(cap + 1);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	while (o->cmdline && fd >= 0 && (k = read(fd, o->cmdline + len, cap - len)) > 0) {
		len += (size_t)k;
		if (len == cap) {
			char *grown = realloc(o->cmdline, 2 * cap + 1);

			if (!grown)
				break;
			o->cmdline = grown;
			cap *= 2;
		}
	}
	if (fd >= 0)
		close(fd);
	if (!o->cmdline)
		return -ENOMEM;
	if (!len)
		len = (size_t)snprintf(o->cmdline, cap, "[%d]", pid) + 1;
	o->cmdline[len] = '\0';
	for (size_t i = 0; i < len; i += strlen(o->cmdline + i) + 1)
		n++;
	o->argv = calloc(n + 1, sizeof(*o->argv));
	if (!o->argv)
		return -ENOMEM;
	n = 0;
	for (size_t i = 0; i < len; i += strlen(o->cmdline + i) + 1)
		o->argv[n++] = o->cmdline + i;
	o->cfg.argv = o->argv;
	return 0;
}

/* Returns -1 to attach, or the exit status: 0 after --help, 2 after a usage error. */
static int parse(int argc, char **argv, struct attach_opts *o)
{
	int first = mt_cmd_options(&attach_cmd, argc, argv, o);
	char a[MT_PRINTABLE_MAX], *end;
	long pid;

	if (first <= 0)
		return mt_cmd_options_status(first);
	if (first != argc - 1) {
		mt_cmd_usage_error(
		    &attach_cmd,
		    first >= argc ? "no PID given (memtrack attach PID)" : "one PID only, not '%s'",
		    first >= argc ? "" : mt_printable(a, sizeof(a), argv[first + 1]));
		return MT_EXIT_USAGE;
	}
	errno = 0;
	pid = strtol(argv[first], &end, 10);
	if (errno || end == argv[first] || *end || pid <= 0 || pid > 0x3fffffff) {
		mt_cmd_usage_error(&attach_cmd, "invalid PID '%s' (a process id)",
				   mt_printable(a, sizeof(a), argv[first]));
		return MT_EXIT_USAGE;
	}
	o->cfg.attach_pid = (pid_t)pid;
	return -1;
}

static void print_summary(const struct attach_opts *o, const struct mt_run_result *res)
{
	char cmd[MT_PRINTABLE_MAX], d1[32], d2[32];
	pid_t pid = o->cfg.attach_pid;

	mt_printable(cmd, sizeof(cmd), o->cfg.argv[0]);
	if (res->root_ended && WIFSIGNALED(res->wait_status))
		fprintf(stderr, "memtrack: process %d (%s) was killed by SIG%s while attached", pid,
			cmd, sigabbrev_np(WTERMSIG(res->wait_status)) ?: "?");
	else if (res->root_ended)
		fprintf(stderr, "memtrack: process %d (%s) exited with %d while attached", pid, cmd,
			res->exit_code);
	else
		fprintf(stderr, "memtrack: detached from process %d (%s), left running", pid, cmd);
	fprintf(stderr, "; %u process%s, %u thread%s; attach %s, detach %s\n", res->processes,
		res->processes == 1 ? "" : "es", res->threads, res->threads == 1 ? "" : "s",
		mt_format_duration((double)res->attach_ns, d1, sizeof(d1)),
		mt_format_duration((double)res->detach_ns, d2, sizeof(d2)));
	mt_cmd_artifact_summary(o->cfg.artifact_path);
}

static int attach(int argc, char **argv, struct attach_opts *o)
{
	struct mt_status *status;
	struct mt_run_result res;
	int rc = parse(argc, argv, o);

	if (rc >= 0)
		return rc;
	if (mt_choose_user(&o->cfg.identity, NULL) < 0)
		return MT_EXIT_USAGE;
	if (mt_check_capabilities(true) < 0)
		return 1;
	if (mt_attach_check(o->cfg.attach_pid, o->cfg.attach_tree, &o->cfg.identity))
		return 1;
	if (read_cmdline(o->cfg.attach_pid, o)) {
		fprintf(stderr, "memtrack attach: out of memory\n");
		return 1;
	}
	o->cfg.track = true;
	o->cfg.artifact_path =
	    o->output ? o->output
		      : mt_cmd_default_artifact(o->default_path, sizeof(o->default_path));
	o->cfg.artifact_new = !o->output;
	if (mt_cmd_check_writable(
		&attach_cmd, o->output ? "-o" : "the artifact", o->cfg.artifact_path,
		o->output ? MT_OUTFILE_REPLACE : MT_OUTFILE_NEW, &o->cfg.identity))
		return MT_EXIT_USAGE;
	status = o->quiet ? NULL : mt_status_start(&o->cfg);
	rc = mt_supervise(&o->cfg, &res);
	mt_status_end(status);
	if (rc)
		return 1;
	if (mt_drop_elevation())
		return 1;
	if (!o->quiet)
		print_summary(o, &res);
	return 0;
}

int mt_cmd_attach(int argc, char **argv)
{
	struct attach_opts o = {0};
	int rc = attach(argc, argv, &o);

	free(o.argv);
	free(o.cmdline);
	return rc;
}
