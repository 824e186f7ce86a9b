// SPDX-License-Identifier: GPL-2.0
/*
 * Stress: memtrack run on trees far larger than the other tests start (300 threads alive at
 * once, 100 children alive at once, 200 short fork + exec), with exact allocation counts from the
 * stress fixture's truth (fixtures/README.md) and the command's exit status. Each grows every
 * table of the supervisor many times over while stops are being handled.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/* Run stress MODE N; the report, with the run's exit code 0 and nothing dropped asserted. */
static struct json_object *stress(const char *mode, const char *n, struct mt_out *o)
{
	const char *cmd[] = {FIXTURE("stress"), mode, n, NULL};
	struct json_object *rep = mt_run_report(NULL, cmd, 300, o);

	ck_assert_msg(rep, "no report; memtrack said: %s", o->err);
	ck_assert_msg(o->code == 0, "exit %d: %s", o->code, o->err);
	ck_assert_int_eq(mt_json_i64(mt_json_get(rep, "totals"), "dropped"), 0);
	return rep;
}

static void assert_counts(struct json_object *t, int64_t allocs, int64_t frees, int64_t bytes)
{
	ck_assert_int_eq(mt_json_i64(t, "allocations"), allocs);
	ck_assert_int_eq(mt_json_i64(t, "frees"), frees);
	ck_assert_int_eq(mt_json_i64(t, "reallocs"), 0);
	ck_assert_int_eq(mt_json_i64(t, "bytes_allocated"), bytes);
}

/* 300 threads, each a new stack with its DTV (calloc 272), none freed: 64 KiB stacks stay cached.
 */
START_TEST(threads_300)
{
	struct mt_out o;
	struct json_object *rep = stress("threads", "300", &o);

	assert_counts(mt_json_get(rep, "totals"), 300, 0, 300 * 272);
	ck_assert_int_eq(json_object_array_length(mt_json_get(rep, "processes")), 1);
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

/* 100 children alive at once: child i allocates and frees 16 (i + 1) bytes, the parent nothing. */
START_TEST(children_100)
{
	struct mt_out o;
	struct json_object *rep = stress("children", "100", &o), *procs, *p;
	bool seen[100] = {false};

	assert_counts(mt_json_get(rep, "totals"), 100, 100, 16 * 100 * 101 / 2);
	procs = mt_json_get(rep, "processes");
	ck_assert_int_eq(json_object_array_length(procs), 101);
	for (size_t i = 0; i < 101; i++) {
		int64_t k;

		p = json_object_array_get_idx(procs, i);
		if (mt_json_i64(p, "parent") == 0) {
			assert_counts(p, 0, 0, 0);
			continue;
		}
		k = mt_json_i64(p, "bytes_allocated") / 16 - 1;
		ck_assert(k >= 0 && k < 100 && !seen[k]);
		seen[k] = true;
		assert_counts(p, 1, 1, 16 * (k + 1));
		ck_assert_int_eq(mt_json_i64(p, "exit_code"), 0);
	}
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

/* 200 fork + exec, 8 at a time: every leaf's malloc(100) and free, in its own process. */
START_TEST(exec_storm_200)
{
	struct mt_out o;
	struct json_object *rep = stress("execs", "200", &o), *procs, *p;
	int leaves = 0;

	assert_counts(mt_json_get(rep, "totals"), 200, 200, 200 * 100);
	procs = mt_json_get(rep, "processes");
	ck_assert_int_eq(json_object_array_length(procs), 201);
	for (size_t i = 0; i < 201; i++) {
		p = json_object_array_get_idx(procs, i);
		if (mt_json_i64(p, "parent") == 0)
			continue;
		assert_counts(p, 1, 1, 100);
		leaves++;
	}
	ck_assert_int_eq(leaves, 200);
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

/* The reproducer: a shell starting 100 background jobs at once. */
START_TEST(shell_with_100_jobs)
{
	const char *argv[] = {MEMTRACK,
			      "run",
			      "--no-track",
			      "--",
			      "sh",
			      "-c",
			      "for i in $(seq 100); do " FIXTURE("sleeper") " 0.2 & done; wait",
			      NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 300, &o), 0);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	/* sh, seq, and 100 sleepers */
	ck_assert_msg(strstr(o.err, "exited with 0; 102 processes, 102 threads"), "%s", o.err);
	mt_out_free(&o);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("stress");
	TCase *tc = tcase_create("stress");

	tcase_set_timeout(tc, 600);
	tcase_add_test(tc, threads_300);
	tcase_add_test(tc, children_100);
	tcase_add_test(tc, exec_storm_200);
	tcase_add_test(tc, shell_with_100_jobs);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
