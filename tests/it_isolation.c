// SPDX-License-Identifier: GPL-2.0
/*
 * Per-process probes (--probe-scope=tree, the default): while memtrack traces a command, a process
 * outside the traced tree that maps the same libc has no breakpoint in it (its code bytes, read
 * through /proc/PID/mem, are the file's), and gdb there can break in malloc and finish out of it.
 * That the tree's own processes are counted exactly is it_treescope's: this suite runs alone
 * (tools/run-tests), since its --probe-scope=system run puts breakpoints into every process.
 *
 * Other memtrack runs on the same machine with --probe-scope=system (or an older memtrack) put
 * breakpoints everywhere: a difference that outlives the run under test is theirs, and the check
 * is made again.
 *
 * Each case runs twice: with the links this kernel allows, and with one perf link per probe and
 * process (mt_memtrack_link_path), the way of kernels without uprobe_multi (6.1), whose filters
 * differ (docs/PROBES.md). On 6.1 both runs take that way.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/mtrun.h"
#include "lib/suite.h"

#define ATTEMPTS 60

/* The memtrack the loop tests run (mt_memtrack_link_path). */
static const char *memtrack = MEMTRACK;

static void use_path(int i)
{
	memtrack = mt_memtrack_link_path(i);
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
 * Whether pid's libc still differs once memtrack's run is over. Its links outlive it by a moment:
 * the closer (src/tracker/tracker_closer.c) detaches them after memtrack has exited, a grace
 * period each, so a difference is looked at again for up to 5 s before it is called another
 * memtrack's.
 */
static int differs_after_run(pid_t pid)
{
	int differs = libc_code_differs(pid);

	for (int i = 0; i < 500 && differs == 1; i++) {
		usleep(10000);
		differs = libc_code_differs(pid);
	}
	return differs;
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
		after = differs_after_run(untraced);
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

static Suite *suite(void)
{
	Suite *s = suite_create("isolation");
	TCase *tc = tcase_create("isolation");
	TCase *tools = tcase_create("tools");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, untraced_process_has_no_breakpoint, 0, 2);
	tcase_add_loop_test(tc, system_scope_probes_every_process, 0, 2);
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
