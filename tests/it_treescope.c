// SPDX-License-Identifier: GPL-2.0
/*
 * Per-process probes (--probe-scope=tree, the default) count every process of the tree exactly,
 * in the process shapes the kernel's pid filter must be taught: fork, vfork children running in
 * the parent's memory, exec, exec from a non-leader thread, dlopen in a child, a leader that exits
 * before its threads (fixtures/README.md, scope_cases).
 *
 * Each case runs twice: with the links this kernel allows, and with one perf link per probe and
 * process (mt_memtrack_link_path), the way of kernels without uprobe_multi (6.1), whose filters
 * differ (docs/PROBES.md). On 6.1 both runs take that way. Unlike it_isolation's cases, these
 * assert only what their own runs counted: they run beside other suites.
 */
#include <check.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/* The memtrack the loop tests run (mt_memtrack_link_path). */
static const char *memtrack = MEMTRACK;

static void use_path(int i)
{
	memtrack = mt_memtrack_link_path(i);
}

/* Run cmd under memtrack (default scope); its totals must be allocs, frees, bytes, complete. */
static void exact(const char *const *cmd, int64_t allocs, int64_t frees, int64_t bytes,
		  size_t procs)
{
	struct mt_out o;
	struct json_object *rep = mt_run_report_with(memtrack, NULL, cmd, 120, &o), *t, *p;

	ck_assert_msg(rep, "no report; memtrack said: %s", o.err);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_msg(json_object_object_get_ex(rep, "totals", &t), "no totals");
	ck_assert_int_eq(mt_json_i64(t, "allocations"), allocs);
	ck_assert_int_eq(mt_json_i64(t, "frees"), frees);
	ck_assert_int_eq(mt_json_i64(t, "bytes_allocated"), bytes);
	ck_assert_int_eq(mt_json_i64(t, "dropped"), 0);
	ck_assert(json_object_object_get_ex(rep, "processes", &p));
	ck_assert_int_eq(json_object_array_length(p), procs);
	json_object_put(rep);
	mt_out_free(&o);
}

START_TEST(fork_child_counted)
{
	const char *cmd[] = {FIXTURE("scope_cases"), "fork", "10", NULL};

	use_path(_i);
	exact(cmd, 10, 10, 480, 2);
}
END_TEST

/* A vfork child runs in its parent's memory: the parent's links do not cover it since 6.12. */
START_TEST(vfork_child_counted)
{
	const char *cmd[] = {FIXTURE("scope_cases"), "vfork", "10", NULL};

	use_path(_i);
	exact(cmd, 10, 10, 480, 2);
}
END_TEST

/* vfork, then exec: the new image maps libc again, for a pid that was linked through its parent. */
START_TEST(vfork_exec_counted)
{
	const char *cmd[] = {FIXTURE("vfork_exec"), FIXTURE("scope_cases"), "alloc", "10", NULL};

	use_path(_i);
	exact(cmd, 10, 10, 480, 2);
}
END_TEST

/* An exec from a non-leader thread: the leader's task, whose pid links named, is gone. */
START_TEST(non_leader_exec_counted)
{
	const char *cmd[] = {FIXTURE("mt_exec"), FIXTURE("scope_cases"), "alloc", "10", NULL};

	use_path(_i);
	/* mt_exec's 3 thread DTVs (3 x 272), then the new image's 10 blocks */
	exact(cmd, 13, 10, 3 * 272 + 480, 1);
}
END_TEST

/* A child that dlopens a new allocator user: libc's links come from the fork, the plugin's map. */
START_TEST(dlopen_in_child_counted)
{
	const char *cmd[] = {FIXTURE("scope_cases"), "fork_dlopen", FIXTURE("plugin_plain.so"),
			     "100", NULL};
	size_t p = strlen(FIXTURE("plugin_plain.so"));

	use_path(_i);
	/* dlopen_plugin plugin_plain.so 100, in the child: 7 + 100 allocations, 777 bytes each */
	exact(cmd, 107, 101, 3667 + 3 * p + 100 * 777, 2);
}
END_TEST

/*
 * The leader exits first (pthread_exit); its last thread allocates with the leader gone. While
 * it waits on a FIFO, another memtrack run traces `true`: closing that run's links on libc makes
 * the kernel ask every other link on libc whether its breakpoints may stay in each process, and a
 * link naming the exited leader says no (on 6.1's perf path it stops counting at once). The links
 * memtrack makes on a live thread at the leader's exit stop keep the breakpoints there, and count
 * where the leader's links no longer do, so the thread's calls are counted once (docs/PROBES.md).
 */
static void close_a_libc_link_then_release(const char *fifo)
{
	const char *argv[] = {MEMTRACK, "run", "-q", "-o", "/dev/null", "--", "true", NULL};
	struct mt_out o;
	int fd = open(fifo, O_WRONLY | O_CLOEXEC); /* returns once the leader is gone */

	if (fd < 0)
		_exit(1);
	if (mt_run(argv, NULL, NULL, 60, &o) || o.code)
		_exit(2);
	_exit(write(fd, "x", 1) == 1 ? 0 : 3);
}

START_TEST(leader_exit_counted)
{
	char dir[64], fifo[80];
	const char *cmd[] = {FIXTURE("scope_cases"), "leader_exit_fifo", fifo, "10", NULL};
	int status;
	pid_t helper;

	use_path(_i);
	mt_tmpdir(dir);
	snprintf(fifo, sizeof(fifo), "%s/go", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	helper = fork();
	ck_assert_int_ge(helper, 0);
	if (helper == 0)
		close_a_libc_link_then_release(fifo);
	exact(cmd, 18, 11, 4886, 1);
	ck_assert_int_eq(waitpid(helper, &status, 0), helper);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "helper: %#x", status);
	unlink(fifo);
	rmdir(dir);
}
END_TEST

/*
 * The registration warmer (src/tracker/tracker_warm.c) registers idle probes where links are
 * uprobe_multi, none on the perf path; its probes count nothing: the totals stay exact.
 */
START_TEST(idle_probes_only_with_uprobe_multi)
{
	const char *opts[] = {"-v", NULL};
	const char *cmd[] = {FIXTURE("scope_cases"), "fork", "10", NULL};
	struct json_object *rep, *t;
	const char *said, *line;
	struct mt_out o;

	use_path(_i);
	rep = mt_run_report_with(memtrack, opts, cmd, 120, &o);
	ck_assert_msg(rep && o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert(json_object_object_get_ex(rep, "totals", &t));
	ck_assert_int_eq(mt_json_i64(t, "allocations"), 10);
	ck_assert_int_eq(mt_json_i64(t, "frees"), 10);
	said = strstr(o.err, " idle probes registered");
	/* The perf path, asked for or the kernel's (6.1 says so): no uprobe_multi, no warmer. */
	if (_i == 1 || strstr(o.err, "one link per probe")) {
		ck_assert_msg(!said, "idle probes on the perf path: %s", o.err);
	} else {
		ck_assert_msg(said, "no warmer: %s", o.err);
		for (line = said; line > o.err && line[-1] != '\n'; line--)
			;
		ck_assert_int_ge(atoi(line + strlen("memtrack: ")), 1);
	}
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

START_TEST(bad_scope_is_refused)
{
	const char *argv[] = {MEMTRACK, "run", "--probe-scope=world", "--", "true", NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
	ck_assert_int_eq(o.code, 2);
	ck_assert_msg(strstr(o.err, "--probe-scope takes tree or system, not 'world'"), "%s",
		      o.err);
	mt_out_free(&o);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("treescope");
	TCase *tc = tcase_create("treescope");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, fork_child_counted, 0, 2);
	tcase_add_loop_test(tc, vfork_child_counted, 0, 2);
	tcase_add_loop_test(tc, vfork_exec_counted, 0, 2);
	tcase_add_loop_test(tc, non_leader_exec_counted, 0, 2);
	tcase_add_loop_test(tc, dlopen_in_child_counted, 0, 2);
	tcase_add_loop_test(tc, leader_exit_counted, 0, 2);
	tcase_add_loop_test(tc, idle_probes_only_with_uprobe_multi, 0, 2);
	tcase_add_test(tc, bad_scope_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
