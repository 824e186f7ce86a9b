// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack bench: CodSpeed's runner in memory mode, without CodSpeed's cloud (docs/BENCH.md).
 * Makes and serves the runner FIFO, sets the environment the runner gives an integration, runs
 * the command under the supervisor as `memtrack run` does, with each FIFO message written into
 * the artifact in its place among the events, then splits the artifact by benchmark window,
 * prints each benchmark's figures, and compares them with an earlier run's.
 *
 * This file checks the options (parsed by cmd_bench_options.c), runs the command and ends with its
 * status; the environment and the profile folder are cmd_bench_profile.c's, the figures
 * cmd_bench_figures.c's.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/printable.h"
#include "base/privileges.h"
#include "cmd/cmd.h"
#include "cmd/cmd_bench.h"
#include "harness/bench_server.h"
#include "harness/harness_fifo.h"
#include "supervisor/supervisor.h"
#include "tracker/tracker.h"
#include "writer/events.h"

/* ---- the run ------------------------------------------------------------------------------ */

struct mark_ctx {
	struct mt_events *events;
};

static int write_mark(void *arg, struct mt_artifact_writer *w)
{
	return w ? mt_artifact_write_bench(w, arg) : -ESHUTDOWN;
}

/* On the server's thread: the mark after every event the ring holds, before the answer. */
static int record_mark(void *arg, const struct mt_artifact_bench *b)
{
	struct mark_ctx *m = arg;

	return mt_events_at_now(m->events, write_mark, (void *)b);
}

static int exit_status(const struct mt_run_result *res)
{
	return WIFEXITED(res->wait_status) ? WEXITSTATUS(res->wait_status)
					   : 128 + WTERMSIG(res->wait_status);
}

/* The run: 0 with *res, or the exit status of a failure (said). */
static int run(struct mt_cmd_bench_opts *o, struct mt_run_result *res,
	       struct mt_bench_server_stats *stats)
{
	struct mt_bench_server_config sc = {.ctl_path = MT_FIFO_CTL_PATH,
					    .ack_path = MT_FIFO_ACK_PATH};
	struct mt_bench_server *server = NULL;
	struct mark_ctx mark = {0};
	struct mt_tracker *tracker = NULL;
	int err, rc = 1;

	mt_tracker_closer_prestart(); /* forked from memtrack's only thread */
	err = mt_supervise_open_tracker(&o->cfg, &tracker);
	if (err)
		return 1;
	o->cfg.tracker = tracker;
	mt_cmd_bench_user(o, &sc.uid, &sc.gid);
	if (mt_tracker_events(tracker, &mark.events) || mt_cmd_bench_set_env(o, sc.uid, sc.gid))
		goto out;
	sc.mark = record_mark;
	sc.mark_arg = &mark;
	if (mt_bench_server_open(&server, &sc) || mt_bench_server_start(server))
		goto out;
	err = mt_supervise(&o->cfg, res);
	mt_bench_server_stop(server);
	*stats = *mt_bench_server_stats(server);
	if (err) {
		rc = res->exec_errno ? mt_exec_failure_code(-res->exec_errno) : 1;
		goto out;
	}
	rc = 0;
out:
	mt_bench_server_free(server);
	mt_tracker_close(tracker);
	return rc;
}

static int checks(struct mt_cmd_bench_opts *o)
{
	if (o->markdown && mt_cmd_check_writable(&mt_cmd_bench_cmd, "--markdown", o->markdown,
						 MT_OUTFILE_REPLACE, &o->cfg.identity))
		return MT_EXIT_USAGE;
	if (o->json_path && mt_cmd_check_writable(&mt_cmd_bench_cmd, "--json", o->json_path,
						  MT_OUTFILE_REPLACE, &o->cfg.identity))
		return MT_EXIT_USAGE;
	if (o->from)
		return 0;
	o->cfg.track = true;
	if (o->output && mt_cmd_bench_output_is_folder(o->output)) {
		if (mt_cmd_bench_prepare_profile(o))
			return MT_EXIT_USAGE;
		o->cfg.artifact_path = o->profile_artifact;
		o->cfg.artifact_new = true;
		o->cfg.mappings = true; /* CodSpeed's tracker records mmap, munmap and brk */
	} else {
		o->cfg.artifact_path =
		    o->output ? o->output
			      : mt_cmd_default_artifact(o->default_path, sizeof(o->default_path));
		o->cfg.artifact_new = !o->output;
	}
	if (mt_cmd_check_writable(&mt_cmd_bench_cmd,
				  o->output && !o->profile[0] ? "-o" : "the artifact",
				  o->cfg.artifact_path,
				  o->output && !o->profile[0] ? MT_OUTFILE_REPLACE : MT_OUTFILE_NEW,
				  &o->cfg.identity))
		return MT_EXIT_USAGE;
	return mt_check_capabilities(true) < 0 ? 1 : 0;
}

/* With --json on stdout, the command's stdout goes to stderr: the document stays whole. */
static FILE *take_stdout(const struct mt_cmd_bench_opts *o)
{
	int fd;
	FILE *f;

	if (!o->json || o->json_path)
		return stdout;
	fflush(stdout);
	fd = fcntl(STDOUT_FILENO, F_DUPFD_CLOEXEC, 3);
	if (fd < 0 || !(f = fdopen(fd, "w"))) {
		if (fd >= 0)
			close(fd);
		return NULL;
	}
	if (!o->from && dup2(STDERR_FILENO, STDOUT_FILENO) < 0) {
		fclose(f);
		return NULL;
	}
	return f;
}

int mt_cmd_bench(int argc, char **argv)
{
	struct mt_cmd_bench_opts o = {0};
	struct mt_bench_server_stats stats = {0};
	struct mt_run_result res = {0};
	FILE *json_out;
	int rc = mt_cmd_bench_parse(argc, argv, &o), rr;

	if (rc >= 0)
		return rc;
	if (mt_choose_user(&o.cfg.identity, NULL) < 0)
		return MT_EXIT_USAGE;
	rc = checks(&o);
	if (rc)
		return rc;
	json_out = take_stdout(&o);
	if (!json_out) {
		fprintf(stderr, "memtrack bench: cannot keep stdout for --json: %s\n",
			strerror(errno));
		return 1;
	}
	if (!o.from) {
		rc = run(&o, &res, &stats);
		if (rc)
			goto out;
	}
	/* The artifact (--from's too) and the base are read with the user's rights only. */
	if (mt_drop_elevation()) {
		rc = 1;
		goto out;
	}
	rr = mt_cmd_bench_report(&o, o.from ? o.from : o.cfg.artifact_path, json_out);
	if (o.profile[0] && mt_cmd_bench_write_profile(&o) && !rr)
		rr = 1;
	if (!o.from && !o.quiet) {
		char p[MT_PRINTABLE_MAX];

		fprintf(stderr, "memtrack bench: artifact: %s\n",
			mt_printable(p, sizeof(p), o.cfg.artifact_path));
	}
	if (stats.marks_lost)
		fprintf(stderr, "memtrack bench: %llu FIFO messages could not be recorded\n",
			(unsigned long long)stats.marks_lost);
	if (!o.from && exit_status(&res)) {
		rc = exit_status(&res);
	} else if (stats.protocol_errors || stats.marks_lost) {
		if (stats.protocol_errors)
			fprintf(stderr,
				"memtrack bench: the runner FIFO carried %llu message%s memtrack "
				"refused (said above): exit status 1\n",
				(unsigned long long)stats.protocol_errors,
				stats.protocol_errors == 1 ? "" : "s");
		rc = 1;
	} else {
		rc = rr;
	}
out:
	if (json_out != stdout)
		fclose(json_out);
	return rc;
}
