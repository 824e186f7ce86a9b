// SPDX-License-Identifier: GPL-2.0
/*
 * The BPF object's instances loaded beside the run (src/tracker/tracker_instances.c): the
 * uprobe_multi programs by a thread of their own, and the program that watches threads ending
 * inside a call that may throw, by the main thread as the first such file is attached. A program
 * linked with jemalloc (whose operator new may throw) has that file attached before anything
 * waits for the loader thread: both load at once. The run's figures are the fixture's truth
 * (fixtures/README.md); under ThreadSanitizer (make check-tsan) a race between the two ends
 * memtrack with TSan's exit status.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <check.h>
#include <json-c/json.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/* -v's lines of the two loads, where they are in err (NULL: not said). */
static void loads_said(const char *err, const char **more, const char **multi)
{
	*more = strstr(err, "BPF object for more probes loaded");
	*multi = strstr(err, "for the uprobe_multi programs");
}

/* jemalloc_child 10: 21 allocations, 20 frees, 172,694 bytes, the pool live at exit. */
START_TEST(exits_in_calls_loaded_beside_the_multi_loader)
{
	const char *opts[] = {"-v", NULL};
	const char *cmd[] = {FIXTURE("jemalloc_child"), "10", NULL};
	struct mt_out o;
	struct json_object *rep = mt_run_report(opts, cmd, 120, &o);
	struct json_object *t;
	const char *more, *multi;

	loads_said(o.err, &more, &multi);
	/* -v says much (and TSan more): stderr, not the message, which Check bounds. */
	if (!rep || o.code || !more || (multi && multi < more))
		fputs(o.err, stderr);
	ck_assert_msg(rep && o.code == 0, "jemalloc_child: exit %d (memtrack's stderr above)",
		      o.code);
	ck_assert_msg(more, "handle_exit_in_call was not loaded");
	/* With the loader thread (uprobe_multi), its wait comes after the main thread's load. */
	ck_assert_msg(!multi || multi > more, "the loader was waited for first");
	t = mt_json_get(rep, "totals");
	ck_assert_int_eq(mt_json_i64(t, "allocations"), 21);
	ck_assert_int_eq(mt_json_i64(t, "frees"), 20);
	ck_assert_int_eq(mt_json_i64(t, "bytes_allocated"), 172694);
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("loader");
	TCase *tc = tcase_create("instances");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, exits_in_calls_loaded_beside_the_multi_loader);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
