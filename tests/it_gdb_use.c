// SPDX-License-Identifier: GPL-2.0
/*
 * What a person does with gdb under memtrack (--gdb, docs/GDB.md), on gdb_target: `set var`,
 * `print f()` and `call f(2,3)` (memory writes with zero bytes in them: the binary X packet),
 * hardware watchpoints (the debug registers) and software ones, `info sharedlibrary`, the files
 * read from the target (vFile: no "does not support file transfer"), `signal SIGUSR1` after a
 * Ctrl-C typed in a pty, a death by a signal gdb passes, memtrack's summary over gdb's pipe;
 * who may connect to the default endpoint; lldb's breakpoints, `next` and expressions. Each
 * asserts what the debugger said, the program's output and status, and the artifact's counts.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "lib/gdbsession.h"
#include "lib/hostcaps.h"
#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/*
 * gdb_target's allocations: 3 pairs of 100 bytes and stdout's buffer (4096: a pipe's
 * st_blksize, the program's stdout being memtrack's stderr over gdb's pipe).
 */
static void assert_gdb_target_counts(struct session *s)
{
	gdb_assert_counts(gdb_totals(s), "gdb_target", 4, 3, 300 + 4096);
}

START_TEST(set_var_print_call_and_libraries)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	const char *cmds[] = {"break pairs",	    "continue",	     "set var level = 5",
			      "print answer()",	    "call add(2,3)", "set var wait_usr1 = 0",
			      "info sharedlibrary", "continue",	     NULL};
	struct session s = {.summary = true};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Breakpoint 1, pairs ()");
	SAID(&s, "$1 = 42");
	SAID(&s, "$2 = 5");
	SAID(&s, "target:/lib/x86_64-linux-gnu/libc.so.6");
	SAID(&s, "exited with code 05");
	ck_assert_msg(!strstr(s.o.err, "does not support file transfer"), "%s", s.o.err);
	/* The program's output (its stdout is memtrack's stderr over the pipe), its status. */
	ck_assert_msg(strstr(s.o.err, "level=5 usr1=0 watched=8 add=2"), "%s", s.o.err);
	ck_assert_int_eq(s.rc, 5);
	/* memtrack's summary reaches gdb's terminal, and says what happened. */
	ck_assert_msg(strstr(s.o.err, "gdb_target exited with 5; 1 process, 1 thread"), "%s",
		      s.o.err);
	ck_assert_msg(strstr(s.o.err, "was debugged with gdb (") &&
			  strstr(s.o.err, "until it ended"),
		      "%s", s.o.err);
	ck_assert_msg(!strstr(s.o.err, "handed to a debugger"), "%s", s.o.err);
	assert_gdb_target_counts(&s);
	gdb_session_free(&s);
}
END_TEST

/*
 * With the debug registers, which memtrack's stub sets as gdb would natively (PTRACE_POKEUSER):
 * needs a host whose registers fire, which hostcaps.h's probe proved first.
 */
START_TEST(hardware_watchpoint)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	/* From pairs(): both stores are after the breakpoint's instruction, which is stepped over.
	 */
	const char *cmds[] = {"break pairs",   "continue", "set var wait_usr1 = 0",
			      "watch watched", "continue", "continue",
			      "delete",	       "continue", NULL};
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Hardware watchpoint 2: watched");
	SAID(&s, "Old value = 0\nNew value = 7");
	SAID(&s, "Old value = 7\nNew value = 8");
	SAID(&s, "exited with code 01");
	ck_assert_int_eq(s.rc, 1);
	assert_gdb_target_counts(&s);
	gdb_session_free(&s);
}
END_TEST

/*
 * The probe answers both ways, and as plain gdb does without memtrack: armed on a variable its
 * child never writes, it says no; armed on the one it writes, it says yes exactly when gdb's own
 * hardware watchpoint on gdb_target fires here.
 */
START_TEST(hardware_watchpoint_probe_agrees_with_gdb)
{
	const char *argv[] = {
	    "gdb", "-batch",	    "-nx", "-ex",      "break pairs", "-ex",  "run",
	    "-ex", "watch watched", "-ex", "continue", "-ex",	      "kill", FIXTURE("gdb_target"),
	    NULL};
	char why[320], decoy[320];
	const char *missing = mt_hw_watchpoint_missing(false, why, sizeof(why));
	struct mt_out o;
	bool fired;

	ck_assert_ptr_nonnull(mt_hw_watchpoint_missing(true, decoy, sizeof(decoy)));
	ck_assert_msg(strstr(decoy, "did not fire"), "decoy probe: %s", decoy);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	/* gdb falls back to a software watchpoint where the kernel refuses the registers */
	ck_assert_msg(
	    strstr(o.out, missing ? "atchpoint 2: watched" : "Hardware watchpoint 2: watched"),
	    "gdb said: %s%s", o.out, o.err);
	fired =
	    strstr(o.out, "Hardware watchpoint 2: watched\n\nOld value = 0\nNew value = 7") != NULL;
	ck_assert_msg(fired == !missing, "probe: %s; plain gdb: %s", missing ? missing : "fires",
		      o.out);
	mt_out_free(&o);
}
END_TEST

/* Without debug registers: gdb single-steps and compares; the same two hits. */
START_TEST(software_watchpoint)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	const char *cmds[] = {"set can-use-hw-watchpoints 0",
			      "break gdb_target.c:53",
			      "continue",
			      "set var wait_usr1 = 0",
			      "watch watched",
			      "continue",
			      "continue",
			      "delete",
			      "continue",
			      NULL};
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "\nWatchpoint 2: watched");
	SAID(&s, "Old value = 0\nNew value = 7");
	SAID(&s, "Old value = 7\nNew value = 8");
	SAID(&s, "exited with code 01");
	ck_assert_int_eq(s.rc, 1);
	assert_gdb_target_counts(&s);
	gdb_session_free(&s);
}
END_TEST

/*
 * gdb in a pty, as typed: continue, Ctrl-C while the program sleeps, `signal SIGUSR1`: the
 * handler runs (usr1=1), the program ends its wait and exits 1. Each input waits for gdb's
 * answer to the one before in the typescript; Ctrl-C comes once gdb read libc from the target
 * (a Ctrl-C during a file transfer is gdb's, not the program's), again if it was not seen.
 */
START_TEST(signal_after_ctrl_c_in_a_pty)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	char shell[4096], log[128], file[128];
	const char *argv[] = {"sh", "-c", shell, NULL};
	struct session s = {0};
	char *typed;
	FILE *f;

	gdb_make_target(&s, NULL, cmd);
	snprintf(log, sizeof(log), "%s/typescript", s.dir);
	snprintf(file, sizeof(file), "%s/cmds", s.dir);
	f = fopen(file, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "set confirm off\nset remotetimeout 60\n%s\n", s.target);
	ck_assert_int_eq(fclose(f), 0);
	snprintf(
	    shell, sizeof(shell),
	    "upto() { i=0; until grep -q \"$1\" %s; do i=$((i+1)); [ $i -lt 600 ] || exit 1; "
	    "sleep 0.1; done; }\n"
	    "{ upto '(gdb) '; echo continue; upto Continuing; upto 'libc.so.6 from remote';\n"
	    "  for n in 1 2 3; do sleep 1; grep -q 'signal SIGINT' %s && break; printf '\\003';\n"
	    "  done\n"
	    "  upto 'signal SIGINT'; echo 'signal SIGUSR1'; upto 'exited with code';\n"
	    "  echo quit; } | script -qfc 'gdb -nx -q -x %s %s' %s >/dev/null\n",
	    log, log, file, cmd[0], log);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &s.o), 0);
	typed = mt_slurp(log);
	ck_assert_ptr_nonnull(typed);
	ck_assert_msg(strstr(typed, "Program received signal SIGINT"), "%s", typed);
	ck_assert_msg(strstr(typed, "Continuing with signal SIGUSR1."), "%s", typed);
	ck_assert_msg(strstr(typed, "level=1 usr1=1 watched=8 add=2"), "%s", typed);
	ck_assert_msg(strstr(typed, "exited with code 01"), "%s", typed);
	free(typed);
	gdb_read_results(&s);
	ck_assert_int_eq(s.rc, 1);
	assert_gdb_target_counts(&s);
	gdb_session_free(&s);
}
END_TEST

/* A SIGTRAP gdb passes on kills the program, and memtrack says where it struck. */
START_TEST(a_death_by_sigtrap_is_said)
{
	const char *cmd[] = {FIXTURE("die_signal"), "5", NULL};
	const char *cmds[] = {"continue", "signal SIGTRAP", NULL};
	struct session s = {.summary = true};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "Program received signal SIGTRAP");
	SAID(&s, "Program terminated with signal SIGTRAP");
	ck_assert_msg(strstr(s.o.err, ") got SIGTRAP at kill <- main"), "%s", s.o.err);
	ck_assert_msg(strstr(s.o.err, "killed by SIGTRAP; 1 process, 1 thread;"), "%s", s.o.err);
	ck_assert_int_eq(s.rc, 128 + 5);
	gdb_session_free(&s);
}
END_TEST

/*
 * The default endpoint is a Unix socket in a directory of memtrack's own: mode 0700, the socket
 * 0600. Another local user (nobody) cannot connect; memtrack's user can, with the printed
 * command, and the program runs to its end.
 */
START_TEST(only_its_user_connects_to_the_default_endpoint)
{
	char dir[64], shell[4096];
	const char *argv[] = {"sh", "-c", shell, NULL};
	struct session s = {0};
	char *path, *end;
	struct stat st;

	mt_tmpdir(dir);
	snprintf(
	    shell, sizeof(shell),
	    "{ %s run -q --no-track --gdb -- %s 2>%s/err; echo rc=$? >%s/rc; } & pid=$!\n"
	    "until grep -q 'Connect with' %s/err || ! kill -0 $pid 2>/dev/null; do sleep 0.05; "
	    "done\n"
	    "cmd=$(sed -n \"s/.*Connect with: gdb -ex '\\([^']*\\)'.*/\\1/p\" %s/err)\n"
	    "sock=${cmd#target remote }\n"
	    "stat -c 'dir=%%a %%U' \"${sock%%/*}\"; stat -c 'sock=%%a %%U' \"$sock\"\n"
	    "echo \"path=$sock\"\n"
	    "setpriv --reuid=nobody --regid=nogroup --clear-groups gdb -nx -batch "
	    "-ex \"$cmd\" 2>&1 | sed 's/^/nobody: /'\n"
	    "gdb -nx -batch -ex \"$cmd\" -ex 'set var wait_usr1 = 0' -ex continue %s\n"
	    "wait $pid; cat %s/rc %s/err\n",
	    MEMTRACK, FIXTURE("gdb_target"), dir, dir, dir, dir, FIXTURE("gdb_target"), dir, dir);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &s.o), 0);
	SAID(&s, "dir=700 root\n");
	SAID(&s, "sock=600 root\n");
	/* gdb as nobody: the directory keeps it out. */
	SAID(&s, "nobody: ");
	SAID(&s, "Permission denied");
	ck_assert_msg(!strstr(s.o.out, "nobody: Remote debugging using"), "%s", s.o.out);
	/* memtrack's user: connected, ran to the end. */
	SAID(&s, "exited with code 01");
	SAID(&s, "rc=1\n");
	/* The socket and its directory are gone with the run. */
	path = strstr(s.o.out, "path=");
	ck_assert_ptr_nonnull(path);
	path += strlen("path=");
	end = strchr(path, '\n');
	ck_assert_ptr_nonnull(end);
	*end = '\0';
	ck_assert_int_ne(stat(path, &st), 0);
	*strrchr(path, '/') = '\0';
	ck_assert_int_ne(stat(path, &st), 0);
	mt_out_free(&s.o);
	snprintf(shell, sizeof(shell), "rm -rf %s", dir);
	ck_assert_int_eq(system(shell), 0);
}
END_TEST

/* lldb over the default Unix socket: a breakpoint, `next`, expressions that call and write. */
START_TEST(lldb_breaks_steps_and_evaluates)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	const char *cmds[] = {"breakpoint set -n pairs",
			      "process continue",
			      "next",
			      "next",
			      "expression add(2,3)",
			      "expression level = 4",
			      "expression wait_usr1 = 0",
			      "process continue",
			      NULL};
	struct session s = {0};

	lldb_session(&s, cmd, cmds);
	SAID(&s, "stop reason = breakpoint 1.1");
	SAID(&s, "stop reason = step over");
	SAID(&s, "(int) $0 = 5");
	SAID(&s, "exited with status = 4");
	ck_assert_int_eq(s.rc, 4);
	assert_gdb_target_counts(&s);
	gdb_session_free(&s);
}
END_TEST

static Suite *gdb_use_suite(void)
{
	static char why[320];
	const char *no_hw_watch = mt_suite_hw_watchpoint_missing(why, sizeof(why));
	Suite *s = suite_create("gdb_use");
	TCase *tc = tcase_create("gdb_use");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, set_var_print_call_and_libraries);
	if (no_hw_watch)
		mt_add_host_skipped_test(tc, hardware_watchpoint, no_hw_watch);
	else
		tcase_add_test(tc, hardware_watchpoint);
	mt_tcase_add_tool_test(tc, hardware_watchpoint_probe_agrees_with_gdb, "gdb");
	tcase_add_test(tc, software_watchpoint);
	tcase_add_test(tc, signal_after_ctrl_c_in_a_pty);
	tcase_add_test(tc, a_death_by_sigtrap_is_said);
	tcase_add_test(tc, only_its_user_connects_to_the_default_endpoint);
	tcase_add_test(tc, lldb_breaks_steps_and_evaluates);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(gdb_use_suite());
}
