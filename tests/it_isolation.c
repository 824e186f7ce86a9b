// SPDX-License-Identifier: GPL-2.0
/*
 * Per-process probes (--probe-scope=tree, the default): while memtrack traces a command, a process
 * outside the traced tree that maps the same libc has no breakpoint in it (its code bytes, read
 * through /proc/PID/mem, are the file's), gdb there can break in malloc and finish out of it; and
 * the process shapes the kernel's pid filter must be taught (fork, vfork children running in the
 * parent's memory, exec, exec from a non-leader thread, dlopen in a child, a leader that exits
 * before its threads) are counted exactly (fixtures/README.md, scope_cases).
 *
 * Other memtrack runs on the same machine with --probe-scope=system (or an older memtrack) put
 * breakpoints everywhere: a difference that outlives the run under test is theirs, and the check
 * is made again.
 *
 * Each case runs twice: with the links this kernel allows, and with one perf link per probe and
 * process (MT_NO_UPROBE_MULTI, test build only), the way of kernels without uprobe_multi (6.1),
 * whose filters differ (docs/PROBES.md). On 6.1 both runs take that way.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/mtrun.h"
#include "lib/suite.h"

#define ATTEMPTS	60
#define MEMTRACK_FAULTS MT_BUILD_DIR "/tests/memtrack-faults"

/*
 * The memtrack the loop tests run: _i 0 links as this kernel allows (uprobe_multi here), _i 1 the
 * way of kernels without uprobe_multi (6.1): one perf link per probe and process
 * (MT_NO_UPROBE_MULTI, honoured by the test build only).
 */
static const char *memtrack = MEMTRACK;

static void use_path(int i)
{
	if (i == 0)
		return;
	memtrack = MEMTRACK_FAULTS;
	setenv("MT_NO_UPROBE_MULTI", "1", 1);
}

/* libc's executable mapping in pid: address range and file offset; false when it has none. */
static bool libc_text(pid_t pid, unsigned long *start, unsigned long *end, unsigned long *off,
		      char *path, size_t len)
{
	char maps[64], line[4352], perms[8], file[4096];
	bool found = false;
	FILE *f;

	snprintf(maps, sizeof(maps), "/proc/%d/maps", pid);
	f = fopen(maps, "re");
	if (!f)
		return false;
	while (!found && fgets(line, sizeof(line), f)) {
		file[0] = '\0';
		if (sscanf(line, "%lx-%lx %7s %lx %*s %*s %4095s", start, end, perms, off, file) <
		    4)
			continue;
		found = perms[2] == 'x' && strstr(file, "/libc.so.6");
	}
	fclose(f);
	if (found)
		snprintf(path, len, "%s", file);
	return found;
}

/* Whether pid's libc code differs from the file's: 1, 0, or -1 when it cannot be read. */
static int libc_code_differs(pid_t pid)
{
	unsigned long start, end, off;
	char path[4096], mem[64];
	char *a = NULL, *b = NULL;
	int fm = -1, ff = -1, r = -1;
	size_t n;

	if (!libc_text(pid, &start, &end, &off, path, sizeof(path)))
		return -1;
	n = end - start;
	a = malloc(n);
	b = malloc(n);
	snprintf(mem, sizeof(mem), "/proc/%d/mem", pid);
	fm = open(mem, O_RDONLY | O_CLOEXEC);
	ff = open(path, O_RDONLY | O_CLOEXEC);
	if (a && b && fm >= 0 && ff >= 0 && pread(fm, a, n, start) == (ssize_t)n &&
	    pread(ff, b, n, off) == (ssize_t)n)
		r = memcmp(a, b, n) != 0;
	if (fm >= 0)
		close(fm);
	if (ff >= 0)
		close(ff);
	free(a);
	free(b);
	return r;
}

/* An untraced sleeper that has mapped libc. */
static pid_t start_untraced(void)
{
	unsigned long s, e, o;
	char path[4096];
	pid_t pid = fork();

	if (pid == 0) {
		execl(FIXTURE("sleeper"), "sleeper", "60", (char *)NULL);
		_exit(127);
	}
	ck_assert_int_gt(pid, 0);
	while (!libc_text(pid, &s, &e, &o, path, sizeof(path)))
		usleep(1000);
	return pid;
}

static void end(pid_t pid)
{
	kill(pid, SIGKILL);
	waitpid(pid, NULL, 0);
}

/* Whether, with no memtrack of ours running, a new process has breakpoints in libc. */
static bool foreign_breakpoints(void)
{
	pid_t pid = start_untraced();
	int differs = libc_code_differs(pid);

	end(pid);
	return differs == 1;
}

/* A run disturbed for a minute by another memtrack: said, and not held against this one. */
static void disturbed(const char *test)
{
	fprintf(stderr, "%s: another memtrack keeps breakpoints in every process: not checked\n",
		test);
}

/*
 * The shell prints its pid before it execs the sleeper: wait until the sleeper sleeps, so that its
 * libc is mapped and its probes are in place (its map stop is over) when its code is read.
 */
static void wait_sleeping(pid_t pid)
{
	char path[64], buf[64];

	snprintf(path, sizeof(path), "/proc/%d/syscall", pid);
	for (int i = 0; i < 30000; i++) {
		FILE *f = fopen(path, "re");
		bool sleeping = false;

		if (f) {
			sleeping = fgets(buf, sizeof(buf), f) &&
				   (!strncmp(buf, "230 ", 4) || !strncmp(buf, "35 ", 3));
			fclose(f);
		}
		if (sleeping)
			return;
		usleep(1000);
	}
	ck_abort_msg("process %d never slept in nanosleep", pid);
}

/*
 * memtrack run --probe-scope=SCOPE -- sh -c 'echo $$; sleep 60': returns memtrack's pid once the
 * shell, probed, has printed its pid (*traced).
 */
static pid_t start_traced(const char *scope, pid_t *traced)
{
	char opt[64], line[32] = "";
	const char *argv[] = {
	    memtrack, "run", "-q", "-o", "/dev/null",
	    opt,      "--",  "sh", "-c", "echo $$; exec " FIXTURE("sleeper") " 60",
	    NULL};
	ssize_t n, got = 0;
	int fd;
	pid_t pid;

	snprintf(opt, sizeof(opt), "--probe-scope=%s", scope);
	pid = mt_spawn_piped(argv, &fd);
	ck_assert_int_gt(pid, 0);
	while (got < (ssize_t)sizeof(line) - 1 && !strchr(line, '\n')) {
		n = read(fd, line + got, sizeof(line) - 1 - got);
		if (n <= 0)
			break;
		got += n;
		line[got] = '\0';
	}
	close(fd);
	*traced = atoi(line);
	ck_assert_msg(*traced > 0, "the traced shell said '%s'", line);
	wait_sleeping(*traced);
	return pid;
}

static void stop_traced(pid_t memtrack)
{
	int status;

	kill(memtrack, SIGTERM);
	ck_assert_int_eq(waitpid(memtrack, &status, 0), memtrack);
}

/*
 * Run the scenario until it is not disturbed by another memtrack: whether the untraced process's
 * libc differed from the file while memtrack ran with scope, and whether the traced one's did.
 */
static bool observe(const char *scope, bool *untraced_differs, bool *traced_differs)
{
	for (int attempt = 0; attempt < ATTEMPTS; attempt++) {
		pid_t untraced = start_untraced(), traced, memtrack;
		int during, traced_during, after;

		memtrack = start_traced(scope, &traced);
		during = libc_code_differs(untraced);
		traced_during = libc_code_differs(traced);
		stop_traced(memtrack);
		after = libc_code_differs(untraced);
		end(untraced);
		ck_assert_int_ge(during, 0);
		ck_assert_int_ge(traced_during, 0);
		if (after == 1) {
			/* Breakpoints that outlive our run are another memtrack's: try again. */
			sleep(1);
			continue;
		}
		*untraced_differs = during;
		*traced_differs = traced_during;
		return true;
	}
	return false;
}

START_TEST(untraced_process_has_no_breakpoint)
{
	bool untraced, traced;

	use_path(_i);
	if (!observe("tree", &untraced, &traced))
		return disturbed(__func__);
	ck_assert_msg(!untraced, "a process outside the tree has a breakpoint in libc");
	ck_assert_msg(traced, "the traced shell has no breakpoint in libc");
}
END_TEST

/* The check above can fail: with the old scheme the untraced process has the breakpoints. */
START_TEST(system_scope_probes_every_process)
{
	bool untraced, traced;

	use_path(_i);
	if (!observe("system", &untraced, &traced))
		return disturbed(__func__);
	ck_assert(untraced);
	ck_assert(traced);
}
END_TEST

/* gdb in an untraced process stops at malloc and finishes out of it while memtrack runs. */
START_TEST(gdb_breaks_in_malloc_elsewhere)
{
	/* From main on: ld.so's own malloc, used while loading, is not the one of interest. */
	const char *gdb[] = {"gdb",
			     "-batch",
			     "-nx",
			     "-ex",
			     "break main",
			     "-ex",
			     "run",
			     "-ex",
			     "break malloc",
			     "-ex",
			     "continue",
			     "-ex",
			     "finish",
			     "-ex",
			     "kill",
			     "--args",
			     FIXTURE("scope_cases"),
			     "alloc",
			     "3",
			     NULL};
	struct mt_out o = {0};
	pid_t memtrack, traced;
	bool ok = false;

	for (int attempt = 0; attempt < 10; attempt++) {
		mt_out_free(&o);
		memtrack = start_traced("tree", &traced);
		ck_assert_int_eq(mt_run(gdb, NULL, NULL, 60, &o), 0);
		stop_traced(memtrack);
		ok = strstr(o.out, "libc_malloc (bytes=bytes@entry=48)") &&
		     strstr(o.out, "Value returned is");
		if (ok)
			break;
		sleep(1);
	}
	if (!ok && foreign_breakpoints()) {
		mt_out_free(&o);
		return disturbed(__func__);
	}
	ck_assert_msg(ok, "gdb said: %s%s", o.out, o.err);
	mt_out_free(&o);
}
END_TEST

static int64_t num(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no key %s", key);
	return json_object_get_int64(v);
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
	ck_assert_int_eq(num(t, "allocations"), allocs);
	ck_assert_int_eq(num(t, "frees"), frees);
	ck_assert_int_eq(num(t, "bytes_allocated"), bytes);
	ck_assert_int_eq(num(t, "dropped"), 0);
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

START_TEST(bad_scope_is_refused)
{
	const char *argv[] = {MEMTRACK, "run", "--probe-scope=world", "--", "true", NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
	ck_assert_int_eq(o.code, 2);
	ck_assert_msg(strstr(o.err, "invalid --probe-scope 'world'"), "%s", o.err);
	mt_out_free(&o);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("isolation");
	TCase *tc = tcase_create("isolation");
	TCase *tools = tcase_create("tools");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, untraced_process_has_no_breakpoint, 0, 2);
	tcase_add_loop_test(tc, system_scope_probes_every_process, 0, 2);
	tcase_add_loop_test(tc, fork_child_counted, 0, 2);
	tcase_add_loop_test(tc, vfork_child_counted, 0, 2);
	tcase_add_loop_test(tc, vfork_exec_counted, 0, 2);
	tcase_add_loop_test(tc, non_leader_exec_counted, 0, 2);
	tcase_add_loop_test(tc, dlopen_in_child_counted, 0, 2);
	tcase_add_loop_test(tc, leader_exit_counted, 0, 2);
	tcase_add_test(tc, bad_scope_is_refused);
	suite_add_tcase(s, tc);
	tcase_set_tags(tools, "tools");
	tcase_set_timeout(tools, 300);
	mt_tcase_add_tool_test(tools, gdb_breaks_in_malloc_elsewhere, "gdb");
	suite_add_tcase(s, tools);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
