// SPDX-License-Identifier: GPL-2.0
/*
 * Back-pressure: a thread that emits into a nearly full events ring is stopped until the consumer
 * made room (docs/STOPS.md, `pressure`). Exact totals with no drop under 8 producers, pressure
 * stops absent from --trace-stops, held threads that a SIGKILL or memtrack's own failure ends,
 * and the drop path that stays the last resort (counted, never silent).
 */
#include <check.h>
#include <dirent.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/mtrun.h"
#include "lib/suite.h"

/* memtrack with the test hooks (MT_NO_BACKPRESSURE, MT_FAULT_AT_STOP), see the Makefile. */

static int64_t num(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key %s", key);
	return json_object_get_int64(v);
}

/*
 * threads8 N's truth (fixtures/README.md); frees depend on the L DTVs live at exit; each thread's
 * exit releases its tcache and the one chunk cached in it: 16 unmatched frees.
 */
static void assert_threads8(struct json_object *rep, int64_t n)
{
	struct json_object *t = json_object_object_get(rep, "totals");
	int64_t live = num(t, "live_blocks");

	ck_assert_int_eq(num(t, "allocations"), 8 * n + 8);
	ck_assert_int_eq(num(t, "frees"), 8 * n + 8 - live);
	ck_assert_int_eq(num(t, "unmatched_frees"), 16);
	ck_assert_int_eq(num(t, "reallocs"), 0);
	ck_assert_int_eq(num(t, "bytes_allocated"), 2304 * n + 2176);
	ck_assert(live >= 0 && live <= 8);
	ck_assert_int_eq(num(t, "dropped"), 0);
	ck_assert(json_object_get_boolean(json_object_object_get(rep, "complete")));
}

/* 8 threads x 500,000 malloc/free pairs at once through the default ring: exact, nothing dropped.
 */
START_TEST(eight_producers_exact_with_the_default_ring)
{
	const char *cmd[] = {FIXTURE("threads8"), "500000", NULL};
	struct mt_out o;
	struct json_object *rep = mt_run_report(NULL, cmd, 600, &o);

	ck_assert_msg(rep, "no report; memtrack said: %s", o.err);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	assert_threads8(rep, 500000);
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

/* A ring of one page, 73 events: every thread is stopped again and again, and nothing is lost. */
START_TEST(one_page_ring_loses_nothing)
{
	const char *opts[] = {"--ring-size", "4096", NULL};
	const char *cmd[] = {FIXTURE("churn"), "100000", NULL};
	struct mt_out o;
	struct json_object *rep = mt_run_report(opts, cmd, 300, &o), *t;

	ck_assert_msg(rep, "no report; memtrack said: %s", o.err);
	ck_assert_int_eq(o.code, 0);
	t = json_object_object_get(rep, "totals");
	ck_assert_int_eq(num(t, "allocations"), 100000);
	ck_assert_int_eq(num(t, "frees"), 100000);
	ck_assert_int_eq(num(t, "bytes_allocated"), 205477120);
	ck_assert_int_eq(num(t, "dropped"), 0);
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

/*
 * Pressure stops depend on how fast the consumer runs, so they are not logged: a run whose ring
 * stops its threads hundreds of times gives the same --trace-stops file, byte for byte, as a run
 * with the default ring, and the same exact totals.
 */
START_TEST(pressure_stops_are_not_in_the_trace)
{
	char *tiny = mt_tmpfile(), *dflt = mt_tmpfile(), *a, *b;
	char dir[64], art[128];
	const char *run_tiny[] = {
	    MEMTRACK,	     "run", "-v", "--ring-size",       "4096", "-o", art,
	    "--trace-stops", tiny,  "--", FIXTURE("threads8"), "2000", NULL};
	const char *run_dflt[] = {MEMTRACK, "run",	 "-q",
				  "-o",	    "/dev/null", "--trace-stops",
				  dflt,	    "--",	 FIXTURE("threads8"),
				  "2000",   NULL};
	const char *rep[] = {MEMTRACK, "report", "--json", art, NULL};
	struct json_object *doc;
	struct mt_out o, r;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	ck_assert_int_eq(mt_run(run_tiny, NULL, NULL, 300, &o), 0);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_msg(strstr(o.err, "the events ring was nearly full: threads were stopped"),
		      "no pressure stop: %s", o.err);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &r), 0);
	doc = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(doc);
	assert_threads8(doc, 2000);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(run_dflt, NULL, NULL, 300, &o), 0);
	ck_assert_int_eq(o.code, 0);
	a = mt_slurp_trace(tiny);
	b = mt_slurp_trace(dflt);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_str_eq(a, b);
	ck_assert_int_eq(mt_count_lines(a, "\"kind\":\"clone\""), 8);
	json_object_put(doc);
	free(a);
	free(b);
	unlink(tiny);
	unlink(dflt);
	free(tiny);
	free(dflt);
	mt_out_free(&o);
	mt_out_free(&r);
	unlink(art);
	rmdir(dir);
}
END_TEST

/*
 * The first child of pid's threads (its only one, once the closer's parent is gone), or 0. The
 * command is a child of the thread that vforks it, not of memtrack's main thread.
 */
static pid_t first_child(pid_t pid)
{
	char path[320];
	struct dirent *d;
	long child = 0;
	DIR *dir;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!child && (d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", pid, d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fscanf(f, "%ld", &child) != 1)
			child = 0;
		fclose(f);
	}
	closedir(dir);
	return (pid_t)child;
}

/* Threads of pid in a tracing stop ('t' in /proc/PID/task/TID/stat), and how many it has. */
static int threads_stopped(pid_t pid, int *threads)
{
	char path[320], line[512], *state;
	struct dirent *d;
	int stopped = 0;
	DIR *dir;
	FILE *f;

	*threads = 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while ((d = readdir(dir))) {
		if (d->d_name[0] == '.')
			continue;
		(*threads)++;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/stat", pid, d->d_name);
		f = fopen(path, "re");
		if (!f)
			continue;
		if (fgets(line, sizeof(line), f) && (state = strrchr(line, ')')) && state[2] == 't')
			stopped++;
		fclose(f);
	}
	closedir(dir);
	return stopped;
}

/* Wait for pid (a child) at most timeout_s seconds; kill it if it hangs. Returns its status. */
static int wait_bounded(pid_t pid, int timeout_s)
{
	const struct timespec tick = {0, 10 * 1000 * 1000};
	int status;

	for (int i = 0; i < timeout_s * 100; i++) {
		if (waitpid(pid, &status, WNOHANG) == pid)
			return status;
		nanosleep(&tick, NULL);
	}
	kill(pid, SIGKILL);
	waitpid(pid, &status, 0);
	ck_abort_msg("memtrack hung with held threads");
	return -1;
}

/*
 * A process whose threads are held at pressure stops gets SIGKILL: memtrack does not wait for
 * room for them, it sees them die and exits like the command (128 + 9), with nothing left.
 */
START_TEST(sigkill_of_held_threads_does_not_hang)
{
	const char *argv[] = {MEMTRACK, "run",	     "-q", "--ring-size",	"4096",
			      "-o",	"/dev/null", "--", FIXTURE("threads8"), "100000000",
			      NULL};
	const struct timespec tick = {0, 1000 * 1000};
	int fd, status, threads = 0, stopped = 0;
	pid_t pid, cmd = 0;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	pid = mt_spawn_piped(argv, &fd);
	ck_assert_int_gt(pid, 0);
	/* Until the 8 producers run and some are held (at most 60 s: then the test fails). */
	for (int i = 0; i < 60000 && !(threads == 9 && stopped > 0); i++) {
		/* Read again: memtrack's first child is, for a moment, the one that forks its
		 * closer. */
		cmd = first_child(pid);
		if (cmd)
			stopped = threads_stopped(cmd, &threads);
		nanosleep(&tick, NULL);
	}
	ck_assert_msg(threads == 9 && stopped > 0, "threads %d, stopped %d", threads, stopped);
	kill(cmd, SIGKILL);
	status = wait_bounded(pid, 60);
	ck_assert(WIFEXITED(status));
	ck_assert_int_eq(WEXITSTATUS(status), 128 + SIGKILL);
	mt_reap_closers();
	ck_assert_int_eq(waitpid(-1, &status, __WALL | WNOHANG), -1);
	close(fd);
}
END_TEST

/*
 * memtrack's own failure while threads are held at pressure stops: the fatal path kills and
 * resumes every tracee, held ones included, exits 1 and leaves no process of the tree.
 */
START_TEST(fatal_error_releases_held_threads)
{
	const char *env[] = {"MT_FAULT_AT_STOP=300", NULL};
	const char *argv[] = {
	    MEMTRACK_FAULTS,	 "run",	    "-q", "--ring-size", "4096", "-o", "/dev/null", "--",
	    FIXTURE("threads8"), "1000000", NULL};
	struct mt_out o;
	int status;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	ck_assert_int_eq(mt_run(argv, env, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 1, "exit %d: %s", o.code, o.err);
	ck_assert_ptr_nonnull(strstr(o.err, "failed: Operation not permitted"));
	mt_reap_closers();
	ck_assert_int_eq(waitpid(-1, &status, __WALL | WNOHANG), -1);
	mt_out_free(&o);
}
END_TEST

/*
 * The last resort, driven with back-pressure off (a test build): a ring far too small drops
 * events, and every one of them is counted, so what was recorded plus what was dropped is
 * exactly what the program did: 200,000 calls and its exit. A free whose malloc was dropped is
 * an unmatched free.
 */
START_TEST(drops_are_counted_when_pressure_cannot_help)
{
	char dir[64], art[128];
	const char *env[] = {"MT_NO_BACKPRESSURE=1", NULL};
	const char *argv[] = {MEMTRACK_FAULTS,	"run",	  "--ring-size", "4096", "-o", art, "--",
			      FIXTURE("churn"), "100000", NULL};
	const char *rep[] = {MEMTRACK, "report", "--json", art, NULL};
	struct json_object *doc, *t, *dropped;
	struct mt_out o, r;
	int64_t lost, calls;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	ck_assert_int_eq(mt_run(argv, env, NULL, 120, &o), 0);
	ck_assert_int_eq(o.code, 0);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &r), 0);
	doc = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(doc);
	t = json_object_object_get(doc, "totals");
	dropped = json_object_object_get(doc, "dropped");
	lost = num(dropped, "events");
	ck_assert_int_eq(num(doc, "events") + lost, 200000 + 1);
	/* Every recorded event is a call, but the exit if it was not dropped. */
	calls = num(t, "allocations") + num(t, "frees") + num(t, "unmatched_frees");
	ck_assert(calls == num(doc, "events") || calls == num(doc, "events") - 1);
	ck_assert_int_eq(num(dropped, "args_lost"), 0);
	if (lost)
		ck_assert_ptr_nonnull(strstr(o.err, "events dropped"));
	json_object_put(doc);
	mt_out_free(&o);
	mt_out_free(&r);
	unlink(art);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pressure");
	TCase *tc = tcase_create("pressure");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, eight_producers_exact_with_the_default_ring);
	tcase_add_test(tc, one_page_ring_loses_nothing);
	tcase_add_test(tc, pressure_stops_are_not_in_the_trace);
	tcase_add_test(tc, sigkill_of_held_threads_does_not_hang);
	tcase_add_test(tc, fatal_error_releases_held_threads);
	tcase_add_test(tc, drops_are_counted_when_pressure_cannot_help);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
