// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack bench: CodSpeed's runner in memory mode, without CodSpeed's cloud (docs/BENCH.md).
 * Makes and serves the runner FIFO, sets the environment the runner gives an integration, runs
 * the command under the supervisor as `memtrack run` does, with each FIFO message written into
 * the artifact in its place among the events, then splits the artifact by benchmark window,
 * prints each benchmark's figures, and compares them with an earlier run's.
 */
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <sys/wait.h>
#include <unistd.h>

#include "aggregate/bench.h"
#include "aggregate/bench_compare.h"
#include "aggregate/sites.h"
#include "base/grow.h"
#include "base/printable.h"
#include "base/regfile.h"
#include "base/privileges.h"
#include "cmd/cmd.h"
#include "codspeed/codspeed_stamps.h"
#include "codspeed/codspeed_write.h"
#include "harness/bench_server.h"
#include "harness/harness_fifo.h"
#include "output/output.h"
#include "supervisor/supervisor.h"
#include "tracker/tracker.h"
#include "writer/events.h"

/* The largest --compare document read. */
#define BASE_MAX (64u << 20)

enum {
	OPT_JSON = 256,
	OPT_MARKDOWN,
	OPT_COMPARE,
	OPT_MAX_INCREASE,
	OPT_STACKS,
	OPT_FROM,
	OPT_NO_INTROSPECTION,
};

struct bench_opts {
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

static void usage(FILE *out)
{
	fprintf(
	    out,
	    "Usage: memtrack bench [OPTIONS] -- CMD [ARGS...]\n"
	    "       memtrack bench [OPTIONS] --from FILE\n"
	    "\n"
	    "Run CMD as CodSpeed's runner runs a memory-mode benchmark command: serve the\n"
	    "runner FIFO (/tmp/runner.ctl.fifo, /tmp/runner.ack.fifo) for any CodSpeed\n"
	    "integration, record the whole tree, and give each benchmark (StartProfiler to\n"
	    "StopProfiler, named by CurrentBenchmark) its own figures.\n"
	    "\n"
	    "  -o, --output FILE          the artifact (default memtrack-DATE-TIME-PID.mtk)\n"
	    "  -o, --output DIR/          CodSpeed's profile folder, as the runner leaves it:\n"
	    "                             DIR/results/ROOTPID.MemtrackArtifact.msgpack and\n"
	    "                             ExecutionTimestamps.msgpack, the artifact in "
	    "DIR/memtrack\n"
	    "      --json[=FILE]          the figures as JSON on stdout (the command's stdout\n"
	    "                             then goes to stderr), or into FILE\n"
	    "      --markdown FILE        the figures (and the comparison) as Markdown\n"
	    "      --compare BASE.json    compare with an earlier run's --json document\n"
	    "      --max-increase METRIC=PERCENT\n"
	    "                             with --compare: exit 3 when a benchmark's METRIC\n"
	    "                             (allocations, bytes_allocated, average_allocation,\n"
	    "                             peak_bytes, live_at_end) grew by more than PERCENT\n"
	    "      --stacks               record stacks: each benchmark's top allocation sites\n"
	    "      --from FILE            split an artifact of an earlier memtrack bench\n"
	    "      --no-introspection     no node wrapper on PATH (@codspeed/core's V8 flags)\n"
	    "  -q, --quiet                no table on stderr\n"
	    "  -v, --verbose              say what is attached where, and why\n"
	    "  -h, --help                 this help\n"
	    "\n"
	    "Exit status: the command's when it failed; 1 when memtrack failed, the FIFO carried\n"
	    "a message memtrack refused, or no benchmark window came; 3 when --max-increase was\n"
	    "exceeded; 2 for a usage error; else 0.\n");
}

static int bench_option(int c, const char *arg, void *ctx);

static const struct option bench_longopts[] = {
    {"output", required_argument, NULL, 'o'},
    {"json", optional_argument, NULL, OPT_JSON},
    {"markdown", required_argument, NULL, OPT_MARKDOWN},
    {"compare", required_argument, NULL, OPT_COMPARE},
    {"max-increase", required_argument, NULL, OPT_MAX_INCREASE},
    {"stacks", no_argument, NULL, OPT_STACKS},
    {"from", required_argument, NULL, OPT_FROM},
    {"no-introspection", no_argument, NULL, OPT_NO_INTROSPECTION},
    {"quiet", no_argument, NULL, 'q'},
    {"verbose", no_argument, NULL, 'v'},
    {"help", no_argument, NULL, 'h'},
    {0},
};

static const struct mt_cmd bench_cmd = {
    .name = "memtrack bench",
    .shortopts = "o:qvh",
    .longopts = bench_longopts,
    .in_order = true,
    .help = usage,
    .option = bench_option,
};

static int parse_limit(struct bench_opts *o, const char *arg)
{
	double pct;
	int m, err;

	err = mt_cmd_max_increase(&bench_cmd, arg, mt_bench_metric_parse,
				  "allocations, bytes_allocated, average_allocation, peak_bytes or "
				  "live_at_end",
				  &m, &pct);
	if (err)
		return err;
	if (o->limits.n == MT_BENCH_LIMITS)
		return mt_cmd_usage_error(&bench_cmd, "at most %d --max-increase", MT_BENCH_LIMITS);
	o->limits.metric[o->limits.n] = (enum mt_bench_metric)m;
	o->limits.max_percent[o->limits.n++] = pct;
	return 0;
}

static int bench_option(int c, const char *arg, void *ctx)
{
	struct bench_opts *o = ctx;

	switch (c) {
	case 'o':
		o->output = arg;
		return 0;
	case OPT_JSON:
		o->json = true;
		o->json_path = arg;
		return 0;
	case OPT_MARKDOWN:
		o->markdown = arg;
		return 0;
	case OPT_COMPARE:
		o->compare = arg;
		return 0;
	case OPT_MAX_INCREASE:
		return parse_limit(o, arg);
	case OPT_STACKS:
		o->cfg.stacks = true;
		return 0;
	case OPT_FROM:
		o->from = arg;
		return 0;
	case OPT_NO_INTROSPECTION:
		o->no_introspection = true;
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

/* Returns -1 to go on, or the exit status. */
static int parse(int argc, char **argv, struct bench_opts *o)
{
	int first = mt_cmd_options(&bench_cmd, argc, argv, o);

	if (first <= 0)
		return mt_cmd_options_status(first);
	if (o->from ? first < argc : first >= argc) {
		mt_cmd_usage_error(&bench_cmd, o->from ? "--from FILE runs no command"
						       : "no command given (memtrack bench -- CMD "
							 "[ARGS...])");
		return MT_EXIT_USAGE;
	}
	if (o->limits.n && !o->compare) {
		mt_cmd_usage_error(&bench_cmd, "--max-increase needs --compare BASE.json");
		return MT_EXIT_USAGE;
	}
	if (o->from && (o->output || o->cfg.stacks)) {
		mt_cmd_usage_error(&bench_cmd, "--from FILE excludes -o and --stacks");
		return MT_EXIT_USAGE;
	}
	o->cfg.argv = argv + first;
	return -1;
}

/* ---- the environment the runner gives the command ------------------------------------- */

/*
 * The directory of memtrack's node wrapper (tools/introspect/node): installed beside the binary
 * in ../libexec/memtrack/introspect, or in the build tree's libexec/memtrack/introspect. Only a
 * directory of root's or memtrack's owner that nobody else may write is put on PATH.
 */
static bool introspect_dir(char *buf, size_t len)
{
	static const char *const rel[] = {"/../libexec/memtrack/introspect",
					  "/libexec/memtrack/introspect"};
	char exe[PATH_MAX], *dir;
	ssize_t n = readlink("/proc/self/exe", exe, sizeof(exe) - 1);
	struct stat st;

	if (n <= 0)
		return false;
	exe[n] = '\0';
	dir = dirname(exe);
	for (size_t i = 0; i < sizeof(rel) / sizeof(rel[0]); i++) {
		char path[PATH_MAX + 64];

		snprintf(path, sizeof(path), "%s%s", dir, rel[i]);
		if (!realpath(path, buf) || strlen(buf) >= len || stat(buf, &st) ||
		    !S_ISDIR(st.st_mode) || (st.st_mode & 022) ||
		    (st.st_uid != 0 && st.st_uid != geteuid()))
			continue;
		return true;
	}
	return false;
}

/* A directory made when missing (never through a link) and given to uid; one there is kept. */
static int make_dir(const char *path, uid_t uid, gid_t gid)
{
	int fd;

	if (mkdir(path, 0755) < 0)
		return errno == EEXIST ? 0 : -errno;
	fd = open(path, O_RDONLY | O_DIRECTORY | O_NOFOLLOW | O_CLOEXEC);
	if (fd < 0)
		return -errno;
	if (fchown(fd, uid, gid) < 0) {
		close(fd);
		return -errno;
	}
	close(fd);
	return 0;
}

/*
 * The profile folder the runner makes (integrations write environment.json there): -o DIR, else
 * ./.codspeed, exec-harness's default by hand, made when missing and given to uid.
 */
static int make_profile(const struct bench_opts *o, char *profile, size_t len, uid_t uid, gid_t gid)
{
	if (o->profile[0]) {
		snprintf(profile, len, "%s", o->profile);
		return 0; /* made by checks() */
	}
	if (!getcwd(profile, len - 16))
		return -errno;
	strcat(profile, "/.codspeed");
	return make_dir(profile, uid, gid);
}

static int set_env(const struct bench_opts *o, uid_t uid, gid_t gid)
{
	char profile[PATH_MAX], dir[PATH_MAX], *path;
	const char *old = getenv("PATH");
	struct utsname u;
	int err = make_profile(o, profile, sizeof(profile), uid, gid);

	if (err) {
		fprintf(stderr, "memtrack bench: cannot make the profile folder .codspeed: %s\n",
			strerror(-err));
		return err;
	}
	uname(&u);
	if (setenv("CODSPEED_ENV", "runner", 1) || setenv("CODSPEED_RUNNER_MODE", "memory", 1) ||
	    setenv("CODSPEED_PROFILE_FOLDER", profile, 1) || setenv("PYTHONHASHSEED", "0", 1) ||
	    setenv("PYTHON_PERF_JIT_SUPPORT", "0", 1) || setenv("ARCH", u.machine, 1))
		return -errno;
	if (o->no_introspection || !introspect_dir(dir, sizeof(dir))) {
		if (!o->no_introspection && !o->quiet)
			fprintf(stderr, "memtrack bench: no node wrapper found beside memtrack: "
					"node runs without @codspeed/core's V8 flags\n");
		return 0;
	}
	if (asprintf(&path, "%s%s%s", dir, old ? ":" : "", old ? old : "") < 0)
		return -ENOMEM;
	if (setenv("PATH", path, 1))
		err = -errno;
	free(path);
	return err;
}

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

/* The user the command runs as, who gets the FIFOs and the profile folder. */
static void command_user(const struct bench_opts *o, uid_t *uid, gid_t *gid)
{
	bool other = o->cfg.identity.drop_privileges || o->cfg.identity.elevated;

	*uid = other ? o->cfg.identity.uid : geteuid();
	*gid = other ? o->cfg.identity.gid : getegid();
}

/* The run: 0 with *res, or the exit status of a failure (said). */
static int run(struct bench_opts *o, struct mt_run_result *res, struct mt_bench_server_stats *stats)
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
	command_user(o, &sc.uid, &sc.gid);
	if (mt_tracker_events(tracker, &mark.events) || set_env(o, sc.uid, sc.gid))
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

/* ---- the figures -------------------------------------------------------------------------- */

static int write_json(FILE *f, const void *split)
{
	return mt_output_bench_json(split, f);
}

struct md_job {
	const struct mt_bench_split *split;
	const struct mt_bench_cmp *cmp;
	const struct mt_bench_limits *limits;
};

static int write_markdown(FILE *f, const void *arg)
{
	const struct md_job *j = arg;

	return mt_output_bench_markdown(j->split, j->cmp, j->limits, f);
}

/* The base document, a regular file (base/regfile.h) read with the user's rights: 0 or 1. */
static int read_base(const char *path, char **text, size_t *len)
{
	char p[MT_PRINTABLE_MAX], why[256] = "";
	int fd = mt_regfile_open(path, MT_REGFILE_OWN_STREAM, why, sizeof(why));
	size_t cap = 0, n = 0;
	ssize_t k = 0;
	int err = fd < 0 ? -fd : 0;

	*text = NULL;
	/* A regular file, or a stream the shell gave (<(...)): read to its end, bounded. */
	while (!err) {
		if (n + 1 >= cap && (cap >= BASE_MAX || MT_GROW(*text, cap, n + 4096, 65536))) {
			err = cap >= BASE_MAX ? EFBIG : ENOMEM;
			break;
		}
		k = read(fd, *text + n, cap - n - 1);
		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0) {
			err = k < 0 ? errno : 0;
			break;
		}
		n += (size_t)k;
	}
	if (fd >= 0)
		close(fd);
	if (err || !*text) {
		free(*text);
		*text = NULL;
		fprintf(stderr, "memtrack bench: cannot read --compare %s: %s\n",
			mt_printable(p, sizeof(p), path),
			why[0] ? why : strerror(err ? err : EINVAL));
		return 1;
	}
	*len = n;
	return 0;
}

static int compare(const struct bench_opts *o, const struct mt_bench_split *split,
		   struct mt_bench_cmp **cmp)
{
	char err[256], *text;
	size_t len;
	int ret;

	if (read_base(o->compare, &text, &len))
		return 1;
	ret = mt_bench_compare(split, text, len, &o->limits, cmp, err, sizeof(err));
	free(text);
	if (ret) {
		fprintf(stderr, "memtrack bench: --compare: %s\n", err);
		return 1;
	}
	return 0;
}

static int outputs(const struct bench_opts *o, const struct mt_bench_split *split,
		   const struct mt_bench_cmp *cmp, FILE *json_out)
{
	struct md_job md = {split, cmp, &o->limits};
	int rc = 0;

	if (!o->quiet) {
		fputc('\n', stderr);
		mt_output_bench_text(split, stderr);
		if (cmp)
			mt_output_bench_compare_text(cmp, stderr);
	}
	if (o->json && o->json_path)
		rc |= mt_cmd_write_file(o->json_path, write_json, split);
	else if (o->json && (mt_output_bench_json(split, json_out) || fflush(json_out)))
		rc = 1;
	if (o->markdown)
		rc |= mt_cmd_write_file(o->markdown, write_markdown, &md);
	return rc;
}

static int report(const struct bench_opts *o, const char *artifact, FILE *json_out)
{
	struct mt_bench_split *split = NULL;
	struct mt_bench_cmp *cmp = NULL;
	char err[256], p[MT_PRINTABLE_MAX];
	int rc;

	if (mt_bench_split_load(artifact, &split, err, sizeof(err))) {
		fprintf(stderr, "memtrack bench: %s: %s\n", mt_printable(p, sizeof(p), artifact),
			err);
		return 1;
	}
	if (split->stacks && mt_sites_symbolize(split->stacks, NULL))
		fprintf(stderr, "memtrack bench: out of memory: the sites are not named\n");
	rc = o->compare ? compare(o, split, &cmp) : 0;
	if (!rc)
		rc = outputs(o, split, cmp, json_out);
	if (!rc && !split->n) {
		fprintf(stderr, "memtrack bench: no benchmark window: nothing spoke to the runner "
				"FIFO (a CodSpeed integration in memory mode does)\n");
		rc = 1;
	}
	if (!rc && cmp && cmp->n_exceeded) {
		fprintf(stderr, "memtrack bench: %zu benchmark%s exceed%s a --max-increase limit\n",
			cmp->n_exceeded, cmp->n_exceeded == 1 ? "" : "s",
			cmp->n_exceeded == 1 ? "s" : "");
		rc = MT_EXIT_DIFF_EXCEEDED;
	}
	mt_bench_cmp_free(cmp);
	mt_bench_split_free(split);
	return rc;
}

int mt_cmd_bench_split(const char *path, bool json)
{
	struct mt_bench_split *split = NULL;
	char err[256], p[MT_PRINTABLE_MAX];
	int ret;

	if (mt_bench_split_load(path, &split, err, sizeof(err))) {
		fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), path), err);
		return 1;
	}
	if (split->stacks && mt_sites_symbolize(split->stacks, NULL))
		fprintf(stderr, "memtrack: out of memory: the sites are not named\n");
	ret = json ? mt_output_bench_json(split, stdout) : mt_output_bench_text(split, stdout);
	mt_bench_split_free(split);
	return ret || fflush(stdout) ? 1 : 0;
}

struct mt_bench_split *mt_cmd_bench_for_page(const char *path)
{
	struct mt_bench_split *split = NULL;
	char err[256], p[MT_PRINTABLE_MAX];

	if (mt_bench_split_load(path, &split, err, sizeof(err))) {
		fprintf(stderr,
			"memtrack: %s: its benchmark windows cannot be read (%s): the page has "
			"none\n",
			mt_printable(p, sizeof(p), path), err);
		return NULL;
	}
	if (!split->n) {
		mt_bench_split_free(split);
		return NULL;
	}
	return split;
}

/* ---- -o DIR: CodSpeed's profile folder ------------------------------------------------------ */

/* Whether -o names a profile folder: an existing directory, or a name ending in '/'. */
static bool output_is_folder(const char *output)
{
	struct stat st;
	size_t n = strlen(output);

	return (n && output[n - 1] == '/') || (!stat(output, &st) && S_ISDIR(st.st_mode));
}

/* A subfolder of the profile folder: made, or there and a directory of no other run. */
static int profile_subdir(const struct bench_opts *o, const char *name, char *why, size_t len)
{
	char path[PATH_MAX + 16];
	uid_t uid;
	gid_t gid;
	struct stat st;
	int err;

	command_user(o, &uid, &gid);
	snprintf(path, sizeof(path), "%s/%s", o->profile, name);
	err = make_dir(path, uid, gid);
	if (!err && (lstat(path, &st) || !S_ISDIR(st.st_mode)))
		err = -ENOTDIR;
	if (err) {
		snprintf(why, len, "%s/: %s", name, strerror(-err));
		return err;
	}
	return 0;
}

/* Whether results/ holds anything: the runner would read another run's files as this one's. */
static bool results_used(const struct bench_opts *o)
{
	char path[PATH_MAX + 16];
	struct dirent *e;
	bool used = false;
	DIR *d;

	snprintf(path, sizeof(path), "%s/results", o->profile);
	d = opendir(path);
	while (d && !used && (e = readdir(d)))
		used = strcmp(e->d_name, ".") && strcmp(e->d_name, "..");
	if (d)
		closedir(d);
	return used;
}

/* -o DIR: the folder, its results/ and memtrack/, and the artifact's name in memtrack/. */
static int prepare_profile(struct bench_opts *o)
{
	char p[MT_PRINTABLE_MAX], why[PATH_MAX + 64] = "";
	uid_t uid;
	gid_t gid;
	int err;

	command_user(o, &uid, &gid);
	err = make_dir(o->output, uid, gid);
	if (!err && !realpath(o->output, o->profile))
		err = -errno;
	if (err)
		snprintf(why, sizeof(why), "%s", strerror(-err));
	if (!err)
		err = profile_subdir(o, "results", why, sizeof(why));
	if (!err && results_used(o)) {
		snprintf(why, sizeof(why),
			 "its results/ holds files of another run, which CodSpeed's runner would "
			 "read as this one's (give an empty folder)");
		err = -EEXIST;
	}
	if (!err)
		err = profile_subdir(o, "memtrack", why, sizeof(why));
	if (err) {
		mt_cmd_usage_error(&bench_cmd, "-o %s: %s", mt_printable(p, sizeof(p), o->output),
				   why);
		return err;
	}
	snprintf(o->profile_artifact, sizeof(o->profile_artifact), "%s/memtrack/%s", o->profile,
		 mt_cmd_default_artifact(o->default_path, sizeof(o->default_path)));
	return 0;
}

/*
 * What CodSpeed's runner leaves in results/ after a memory run, from the artifact (after the
 * run; the files are the command's user's, as the folder is): its tracker's
 * ROOTPID.MemtrackArtifact.msgpack, events inside the windows only (the runner enables its tracker
 * at StartProfiler, disables it at StopProfiler), and ExecutionTimestamps.msgpack, what it notes of
 * the FIFO's messages. 0 or 1 (said).
 */
static int write_profile(const struct bench_opts *o)
{
	struct mt_codspeed_stamps st = {0};
	struct mt_codspeed_job job = {
	    .mtk = o->cfg.artifact_path, .gated = true, .owner = &o->cfg.identity};
	char results[PATH_MAX + 16], path[PATH_MAX + 64], err[MT_ARTIFACT_ERRLEN] = "";
	int ret;

	snprintf(results, sizeof(results), "%s/results", o->profile);
	snprintf(path, sizeof(path), "%s/ExecutionTimestamps.msgpack", results);
	ret = mt_codspeed_stamps_of(o->cfg.artifact_path, &st, err, sizeof(err));
	if (!ret) {
		job.dir = results;
		job.windows = st.windows;
		job.n_windows = st.n_windows;
		ret = mt_codspeed_write_artifact(&job);
		if (ret)
			snprintf(path, sizeof(path), "%s", job.path[0] ? job.path : results);
		if (ret && job.err[0])
			snprintf(err, sizeof(err), "%s", job.err);
	}
	if (!ret)
		ret = mt_codspeed_write_stamps(path, &st, &o->cfg.identity, err, sizeof(err));
	if (ret) {
		char p[MT_PRINTABLE_MAX];

		fprintf(stderr, "memtrack bench: cannot write CodSpeed's %s: %s\n",
			mt_printable(p, sizeof(p), path), err[0] ? err : strerror(-ret));
	} else if (!o->quiet) {
		fprintf(stderr,
			"memtrack bench: CodSpeed's profile folder %s: %llu events in %s, %zu "
			"benchmarks in ExecutionTimestamps.msgpack\n",
			o->profile, (unsigned long long)job.events, strrchr(job.path, '/') + 1,
			st.n_uris);
	}
	mt_codspeed_stamps_free(&st);
	return ret ? 1 : 0;
}

static int checks(struct bench_opts *o)
{
	if (o->markdown && mt_cmd_check_writable(&bench_cmd, "--markdown", o->markdown,
						 MT_OUTFILE_REPLACE, &o->cfg.identity))
		return MT_EXIT_USAGE;
	if (o->json_path && mt_cmd_check_writable(&bench_cmd, "--json", o->json_path,
						  MT_OUTFILE_REPLACE, &o->cfg.identity))
		return MT_EXIT_USAGE;
	if (o->from)
		return 0;
	o->cfg.track = true;
	if (o->output && output_is_folder(o->output)) {
		if (prepare_profile(o))
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
	if (mt_cmd_check_writable(&bench_cmd, o->output && !o->profile[0] ? "-o" : "the artifact",
				  o->cfg.artifact_path,
				  o->output && !o->profile[0] ? MT_OUTFILE_REPLACE : MT_OUTFILE_NEW,
				  &o->cfg.identity))
		return MT_EXIT_USAGE;
	return mt_check_capabilities(true) < 0 ? 1 : 0;
}

/* With --json on stdout, the command's stdout goes to stderr: the document stays whole. */
static FILE *take_stdout(const struct bench_opts *o)
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
	struct bench_opts o = {0};
	struct mt_bench_server_stats stats = {0};
	struct mt_run_result res = {0};
	FILE *json_out;
	int rc = parse(argc, argv, &o), rr;

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
	rr = report(&o, o.from ? o.from : o.cfg.artifact_path, json_out);
	if (o.profile[0] && write_profile(&o) && !rr)
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
