// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack track: CodSpeed's memory tracker, codspeed-memtrack 1.4.0 (docs/HARNESS.md, "The
 * tracker role"). Runs COMMAND-STRING with `bash -c` under the supervisor, recording its whole
 * tree with mappings, answers the runner's Enable/Disable/Ping over its IPC when given
 * --ipc-server, and leaves DIR/ROOTPID.MemtrackArtifact.msgpack: the events of the Enable/Disable
 * windows, or of the whole run without --ipc-server (as CodSpeed's tracker, which then enables
 * tracking from the start).
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/printable.h"
#include "base/privileges.h"
#include "cmd/cmd.h"
#include "codspeed/codspeed_ipc.h"
#include "codspeed/codspeed_write.h"
#include "supervisor/supervisor.h"
#include "tracker/tracker.h"

/* The codspeed-memtrack whose interface this is: the runner's install check reads `NAME VERSION`
 * from --version and needs at least the version it pins (src/binary_pins.rs: 1.4.0). CodSpeed's
 * binary names itself "memtrack" there. */
#define MEMTRACK_CODSPEED_VERSION "1.4.0"

enum {
	OPT_IPC_SERVER = 256,
	OPT_MTK,
};

struct track_opts {
	const char *output; /* DIR, default "." as CodSpeed's */
	const char *ipc_server;
	const char *mtk; /* keep memtrack's own artifact there */
	bool quiet, verbose;
};

static void usage(FILE *out)
{
	fprintf(out,
		"Usage: memtrack track [OPTIONS] COMMAND-STRING\n"
		"       codspeed-memtrack track [OPTIONS] COMMAND-STRING  (the installed link)\n"
		"\n"
		"CodSpeed's memory tracker (codspeed-memtrack " MEMTRACK_CODSPEED_VERSION
		"): run COMMAND-STRING with 'bash -c',\n"
		"record the allocations and mappings of its whole tree, and write\n"
		"DIR/ROOTPID.MemtrackArtifact.msgpack for CodSpeed's runner.\n"
		"\n"
		"  -o, --output DIR       where the artifact goes (default: .)\n"
		"      --ipc-server NAME  connect to the runner's IPC server NAME and record only\n"
		"                         between its Enable and Disable (default: everything)\n"
		"      --mtk FILE         keep memtrack's own artifact of the run in FILE\n"
		"  -q, --quiet            say nothing but errors\n"
		"  -v, --verbose          say what is attached where, and why\n"
		"  -h, --help             this help\n");
}

static int track_option(int c, const char *arg, void *ctx);

static const struct option track_longopts[] = {
    {"output", required_argument, NULL, 'o'},
    {"ipc-server", required_argument, NULL, OPT_IPC_SERVER},
    {"mtk", required_argument, NULL, OPT_MTK},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static const struct mt_cmd track_cmd = {
    .name = "memtrack track",
    .shortopts = "o:qvh",
    .longopts = track_longopts,
    .help = usage,
    .option = track_option,
};

static int track_option(int c, const char *arg, void *ctx)
{
	struct track_opts *o = ctx;

	switch (c) {
	case 'o':
		o->output = arg;
		return 0;
	case OPT_IPC_SERVER:
		o->ipc_server = arg;
		return 0;
	case OPT_MTK:
		o->mtk = arg;
		return 0;
	case 'q':
		o->quiet = true;
		return 0;
	case 'v':
		o->verbose = true;
		return 0;
	}
	return -EINVAL;
}

static int check_dir(const char *dir)
{
	char p[MT_PRINTABLE_MAX];
	struct stat st;
	int err = 0;

	if (stat(dir, &st) < 0)
		err = errno;
	else if (!S_ISDIR(st.st_mode))
		err = ENOTDIR;
	else if (access(dir, W_OK | X_OK) < 0)
		err = errno;
	if (err)
		mt_cmd_usage_error(&track_cmd, "cannot write to --output %s: %s",
				   mt_printable(p, sizeof(p), dir), strerror(err));
	return -err;
}

/* DIR/ROOTPID.MemtrackArtifact.msgpack from the run's .mtk, of the windows when gated. */
static int write_codspeed(const struct track_opts *o, const char *mtk,
			  const struct mt_codspeed_window *w, size_t n, bool gated)
{
	struct mt_codspeed_job job = {
	    .mtk = mtk, .dir = o->output, .windows = w, .n_windows = n, .gated = gated};
	int ret = mt_codspeed_write_artifact(&job);

	if (ret)
		fprintf(stderr, "memtrack: cannot write CodSpeed's memory artifact in %s: %s\n",
			o->output, job.err[0] ? job.err : strerror(-ret));
	else if (!o->quiet)
		fprintf(stderr, "memtrack: wrote %llu events to %s\n",
			(unsigned long long)job.events, job.path);
	return ret;
}

/* The command's exit code; CodSpeed's tracker exits 1 for a command killed by a signal. */
static int exit_status(const struct mt_run_result *res)
{
	return WIFEXITED(res->wait_status) ? WEXITSTATUS(res->wait_status) : 1;
}

static int track(struct track_opts *o, const char *command)
{
	char *argv[] = {"bash", "-c", (char *)command, NULL};
	struct mt_run_config cfg = {.argv = argv, .track = true, .mappings = true};
	const struct mt_codspeed_window *windows = NULL;
	struct mt_codspeed_ipc *ipc = NULL;
	struct mt_run_result res = {0};
	char tmp[PATH_MAX + 64];
	size_t n_windows = 0;
	int err, rc = 1;

	if (check_dir(o->output))
		return MT_EXIT_USAGE;
	if (mt_choose_user(&cfg.identity, NULL) < 0)
		return MT_EXIT_USAGE;
	/* A bad --mtk is one sentence before anything runs, as run's -o is. */
	if (o->mtk &&
	    mt_cmd_check_writable(&track_cmd, "--mtk", o->mtk, MT_OUTFILE_REPLACE, &cfg.identity))
		return MT_EXIT_USAGE;
	/* Before the IPC's thread: the closer is forked from memtrack's only thread. */
	mt_tracker_closer_prestart();
	/* First, as CodSpeed's: the runner waits 5 s for it, loading BPF takes longer. */
	if (o->ipc_server && mt_codspeed_ipc_connect(&ipc, o->ipc_server) < 0)
		return 1;
	if (mt_check_capabilities(true) < 0)
		goto out;
	snprintf(tmp, sizeof(tmp), "%s/.memtrack-%d.mtk", o->output, (int)getpid());
	cfg.artifact_path = o->mtk ? o->mtk : tmp;
	cfg.verbose = o->verbose;
	if (ipc && mt_codspeed_ipc_start(ipc) < 0)
		goto out;
	err = mt_supervise(&cfg, &res);
	if (ipc)
		windows = mt_codspeed_ipc_stop(ipc, mt_clock_now_ns(), &n_windows);
	if (err) {
		rc = res.exec_errno ? mt_exec_failure_code(-res.exec_errno) : 1;
		goto out;
	}
	/* The artifact is read back and CodSpeed's written with the user's rights only. */
	if (mt_drop_elevation())
		goto out;
	if (res.incomplete)
		fprintf(stderr,
			"memtrack: the recording is incomplete (memtrack report --json %s "
			"says why)\n",
			o->mtk ? o->mtk : "--mtk FILE");
	rc = write_codspeed(o, cfg.artifact_path, windows, n_windows, ipc != NULL)
		 ? 1
		 : exit_status(&res);
out:
	if (!o->mtk)
		unlink(tmp);
	mt_codspeed_ipc_free(ipc);
	return rc;
}

int mt_cmd_track(int argc, char **argv)
{
	struct track_opts o = {.output = "."};
	char a[MT_PRINTABLE_MAX];
	int first = mt_cmd_options(&track_cmd, argc, argv, &o);

	if (first <= 0)
		return mt_cmd_options_status(first);
	if (first == argc)
		return mt_cmd_usage_error(&track_cmd, "a COMMAND-STRING is needed (run with "
						      "'bash -c')"),
		       MT_EXIT_USAGE;
	if (first + 1 < argc)
		return mt_cmd_usage_error(&track_cmd,
					  "one COMMAND-STRING only: '%s' is another (quote the "
					  "command)",
					  mt_printable(a, sizeof(a), argv[first + 1])),
		       MT_EXIT_USAGE;
	return track(&o, argv[first]);
}

/* Installed as codspeed-memtrack (make install's link): `track`, --version, --help. */
int mt_cmd_codspeed_memtrack(int argc, char **argv)
{
	if (argc > 1 && strcmp(argv[1], "track") == 0)
		return mt_cmd_track(argc - 1, argv + 1);
	if (argc > 1 && (strcmp(argv[1], "--version") == 0 || strcmp(argv[1], "-V") == 0)) {
		printf("memtrack " MEMTRACK_CODSPEED_VERSION "\n");
		return 0;
	}
	if (argc > 1 && (strcmp(argv[1], "--help") == 0 || strcmp(argv[1], "-h") == 0)) {
		usage(stdout);
		return 0;
	}
	fprintf(stderr, "codspeed-memtrack: %s\n",
		argc > 1 ? "unknown subcommand: only 'track' is one" : "a subcommand is needed");
	usage(stderr);
	return MT_EXIT_USAGE;
}
