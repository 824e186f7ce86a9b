// SPDX-License-Identifier: GPL-2.0
/*
 * A run watched while it goes (README, "Watching a run"): memtrack run's status line on a
 * terminal (src/cmd/cmd_status.c), refreshed every second and gone before the summary, and never
 * drawn where stderr is no terminal or with -q; memtrack report of an artifact still being
 * written says "in progress", and "truncated" once its writer was killed (docs/FORMAT.md,
 * "Writing in progress"); memtrack report --follow shows views until the run ends, then its
 * report, and stops at SIGINT. Every wait polls for its condition, with a bound.
 */
#include <check.h>
#include <inttypes.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/* One redraw of the status line on a 24-row terminal: the cursor to the bottom row, cleared. */
#define DRAW	       "\0337\033[24;1H\033[2Kmemtrack: "
/* The scrolling region given back (DECSTBM without rows): the end of the line. */
#define REGION_RESTORE "\033[r"

static uint64_t now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000 + (uint64_t)ts.tv_nsec / 1000000;
}

static void pause_10ms(void)
{
	const struct timespec tick = {0, 10 * 1000 * 1000};

	nanosleep(&tick, NULL);
}

/* `script` gives memtrack a pseudo-terminal of 24 rows: the command line it runs there. */
static void in_a_pty(char *cmd, size_t len, const char *run_opts, const char *art,
		     const char *seconds)
{
	snprintf(cmd, len, "stty rows 24 cols 160 && exec %s run %s -o %s -- %s %s 1000", MEMTRACK,
		 run_opts, art, FIXTURE("steady_alloc"), seconds);
}

/* The elapsed seconds of each redraw in text, in order, into secs (at most n): their count. */
static size_t draws_of(const char *text, long *secs, size_t n)
{
	size_t k = 0;

	for (const char *p = strstr(text, DRAW); p; p = strstr(p + 1, DRAW)) {
		if (k < n)
			secs[k] = strtol(p + strlen(DRAW), NULL, 10);
		k++;
	}
	return k;
}

/*
 * A 3-second run in a pty: the line is redrawn each second of it (1 s, 2 s: none skipped, the
 * output polled as it comes, each redraw timed), with the heap's figures, and the terminal's
 * screen is given back before the summary.
 */
START_TEST(status_line_redrawn_every_second_in_a_pty)
{
	char dir[64], art[128], out[128], cmd[1024], *text = NULL;
	const char *argv[] = {"script", "-qfc", cmd, "/dev/null", NULL};
	long secs[64];
	uint64_t seen_ms[64], start = now_ms(), deadline = start + 120000;
	size_t n = 0, k;
	int status;
	pid_t pid;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/pty.out", dir);
	in_a_pty(cmd, sizeof(cmd), "", art, "3");
	pid = mt_spawn_session(argv, out);
	ck_assert_int_gt(pid, 0);
	/* Each redraw's arrival, seen by polling the output every 10 ms, until the summary. */
	while (now_ms() < deadline) {
		free(text);
		text = mt_slurp(out);
		k = text ? draws_of(text, secs, 64) : 0;
		for (; n < k && n < 64; n++)
			seen_ms[n] = now_ms();
		if (text && strstr(text, "exited with"))
			break;
		pause_10ms();
	}
	ck_assert_msg(text && strstr(text, "exited with"), "no summary in %s", out);
	ck_assert_int_ge(mt_wait_ms(pid, 10000, &status), 0);
	ck_assert_msg(n >= 2 && n <= 64, "%zu redraws in a 3 s run:\n%s", n, text);
	for (size_t i = 0; i < n && i < 64; i++) {
		/* Every second of the run has its redraw: 1 s, 2 s, ... none skipped. */
		ck_assert_msg(secs[i] == (long)i + 1, "redraw %zu says %ld s:\n%s", i, secs[i],
			      text);
	}
	/* And they came as the seconds passed, not all at the end (a stalled poll's slack). */
	ck_assert_msg(seen_ms[n - 1] - seen_ms[0] >= (n - 1) * 500,
		      "%zu redraws within %" PRIu64 " ms", n, seen_ms[n - 1] - seen_ms[0]);
	ck_assert_msg(strstr(text, " allocations; heap ") && strstr(text, "dropped: none"),
		      "no heap figures in the line:\n%s", text);
	/* The screen given back once, after the last redraw and before the summary. */
	ck_assert_ptr_nonnull(strstr(text, REGION_RESTORE));
	ck_assert_ptr_null(strstr(strstr(text, REGION_RESTORE), DRAW));
	ck_assert(strstr(text, REGION_RESTORE) < strstr(text, "exited with"));
	free(text);
	unlink(art);
	unlink(out);
	rmdir(dir);
}
END_TEST

/* memtrack attach shares the line: attached for 3 s, it redraws it at 1 s and 2 s. */
START_TEST(status_line_of_attach)
{
	char dir[64], art[128], out[128], fout[128], cmd[1024], *text;
	const char *fix[] = {FIXTURE("steady_alloc"), "30", "20", NULL};
	const char *pty[] = {"script", "-qfc", cmd, "/dev/null", NULL};
	long secs[64];
	size_t n;
	int status;
	pid_t pid, fpid;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/pty.out", dir);
	snprintf(fout, sizeof(fout), "%s/fixture.out", dir);
	fpid = mt_spawn_session(fix, fout);
	ck_assert_int_gt(fpid, 0);
	free(mt_wait_for_text(fout, "\n", 10000)); /* it runs: its first line */
	snprintf(cmd, sizeof(cmd), "stty rows 24 cols 160 && exec %s attach --duration 3s -o %s %d",
		 MEMTRACK, art, (int)fpid);
	pid = mt_spawn_session(pty, out);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_ge(mt_wait_ms(pid, 120000, &status), 0);
	kill(fpid, SIGKILL);
	mt_wait_ms(fpid, 10000, &status);
	text = mt_slurp(out);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "detached from process"), "%s", text);
	n = draws_of(text, secs, 64);
	ck_assert_msg(n >= 2 && secs[0] == 1 && secs[1] == 2, "%zu redraws:\n%s", n, text);
	ck_assert(strstr(text, REGION_RESTORE) < strstr(text, "detached from process"));
	free(text);
	unlink(art);
	unlink(out);
	unlink(fout);
	rmdir(dir);
}
END_TEST

/* stderr a pipe, or -q in a pty: no line, no escape sequence, the summary as it was. */
START_TEST(no_status_line_off_a_terminal_or_with_q)
{
	char dir[64], art[128], out[128], cmd[1024], *text;
	const char *run[] = {MEMTRACK, "run",  "-o", art, "--", FIXTURE("steady_alloc"),
			     "2",      "1000", NULL};
	const char *pty[] = {"script", "-qfc", cmd, "/dev/null", NULL};
	struct mt_out o;
	int status;
	pid_t pid;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/pty.out", dir);
	ck_assert_int_eq(mt_run(run, NULL, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 0, "run: %s", o.err);
	ck_assert_ptr_nonnull(strstr(o.err, "exited with 0"));
	ck_assert_msg(!strchr(o.err, '\033') && !strstr(o.err, " s; 1 process"),
		      "a status line on a pipe:\n%s", o.err);
	mt_out_free(&o);

	in_a_pty(cmd, sizeof(cmd), "-q", art, "2");
	pid = mt_spawn_session(pty, out);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_ge(mt_wait_ms(pid, 120000, &status), 0);
	text = mt_slurp(out);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(!strstr(text, "\033[24;1H") && !strstr(text, "\033[1;23r"),
		      "a status line under -q:\n%s", text);
	free(text);
	unlink(art);
	unlink(out);
	rmdir(dir);
}
END_TEST

/*
 * A terminal memtrack may not draw on: in non-canonical mode, as an editor, a pager or a prompt
 * keeps it (their screen is theirs), and when memtrack's group is not the terminal's foreground
 * (a write there could stop memtrack with SIGTTOU): no line, the run as without it.
 */
START_TEST(no_status_line_on_a_terminal_not_memtracks)
{
	static const char *const how[] = {"stty -icanon && exec", "exec setsid -w"};
	char dir[64], art[128], out[128], cmd[1024], *text;
	const char *pty[] = {"script", "-qfc", cmd, "/dev/null", NULL};
	int status;
	pid_t pid;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/pty.out", dir);
	for (size_t i = 0; i < sizeof(how) / sizeof(how[0]); i++) {
		snprintf(cmd, sizeof(cmd), "stty rows 24 cols 160 && %s %s run -o %s -- %s 2 1000",
			 how[i], MEMTRACK, art, FIXTURE("steady_alloc"));
		pid = mt_spawn_session(pty, out);
		ck_assert_int_gt(pid, 0);
		ck_assert_int_ge(mt_wait_ms(pid, 120000, &status), 0);
		text = mt_slurp(out);
		ck_assert_ptr_nonnull(text);
		ck_assert_msg(strstr(text, "exited with 0"), "%s: no summary:\n%s", how[i], text);
		ck_assert_msg(!strstr(text, "\033[24;1H") && !strstr(text, "\033[1;23r"),
			      "%s: a status line:\n%s", how[i], text);
		free(text);
	}
	unlink(art);
	unlink(out);
	rmdir(dir);
}
END_TEST

/* report --json ART, parsed (the test fails when it does not run or print JSON). */
static struct json_object *report_json(const char *art)
{
	const char *argv[] = {MEMTRACK, "report", "--json", art, NULL};
	struct json_object *j;
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report: %s", o.err);
	j = json_tokener_parse(o.out);
	ck_assert_ptr_nonnull(j);
	mt_out_free(&o);
	return j;
}

/* report ART's text (the test fails when it does not run). */
static char *report_text(const char *const *argv)
{
	struct mt_out o;
	char *text;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report: %s", o.err);
	text = strdup(o.out);
	mt_out_free(&o);
	return text;
}

static bool has_word(struct json_object *a, const char *word)
{
	for (size_t i = 0; i < json_object_array_length(a); i++)
		if (!strcmp(json_object_get_string(json_object_array_get_idx(a, i)), word))
			return true;
	return false;
}

/* The fixture's pid, from its first "PID N NS" line in path (0: none yet). */
static pid_t fixture_pid(const char *path)
{
	char *text = mt_slurp(path);
	int pid = 0;

	if (text)
		sscanf(text, "%d", &pid);
	free(text);
	return pid;
}

/* Whether report ART says its writer has not written its header yet (and fails). */
static bool header_pending(const char *art)
{
	const char *argv[] = {MEMTRACK, "report", "--json", art, NULL};
	struct mt_out o;
	bool pending;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	pending = o.code != 0;
	if (pending)
		ck_assert_msg(
		    strstr(o.err, "in progress: its writer has not written its header yet"),
		    "report of a run starting: %s", o.err);
	mt_out_free(&o);
	return pending;
}

/* report --json ART polled until its artifact has events (bounded): the report then. */
static struct json_object *report_with_events(const char *art)
{
	uint64_t deadline = now_ms() + 60000;
	struct json_object *j;
	struct stat st;

	for (;;) {
		/* A file its writer has made and not yet given its header is said to be so. */
		if (!stat(art, &st) && !header_pending(art)) {
			j = report_json(art);
			if (json_object_get_uint64(mt_json_get(j, "events")) > 0)
				return j;
			json_object_put(j);
		}
		ck_assert_msg(now_ms() < deadline, "%s had no events after 60 s", art);
		pause_10ms();
	}
}

/*
 * A report while memtrack writes: in progress (text, JSON, page), not truncated; after kill -9
 * of memtrack, whose lock goes with it: truncated.
 */
START_TEST(report_during_a_run_says_in_progress)
{
	char dir[64], art[128], out[128], page[128], *text;
	const char *run[] = {MEMTRACK, "run", "-q", "-o", art, "--", FIXTURE("steady_alloc"),
			     "20",     "20",  NULL};
	const char *rep[] = {MEMTRACK, "report", art, NULL};
	const char *html[] = {MEMTRACK, "report", "--html", page, art, NULL};
	struct json_object *j;
	int status;
	pid_t pid, fix;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/run.out", dir);
	snprintf(page, sizeof(page), "%s/p.html", dir);
	pid = mt_spawn_session(run, out);
	ck_assert_int_gt(pid, 0);
	j = report_with_events(art);
	ck_assert(json_object_get_boolean(mt_json_get(j, "in_progress")));
	ck_assert(!json_object_get_boolean(mt_json_get(j, "truncated")));
	ck_assert(has_word(mt_json_get(j, "incomplete"), "in_progress"));
	ck_assert(!has_word(mt_json_get(j, "incomplete"), "truncated"));
	json_object_put(j);
	text = report_text(rep);
	ck_assert_msg(strstr(text, "\nin progress: ") && !strstr(text, "TRUNCATED"), "%s", text);
	free(text);
	free(report_text(html));
	text = mt_slurp(page);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "The run is in progress") && !strstr(text, "class=\"warning\""),
		      "the page warns of a run in progress");
	free(text);

	fix = fixture_pid(out);
	ck_assert_int_eq(kill(pid, SIGKILL), 0);
	ck_assert_int_ge(mt_wait_ms(pid, 10000, &status), 0);
	if (fix > 0)
		kill(fix, SIGKILL); /* untraced now, it would run its 20 s */
	j = report_json(art);
	ck_assert(json_object_get_boolean(mt_json_get(j, "truncated")));
	ck_assert(!json_object_get_boolean(mt_json_get(j, "in_progress")));
	ck_assert(has_word(mt_json_get(j, "incomplete"), "truncated"));
	json_object_put(j);
	text = report_text(rep);
	ck_assert_msg(strstr(text, "TRUNCATED") && !strstr(text, "in progress"), "%s", text);
	free(text);
	unlink(page);
	unlink(art);
	unlink(out);
	rmdir(dir);
}
END_TEST

/* Views of "--follow ART" in text, their count; *allocs the first view's allocations. */
static size_t views_of(const char *text, long long *first_allocs)
{
	size_t n = 0;

	for (const char *p = strstr(text, "memtrack report --follow "); p;
	     p = strstr(p + 1, "memtrack report --follow ")) {
		const char *line = strchr(p, '\n');

		if (!n && line)
			*first_allocs = strtoll(line + 1, NULL, 10);
		n++;
	}
	return n;
}

/* A 4-second run followed from its start: views each second, then the whole report. */
START_TEST(follow_views_a_run_then_its_report)
{
	char dir[64], art[128], out[128], view[128], *text = NULL;
	const char *run[] = {MEMTRACK, "run", "-q", "--stacks",
			     "-o",     art,   "--", FIXTURE("steady_alloc"),
			     "4",      "20",  NULL};
	const char *follow[] = {MEMTRACK, "report", "--follow", art, NULL};
	long long first = -1;
	int status;
	pid_t pid, fpid;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/run.out", dir);
	snprintf(view, sizeof(view), "%s/follow.out", dir);
	pid = mt_spawn_session(run, out);
	ck_assert_int_gt(pid, 0);
	json_object_put(report_with_events(art));
	fpid = mt_spawn_session(follow, view);
	ck_assert_int_gt(fpid, 0);
	ck_assert_int_ge(mt_wait_ms(pid, 120000, &status), 0);
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status), "run: %x", status);
	/* It ends by itself once the run's writer is gone. */
	ck_assert_msg(mt_wait_ms(fpid, 30000, &status) >= 0, "--follow did not end with the run");
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status), "--follow: %x", status);
	text = mt_slurp(view);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(views_of(text, &first) >= 2, "fewer than 2 views of a 4 s run:\n%s", text);
	ck_assert_msg(first > 0, "the first view counts no allocation:\n%s", text);
	ck_assert_ptr_nonnull(strstr(text, "heap live now "));
	ck_assert_ptr_nonnull(strstr(text, "by bytes live now"));
	/* The last: the whole report, complete (a duration is the footer's), with its sites. */
	ck_assert_msg(strstr(text, "\nduration: ") && !strstr(text, "TRUNCATED"), "%s", text);
	ck_assert_ptr_nonnull(strstr(strstr(text, "\nduration: "), "Top allocation sites"));
	free(text);
	unlink(art);
	unlink(out);
	unlink(view);
	rmdir(dir);
}
END_TEST

/* SIGINT ends a watch at once, with status 0, the run going on. */
START_TEST(follow_stops_at_sigint)
{
	char dir[64], art[128], out[128], view[128], *text;
	const char *run[] = {MEMTRACK, "run", "-q", "-o", art, "--", FIXTURE("steady_alloc"),
			     "20",     "20",  NULL};
	const char *follow[] = {MEMTRACK, "report", "--follow", art, NULL};
	int status;
	pid_t pid, fpid;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/run.out", dir);
	snprintf(view, sizeof(view), "%s/follow.out", dir);
	pid = mt_spawn_session(run, out);
	ck_assert_int_gt(pid, 0);
	json_object_put(report_with_events(art));
	fpid = mt_spawn_session(follow, view);
	ck_assert_int_gt(fpid, 0);
	text = mt_wait_for_text(view, "heap live now", 30000);
	ck_assert_msg(text, "no view in 30 s");
	free(text);
	ck_assert_int_eq(kill(fpid, SIGINT), 0);
	ck_assert_msg(mt_wait_ms(fpid, 5000, &status) >= 0, "--follow went on after SIGINT");
	ck_assert_msg(WIFEXITED(status) && !WEXITSTATUS(status), "--follow: %x", status);
	ck_assert(mt_pid_alive(pid));
	/* The run ends as a user's Ctrl-C ends it. */
	kill(pid, SIGINT);
	ck_assert_int_ge(mt_wait_ms(pid, 30000, &status), 0);
	unlink(art);
	unlink(out);
	unlink(view);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("it_live");
	TCase *tc = tcase_create("live");

	tcase_set_timeout(tc, 300);
	mt_tcase_add_tool_test(tc, status_line_redrawn_every_second_in_a_pty, "script stty");
	mt_tcase_add_tool_test(tc, status_line_of_attach, "script stty");
	mt_tcase_add_tool_test(tc, no_status_line_off_a_terminal_or_with_q, "script stty");
	mt_tcase_add_tool_test(tc, no_status_line_on_a_terminal_not_memtracks,
			       "script stty setsid");
	tcase_add_test(tc, report_during_a_run_says_in_progress);
	tcase_add_test(tc, follow_views_a_run_then_its_report);
	tcase_add_test(tc, follow_stops_at_sigint);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
