// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's everyday run control on a multi-threaded program under memtrack (--gdb, docs/GDB.md):
 * threads8's 8 threads all hit one breakpoint in their loop, and gdb's `next`, `step`, `until`
 * and `finish`, 20 of each in every session, step one thread while the others run
 * (`vCont;s:TID;c`) and keep stopping at the breakpoint in other threads. Each session must end
 * as the program does without gdb: exit 0, no signal gdb did not send, and the allocations of a
 * run without gdb (fixtures/README.md). 10 sessions, 2 of them with gdb in a pty (`script`), as
 * a person runs it.
 *
 * Each thread makes PAIRS iterations, far more than the stops of a session let it run: `until` on
 * the loop's last line steps the thread through the loop (stepping onto a breakpoint is no hit),
 * and only another thread's hit ends it; were the others done, it would step, one instruction
 * at a time, through whatever is left of the loop, as gdb does natively too.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/gdbsession.h"
#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define SESSIONS 10
#define REPEATS	 20
#define PAIRS	 "20000"
#define N_PAIRS	 20000

/* The gdb commands of one session: break in the loop, 20 of each stepping command, the end. */
static const char **stepping_commands(void)
{
	static const char *const steps[] = {"next", "step", "until", "finish"};
	static const char *cmds[8 + 4 * REPEATS];
	size_t n = 0;

	cmds[n++] = "break threads8.c:23";
	cmds[n++] = "continue";
	for (size_t k = 0; k < 4; k++)
		for (size_t i = 0; i < REPEATS; i++)
			cmds[n++] = steps[k];
	cmds[n++] = "delete";
	cmds[n++] = "continue";
	cmds[n] = NULL;
	return cmds;
}

/* gdb -batch in a pty: `script -qfc "gdb ..."`, gdb's commands in a file (-x). */
static void pty_session(struct session *s, const char *const *cmd, const char *const *cmds)
{
	char file[128], shell[2048];
	const char *argv[] = {"script", "-qfec", shell, "/dev/null", NULL};
	FILE *f;

	gdb_make_target(s, NULL, cmd);
	snprintf(file, sizeof(file), "%s/cmds", s->dir);
	f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "set confirm off\nset pagination off\nset remotetimeout 60\n%s\n", s->target);
	for (size_t i = 0; cmds[i]; i++)
		fprintf(f, "%s\n", cmds[i]);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(shell, sizeof(shell), "gdb -nx -q -batch -x %s %s </dev/null", file, cmd[0]);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 240, &s->o), 0);
	gdb_read_results(s);
}

/* threads8 N: 8 N + 8 allocations, 2,304 N + 2,176 bytes; frees 8 N (+ 8 - L) (fixtures/README.md).
 */
static void assert_as_without_gdb(struct session *s, int k)
{
	struct json_object *t = gdb_totals(s);
	int64_t frees = mt_json_i64(t, "frees");

	const char *bad = strstr(s->o.out, "received signal");

	if (!bad)
		bad = strstr(s->o.out, "terminated");
	/* Where it went wrong, not the whole session (Check's messages are short). */
	ck_assert_msg(!bad, "session %d: a signal gdb did not send:\n%.1500s", k,
		      bad - s->o.out > 1000 ? bad - 1000 : s->o.out);
	SAID(s, "exited normally");
	ck_assert_msg(s->rc == 0, "session %d: exit %d", k, s->rc);
	ck_assert_int_eq(mt_json_i64(t, "allocations"), 8ll * N_PAIRS + 8);
	ck_assert_int_eq(mt_json_i64(t, "bytes_allocated"), 2304ll * N_PAIRS + 2176);
	ck_assert_msg(frees >= 8ll * N_PAIRS && frees <= 8ll * N_PAIRS + 8,
		      "session %d: %lld frees", k, (long long)frees);
}

START_TEST(stepping_commands_in_8_threads_end_as_without_gdb)
{
	const char *cmd[] = {FIXTURE("threads8"), PAIRS, NULL};
	const char **cmds = stepping_commands();
	int stops = 0;

	for (int k = 0; k < SESSIONS; k++) {
		struct session s = {0};

		if (k >= SESSIONS - 2)
			pty_session(&s, cmd, cmds);
		else
			gdb_session(&s, NULL, cmd, cmds);
		assert_as_without_gdb(&s, k);
		stops += mt_count_lines(s.o.out, "hit Breakpoint 1, run (");
		gdb_session_free(&s);
	}
	/* Other threads' hits were reported as gdb stepped one: far more than one per session. */
	ck_assert_int_gt(stops, 10 * SESSIONS);
}
END_TEST

/* With scheduler locking, the stepped thread alone runs: every step stays in it. */
START_TEST(scheduler_locking_steps_one_thread)
{
	const char *cmd[] = {FIXTURE("threads8"), PAIRS, NULL};
	const char *cmds[8 + REPEATS] = {"break threads8.c:23", "continue",
					 "set scheduler-locking on", "delete"};
	struct session s = {0};
	size_t n = 4;

	for (size_t i = 0; i < REPEATS; i++)
		cmds[n++] = "next";
	cmds[n++] = "set scheduler-locking off";
	cmds[n++] = "continue";
	gdb_session(&s, NULL, cmd, cmds);
	ck_assert_msg(mt_count_lines(s.o.out, "[Switching to Thread") <= 1, "%s", s.o.out);
	ck_assert_int_ge(mt_count_lines(s.o.out, "\t\tfree(p);"), REPEATS / 5);
	assert_as_without_gdb(&s, 0);
	gdb_session_free(&s);
}
END_TEST

static Suite *gdb_threads_suite(void)
{
	Suite *s = suite_create("gdb_threads");
	TCase *tc = tcase_create("gdb_threads");

	tcase_set_timeout(tc, 900);
	tcase_add_test(tc, stepping_commands_in_8_threads_end_as_without_gdb);
	tcase_add_test(tc, scheduler_locking_steps_one_thread);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(gdb_threads_suite());
}
