// SPDX-License-Identifier: GPL-2.0
/* memtrack run: parse the options, supervise the command, print the summary. */
#include <errno.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "base/outfile.h"
#include "base/printable.h"
#include "base/privileges.h"
#include "cmd/cmd.h"
#include "output/output.h"
#include "supervisor/supervisor.h"

enum {
	OPT_TRACE_STOPS = 256,
	OPT_STOP_AT,
	OPT_WATCHER,
	OPT_PLACEMENT,
	OPT_SCOPE,
	OPT_NO_TRACK,
	OPT_USER,
	OPT_RING_SIZE,
	OPT_STRICT,
	OPT_GDB,
	OPT_STACKS,
	OPT_NO_STACKS,
	OPT_LEAKS,
	OPT_MAPPINGS,
	OPT_NO_MAPPINGS,
	OPT_TRACE_MAPS,
};

/* --gdb without an address: a Unix socket only memtrack's user can open (docs/GDB.md). */
#define MT_GDB_DEFAULT_ADDR ""

/* --strict: the exit status of a run whose recording is incomplete (README, Command line). */
#define MT_EXIT_INCOMPLETE 125

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: memtrack run [OPTIONS] [--] CMD [ARGS...]\n"
	    "\n"
	    "Run CMD under the supervisor, record every allocation of its process tree into an\n"
	    "artifact, print a summary on stderr and exit with CMD's status (128+N when it died\n"
	    "of signal N).\n"
	    "\n"
	    "  -o, --output FILE          artifact path (default: memtrack-DATE-TIME-PID.mtk)\n"
	    "      --no-track             trace the tree only: no BPF, no artifact\n"
	    "      --trace-stops FILE     write every handled stop as JSON lines\n"
	    "      --trace-maps           with --trace-stops: each process's first mapping of\n"
	    "                             every file, in its order (a stop each)\n"
	    "      --stop-at POINT        hand the first process that reaches POINT to gdb:\n"
	    "                             'exec' (the command's exec), 'exec:GLOB' (an exec\n"
	    "                             of a program matching GLOB), 'map:GLOB' (right after\n"
	    "                             mapping a file matching GLOB), each optionally\n"
	    "                             after 'proc:POS,' (that process only: 0.1 is the\n"
	    "                             command's 2nd child); 'proc:POS' alone: its exec\n"
	    "      --watcher MODE         auto (default), fentry or tracepoint\n"
	    "      --probe-placement M    smart (default: an emulated instruction) or entry\n"
	    "      --probe-scope S        tree (default: breakpoints only in the traced tree's\n"
	    "                             processes) or system (in every process, filtered in "
	    "BPF;\n"
	    "                             root only)\n"
	    "      --ring-size BYTES      events ring buffer: a power of two from 4096 to 1G,\n"
	    "                             K/M/G suffixes (default 2M)\n"
	    "      --stacks[=MODE]        kernel: record each allocation's whole call stack,\n"
	    "                             unwound in the kernel from the files' unwind tables;\n"
	    "                             none: no stacks. Without it, each allocation records\n"
	    "                             its caller (docs/STACKS.md)\n"
	    "      --no-stacks            not even the caller: the same as --stacks=none\n"
	    "      --leaks                at each process's exit, classify its live blocks as\n"
	    "                             memcheck does: definitely, indirectly, possibly lost,\n"
	    "                             still reachable (docs/LEAKS.md)\n"
	    "      --mappings             record the tree's mmap, munmap, mremap and brk: the\n"
	    "                             report adds its mapped memory (docs/FORMAT.md)\n"
	    "      --no-mappings          do not (default)\n"
	    "      --user USER            run CMD as USER (default under sudo: the invoking user)\n"
	    "      --strict               exit 125 when the recording is incomplete (files not\n"
	    "                             probed, calls not recorded, allocator calls\n"
	    "                             dropped, a write error)\n"
	    "      --gdb[=ADDR]           serve gdb's remote protocol for the command (or the\n"
	    "                             --stop-at process): by default on a Unix socket only\n"
	    "                             you can open (memtrack prints the gdb command), on\n"
	    "                             stdin/stdout with '-' (target remote | memtrack run\n"
	    "                             --gdb=- -- CMD), or on TCP HOST:PORT, open to anyone\n"
	    "  -q, --quiet                no summary, and no status line (on a terminal, the\n"
	    "                             bottom row shows the run's progress every second)\n"
	    "  -v, --verbose              say what is attached where, and why\n"
	    "  -h, --help                 this help\n");
}

struct run_opts {
	struct mt_run_config cfg;
	const char *output;
	bool quiet;
	bool no_track;
	bool strict;
	const char *user;
	char default_path[128];
};

static const struct mt_cmd run_cmd;

/* val as the index of one of names into *out, or a usage error. */
static int parse_enum(const char *opt, const char *val, const char *const *names, int n, int *out)
{
	int i = mt_cmd_enum(&run_cmd, opt, val, names, n);

	if (i < 0)
		return i;
	*out = i;
	return 0;
}

/* The kernel takes a ring buffer of a power-of-two number of pages. */
static int parse_ring_size(const char *arg, size_t *out)
{
	unsigned long long v;
	char *end, a[MT_PRINTABLE_MAX];

	errno = 0;
	v = strtoull(arg, &end, 10);
	if (*end == 'K' || *end == 'k')
		v <<= 10, end++;
	else if (*end == 'M' || *end == 'm')
		v <<= 20, end++;
	else if (*end == 'G' || *end == 'g')
		v <<= 30, end++;
	if (errno || end == arg || *end || v < 4096 || v > (1ull << 30) || (v & (v - 1)))
		return mt_cmd_usage_error(
		    &run_cmd, "invalid --ring-size '%s' (a power of two from 4096 to 1G)",
		    mt_printable(a, sizeof(a), arg));
	*out = v;
	return 0;
}

static int parse_stop_at(const char *arg, struct run_opts *o)
{
	char a[MT_PRINTABLE_MAX];

	int err;

	mt_stop_point_free(&o->cfg.stop);
	err = mt_stop_point_parse(arg, &o->cfg.stop);
	if (err == -ENOMEM)
		return mt_cmd_usage_error(&run_cmd, "out of memory");
	if (err)
		return mt_cmd_usage_error(
		    &run_cmd,
		    "invalid --stop-at '%s' ([proc:POS,]exec, exec:GLOB or map:GLOB, or proc:POS)",
		    mt_printable(a, sizeof(a), arg));
	return 0;
}

/* --gdb[=ADDR]: '-' (stdin/stdout) or HOST:PORT with a numeric port. */
static int parse_gdb(const char *arg, struct run_opts *o)
{
	const char *colon;
	char a[MT_PRINTABLE_MAX], *end;
	unsigned long port;

	if (!arg) {
		o->cfg.gdb = MT_GDB_DEFAULT_ADDR;
		return 0;
	}
	o->cfg.gdb = arg;
	if (strcmp(arg, "-") == 0)
		return 0;
	colon = strrchr(arg, ':');
	errno = 0;
	port = colon ? strtoul(colon + 1, &end, 10) : 0;
	if (!colon || colon == arg || !colon[1] || *end || errno || port > 65535)
		return mt_cmd_usage_error(&run_cmd,
					  "invalid --gdb '%s' (HOST:PORT, or - for stdin/stdout)",
					  mt_printable(a, sizeof(a), arg));
	return 0;
}

static int run_option(int c, const char *arg, void *ctx)
{
	static const char *const placements[] = {"smart", "entry"};
	static const char *const scopes[] = {"tree", "system"};
	struct run_opts *o = ctx;
	int v = 0, ret;

	switch (c) {
	case 'o':
		o->output = arg;
		return 0;
	case OPT_NO_TRACK:
		o->no_track = true;
		return 0;
	case OPT_TRACE_STOPS:
		o->cfg.trace_stops_path = arg;
		return 0;
	case OPT_TRACE_MAPS:
		o->cfg.trace_maps = true;
		return 0;
	case OPT_STOP_AT:
		return parse_stop_at(arg, o);
	case OPT_WATCHER:
		ret = parse_enum("--watcher", arg, mt_cmd_watchers, 3, &v);
		if (!ret)
			o->cfg.watcher = v;
		return ret;
	case OPT_PLACEMENT:
		ret = parse_enum("--probe-placement", arg, placements, 2, &v);
		if (!ret)
			o->cfg.placement = v;
		return ret;
	case OPT_SCOPE:
		ret = parse_enum("--probe-scope", arg, scopes, 2, &v);
		if (!ret)
			o->cfg.system_scope = v == 1;
		return ret;
	case OPT_USER:
		o->user = arg;
		return 0;
	case OPT_RING_SIZE:
		return parse_ring_size(arg, &o->cfg.ring_size);
	case OPT_STRICT:
		o->strict = true;
		return 0;
	case OPT_GDB:
		return parse_gdb(arg, o);
	case OPT_STACKS:
		ret = parse_enum("--stacks", arg ? arg : "kernel", mt_cmd_stack_modes, 2, &v);
		if (!ret) {
			o->cfg.stacks = v == 1;
			o->cfg.stacks_caller = false;
		}
		return ret;
	case OPT_NO_STACKS:
		o->cfg.stacks = false;
		return 0;
	case OPT_LEAKS:
		o->cfg.leaks = true;
		return 0;
	case OPT_MAPPINGS:
		o->cfg.mappings = true;
		return 0;
	case OPT_NO_MAPPINGS:
		o->cfg.mappings = false;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	case 'v':
		o->cfg.verbose = true;
		return 0;
	}
	return -EINVAL;
}

static const struct option run_longopts[] = {
    {"output", required_argument, NULL, 'o'},
    {"no-track", no_argument, NULL, OPT_NO_TRACK},
    {"trace-stops", required_argument, NULL, OPT_TRACE_STOPS},
    {"trace-maps", no_argument, NULL, OPT_TRACE_MAPS},
    {"stop-at", required_argument, NULL, OPT_STOP_AT},
    {"watcher", required_argument, NULL, OPT_WATCHER},
    {"probe-placement", required_argument, NULL, OPT_PLACEMENT},
    {"probe-scope", required_argument, NULL, OPT_SCOPE},
    {"user", required_argument, NULL, OPT_USER},
    {"ring-size", required_argument, NULL, OPT_RING_SIZE},
    {"strict", no_argument, NULL, OPT_STRICT},
    {"gdb", optional_argument, NULL, OPT_GDB},
    {"stacks", optional_argument, NULL, OPT_STACKS},
    {"no-stacks", no_argument, NULL, OPT_NO_STACKS},
    {"leaks", no_argument, NULL, OPT_LEAKS},
    {"mappings", no_argument, NULL, OPT_MAPPINGS},
    {"no-mappings", no_argument, NULL, OPT_NO_MAPPINGS},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static const struct mt_cmd run_cmd = {
    .name = "memtrack run",
    .shortopts = "o:qvh",
    .longopts = run_longopts,
    .in_order = true,
    .help = usage,
    .option = run_option,
};

/* Returns -1 to run, or the exit status: 0 after --help, 2 after a usage error. */
static int parse(int argc, char **argv, struct run_opts *o)
{
	int first = mt_cmd_options(&run_cmd, argc, argv, o);

	if (first <= 0)
		return mt_cmd_options_status(first);
	if (first >= argc) {
		mt_cmd_usage_error(&run_cmd, "no command given (memtrack run -- CMD [ARGS...])");
		return MT_EXIT_USAGE;
	}
	if (o->no_track && (o->output || o->cfg.stop.map || o->cfg.leaks || o->cfg.mappings)) {
		mt_cmd_usage_error(
		    &run_cmd, "--no-track excludes -o, --leaks, --mappings and --stop-at map:GLOB");
		return MT_EXIT_USAGE;
	}
	o->cfg.argv = argv + first;
	return -1;
}

/* The directory of path, resolved (to free), or NULL. */
static char *real_dir(const char *path)
{
	char *copy = strdup(path), *dir = NULL;

	if (copy)
		dir = realpath(dirname(copy), NULL);
	free(copy);
	return dir;
}

/*
 * Whether -o and --trace-stops name one regular file, existing or not: the trace, written at the
 * end, would replace the artifact. /dev/null or a stream of the shell's (/dev/stdout) may take
 * both.
 */
static bool one_file(const char *a, const char *b)
{
	char *ca, *cb, *da = NULL, *db = NULL;
	struct stat sa, sb;
	bool same = false;

	if (!stat(a, &sa) && !stat(b, &sb))
		return S_ISREG(sa.st_mode) && sa.st_dev == sb.st_dev && sa.st_ino == sb.st_ino;
	if (!stat(a, &sa) || !stat(b, &sb))
		return false; /* one exists, the other does not */
	ca = strdup(a);
	cb = strdup(b);
	if (ca && cb && !strcmp(basename(ca), basename(cb))) {
		da = real_dir(a);
		db = real_dir(b);
		same = da && db && !strcmp(da, db);
	}
	free(ca);
	free(cb);
	free(da);
	free(db);
	return same;
}

static void print_summary(const struct run_opts *o, const struct mt_run_result *res)
{
	char cmd[MT_PRINTABLE_MAX];

	mt_printable(cmd, sizeof(cmd), o->cfg.argv[0]);
	if (WIFSIGNALED(res->wait_status))
		fprintf(stderr, "memtrack: %s killed by SIG%s", cmd,
			sigabbrev_np(WTERMSIG(res->wait_status)) ?: "?");
	else
		fprintf(stderr, "memtrack: %s exited with %d", cmd, res->exit_code);
	fprintf(stderr, "; %u process%s, %u thread%s", res->processes,
		res->processes == 1 ? "" : "es", res->threads, res->threads == 1 ? "" : "s");
	if (res->watcher[0])
		fprintf(stderr, "; watcher: %s", res->watcher);
	if (res->gdb_summary[0])
		fprintf(stderr, "; %s", res->gdb_summary);
	if (res->stopped_pid)
		fprintf(stderr, "; process %d was handed to a debugger%s", res->stopped_pid,
			!o->cfg.track		  ? ""
			: res->handoff_late_files ? ", its allocations recorded but for calls into "
						    "files it mapped later (see below)"
						  : ", its allocations recorded throughout");
	fputc('\n', stderr);
	mt_cmd_artifact_summary(o->cfg.artifact_path);
}

/* --user, or under sudo its invoker: 0, or the usage error said. */
static int choose_user(struct run_opts *o)
{
	int err = mt_choose_user(&o->cfg.identity, o->user);
	char u[MT_PRINTABLE_MAX];

	if (err == -ENOENT)
		return mt_cmd_usage_error(&run_cmd, "no such user '%s'",
					  mt_printable(u, sizeof(u), o->user));
	if (err == -EPERM)
		return mt_cmd_usage_error(
		    &run_cmd,
		    "--user %s needs root: this memtrack runs with privileges "
		    "its user (uid %u) does not have, and serves that user only",
		    mt_printable(u, sizeof(u), o->user), (unsigned)getuid());
	return err;
}

/*
 * What reaches processes outside the invoker's tree is root's alone (real uid 0: a root shell,
 * sudo), never a setcap'd or set-user-ID memtrack's user's (docs/SECURITY.md, the options' table).
 * 0, or the usage error said.
 */
static int check_reach(const struct run_opts *o)
{
	if (o->cfg.system_scope && getuid() != 0)
		return mt_cmd_usage_error(
		    &run_cmd,
		    "--probe-scope system puts breakpoints in every process on the machine that "
		    "maps a probed file, others' too: root's only (uid %u is not root)",
		    (unsigned)getuid());
	return 0;
}

static int run(int argc, char **argv, struct run_opts *op)
{
	struct mt_status *status;
	struct mt_run_result res;
	int rc, err;

	rc = parse(argc, argv, op);
	if (rc >= 0)
		return rc;
	if (check_reach(op) || choose_user(op))
		return MT_EXIT_USAGE;
	op->cfg.track = !op->no_track;
	if (op->cfg.trace_maps && (!op->cfg.trace_stops_path || !op->cfg.track)) {
		mt_cmd_usage_error(&run_cmd, "--trace-maps needs --trace-stops, and tracking (the "
					     "watcher stops each first mapping)");
		return MT_EXIT_USAGE;
	}
	if (op->cfg.track && mt_check_capabilities(true) < 0)
		return 1;
	if (op->cfg.track) {
		op->cfg.artifact_path =
		    op->output
			? op->output
			: mt_cmd_default_artifact(op->default_path, sizeof(op->default_path));
		op->cfg.artifact_new = !op->output;
	}
	if ((op->cfg.trace_stops_path &&
	     mt_cmd_check_writable(&run_cmd, "--trace-stops", op->cfg.trace_stops_path,
				   MT_OUTFILE_REPLACE, &op->cfg.identity)) ||
	    (op->cfg.artifact_path &&
	     mt_cmd_check_writable(
		 &run_cmd, op->output ? "-o" : "the artifact", op->cfg.artifact_path,
		 op->output ? MT_OUTFILE_REPLACE : MT_OUTFILE_NEW, &op->cfg.identity)))
		return MT_EXIT_USAGE;
	if (op->cfg.trace_stops_path && op->cfg.artifact_path &&
	    one_file(op->cfg.trace_stops_path, op->cfg.artifact_path)) {
		mt_cmd_usage_error(&run_cmd, "-o and --trace-stops name one file: the trace would "
					     "replace the artifact");
		return MT_EXIT_USAGE;
	}
	/* Not under --gdb: gdb's prompt has the terminal. */
	status = op->quiet || op->cfg.gdb ? NULL : mt_status_start(&op->cfg);
	err = mt_supervise(&op->cfg, &res);
	mt_status_end(status);
	if (err)
		return res.exec_errno ? mt_exec_failure_code(-res.exec_errno) : 1;
	/* The summary reads the artifact back: with the user's rights only, whatever is there now.
	 */
	if (mt_drop_elevation())
		return 1;
	if (!op->quiet)
		print_summary(op, &res);
	/* --gdb=-: gdb hears of the program's end now, having shown the summary. */
	if (res.gdb_final[0] && write(STDOUT_FILENO, res.gdb_final, strlen(res.gdb_final)) < 0)
		res.gdb_final[0] = '\0';
	if (op->strict && res.incomplete) {
		fprintf(stderr,
			"memtrack: --strict: the recording is incomplete: exit status %d instead "
			"of %d\n",
			MT_EXIT_INCOMPLETE, res.exit_code);
		return MT_EXIT_INCOMPLETE;
	}
	return res.exit_code;
}

int mt_cmd_run(int argc, char **argv)
{
	/*
	 * Where a program allocates is the first question: by default each allocation records the
	 * allocator's caller, which costs no unwinding (docs/STACKS.md, "The default").
	 */
	struct run_opts o = {.cfg.stacks = true, .cfg.stacks_caller = true};
	int rc = run(argc, argv, &o);

	mt_stop_point_free(&o.cfg.stop);
	return rc;
}
