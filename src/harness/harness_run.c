// SPDX-License-Identifier: GPL-2.0
/*
 * The runner of exec-harness (harness.h). A measured round is timed as CodSpeed's exec-harness
 * times it (crates/exec-harness/src/walltime/benchmark_loop.rs): from the moment the command's
 * exec has succeeded to the moment its own process has exited and been reaped, not its
 * descendants. The tracked runs (memory mode, --memory) go through mt_supervise(), which
 * follows the whole tree.
 */
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/duration.h"
#include "base/utf8.h"
#include "base/grow.h"
#include "classify/loaddeps.h"
#include "harness/harness.h"
#include "harness/harness_duration.h"
#include "base/privileges.h"

#define URI_PREFIX	"exec_harness::"
/* CodSpeed's MAX_NAME_LENGTH (crates/exec-harness/src/uri.rs): 1024 - 100 bytes. */
#define MAX_NAME_LENGTH 924

static char *join_argv(char *const *argv)
{
	size_t len = 1, i;
	char *s;

	for (i = 0; argv[i]; i++)
		len += strlen(argv[i]) + 1;
	s = calloc(1, len);
	if (!s)
		return NULL;
	for (i = 0; argv[i]; i++) {
		if (i)
			strcat(s, " ");
		strcat(s, argv[i]);
	}
	return s;
}

/*
 * The name and URI as CodSpeed's generate_name_and_uri makes them: the URI from the whole name,
 * the name then cut to 924 bytes. CodSpeed's cut panics inside a character; this one backs off
 * to the character's start.
 */
static int name_and_uri(const struct mt_bench *b, struct mt_bench_result *r)
{
	char *name = b->name ? strdup(b->name) : join_argv(b->argv);
	size_t len, cut;

	if (!name)
		return -ENOMEM;
	len = strlen(name);
	r->uri = malloc(strlen(URI_PREFIX) + len + 1);
	if (!r->uri) {
		free(name);
		return -ENOMEM;
	}
	strcat(strcpy(r->uri, URI_PREFIX), name);
	cut = mt_utf8_prefix(name, MAX_NAME_LENGTH);
	if (cut < len) {
		fprintf(stderr,
			MT_HARNESS_PROG ": warning: benchmark name is too long (%zu bytes), "
					"truncated to %zu bytes\n",
			len, cut);
		name[cut] = '\0';
	}
	r->name = name;
	return 0;
}

/* Validates every benchmark before any runs, so a typo in the last one costs no time. */
int mt_harness_resolve(const struct mt_bench_list *list, struct mt_bench_result *res)
{
	char err[MT_HARNESS_ERRLEN];
	size_t i;

	for (i = 0; i < list->n; i++) {
		if (name_and_uri(&list->v[i], &res[i]))
			return -ENOMEM;
		if (mt_harness_stats_config(&list->v[i].limits, &res[i].cfg, err, sizeof(err))) {
			fprintf(stderr, MT_HARNESS_PROG ": benchmark '%s': %s\n", res[i].name, err);
			return -EINVAL;
		}
	}
	return 0;
}

/* ---- Running ----------------------------------------------------------------------------- */

static void report_failure(const char *name, const struct mt_run_result *res)
{
	if (WIFSIGNALED(res->wait_status))
		fprintf(stderr,
			MT_HARNESS_PROG
			": benchmark '%s' failed: the command was killed by signal %d (%s)\n",
			name, WTERMSIG(res->wait_status), strsignal(WTERMSIG(res->wait_status)));
	else
		fprintf(stderr,
			MT_HARNESS_PROG
			": benchmark '%s' failed: the command exited with status %d\n",
			name, res->exit_code);
}

/* One run of the command; *ns is its round time. A failing command aborts the benchmark. */
static int run_once(struct mt_harness *h, const char *name, const struct mt_run_config *cfg,
		    uint64_t *ns)
{
	struct mt_run_result res;
	int ret;

	memset(&res, 0, sizeof(res));
	ret = mt_supervise(cfg, &res);
	if (ret < 0) {
		/*
		 * mt_supervise already said why. A command that cannot be executed exits 127 or
		 * 126 like in a shell; a failure of memtrack itself (BPF, ptrace) is 1.
		 */
		h->exit_code = res.exec_errno ? mt_exec_failure_code(-res.exec_errno) : 1;
		return ret;
	}
	if (res.exit_code != 0) {
		report_failure(name, &res);
		h->exit_code = res.exit_code;
		return -ECHILD;
	}
	*ns = res.end_ns > res.resume_ns ? res.end_ns - res.resume_ns : 0;
	return 0;
}

/* The child of a round: become the chosen user, exec, or send errno through the pipe. */
static void __attribute__((noreturn))
round_child(const struct mt_harness *h, char *const *argv, int fd)
{
	int e = h->base.identity.drop_privileges ? -mt_become_user(&h->base.identity) : 0;

	/* memtrack ignores SIGPIPE, and an ignored signal survives exec; Rust's Command, which
	 * spawns CodSpeed's rounds, gives the child the default action back, as here. */
	signal(SIGPIPE, SIG_DFL);
	if (!e) {
		execvp(argv[0], argv);
		e = errno;
	}
	if (write(fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Wait for the child's exec: 0 once it succeeded (the pipe closed), else its errno. */
static int wait_exec(int fd)
{
	ssize_t n;
	int e = 0;

	do
		n = read(fd, &e, sizeof(e));
	while (n < 0 && errno == EINTR);
	return n == (ssize_t)sizeof(e) ? e : 0;
}

/*
 * One measured round, timed as CodSpeed times it: from the end of the spawn (the exec has
 * succeeded) to the reaping of the command's own process. A child it leaves behind runs on
 * unmeasured, as it does under CodSpeed.
 */
static int spawn_round(struct mt_harness *h, const char *name, char *const *argv, uint64_t *start,
		       uint64_t *ns)
{
	struct mt_run_result res;
	int pfd[2], e, status;
	pid_t pid;

	if (pipe2(pfd, O_CLOEXEC))
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		e = errno;
		close(pfd[0]);
		close(pfd[1]);
		fprintf(stderr, MT_HARNESS_PROG ": cannot fork: %s\n", strerror(e));
		return -e;
	}
	if (pid == 0)
		round_child(h, argv, pfd[1]);
	close(pfd[1]);
	e = wait_exec(pfd[0]);
	*start = mt_clock_now_ns();
	close(pfd[0]);
	while (waitpid(pid, &status, 0) < 0 && errno == EINTR)
		;
	*ns = mt_clock_now_ns() - *start;
	if (e) {
		fprintf(stderr, "memtrack: cannot run '%s': %s\n", argv[0], strerror(e));
		h->exit_code = mt_exec_failure_code(-e);
		return -e;
	}
	if (WIFEXITED(status) && !WEXITSTATUS(status))
		return 0;
	memset(&res, 0, sizeof(res));
	res.wait_status = status;
	res.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	report_failure(name, &res);
	h->exit_code = res.exit_code;
	return -ECHILD;
}

static int push_time(struct mt_bench_result *r, uint64_t start, uint64_t ns)
{
	/* The two arrays grow together: one capacity, r->cap, holds for both. */
	size_t cap_times = r->cap, cap_starts = r->cap;

	if (MT_GROW(r->times, cap_times, r->n + 1, 64) ||
	    MT_GROW(r->starts, cap_starts, r->n + 1, 64))
		return -ENOMEM;
	r->cap = cap_times;
	r->starts[r->n] = start;
	r->times[r->n++] = ns;
	return 0;
}

/* The warm-up; *first_start is when its first run started (the result when it is the only one). */
static int warm_up(struct mt_harness *h, char *const *argv, struct mt_bench_result *r,
		   struct mt_warmup *w, uint64_t *first_start)
{
	uint64_t start = mt_clock_now_ns(), round_start, ns;
	int ret;

	memset(w, 0, sizeof(*w));
	if (!r->cfg.warmup_ns)
		return 0;
	do {
		ret = spawn_round(h, r->name, argv, &round_start, &ns);
		if (ret)
			return ret;
		if (!w->runs) {
			w->first_ns = ns;
			*first_start = round_start;
		}
		w->runs++;
	} while (mt_clock_now_ns() - start < r->cfg.warmup_ns);
	/* Spawning is part of the cost of a round when budgeting max_time. */
	w->elapsed_ns = mt_clock_now_ns() - start;
	return 0;
}

static void say_plan(const struct mt_harness *h, const struct mt_bench_result *r,
		     const struct mt_warmup *w, const struct mt_round_plan *p)
{
	char d[32];

	if (p->min_above_max)
		fprintf(stderr,
			MT_HARNESS_PROG
			": warning: benchmark '%s': the minimum of %llu rounds exceeds the "
			"maximum of %llu; running %llu\n",
			r->name, (unsigned long long)p->min_rounds,
			(unsigned long long)p->max_rounds, (unsigned long long)p->max_rounds);
	if (h->quiet)
		return;
	if (p->warmup_is_result)
		fprintf(stderr,
			"memtrack: '%s': one warm-up run took %s, more than max_time: it is the "
			"result\n",
			r->name, mt_format_duration((double)w->first_ns, d, sizeof(d)));
	else if (p->fixed)
		fprintf(stderr, "memtrack: '%s': %llu warm-up runs, measuring %llu rounds\n",
			r->name, (unsigned long long)w->runs, (unsigned long long)p->rounds);
	else
		fprintf(stderr, "memtrack: '%s': no warm-up, measuring until the time limit\n",
			r->name);
}

/*
 * The warm-up and the rounds, between the runner's StartProfiler and StopProfiler as in
 * CodSpeed's run_rounds: the warm-up runs are in the profile, only the rounds are marked.
 */
static int measure(struct mt_harness *h, char *const *argv, struct mt_bench_result *r)
{
	uint64_t start, first_start = 0, round_start, ns;
	struct mt_round_plan plan;
	struct mt_warmup w;
	int ret;

	ret = mt_harness_runner_tell(h, MT_FIFO_START_PROFILER);
	if (!ret)
		ret = warm_up(h, argv, r, &w, &first_start);
	if (ret)
		return ret;
	if (mt_harness_stats_plan(&r->cfg, &w, &plan)) {
		/* mt_harness_stats_config rules this out; say so rather than loop forever. */
		fprintf(stderr,
			MT_HARNESS_PROG ": benchmark '%s': cannot determine the number of rounds\n",
			r->name);
		return -EINVAL;
	}
	say_plan(h, r, &w, &plan);
	if (plan.warmup_is_result)
		return push_time(r, first_start, w.first_ns);
	r->warmup_runs = w.runs;
	start = mt_clock_now_ns();
	do {
		ret = spawn_round(h, r->name, argv, &round_start, &ns);
		if (!ret)
			ret = push_time(r, round_start, ns);
		if (ret)
			return ret;
	} while (!mt_harness_stats_plan_done(&r->cfg, &plan, r->n, mt_clock_now_ns() - start));
	return 0;
}

/* After the rounds: their markers, StopProfiler, then the benchmark's URI. */
static int measured(struct mt_harness *h, const struct mt_bench_result *r)
{
	int ret = mt_harness_runner_rounds(h, r);

	if (!ret)
		ret = mt_harness_runner_tell(h, MT_FIFO_STOP_PROFILER);
	if (!ret)
		ret = mt_harness_runner_executed(h, r);
	return ret;
}

/*
 * Memory mode under the runner, as CodSpeed's analysis::perform: one plain run between
 * StartProfiler and StopProfiler (the runner's tracker records it), StopProfiler even when the
 * command failed, the URI only when it did not.
 */
static int run_for_tracker(struct mt_harness *h, char *const *argv, struct mt_bench_result *r)
{
	uint64_t start, ns;
	int ret, stop;

	if (!h->quiet)
		fprintf(stderr, "memtrack: '%s': one run, recorded by the runner's tracker\n",
			r->name);
	ret = mt_harness_runner_tell(h, MT_FIFO_START_PROFILER);
	if (ret)
		return ret;
	r->tracked_start_ns = mt_clock_now_ns();
	ret = spawn_round(h, r->name, argv, &start, &ns);
	r->tracked_end_ns = mt_clock_now_ns();
	stop = mt_harness_runner_tell(h, MT_FIFO_STOP_PROFILER);
	if (ret || stop)
		return ret ? ret : stop;
	return mt_harness_runner_executed(h, r);
}

/* DIR/memtrack/PID-N.mtk, N counting benchmarks from 0 (docs/HARNESS.md); "" if too long. */
static int artifact_path(const struct mt_harness *h, size_t idx, struct mt_bench_result *r)
{
	if (snprintf(r->artifact, sizeof(r->artifact), "%s/%d-%zu.mtk", h->artifact_dir,
		     (int)getpid(), idx) < (int)sizeof(r->artifact))
		return 0;
	r->artifact[0] = '\0';
	return -ENAMETOOLONG;
}

static int measure_memory(struct mt_harness *h, size_t idx, char *const *argv,
			  struct mt_bench_result *r)
{
	struct mt_run_config cfg = h->base;
	char err[MT_HARNESS_ERRLEN];
	uint64_t ns;
	int ret;

	if (!r->artifact[0] && artifact_path(h, idx, r)) {
		fprintf(stderr, MT_HARNESS_PROG ": the artifact path under '%s' is too long\n",
			h->artifact_dir);
		return -ENAMETOOLONG;
	}
	cfg.argv = argv;
	cfg.track = true;
	cfg.artifact_path = r->artifact;
	cfg.tracker = h->tracker;
	cfg.loader_cache = h->loader_cache;
	if (!h->quiet)
		fprintf(stderr, "memtrack: '%s': one run with allocation tracking\n", r->name);
	mt_harness_helper_take(h, idx, &cfg);
	r->tracked_start_ns = mt_clock_now_ns();
	ret = run_once(h, r->name, &cfg, &ns);
	r->tracked_end_ns = mt_clock_now_ns();
	mt_harness_helper_ran(h, idx, !ret);
	if (ret)
		return ret;
	r->has_memory = true;
	/* Memory mode's figures are CodSpeed's artifact, converted from it (harness_codspeed.c). */
	if (h->mode == MT_HARNESS_MEMORY)
		return 0;
	/* The timings stand without the totals: warn, keep the artifact for memtrack report. */
	err[0] = '\0';
	if (mt_report_totals_of(r->artifact, &r->mem, err, sizeof(err)))
		fprintf(stderr,
			MT_HARNESS_PROG ": warning: benchmark '%s': no memory summary: %s\n",
			r->name, err);
	else
		r->memory_ok = true;
	return 0;
}

static int run_bench(struct mt_harness *h, size_t idx, const struct mt_bench *b,
		     struct mt_bench_result *r)
{
	int ret;

	/*
	 * Memory mode runs each command once, as CodSpeed's analysis mode does: tracked by
	 * memtrack by hand, by the runner's tracker under a runner.
	 */
	if (h->mode == MT_HARNESS_MEMORY)
		return h->memory ? measure_memory(h, idx, b->argv, r)
				 : run_for_tracker(h, b->argv, r);
	ret = measure(h, b->argv, r);
	if (!ret)
		ret = measured(h, r);
	if (!ret)
		ret = mt_harness_stats_compute(r->times, r->n, &r->stats);
	if (!ret && h->memory)
		ret = measure_memory(h, idx, b->argv, r);
	return ret;
}

void mt_harness_results_free(struct mt_bench_result *res, size_t n)
{
	size_t i;

	for (i = 0; res && i < n; i++) {
		mt_codspeed_discard(&res[i].cs); /* converted, not published: the plan failed */
		free(res[i].name);
		free(res[i].uri);
		free(res[i].times);
		free(res[i].starts);
	}
	free(res);
}

/*
 * Memory mode's tracked runs share one tracker: the BPF object is loaded and verified once per
 * harness run, not once per benchmark. Not in walltime mode: its rounds run untracked, and an
 * open tracker's lifecycle programs would run at their every fork, exec and mmap. Without one (it
 * could not be opened) each run opens its own and says why it cannot.
 */
static void open_shared_tracker(struct mt_harness *h)
{
	struct mt_run_config cfg = h->base;

	cfg.track = true;
	cfg.artifact_path = h->artifact_dir; /* events on: the runs write artifacts */
	if (mt_supervise_open_tracker(&cfg, &h->tracker))
		h->tracker = NULL;
	/*
	 * Each run starts with no file known (mt_tracker_reset): linked at the exec, libc and the
	 * rest of what a benchmark's program needs stop none of its runs at their first mapping.
	 */
	if (h->tracker)
		h->loader_cache = mt_loader_cache_new();
}

int mt_harness_run_all(struct mt_harness *h, const struct mt_bench_list *list,
		       struct mt_bench_result *res)
{
	size_t i;
	int ret = 0;

	if (h->mode == MT_HARNESS_MEMORY && h->memory && list->n > 1)
		open_shared_tracker(h);
	if (h->mode == MT_HARNESS_MEMORY && h->memory) {
		/* The helper makes them ahead; measure_memory says which is too long. */
		for (i = 0; i < list->n; i++)
			artifact_path(h, i, &res[i]);
		mt_harness_helper_start(h, res, list->n);
	}
	for (i = 0; i < list->n && !ret; i++) {
		if (!h->quiet)
			fprintf(stderr, "memtrack: benchmarking '%s'\n", res[i].name);
		ret = run_bench(h, i, &list->v[i], &res[i]);
	}
	mt_harness_helper_stop(h);
	mt_tracker_close(h->tracker);
	h->tracker = NULL;
	mt_loader_cache_free(h->loader_cache);
	h->loader_cache = NULL;
	return ret;
}
