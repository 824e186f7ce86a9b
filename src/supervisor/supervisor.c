// SPDX-License-Identifier: GPL-2.0
/*
 * The ptrace supervisor. The command is spawned stopped at its exec (PTRACE_SEIZE), armed and
 * classified, then continued; from then on one loop waits for every stop of the tree and handles
 * each kind in one place (see the stop table in docs/STOPS.md).
 */

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "writer/artifact.h"
#include "inspect/backtrace.h"
#include "base/clock.h"
#include "writer/events.h"
#include "base/outfile.h"
#include "base/printable.h"
#include "base/privileges.h"
#include "inspect/stoplog.h"
#include "supervisor/supervisor.h"
#include "tracker/tracker.h"
#include "supervisor/supervisor_int.h"

/* The name of a process, printable: /proc/PID/comm with control characters replaced. */
static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/*
 * The root ended and other processes of its tree run on (daemons, background jobs): memtrack
 * waits for them, as a tracker must, and says so once, naming the first 8 by pid.
 */
static void tell_left(struct sup *s)
{
	char list[512] = "", name[32];
	size_t n = 0, used = 0;
	pid_t *pids;

	s->told_left = true;
	pids = calloc(s->live.n + 1, sizeof(*pids));
	if (!pids)
		return;
	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];

		/* A thread is counted with its process, by its leader. */
		if (t->proc < 0 || s->procs[t->proc].pid == t->tid)
			pids[n++] = t->tid;
	}
	qsort(pids, n, sizeof(*pids), cmp_pid);
	for (size_t i = 0; i < n && i < 8; i++) {
		read_comm(pids[i], name, sizeof(name));
		used += snprintf(list + used, sizeof(list) - used, " %d %s", pids[i], name);
	}
	if (n)
		fprintf(stderr, "memtrack: waiting for %zu process%s left by %s:%s%s\n", n,
			n == 1 ? "" : "es", s->cfg->argv[0], list, n > 8 ? " ..." : "");
	free(pids);
}

static void on_gone(struct sup *s, struct tracee *t, int status)
{
	struct json_object *d = sup_detail_new();
	char buf[16];

	if (WIFSIGNALED(status))
		sup_detail_str(d, "signal", sup_signame(WTERMSIG(status), buf, sizeof(buf)));
	else
		sup_detail_int(d, "code", WEXITSTATUS(status));
	sup_log_stop(s, t, "gone", d);
	sup_gdb_gone(s, t, status);
	/* Its process's threads held for a leak scan may wait for this one only. */
	if (sup_leaks_gone(s, t))
		fprintf(stderr,
			"memtrack: process %d: its threads held for the leak scan could "
			"not all be resumed\n",
			t->proc >= 0 ? s->procs[t->proc].pid : t->tid);
	if (t->held)
		s->n_held--;
	t->held = false;
	if (t->proc >= 0 && s->procs[t->proc].pid == t->tid) {
		sup_record_process(s, &s->procs[t->proc], status, true);
		/* A leader is reaped after its last thread: the process's links can go. */
		if (s->tracker) {
			mt_tracker_release(s->tracker, t->tid, false);
			mt_tracker_maps_forget(s->tracker, t->tid);
		}
	}
	if (t->tid == s->root) {
		s->root_gone = true;
		s->res->root_ended = true;
		s->res->wait_status = status;
		s->res->exit_code =
		    WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	}
	s->res->end_ns = mt_clock_now_ns();
	if (t->tid == s->root && !s->told_left) {
		sup_remove_tracee(s, t);
		tell_left(s);
		return;
	}
	if (t->proc < 0) {
		t->end_status = status;
		sup_tset_take(&s->live, t);
		if (!sup_tset_put(&s->unplaced, t))
			return;
		fprintf(stderr, "memtrack: out of memory: a stop will not be placed in the tree\n");
	}
	sup_remove_tracee(s, t);
}

/* The root, handed to a debugger or a tracer, ended: it is memtrack's child, not its tracee. */
static void on_handed_root_gone(struct sup *s, struct handoff *h, int status)
{
	s->root_gone = true;
	s->res->wait_status = status;
	s->res->exit_code = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	s->res->end_ns = mt_clock_now_ns();
	sup_handoff_ended(s, h, status);
	if (!s->told_left && s->live.n)
		tell_left(s);
}

/*
 * The root, handed to a debugger, is memtrack's child, but waitpid reports its end only once its
 * debugger let it go. After the tree's SIGKILL (a termination request), a debugger that holds it
 * dead (gdb at its prompt) does not hold memtrack: its end is read from /proc.
 */
static void take_held_root(struct sup *s)
{
	struct handoff *h = s->end_phase == 3 ? sup_handoff_of(s, s->root) : NULL;
	int status;

	if (h && sup_handoff_dead(h, &status))
		on_handed_root_gone(s, h, status);
}

static int event_loop(struct sup *s)
{
	struct tracee *t;
	int status, err;
	pid_t tid;

	/* A process handed to a debugger is waited for too (its pidfd, or as the root, waitpid). */
	while (s->live.n > 0 || sup_handoff_alive(s)) {
		if (s->n_held == s->live.n) {
			err = sup_release_held(s);
			if (err)
				return err;
		}
		sup_take_requests(s);
		take_held_root(s);
		err = sup_resume_pressed(s);
		if (!err)
			err = sup_attach_tick(s);
		if (!err)
			err = sup_handoff_tick(s);
		if (!err)
			err = sup_gdb_tick(s);
		if (!err)
			err = sup_rss_tick(s);
		if (err)
			return err;
		sup_progress_tick(s);
		tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid == 0) {
			/* Threads held at their exit stops, once every stop was read. */
			err = sup_leaks_tick(s);
			if (!err)
				err = sup_wait_for_news(s);
			if (err)
				return err;
			continue;
		}
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD && !sup_handoff_alive(s))
				return 0;
			if (errno != ECHILD)
				return -errno;
			err = sup_wait_for_news(s);
			if (err)
				return err;
			continue;
		}
		t = sup_find_tracee(s, tid);
		if (!t && tid == s->root && sup_handoff_of(s, tid)) {
			/* Its end may have been read already (sup_handoff_tick). */
			if ((WIFEXITED(status) || WIFSIGNALED(status)) &&
			    !sup_handoff_of(s, tid)->ended)
				on_handed_root_gone(s, sup_handoff_of(s, tid), status);
			continue;
		}
		if (!t) {
			t = sup_add_tracee(s, tid);
			if (!t)
				return -ENOMEM;
		}
		/* A held thread that reports anything was woken (SIGKILL) or is gone. */
		sup_unpress(s, t);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			on_gone(s, t, status);
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		/* memtrack attach's end: every stop is where its thread is detached. */
		if (s->detaching)
			err = sup_carry_out(t, sup_detach_stop(s, t, status));
		else
			err = sup_on_stop(s, t, status);
		if (err)
			return err;
	}
	return 0;
}

int mt_supervise_open_tracker(const struct mt_run_config *cfg, struct mt_tracker **out)
{
	struct mt_tracker_config tc = {
	    .watcher = cfg->watcher,
	    .placement = cfg->placement,
	    .system_scope = cfg->system_scope,
	    .events = cfg->artifact_path != NULL,
	    .ring_size = cfg->ring_size,
	    .stacks = cfg->stacks,
	    .stacks_caller = cfg->stacks_caller,
	    .mappings = cfg->mappings,
	    .no_backpressure = sup_backpressure_off(),
	    .no_uprobe_multi = sup_uprobe_multi_off(),
	    .refuse_callers = sup_callers_refused(),
	    .verbose = cfg->verbose,
	    .trace_maps = cfg->trace_maps,
	};
	int err = mt_tracker_open(out, &tc);

	/*
	 * Loading parsed the kernel's BTF (twice where fentry is refused): about 10 MiB that libbpf
	 * freed but glibc keeps in the heap. Give it back before the run: memtrack's own footprint.
	 */
	if (!err)
		malloc_trim(0);
	return err;
}

/* The run's tracker: the caller's, made ready for another run, else one of its own. */
static int open_tracking(struct sup *s)
{
	int err = 0;

	if (s->cfg->tracker && !mt_tracker_reset(s->cfg->tracker))
		s->tracker = s->cfg->tracker;
	else
		err = mt_supervise_open_tracker(s->cfg, &s->tracker);
	if (err)
		return err;
	/* Without it a tracer in the tree is refused, as ptrace refuses a second tracer. */
	mt_tracker_watch_tracers(s->tracker);
	snprintf(s->res->watcher, sizeof(s->res->watcher), "%s", mt_tracker_watcher(s->tracker));
	return 0;
}

/* --trace-stops, written at the end: opened as the artifact is, or one sentence. */
static int write_stoplog(struct sup *s)
{
	char why[256], p[MT_PRINTABLE_MAX];
	const char *path = s->cfg->trace_stops_path;
	int fd = mt_outfile_open(path, MT_OUTFILE_REPLACE, &s->cfg->identity, why, sizeof(why));
	int err = fd < 0 ? fd : mt_stoplog_write(s->log, fd);

	if (err)
		fprintf(stderr, "memtrack: cannot write %s: %s\n", mt_printable(p, sizeof(p), path),
			fd < 0 ? why : strerror(-err));
	return err;
}

/*
 * -v: what supervising cost memtrack itself, from its start to the tree's end: all its threads,
 * not the closer's detaches (a process of its own) nor the kernel's work in the tree's stops.
 */
static void report_own_cpu(const struct sup *s)
{
	struct rusage ru;

	if (!s->cfg->verbose || getrusage(RUSAGE_SELF, &ru))
		return;
	fprintf(stderr,
		"memtrack: its own CPU time up to the tree's end: %.1f ms user, %.1f ms system\n",
		ru.ru_utime.tv_sec * 1e3 + ru.ru_utime.tv_usec / 1e3,
		ru.ru_stime.tv_sec * 1e3 + ru.ru_stime.tv_usec / 1e3);
}

static int open_artifact(struct sup *s)
{
	struct mt_artifact_header h = {0};
	char why[256], p[MT_PRINTABLE_MAX];
	struct timespec rt;
	int argc = 0, err, fd;

	while (s->cfg->argv[argc])
		argc++;
	clock_gettime(CLOCK_REALTIME, &rt);
	h.start_time_ns = (uint64_t)rt.tv_sec * 1000000000ull + rt.tv_nsec;
	h.start_mono_ns = mt_clock_now_ns();
	h.watcher = mt_tracker_watcher(s->tracker);
	h.argc = argc;
	h.argv = s->cfg->argv;
	h.flags = s->cfg->attach_pid ? MT_ARTIFACT_ATTACHED : 0;
	if (s->cfg->artifact_made) {
		fd = fcntl(s->cfg->artifact_fd, F_DUPFD_CLOEXEC, 3);
		if (fd < 0) {
			fd = -errno;
			snprintf(why, sizeof(why), "%s", strerror(-fd));
		}
	} else {
		fd = mt_outfile_open(s->cfg->artifact_path,
				     s->cfg->artifact_new ? MT_OUTFILE_NEW : MT_OUTFILE_REPLACE,
				     &s->cfg->identity, why, sizeof(why));
	}
	err = fd < 0 ? fd : mt_artifact_create_fd(&s->artifact, fd, s->cfg->artifact_path, &h);
	if (err) {
		fprintf(stderr, "memtrack: cannot create %s: %s\n",
			mt_printable(p, sizeof(p), s->cfg->artifact_path),
			fd < 0 ? why : strerror(-err));
		return err;
	}
	mt_tracker_set_artifact(s->tracker, s->artifact);
	err = mt_tracker_events(s->tracker, &s->events);
	if (!err)
		err = mt_events_start(s->events, s->artifact);
	if (err)
		s->events = NULL;
	return err ? err : sup_leaks_start(s);
}

/* Drain the last events and close the artifact with every drop count in its footer. */
static int finish_artifact(struct sup *s)
{
	struct mt_artifact_footer foot = {0};
	struct mt_drop_counts c = {0};
	uint64_t late = 0;
	int err = 0, e;

	if (s->events)
		err = mt_events_stop(s->events, &foot.events, &late);
	s->events = NULL;
	if (!s->artifact)
		return err;
	e = mt_tracker_counters(s->tracker, &c);
	if (!err)
		err = e;
	foot.requests_dropped = c.requests_dropped;
	/* A record the drains gave up waiting for is counted with the ring's drops. */
	c.events_dropped += late;
	foot.events_dropped = c.events_dropped;
	foot.args_lost = c.args_lost;
	foot.stacks_lost = c.stacks_lost;
	if (s->cfg->verbose && c.stack_collisions)
		fprintf(stderr,
			"memtrack: %llu allocation stacks shared a hash with another: each was "
			"recorded under its own id\n",
			(unsigned long long)c.stack_collisions);
	if (s->cfg->verbose && c.pressure_stops)
		fprintf(
		    stderr,
		    "memtrack: the events ring was nearly full: threads were stopped %llu times "
		    "until it had room\n",
		    (unsigned long long)c.pressure_stops);
	foot.end_mono_ns = mt_clock_now_ns();
	e = mt_artifact_finish(s->artifact, &foot);
	s->artifact = NULL;
	/* A write error stopped the recording (the writer said so), not the run. */
	s->res->incomplete = e || c.events_dropped || c.args_lost || c.unrecorded_calls ||
			     mt_tracker_unprobed_count(s->tracker) || s->res->handoff_late_files;
	return err;
}

static void sup_free(struct sup *s)
{
	for (size_t i = 0; i < s->n_procs; i++) {
		free(s->procs[i].pos);
		free(s->procs[i].exe);
		free(s->procs[i].exec_files);
	}
	sup_leaks_free(s);
	sup_rss_free(s);
	free(s->procs);
	sup_tset_free(&s->live);
	sup_tset_free(&s->unplaced);
	free(s->pressed.v); /* its tracees are in live */
	sup_handoff_free(s);
	sup_gdb_free(s);
	if (s->sigfd > 0)
		close(s->sigfd);
	mt_stoplog_free(s->log);
	mt_backtracer_free(s->backtracer);
	if (s->tracker != s->cfg->tracker)
		mt_tracker_close(s->tracker);
}

/* How long a fatal error waits for the killed tree before leaving the rest to EXITKILL. */
#define RELEASE_NS (500 * 1000000ull)

/*
 * Release the tree after a fatal error, as strace does. Every known tracee is killed (the tree
 * cannot be recorded any further, and PTRACE_O_EXITKILL would kill it at memtrack's exit anyway);
 * every stop reported meanwhile, of a known tracee or of one never seen (a new child at its first
 * stop, a thread at its exit stop), gets the kill too and is resumed so that it takes effect; the
 * dead are reaped, orphans included. Bounded: whatever is still there after RELEASE_NS dies with
 * memtrack's exit.
 */
static void release_tree(struct sup *s)
{
	uint64_t deadline = mt_clock_now_ns() + RELEASE_NS;
	const struct timespec tick = {0, 1000000};
	int status;
	pid_t tid;

	/* A process memtrack attached to is not memtrack's to end: it is left running. */
	if (s->cfg->attach_pid) {
		sup_attach_abandon(s);
		return;
	}

	/* The children of the processes killed here come to memtrack, to be reaped, not to init. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/*
	 * A tracee already exiting ignores SIGKILL: one whose stop the loop took but did not resume
	 * (where the error struck, held ones, one at its exit stop) must be resumed too.
	 */
	for (size_t i = 0; i < s->live.n; i++) {
		kill(s->live.v[i]->tid, SIGKILL);
		sup_resume(s->live.v[i]->tid, 0);
	}
	while (mt_clock_now_ns() < deadline) {
		tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid < 0 && errno == ECHILD)
			return;
		if (tid <= 0) {
			nanosleep(&tick, NULL);
			continue;
		}
		if (WIFSTOPPED(status) && tid != s->res->stopped_pid) {
			kill(tid, SIGKILL);
			sup_resume(tid, 0);
		}
	}
}

/* The spawned root, stopped at its exec: in the tree, armed, classified, continued. */
static int start_root(struct sup *s)
{
	struct tracee *t = sup_add_tracee(s, s->root);
	int idx = t ? sup_add_proc(s, s->root, -1) : -ENOMEM;

	if (idx < 0)
		return idx;
	t->proc = idx;
	t->started = true;
	mt_stoplog_place(t->log, s->procs[idx].pos, 0);
	return sup_carry_out(t, sup_on_exec(s, t, true, false));
}

/*
 * The artifact could not be made: a spawned command, stopped at its exec, is killed before it
 * runs; an attached process goes on as it was (seized, never stopped: memtrack's exit detaches).
 */
static void abandon_start(struct sup *s)
{
	int status;

	if (s->cfg->attach_pid) {
		sup_attach_abandon(s);
		return;
	}
	kill(s->root, SIGKILL);
	waitpid(s->root, &status, __WALL);
}

static void *detach_tracker(void *tracker)
{
	mt_tracker_detach(tracker);
	return NULL;
}

static int supervise(const struct mt_run_config *cfg, struct mt_run_result *res)
{
	bool detaching;
	pthread_t detacher;
	struct sup s = {.cfg = cfg, .res = res};
	int err;

	memset(res, 0, sizeof(*res));
	s.log = mt_stoplog_new();
	if (!s.log)
		return -ENOMEM;
	if (cfg->trace_maps)
		mt_stoplog_log_maps(s.log);
	if (cfg->track) {
		err = open_tracking(&s);
		if (err)
			goto out;
	}
	err = sup_gdb_open(&s);
	if (!err)
		err = cfg->attach_pid ? sup_attach(&s) : sup_spawn(&s);
	if (err)
		goto out;
	/*
	 * Created once the command is known to run (stopped before its first instruction): a
	 * command that cannot start neither clobbers an earlier artifact nor leaves an empty one.
	 */
	if (cfg->track && cfg->artifact_path) {
		err = open_artifact(&s);
		if (err) {
			abandon_start(&s);
			goto out;
		}
	}
	err = cfg->attach_pid ? sup_attach_arm(&s) : start_root(&s);
	if (!err)
		err = event_loop(&s);
	if (!err && s.end_phase)
		sup_reap_orphans();
	if (s.detaching)
		res->detach_ns = mt_clock_now_ns() - s.detach_start_ns;
	sup_handoff_report(&s);
	sup_gdb_report(&s);
	sup_rss_report(&s);
	report_own_cpu(&s);
	if (err) {
		fprintf(stderr, "memtrack: supervising '%s' failed: %s\n", cfg->argv[0],
			strerror(-err));
		release_tree(&s);
	}
out:
	/*
	 * Detaching waits for grace periods: let it run while the artifact is finished. Handing the
	 * links to the closer is a message: no thread for it (0.1 ms a benchmark in exec-harness).
	 */
	detaching = s.tracker && mt_tracker_detach_waits(s.tracker) &&
		    !pthread_create(&detacher, NULL, detach_tracker, s.tracker);
	if (s.tracker && !detaching)
		mt_tracker_detach(s.tracker);
	if (s.artifact || s.events) {
		int e = finish_artifact(&s);

		if (!err)
			err = e;
	}
	if (detaching)
		pthread_join(detacher, NULL);
	if (cfg->trace_stops_path) {
		int e;

		sup_log_files(&s);
		e = write_stoplog(&s);
		if (e) {
			if (!err)
				err = e;
		}
	}
	sup_free(&s);
	if (s.end_phase)
		prctl(PR_SET_CHILD_SUBREAPER, 0);
	return err;
}

struct supervision {
	const struct mt_run_config *cfg;
	struct mt_run_result *res;
	int err;
};

static void *supervisor_main(void *arg)
{
	struct supervision *v = arg;

	v->err = supervise(v->cfg, v->res);
	return NULL;
}

/*
 * The supervisor runs in a thread of its own, memtrack's first thread waiting for it: a process
 * of the tree may trace its parent, memtrack (an anti-debugging trick), and ptrace stops the
 * thread its pid names, the first. Were that the tracer of the tree, the two would wait for each
 * other for ever (the tracing process's own stops, its SIGCHLD first, wait for memtrack); this
 * way memtrack handles them, and the first thread runs on once let go, as any parent would. The
 * requests are blocked first, in every thread (the supervisor's inherits the mask).
 */
int mt_supervise(const struct mt_run_config *cfg, struct mt_run_result *res)
{
	struct supervision v = {.cfg = cfg, .res = res};
	pthread_t thread;
	int err;

	sup_block_requests();
	err = -pthread_create(&thread, NULL, supervisor_main, &v);
	if (err)
		v.err = supervise(cfg, res);
	else
		pthread_join(thread, NULL);
	sup_unblock_requests();
	return v.err;
}
