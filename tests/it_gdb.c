// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack as gdb's remote target (--gdb, docs/GDB.md), driven by the real gdb in batch mode the
 * way a person runs it: `target remote | memtrack run --gdb=- -- CMD`, or over TCP with the
 * command memtrack prints. Each session asserts what gdb showed (breakpoints hit in the program
 * and in a library dlopen'd after gdb attached, backtraces through libc, finish, next, threads,
 * the real first bytes of a probed malloc), memtrack's exit status (the command's, as in a plain
 * run), and the exact allocation counts of the artifact (fixtures/README.md). lldb-14, in batch
 * mode over memtrack's default Unix socket, is driven the same way.
 */
#include <check.h>
#include <fcntl.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <json-c/json.h>

#include "lib/gdbsession.h"
#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define LIBC "/lib/x86_64-linux-gnu/libc.so.6"

/*
 * The program's main, then a function of a library it dlopens after gdb attached (a pending
 * breakpoint), whose allocator (mimalloc) is loaded then too: bt, finish, continue to the end.
 * Every allocation is counted, the late allocator's included.
 */
START_TEST(break_in_program_and_in_a_dlopened_allocator_library)
{
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_mimalloc.so"), "100", NULL};
	const char *cmds[] = {"break main", "continue", "break plugin_run",
			      "continue",   "bt",	"info sharedlibrary",
			      "finish",	    "continue", NULL};
	int64_t p = strlen(FIXTURE("plugin_mimalloc.so"));
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Breakpoint 1, main (");
	SAID(&s, "Breakpoint 2, plugin_run (");
	SAID(&s, "#1  ");
	SAID(&s, " in main (");
	SAID(&s, "libmimalloc.so");
	SAID(&s, "Value returned is $1 = 0");
	SAID(&s, "exited normally");
	ck_assert_int_eq(s.rc, 0);
	ck_assert_ptr_nonnull(gdb_file_named(&s, "libmimalloc.so"));
	gdb_assert_counts(gdb_file_named(&s, "libmimalloc.so"), "mimalloc", 100, 100, 333300);
	gdb_assert_counts(gdb_totals(&s), "total", 111, 101, 5194 + 3 * p + 333300);
	gdb_session_free(&s);
}
END_TEST

/* The first bytes of malloc in libc's file, as gdb reads them without a process. */
static char *file_bytes_of_malloc(void)
{
	const char *argv[] = {"gdb", "-nx", "-batch", LIBC, "-ex", "x/8xb malloc", NULL};
	struct mt_out o;
	char *colon, *copy;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	colon = strchr(o.out, ':');
	ck_assert_msg(colon, "gdb on libc: %s %s", o.out, o.err);
	copy = strndup(colon + 1, strcspn(colon + 1, "\n"));
	mt_out_free(&o);
	return copy;
}

/*
 * memtrack's uprobe on malloc puts an int3 into the process: gdb sees the file's bytes there,
 * and its own breakpoint on malloc stops there (a debug register where the uprobe is). The
 * backtrace goes from libc's malloc to the program; every call is still counted once.
 */
START_TEST(malloc_shows_its_real_bytes_and_breaks)
{
	const char *cmd[] = {FIXTURE("leaks"), NULL};
	const char *cmds[] = {"break main", "continue", "x/8xb malloc", "break malloc", "continue",
			      "bt",	    "delete",	"finish",	"continue",	NULL};
	struct session s = {0};
	char *want = file_bytes_of_malloc(), *at;

	gdb_session(&s, NULL, cmd, cmds);
	/* "<malloc>:", or "<__GI___libc_malloc>:" with libc's debugging information. */
	at = strstr(s.o.out, "malloc>:");
	ck_assert_msg(at, "no x/8xb malloc in:\n%s", s.o.out);
	at += strlen("malloc>:");
	ck_assert_msg(!strncmp(at, want, strlen(want)),
		      "malloc's bytes under memtrack:%.60s, in the file:%s", at, want);
	SAID(&s, "\nBreakpoint 2");
	SAID(&s, "malloc");
	SAID(&s, " in main (");
	/* finish from malloc's entry: its return address is still the program's. */
	SAID(&s, "Value returned is $1 = (void *) 0x");
	SAID(&s, "exited normally");
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "leaks", 100, 60, 40400);
	free(want);
	gdb_session_free(&s);
}
END_TEST

/* next and step move by source lines of the program; the exit code comes through. */
START_TEST(next_step_and_exit_code)
{
	const char *cmd[] = {FIXTURE("churn"), "100", NULL};
	const char *cmds[] = {"break main", "continue", "next", "next",
			      "info line",  "continue", NULL};
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Breakpoint 1, main (");
	SAID(&s, "churn.c");
	SAID(&s, "exited normally");
	ck_assert_int_eq(s.rc, 0);
	/* churn N: block i of 16 * (1 + i % 256) bytes. */
	gdb_assert_counts(gdb_totals(&s), "churn", 100, 100, 16 * 5050);
	gdb_session_free(&s);
}
END_TEST

/*
 * In a library dlopen'd after attach: next over malloc and free (their uprobes fire as gdb steps
 * over the calls: counted once each), step, finish back into the program.
 */
START_TEST(next_over_allocator_calls_in_a_plugin)
{
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_plain.so"), "3", NULL};
	const char *cmds[] = {"break plugin_run", "continue", "next", "next", "step", "bt",
			      "finish",		  "continue", NULL};
	int64_t p = strlen(FIXTURE("plugin_plain.so"));
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Breakpoint 1, plugin_run (n=3) at fixtures/plugins/plugin_plain.c:11");
	SAID(&s, "\n12\t\t\tchar *p = malloc(777);");
	SAID(&s, "\n14\t\t\tif (!p)");
	SAID(&s, "\n16\t\t\t*(volatile char *)p = (char)i;");
	SAID(&s, "#0  plugin_run (n=3) at fixtures/plugins/plugin_plain.c:16");
	SAID(&s, "Value returned is $1 = 0");
	SAID(&s, "exited normally");
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "dlopen_plugin plain 3", 7 + 3, 1 + 3,
			  3667 + 3 * p + 3 * 777);
	gdb_session_free(&s);
}
END_TEST

/* A signal is gdb's stop; passed on, it kills the program: memtrack's status is 128 + SIGSEGV. */
START_TEST(signals_stop_and_pass)
{
	const char *cmd[] = {FIXTURE("die_signal"), "11", NULL};
	const char *cmds[] = {"continue", "bt", "continue", NULL};
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Program received signal SIGSEGV");
	SAID(&s, " in main (");
	SAID(&s, "Program terminated with signal SIGSEGV");
	ck_assert_int_eq(s.rc, 128 + 11);
	gdb_session_free(&s);
}
END_TEST

/* All-stop over every thread: the 4 workers are listed and unwound, each parked where it was. */
START_TEST(threads_listed_and_unwound)
{
	const char *cmd[] = {FIXTURE("stress"), "threads", "4", NULL};
	const char *cmds[] = {"break stress.c:46",   "continue", "info threads",
			      "thread apply all bt", "continue", NULL};
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Breakpoint 1, threads (");
	/* info threads: the main thread (current) and the 4 workers, no more. */
	SAID(&s, "\n* 1    Thread ");
	SAID(&s, "\n  2    Thread ");
	SAID(&s, "\n  5    Thread ");
	ck_assert_msg(!strstr(s.o.out, "\n  6    Thread "), "%s", s.o.out);
	/*
	 * Each worker's stack ends in clone3, where it starts: it is there still, or waits at the
	 * barrier (at_barrier, pthread_barrier_wait): which, depends on timing.
	 */
	ck_assert_msg(mt_count_lines(s.o.out, "#0  clone3 ()") +
			      mt_count_lines(s.o.out, " in clone3 ()") ==
			  4,
		      "%s", s.o.out);
	SAID(&s, "exited normally");
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "stress threads 4", 4, 0, 4 * 272);
	gdb_session_free(&s);
}
END_TEST

/* kill ends the program as SIGKILL would: memtrack's status says so, the run is recorded. */
START_TEST(kill_ends_it)
{
	const char *cmd[] = {FIXTURE("leaks"), NULL};
	const char *cmds[] = {"break main", "continue", "kill", NULL};
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Breakpoint 1, main (");
	ck_assert_int_eq(s.rc, 128 + 9);
	gdb_assert_counts(gdb_totals(&s), "leaks killed at main", 0, 0, 0);
	gdb_session_free(&s);
}
END_TEST

/* detach lets the program run on under memtrack alone: its whole run is recorded. */
START_TEST(detach_lets_it_run_on)
{
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_plain.so"), "100", NULL};
	const char *cmds[] = {"break main", "continue", "detach", NULL};
	int64_t p = strlen(FIXTURE("plugin_plain.so"));
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Breakpoint 1, main (");
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "dlopen_plugin plain", 107, 101, 3667 + 3 * p + 77700);
	gdb_session_free(&s);
}
END_TEST

/* gdb going away without kill or detach (disconnect: the pipe closes) is taken as a detach. */
START_TEST(disconnect_lets_it_run_on)
{
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_plain.so"), "100", NULL};
	const char *cmds[] = {"break plugin_run", "continue", "disconnect", NULL};
	int64_t p = strlen(FIXTURE("plugin_plain.so"));
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Breakpoint 1, plugin_run (");
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "dlopen_plugin plain", 107, 101, 3667 + 3 * p + 77700);
	gdb_session_free(&s);
}
END_TEST

/* The exit status of the program is memtrack's, through gdb too. */
START_TEST(exit_status_is_the_commands)
{
	const char *cmd[] = {FIXTURE("exit_code"), "7", NULL};
	const char *cmds[] = {"continue", NULL};
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "exited with code 07");
	ck_assert_int_eq(s.rc, 7);
	gdb_session_free(&s);
}
END_TEST

/*
 * Over TCP, as the help says, with a stop point choosing the process and the moment: right after
 * dlopen mapped the allocator. memtrack prints the gdb command to use (port 0: the kernel picks
 * one), the test runs exactly that command; the allocator's calls are all recorded.
 */
START_TEST(over_tcp_at_a_stop_point_with_the_printed_command)
{
	char dir[64], script[2048], art[128];
	const char *argv[] = {"sh", "-c", script, NULL};
	const char *rep[] = {MEMTRACK, "report", "--json", art, NULL};
	int64_t p = strlen(FIXTURE("plugin_mimalloc.so"));
	struct json_object *report;
	struct session s = {0};
	struct mt_out r;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(script, sizeof(script),
		 "%s run -q -o %s --gdb=127.0.0.1:0 --stop-at 'map:libmimalloc*' -- %s %s 100 "
		 "2>%s/err & pid=$!\n"
		 "until grep -q 'Connect with' %s/err || ! kill -0 $pid; do sleep 0.05; done\n"
		 "cmd=$(sed -n \"s/.*Connect with: gdb -ex '\\([^']*\\)'.*/\\1/p\" %s/err)\n"
		 "gdb -nx -batch -ex \"$cmd\" -ex bt -ex continue\n"
		 "wait $pid; echo rc=$?; cat %s/err\n",
		 MEMTRACK, art, FIXTURE("dlopen_plugin"), FIXTURE("plugin_mimalloc.so"), dir, dir,
		 dir, dir);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &s.o), 0);
	SAID(&s, "memtrack waits for gdb on 127.0.0.1:");
	/* TCP only when asked for, and said to be open to anyone. */
	SAID(&s, "memtrack: warning: anyone on this machine can connect to 127.0.0.1:");
	SAID(&s, "is stopped right after mapping /usr/lib/x86_64-linux-gnu/libmimalloc.so");
	SAID(&s, "_dl_map_object");
	SAID(&s, "exited normally");
	SAID(&s, "rc=0\n");
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &r), 0);
	report = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(report);
	s.report = report;
	gdb_assert_counts(gdb_totals(&s), "total", 111, 101, 5194 + 3 * p + 333300);
	memcpy(s.dir, dir, sizeof(dir));
	mt_out_free(&r);
	gdb_session_free(&s);
}
END_TEST

/*
 * lldb connects, continues to the end and sees the program's exit status, which is memtrack's;
 * every allocation is recorded.
 */
START_TEST(lldb_continues_to_the_exit_status)
{
	const char *cmd[] = {FIXTURE("exit_code"), "7", NULL};
	const char *cmds[] = {"process continue", NULL};
	struct session s = {0};

	lldb_session(&s, cmd, cmds);
	SAID(&s, "stop reason = signal SIGTRAP");
	SAID(&s, "exited with status = 7");
	ck_assert_int_eq(s.rc, 7);
	gdb_assert_counts(gdb_totals(&s), "exit_code", 0, 0, 0);
	gdb_session_free(&s);
}
END_TEST

/*
 * lldb's breakpoint by name in a library dlopen'd after it attached (pending until then): lldb
 * finds the loader through qShlibInfoAddr and its rendezvous breakpoint, stops in plugin_run,
 * unwinds to main through the program, continues to the end; the counts are exact.
 */
START_TEST(lldb_breaks_by_name_in_a_dlopened_library)
{
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_plain.so"), "100", NULL};
	const char *cmds[] = {"breakpoint set -n plugin_run", "process continue", "bt",
			      "process continue", NULL};
	int64_t p = strlen(FIXTURE("plugin_plain.so"));
	struct session s = {0};

	lldb_session(&s, cmd, cmds);
	SAID(&s, "stop reason = breakpoint 1.1");
	SAID(&s, "plugin_plain.so`plugin_run(n=100) at plugin_plain.c:11");
	SAID(&s, "dlopen_plugin`main(argc=3");
	SAID(&s, "exited with status = 0");
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "dlopen_plugin plain", 107, 101, 3667 + 3 * p + 77700);
	gdb_session_free(&s);
}
END_TEST

START_TEST(bad_addresses_are_refused)
{
	const char *bad[] = {"nonsense", "1.2.3.4", ":1", "host:", "127.0.0.1:99999", NULL};
	const char *cant[] = {
	    MEMTRACK, "run", "-q", "--no-track", "--gdb=192.0.2.1:1", "--", FIXTURE("exit_code"),
	    NULL};
	struct mt_out o;

	for (size_t i = 0; bad[i]; i++) {
		char opt[64];
		const char *argv[] = {
		    MEMTRACK, "run", "-q", "--no-track", opt, "--", FIXTURE("exit_code"), NULL};

		snprintf(opt, sizeof(opt), "--gdb=%s", bad[i]);
		ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
		ck_assert_msg(o.code == 2, "--gdb=%s: %d %s", bad[i], o.code, o.err);
		ck_assert_int_eq(mt_count_lines(o.err, "invalid --gdb"), 1);
		mt_out_free(&o);
	}
	ck_assert_int_eq(mt_run(cant, NULL, NULL, 30, &o), 0);
	ck_assert_int_eq(o.code, 1);
	ck_assert_int_eq(mt_count_lines(o.err, "memtrack: cannot serve gdb on 192.0.2.1:1"), 1);
	mt_out_free(&o);
}
END_TEST

/* The socket path memtrack printed in text ("Connect with: gdb -ex 'target remote PATH'"). */
static void printed_socket(const char *text, char *path, size_t len)
{
	const char *p = strstr(text, "target remote ");
	size_t n = p ? strcspn(p + 14, "'") : 0;

	ck_assert_msg(p && n < len, "no socket printed: %s", text);
	memcpy(path, p + 14, n);
	path[n] = '\0';
}

/* The run's artifact: read to its end, nothing cut. */
static void assert_artifact_whole(const char *art)
{
	const char *rep[] = {MEMTRACK, "report", "--json", art, NULL};
	struct mt_out r;

	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &r), 0);
	ck_assert_msg(r.code == 0, "report: %s", r.err);
	ck_assert_ptr_nonnull(strstr(r.out, "\"truncated\":false"));
	mt_out_free(&r);
}

/*
 * memtrack waits for gdb (the command parked at its exec) in a session of its own, as a person
 * runs it; a termination signal, to memtrack or to its group as timeout, Ctrl-C and a closed
 * terminal send them, ends that wait at once: the command gets the signal as in any run
 * (forwarded, or its own copy from the group), memtrack exits like it within 1 s, says gdb never
 * connected, takes its socket away and leaves a whole artifact. Before, the signals were taken
 * and the command stayed parked: only SIGKILL ended memtrack.
 */
START_TEST(termination_signals_end_the_wait_for_gdb)
{
	static const struct {
		int sig;
		bool group;
	} sends[] = {{SIGTERM, false}, {SIGTERM, true}, {SIGINT, true}, {SIGHUP, true}};
	char dir[64], art[128], out[128], sock[256];
	const char *argv[] = {MEMTRACK, "run", "-o", art, "--gdb", "--", FIXTURE("exit_code"),
			      "0",	NULL};
	int status;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	for (size_t i = 0; i < sizeof(sends) / sizeof(sends[0]); i++) {
		pid_t pid;
		char *text;
		long ms;

		unlink(out); /* the last run's text is not this one's */
		pid = mt_spawn_session(argv, out);
		text = mt_wait_for_text(out, "Connect with", 60000);

		ck_assert_msg(text, "memtrack did not wait for gdb");
		printed_socket(text, sock, sizeof(sock));
		free(text);
		ck_assert_int_eq(kill(sends[i].group ? -pid : pid, sends[i].sig), 0);
		ms = mt_wait_ms(pid, 1000, &status);
		text = mt_slurp(out);
		ck_assert_msg(ms >= 0, "signal %d%s: memtrack still waits after 1 s: %s",
			      sends[i].sig, sends[i].group ? " to the group" : "", text);
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sends[i].sig,
			      "signal %d: status %#x: %s", sends[i].sig, status, text);
		ck_assert_int_eq(mt_count_lines(text, "memtrack: gdb never connected to "), 1);
		ck_assert_int_ne(access(sock, F_OK), 0);
		free(text);
		assert_artifact_whole(art);
	}
	unlink(art);
	unlink(out);
	rmdir(dir);
}
END_TEST

/* gdb -nx -q with its commands coming from a pipe (*in) and what it says going to path. */
static pid_t start_gdb(const char *sock, const char *path, int *in)
{
	char target[300];
	const char *argv[] = {"gdb", "-nx", "-q", "-ex", target, "-ex", "echo connected\\n", NULL};
	pid_t pid;

	snprintf(target, sizeof(target), "target remote %s", sock);
	pid = mt_spawn_fed(argv, path, in);
	ck_assert_int_gt(pid, 0);
	return pid;
}

/*
 * gdb connected, the command stopped for it, gdb idle at its prompt: a SIGTERM to memtrack's
 * group ends gdb's session (gdb hears the connection close), the command gets the signal and
 * memtrack exits like it within 1 s, its summary saying why the session ended. Before, the
 * command stayed parked for gdb, even through memtrack's SIGKILL of the tree.
 */
START_TEST(termination_signal_ends_a_connected_session)
{
	char dir[64], art[128], out[128], said[128], sock[256];
	const char *argv[] = {MEMTRACK, "run", "-o", art, "--gdb", "--", FIXTURE("exit_code"),
			      "0",	NULL};
	int status, in;
	pid_t pid, gdb;
	char *text;
	long ms;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(said, sizeof(said), "%s/gdb", dir);
	pid = mt_spawn_session(argv, out);
	text = mt_wait_for_text(out, "Connect with", 60000);
	ck_assert_msg(text, "memtrack did not wait for gdb");
	printed_socket(text, sock, sizeof(sock));
	free(text);
	gdb = start_gdb(sock, said, &in);
	text = mt_wait_for_text(said, "connected", 60000);
	ck_assert_msg(text, "gdb did not connect");
	free(text);
	ck_assert_int_eq(kill(-pid, SIGTERM), 0);
	ms = mt_wait_ms(pid, 1000, &status);
	text = mt_slurp(out);
	ck_assert_msg(ms >= 0, "memtrack still serves gdb 1 s after SIGTERM: %s", text);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 128 + SIGTERM, "status %#x: %s",
		      status, text);
	ck_assert_msg(strstr(text, "until memtrack was asked to end"), "%s", text);
	free(text);
	close(in); /* gdb reads the end of its commands and quits */
	ck_assert_int_ge(mt_wait_ms(gdb, 30000, &status), 0);
	assert_artifact_whole(art);
	unlink(art);
	unlink(out);
	unlink(said);
	rmdir(dir);
}
END_TEST

/*
 * A stop point three processes match (--stop-at exec:GLOB, three children of sh exec the same
 * program at once): the first is served to gdb, the other two run on under memtrack. gdb takes
 * its process to the end, the tree ends by itself, memtrack says one process waited for gdb and
 * nothing of a point never reached. Before, every match was stopped for gdb, the last one served,
 * and the others stayed stopped until memtrack was killed.
 */
START_TEST(stop_point_with_three_matches_serves_the_first)
{
	char dir[64], art[128], out[128], sock[256], script[512], target[300];
	const char *argv[] = {MEMTRACK,		"run", "-o", art,  "--gdb", "--stop-at",
			      "exec:exit_code", "--",  "sh", "-c", script,  NULL};
	const char *gdb[] = {"gdb", "-nx",  "-batch", "-ex",	  "set confirm off",
			     "-ex", target, "-ex",    "continue", NULL};
	struct mt_out o;
	int status;
	pid_t pid;
	char *text;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(script, sizeof(script), "for i in 1 2 3; do %s $i & done; wait",
		 FIXTURE("exit_code"));
	pid = mt_spawn_session(argv, out);
	text = mt_wait_for_text(out, "Connect with", 60000);
	ck_assert_msg(text, "memtrack did not wait for gdb");
	printed_socket(text, sock, sizeof(sock));
	free(text);
	snprintf(target, sizeof(target), "target remote %s", sock);
	ck_assert_int_eq(mt_run(gdb, NULL, NULL, 60, &o), 0);
	ck_assert_msg(strstr(o.out, "exited with code 0"), "gdb said: %s%s", o.out, o.err);
	mt_out_free(&o);
	ck_assert_msg(mt_wait_ms(pid, 30000, &status) >= 0, "the tree did not end");
	text = mt_slurp(out);
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 0, "status %#x: %s", status,
		      text);
	ck_assert_int_eq(mt_count_lines(text, "is stopped right after its exec of"), 1);
	ck_assert_int_eq(mt_count_lines(text, "never reached"), 0);
	ck_assert_msg(strstr(text, "exited with 0; 4 processes"), "%s", text);
	ck_assert_msg(strstr(text, "until it ended, its allocations recorded throughout"), "%s",
		      text);
	free(text);
	assert_artifact_whole(art);
	unlink(art);
	unlink(out);
	rmdir(dir);
}
END_TEST

static Suite *gdb_suite(void)
{
	Suite *s = suite_create("gdb");
	TCase *tc = tcase_create("gdb");

	tcase_set_timeout(tc, 300);
	mt_tcase_add_tool_test(tc, break_in_program_and_in_a_dlopened_allocator_library, "gdb");
	mt_tcase_add_tool_test(tc, malloc_shows_its_real_bytes_and_breaks, "gdb");
	mt_tcase_add_tool_test(tc, next_step_and_exit_code, "gdb");
	mt_tcase_add_tool_test(tc, next_over_allocator_calls_in_a_plugin, "gdb");
	mt_tcase_add_tool_test(tc, signals_stop_and_pass, "gdb");
	mt_tcase_add_tool_test(tc, threads_listed_and_unwound, "gdb");
	mt_tcase_add_tool_test(tc, kill_ends_it, "gdb");
	mt_tcase_add_tool_test(tc, detach_lets_it_run_on, "gdb");
	mt_tcase_add_tool_test(tc, disconnect_lets_it_run_on, "gdb");
	mt_tcase_add_tool_test(tc, exit_status_is_the_commands, "gdb");
	mt_tcase_add_tool_test(tc, over_tcp_at_a_stop_point_with_the_printed_command, "gdb");
	mt_tcase_add_tool_test(tc, lldb_continues_to_the_exit_status, "gdb lldb-14");
	mt_tcase_add_tool_test(tc, lldb_breaks_by_name_in_a_dlopened_library, "gdb lldb-14");
	tcase_add_test(tc, bad_addresses_are_refused);
	tcase_add_test(tc, termination_signals_end_the_wait_for_gdb);
	mt_tcase_add_tool_test(tc, termination_signal_ends_a_connected_session, "gdb");
	mt_tcase_add_tool_test(tc, stop_point_with_three_matches_serves_the_first, "gdb");
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(gdb_suite());
}
