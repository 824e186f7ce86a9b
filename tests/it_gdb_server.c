// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack's gdb stub side by side with gdbserver (docs/GDB.md, "Against gdbserver"): the same gdb
 * commands on the same fixture, once over `target remote | memtrack run --gdb=- -- CMD`, once
 * over `target remote | gdbserver - CMD` (no memtrack, no probes), and what gdb showed compared.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <json-c/json.h>

#include "lib/gdbsession.h"
#include "lib/hostcaps.h"
#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/*
 * Stepped into malloc, then one `next`: the uprobe's handler has put the kernel's uretprobe
 * trampoline where malloc's return address was. gdb must still unwind to the caller (bt, up,
 * finish, advance), as under gdbserver.
 */
START_TEST(stack_inside_a_probed_malloc_is_the_callers)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	const char *cmds[] = {"break pairs", "continue",   "step",   "step",	 "next", "bt",
			      "up",	     "down",	   "finish", "bt",	 "step", "step",
			      "next",	     "advance 39", "bt",     "continue", NULL};
	struct session s = {0};
	struct mt_out gs;
	char *ours, *theirs;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ours = gdb_frame_functions(s.o.out);
	theirs = gdb_frame_functions(gs.out);
	ck_assert_msg(strstr(theirs, "malloc\npairs\nmain\n"), "gdbserver's frames:\n%s\n%s",
		      theirs, gs.out);
	ck_assert_msg(!strcmp(ours, theirs), "frames under memtrack:\n%s\nunder gdbserver:\n%s\n%s",
		      ours, theirs, s.o.out);
	ck_assert_msg(!strstr(s.o.out, "in ?? ()"), "an unknown frame:\n%s", s.o.out);
	SAID(&s, "Value returned is $1 = (void *) 0x");
	SAID(&s, "exited with code 01");
	ck_assert_int_eq(s.rc, 1);
	gdb_assert_counts(gdb_totals(&s), "gdb_target", 4, 3, 300 + 4096);
	free(ours);
	free(theirs);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/*
 * A breakpoint inside malloc's body reached by continue: the thread entered malloc while it ran,
 * so the stub never saw its return address before the kernel hid it; it is read from the
 * kernel's own record of the uretprobe's return then. bt and finish as under gdbserver. (glibc
 * 2.36's malloc begins with a 2-byte push and two 1-byte ones: +4 is an instruction.)
 */
START_TEST(stack_inside_malloc_reached_by_continue_is_the_callers)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	const char *cmds[] = {"break pairs", "continue", "break *malloc+4", "continue", "bt",
			      "finish",	     "delete",	 "continue",	    NULL};
	struct session s = {0};
	struct mt_out gs;
	char *ours, *theirs;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ours = gdb_frame_functions(s.o.out);
	theirs = gdb_frame_functions(gs.out);
	ck_assert_msg(strstr(theirs, "__GI___libc_malloc\npairs\nmain\n"),
		      "gdbserver's frames:\n%s\n%s", theirs, gs.out);
	ck_assert_msg(!strcmp(ours, theirs), "frames under memtrack:\n%s\nunder gdbserver:\n%s\n%s",
		      ours, theirs, s.o.out);
	ck_assert_msg(!strstr(s.o.out, "in ?? ()"), "an unknown frame:\n%s", s.o.out);
	SAID(&s, "Value returned is $1 = (void *) 0x");
	SAID(&s, "exited with code 01");
	ck_assert_int_eq(s.rc, 1);
	gdb_assert_counts(gdb_totals(&s), "gdb_target", 4, 3, 300 + 4096);
	free(ours);
	free(theirs);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/* The line of gdb's output that holds needle, as a new string. */
static char *line_with(const char *out, const char *needle)
{
	const char *at = strstr(out, needle), *start;

	ck_assert_msg(at, "no '%s' in:\n%s", needle, out);
	for (start = at; start > out && start[-1] != '\n'; start--)
		;
	return strndup(start, strcspn(start, "\n"));
}

/*
 * The slot of malloc's return address, read and written by gdb while the trampoline stands
 * there: read, the caller's address, as under gdbserver; written with that same address, the
 * trampoline stays, so the return still goes through the kernel and the call is recorded (the
 * real address written there left the BPF side inside malloc for ever: nothing recorded).
 */
START_TEST(writing_a_hidden_return_address_keeps_the_return)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	const char *cmds[] = {"break pairs",
			      "continue",
			      "step",
			      "step",
			      "set $slot = (long *) $sp",
			      "next",
			      "print/x *$slot",
			      "set var *$slot = *$slot",
			      "print/x *$slot",
			      "finish",
			      "continue",
			      NULL};
	struct session s = {0};
	struct mt_out gs;
	char *ours, *theirs;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ours = line_with(s.o.out, "$2 = 0x");
	theirs = line_with(gs.out, "$2 = 0x");
	ck_assert_msg(!strcmp(ours, theirs), "under memtrack: %s, under gdbserver: %s", ours,
		      theirs);
	SAID(&s, "Value returned is $3 = (void *) 0x");
	ck_assert_int_eq(s.rc, 1);
	gdb_assert_counts(gdb_totals(&s), "gdb_target", 4, 3, 300 + 4096);
	free(ours);
	free(theirs);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/* The "Catchpoint N (...)" part of every catchpoint stop gdb showed, one a line. */
static char *catchpoints(const char *out)
{
	size_t n = 0;
	char *lines = calloc(1, strlen(out) + 1);

	ck_assert_ptr_nonnull(lines);
	for (const char *at = strstr(out, "\nCatchpoint "); at; at = strstr(at, "\nCatchpoint ")) {
		size_t len = strcspn(++at, ",\n");
		const char *why = at + strcspn(at, "(");

		if (strncmp(why, "(call to", 8) && strncmp(why, "(returned", 9))
			continue; /* the catchpoint's setting */
		memcpy(lines + n, at, len);
		n += len;
		lines[n++] = '\n';
		at += len;
	}
	return lines;
}

/*
 * catch syscall (QCatchSyscalls) in a program that dlopens a library after gdb attached: the
 * same stops as under gdbserver, each syscall's call then its return, while memtrack's own
 * stops (the library's probes attached at its mmap) come in between unseen; the recording is
 * exact. gdbserver reports the first syscall after the exec as "returned" before its "call":
 * memtrack reports the call first, and the rest is the same.
 */
START_TEST(catch_syscall_stops_as_under_gdbserver)
{
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_plain.so"), "100", NULL};
	const char *cmds[48] = {"catch syscall openat mmap"};
	int64_t p = strlen(FIXTURE("plugin_plain.so"));
	const char *first = "Catchpoint 1 (call to syscall mmap)\n"
			    "Catchpoint 1 (returned from syscall mmap)\n";
	struct session s = {0};
	struct mt_out gs;
	char *ours, *theirs, *rest;

	for (size_t i = 1; i < 46; i++)
		cmds[i] = "continue";
	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ours = catchpoints(s.o.out);
	theirs = catchpoints(gs.out);
	ck_assert_msg(strstr(theirs, "(call to syscall openat)"), "gdbserver:\n%s", gs.out);
	ck_assert_msg(!strncmp(ours, first, strlen(first)), "memtrack's first stops:\n%s", ours);
	rest = strchr(strchr(theirs, '\n') + 1, '\n') + 1;
	ck_assert_msg(!strcmp(ours + strlen(first), rest),
		      "under memtrack:\n%s\nunder gdbserver:\n%s", ours, theirs);
	SAID(&s, "exited normally");
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "dlopen_plugin plain", 107, 101, 3667 + 3 * p + 77700);
	free(ours);
	free(theirs);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/*
 * A catchpoint deleted, the program runs on to its end without syscall stops; `info threads`
 * names the thread by its comm, as under gdbserver.
 */
START_TEST(catch_syscall_deleted_and_thread_names)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	const char *cmds[] = {
	    "catch syscall write", "continue", "info threads", "delete", "continue", NULL};
	struct session s = {0};
	struct mt_out gs;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ck_assert_msg(strstr(gs.out, " \"gdb_target\" "), "gdbserver:\n%s", gs.out);
	SAID(&s, "Catchpoint 1 (call to syscall write)");
	SAID(&s, " \"gdb_target\" ");
	SAID(&s, "exited with code 01");
	ck_assert_int_eq(s.rc, 1);
	gdb_assert_counts(gdb_totals(&s), "gdb_target", 4, 3, 300 + 4096);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/*
 * The program runs without address space randomization, as gdbserver starts it: the same
 * address of a variable of the program (a PIE) under both.
 */
START_TEST(addresses_are_not_randomized)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	const char *cmds[] = {"break pairs", "continue", "print &level", "kill", NULL};
	struct session s = {0};
	struct mt_out gs;
	char *ours, *theirs;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ours = line_with(s.o.out, "<level>");
	theirs = line_with(gs.out, "<level>");
	ck_assert_msg(!strcmp(ours, theirs), "under memtrack: %s, under gdbserver: %s", ours,
		      theirs);
	free(ours);
	free(theirs);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/* gdb showed text, on its stdout or its stderr (what it read of memtrack's stderr). */
#define SHOWN(s, text)                                                                             \
	ck_assert_msg(strstr((s)->o.out, text) || strstr((s)->o.err, text),                        \
		      "gdb did not show '%s':\n%s\n%s", text, (s)->o.out, (s)->o.err)

/*
 * Over gdb's pipe, gdb shows memtrack's summary after `kill` and `quit` (gdb reads memtrack's
 * stderr only until it has the kill's reply), and after `detach` where the recording goes.
 */
START_TEST(summary_after_kill_quit_and_detach)
{
	const char *cmd[] = {FIXTURE("gdb_target"), NULL};
	const char *ends[] = {"kill", "quit", "detach"};

	for (size_t i = 0; i < 3; i++) {
		const char *cmds[] = {"break pairs", "continue", "set var wait_usr1 = 0", ends[i],
				      NULL};
		struct session s = {.summary = true};

		gdb_session(&s, NULL, cmd, cmds);
		if (i < 2) {
			SHOWN(&s, "then gdb killed it, its allocations recorded throughout");
			SHOWN(&s, "memtrack: artifact: ");
			ck_assert_int_eq(s.rc, 128 + 9);
		} else {
			SHOWN(&s, "memtrack: gdb detached; process ");
			SHOWN(&s, "runs on, recorded into ");
			ck_assert_int_eq(s.rc, 1);
			gdb_assert_counts(gdb_totals(&s), "gdb_target", 4, 3, 300 + 4096);
		}
		gdb_session_free(&s);
	}
}
END_TEST

/* How many times needle is in text. */
static int count_of(const char *text, const char *needle)
{
	int n = 0;

	for (const char *at = strstr(text, needle); at; at = strstr(at + 1, needle))
		n++;
	return n;
}

/* The report's process whose allocations number n (forks4's child k makes 10 (k + 1)). */
static struct json_object *process_allocating(struct session *s, int64_t n)
{
	struct json_object *procs, *p;

	ck_assert(json_object_object_get_ex(s->report, "processes", &procs));
	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		p = json_object_array_get_idx(procs, i);
		if (mt_json_i64(p, "parent") != 0 && mt_json_i64(p, "allocations") == n)
			return p;
	}
	ck_abort_msg("no process made %lld allocations", (long long)n);
	return NULL;
}

/* forks4's child k, recorded exactly (fixtures/README.md): 10 (k + 1) of 32 (k + 1) bytes. */
static void assert_forks4_child(struct session *s, int k)
{
	gdb_assert_counts(process_allocating(s, 10 * (k + 1)), "forks4 child", 10 * (k + 1),
			  10 * (k + 1) - k, 320 * (k + 1) * (k + 1));
}

/*
 * gdb's follow-fork-mode child (fork events, multiprocess): gdb follows the first child, detaches
 * the parent, and stops at the breakpoint in the child, as under gdbserver; memtrack records
 * every process of the tree, the one gdb followed included, exactly.
 */
START_TEST(follow_fork_child_stops_in_the_child)
{
	const char *cmd[] = {FIXTURE("forks4"), NULL};
	const char *cmds[] = {
	    "set follow-fork-mode child", "break child", "continue", "bt", "continue", NULL};
	struct session s = {0};
	struct mt_out gs;
	struct json_object *procs;
	char *ours, *theirs;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ck_assert_msg(strstr(gs.out, "hit Breakpoint 1, child (k=k@entry=0)"), "gdbserver:\n%s",
		      gs.out);
	SAID(&s, "hit Breakpoint 1, child (k=k@entry=0)");
	SAID(&s, "[Detaching after fork from parent process ");
	SAID(&s, "[Inferior 2 (process ");
	SAID(&s, "exited normally]");
	ours = gdb_frame_functions(s.o.out);
	theirs = gdb_frame_functions(gs.out);
	ck_assert_msg(!strcmp(ours, theirs) && !strcmp(ours, "child\nmain\n"),
		      "frames under memtrack:\n%s\nunder gdbserver:\n%s", ours, theirs);
	ck_assert_int_eq(s.rc, 0);
	ck_assert(json_object_object_get_ex(s.report, "processes", &procs));
	ck_assert_int_eq(json_object_array_length(procs), 5);
	gdb_assert_counts(gdb_totals(&s), "forks4", 101, 95, 10600);
	for (int k = 0; k < 4; k++)
		assert_forks4_child(&s, k);
	free(ours);
	free(theirs);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/*
 * detach-on-fork off: gdb keeps the parent and each child it follows (the multiprocess
 * extensions: p<pid>.<tid> ids, W;process:PID), switches between them, and sees each child end
 * while the parent stays stopped at its fork, as under gdbserver.
 */
START_TEST(detach_on_fork_off_keeps_both_processes)
{
	const char *cmd[] = {FIXTURE("forks4"), NULL};
	const char *cmds[] = {"set detach-on-fork off",
			      "set follow-fork-mode child",
			      "break child",
			      "continue",
			      "info inferiors",
			      "continue",
			      "inferior 1",
			      "continue",
			      "bt",
			      "continue",
			      NULL};
	struct session s = {0};
	struct mt_out gs;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ck_assert_msg(strstr(gs.out, "child (k=k@entry=1)") && strstr(gs.out, "[New inferior 3 "),
		      "gdbserver:\n%s", gs.out);
	ck_assert_int_eq(count_of(s.o.out, "exited normally]"),
			 count_of(gs.out, "exited normally]"));
	ck_assert_int_eq(count_of(s.o.out, "exited normally]"), 2);
	SAID(&s, "hit Breakpoint 1.2, child (k=k@entry=0)");
	SAID(&s, "hit Breakpoint 1.2, child (k=k@entry=1)");
	SAID(&s, "[Inferior 2 (process ");
	SAID(&s, "[Inferior 3 (process ");
	SAID(&s, "[Switching to inferior 1 [process ");
	ck_assert_int_eq(count_of(s.o.out, "* 2    process "), 1); /* info inferiors: both */
	ck_assert_int_eq(count_of(s.o.out, "  1    process "), 1);
	/* The two children that ran to their end, recorded exactly; gdb's end killed the rest. */
	assert_forks4_child(&s, 0);
	assert_forks4_child(&s, 1);
	ck_assert_int_eq(s.rc, 128 + 9);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/*
 * catch fork, catch vfork: gdb's catchpoints stop at each, as under gdbserver; and a vfork child
 * runs through a breakpoint gdb set in its parent's memory (gdb takes it out while they share
 * it: without vfork events the child died of the SIGTRAP, exit 133).
 */
START_TEST(catch_fork_and_vfork_stop_as_under_gdbserver)
{
	const char *forks[] = {FIXTURE("forks4"), NULL};
	const char *vfork[] = {FIXTURE("vfork_exec"), "/bin/true", NULL};
	const char *fork_cmds[] = {"catch fork", "continue", "continue", "continue",
				   "continue",	 "continue", NULL};
	const char *vfork_cmds[] = {"catch vfork", "continue", "continue", NULL};
	const char *execv_cmds[] = {"break main", "continue", "break execv", "break waitpid",
				    "continue",	  "continue", NULL};
	struct session s = {0}, v = {0};
	struct mt_out gs, gv;

	gdb_session(&s, NULL, forks, fork_cmds);
	gdbserver_session(&gs, forks, fork_cmds);
	ck_assert_int_eq(count_of(gs.out, "Catchpoint 1 (forked process "), 4);
	ck_assert_int_eq(count_of(s.o.out, "Catchpoint 1 (forked process "), 4);
	ck_assert_int_eq(count_of(s.o.out, "[Detaching after fork from child process "), 4);
	SAID(&s, "arch_fork (");
	SAID(&s, "[Inferior 1 (process ");
	SAID(&s, "exited normally]");
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "forks4", 101, 95, 10600);

	gdb_session(&v, NULL, vfork, vfork_cmds);
	gdbserver_session(&gv, vfork, vfork_cmds);
	ck_assert_msg(strstr(gv.out, "Catchpoint 1 (vforked process "), "gdbserver:\n%s", gv.out);
	SAID(&v, "Catchpoint 1 (vforked process ");
	SAID(&v, "[Detaching after vfork from child process ");
	SAID(&v, "exited normally]");
	ck_assert_int_eq(v.rc, 0);
	gdb_session_free(&v);

	/*
	 * The vfork child reaches gdb's breakpoint in the memory it shares: gdb took it out. It is
	 * back once the vfork is done: the parent stops in waitpid.
	 */
	v = (struct session){0};
	gdb_session(&v, NULL, vfork, execv_cmds);
	SAID(&v, "Breakpoint 2 at ");
	SAID(&v, "[Detaching after vfork from child process ");
	SAID(&v, "Breakpoint 3, __GI___waitpid (");
	SAID(&v, "[Inferior 1 (process ");
	SAID(&v, "exited normally]");
	ck_assert_int_eq(v.rc, 0);
	mt_out_free(&gs);
	mt_out_free(&gv);
	gdb_session_free(&s);
	gdb_session_free(&v);
}
END_TEST

/*
 * catch exec: gdb stops at the process's exec with the new program's name (exec events), and
 * after a vfork followed into the child, at the child's exec, as under gdbserver.
 */
START_TEST(catch_exec_stops_as_under_gdbserver)
{
	const char *chain[] = {FIXTURE("exec_chain"), "1", NULL};
	const char *vfork[] = {FIXTURE("vfork_exec"), "/bin/true", NULL};
	const char *cmds[] = {"catch exec", "continue", "continue", NULL};
	const char *child_cmds[] = {"set follow-fork-mode child", "catch exec", "continue",
				    "continue", NULL};
	struct session s = {0}, v = {0};
	struct mt_out gs, gv;

	gdb_session(&s, NULL, chain, cmds);
	gdbserver_session(&gs, chain, cmds);
	ck_assert_msg(strstr(gs.out, "Catchpoint 1 (exec'd " MT_BUILD_DIR "/fixtures/exec_chain)"),
		      "gdbserver:\n%s", gs.out);
	SAID(&s, "Catchpoint 1 (exec'd " MT_BUILD_DIR "/fixtures/exec_chain)");
	SAID(&s, "is executing new program: " MT_BUILD_DIR "/fixtures/exec_chain");
	SAID(&s, "exited normally]");
	ck_assert_int_eq(s.rc, 0);

	gdb_session(&v, NULL, vfork, child_cmds);
	gdbserver_session(&gv, vfork, child_cmds);
	ck_assert_msg(strstr(gv.out, "Catchpoint 1 (exec'd /usr/bin/true)"), "gdbserver:\n%s",
		      gv.out);
	SAID(&v, "[Attaching after Thread ");
	SAID(&v, "Catchpoint 1 (exec'd /usr/bin/true)");
	SAID(&v, "[Inferior 2 (process ");
	SAID(&v, "exited normally]");
	ck_assert_int_eq(v.rc, 0);
	mt_out_free(&gs);
	mt_out_free(&gv);
	gdb_session_free(&s);
	gdb_session_free(&v);
}
END_TEST

/*
 * An exec from a thread that is not the process's main one (mt_exec: 3 more threads, the third
 * execs): gdb stops at it with one thread left, as under gdbserver, and the new program's
 * allocations are recorded (fixtures/README.md: 3 DTVs of 272 bytes, then scope_cases' 3 of 48).
 */
START_TEST(catch_exec_of_a_threaded_process)
{
	const char *cmd[] = {FIXTURE("mt_exec"), FIXTURE("scope_cases"), "alloc", "3", NULL};
	const char *cmds[] = {"catch exec", "continue", "info threads", "continue", NULL};
	struct session s = {0};
	struct mt_out gs;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ck_assert_msg(strstr(gs.out, "Catchpoint 1 (exec'd " MT_BUILD_DIR "/fixtures/scope_cases)"),
		      "gdbserver:\n%s", gs.out);
	SAID(&s, "Catchpoint 1 (exec'd " MT_BUILD_DIR "/fixtures/scope_cases)");
	ck_assert_int_eq(count_of(s.o.out, " \"scope_cases\" "), 1); /* info threads: one */
	ck_assert_int_eq(count_of(gs.out, " \"scope_cases\" "), 1);
	SAID(&s, "exited normally]");
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "mt_exec scope_cases alloc 3", 6, 3, 816 + 3 * 48);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/* How many times needle occurs in haystack. */
static int occurrences(const char *haystack, const char *needle)
{
	int n = 0;

	for (const char *at = strstr(haystack, needle); at; at = strstr(at + 1, needle))
		n++;
	return n;
}

/* The resumes gdb sent (`set debug remote 1` writes every packet to gdb's stderr). */
static int resumes(const char *err)
{
	return occurrences(err, "Sending packet: $vCont;");
}

/*
 * `break visit if i == 2999` in gdb_loop's 3,000 calls: gdb compiles the condition into agent
 * bytecode (ConditionalBreakpoints), and the stub evaluates it at each of the 3,000 hits without
 * telling gdb, as gdbserver does. Both stop once, at the 3,000th call, with the same values, and
 * gdb resumes the program a few times in all, not twice per evaluation as when it evaluates the
 * condition itself (counted in gdb's `set debug remote 1` log). The recording is exact.
 */
START_TEST(conditional_breakpoint_evaluated_in_the_stub)
{
	const char *cmd[] = {FIXTURE("gdb_loop"), "3000", NULL};
	const char *cmds[] = {"break visit if i == 2999",
			      "set debug remote 1",
			      "continue",
			      "set debug remote 0",
			      "print i",
			      "print sum",
			      "info breakpoints",
			      "continue",
			      NULL};
	struct session s = {0};
	struct mt_out gs;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ck_assert_msg(strstr(gs.out, "$1 = 2999\n$2 = 4495501\n"), "gdbserver:\n%s", gs.out);
	ck_assert_msg(strstr(gs.out, "breakpoint already hit 1 time"), "gdbserver:\n%s", gs.out);
	ck_assert_msg(resumes(gs.err) < 20, "gdb resumed gdbserver %d times", resumes(gs.err));
	SAID(&s, "Breakpoint 1, visit (i=i@entry=2999)");
	SAID(&s, "$1 = 2999\n$2 = 4495501\n");
	SAID(&s, "breakpoint already hit 1 time");
	SAID(&s, "exited normally");
	ck_assert_msg(resumes(s.o.err) < 20, "gdb resumed the program %d times under memtrack",
		      resumes(s.o.err));
	ck_assert_msg(strstr(s.o.err, "visited=3000 sum=4498500"), "%s", s.o.err);
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "gdb_loop", 1, 0, 4096);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/*
 * The same condition on a hardware breakpoint (Z1): the stub evaluates it at the debug register's
 * trap and lets the thread run on past the breakpoint (the kernel set the resume flag), gdb told
 * only of the call where it holds.
 */
START_TEST(hardware_breakpoint_condition_evaluated_in_the_stub)
{
	const char *cmd[] = {FIXTURE("gdb_loop"), "300", NULL};
	const char *cmds[] = {"hbreak visit if i == 199",
			      "set debug remote 1",
			      "continue",
			      "set debug remote 0",
			      "print i",
			      "info breakpoints",
			      "continue",
			      NULL};
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	SAID(&s, "$1 = 199\n");
	SAID(&s, "breakpoint already hit 1 time");
	SAID(&s, "exited normally");
	ck_assert_msg(strstr(s.o.err, "Sending packet: $Z1,"), "no Z1:\n%.3000s", s.o.err);
	ck_assert_msg(resumes(s.o.err) < 20, "gdb resumed the program %d times", resumes(s.o.err));
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "gdb_loop", 1, 0, 4096);
	gdb_session_free(&s);
}
END_TEST

/*
 * A condition while other threads of the process run (threads8's 8 threads in their loop): the
 * stub parks the others while the thread steps over the breakpoint (as gdbserver stops them), so
 * that none passes it unseen, and resumes them after; gdb hears only of the hit where the
 * condition holds, at i == 50 as under gdbserver, and the program ends as without gdb.
 */
START_TEST(condition_with_other_threads_running)
{
	const char *cmd[] = {FIXTURE("threads8"), "100", NULL};
	const char *cmds[] = {"break threads8.c:21 if i == 50",
			      "set debug remote 1",
			      "continue",
			      "set debug remote 0",
			      "print i",
			      "delete",
			      "continue",
			      NULL};
	struct session s = {0};
	struct mt_out gs;
	struct json_object *t;

	gdb_session(&s, NULL, cmd, cmds);
	gdbserver_session(&gs, cmd, cmds);
	ck_assert_msg(strstr(gs.out, "$1 = 50\n"), "gdbserver:\n%s", gs.out);
	SAID(&s, "$1 = 50\n");
	SAID(&s, "exited normally");
	ck_assert_msg(resumes(s.o.err) < 20, "gdb resumed the program %d times", resumes(s.o.err));
	ck_assert_int_eq(s.rc, 0);
	/* threads8 100: 808 allocations of 232,576 bytes (fixtures/README.md) */
	t = gdb_totals(&s);
	ck_assert_int_eq(mt_json_i64(t, "allocations"), 808);
	ck_assert_int_eq(mt_json_i64(t, "bytes_allocated"), 2304 * 100 + 2176);
	mt_out_free(&gs);
	gdb_session_free(&s);
}
END_TEST

/*
 * A dprintf with `set dprintf-style agent` (BreakpointCommands): the stub runs its printf at each
 * hit and sends the text to gdb's console (O packets), gdb resumes nothing; under a condition,
 * only the hits where it holds print.
 */
START_TEST(agent_dprintf_prints_without_stopping)
{
	const char *cmd[] = {FIXTURE("gdb_loop"), "300", NULL};
	const char *cmds[] = {"set dprintf-style agent",
			      "dprintf visit,\"i=%d sum=%ld\\n\", i, sum",
			      "condition 1 i % 100 == 99",
			      "set debug remote 1",
			      "continue",
			      NULL};
	struct session s = {0};

	gdb_session(&s, NULL, cmd, cmds);
	/* gdb shows a target's output on its stderr, with the program's (memtrack's stderr) */
	ck_assert_msg(strstr(s.o.err, "i=99 sum=4851\n") && strstr(s.o.err, "i=199 sum=19701\n") &&
			  strstr(s.o.err, "i=299 sum=44551\n"),
		      "%.2000s", s.o.err);
	/* those three and the program's own visited=300 sum=44850 */
	ck_assert_int_eq(occurrences(s.o.err, " sum="), 4);
	SAID(&s, "exited normally");
	ck_assert_msg(resumes(s.o.err) < 20, "gdb resumed the program %d times", resumes(s.o.err));
	ck_assert_int_eq(s.rc, 0);
	gdb_assert_counts(gdb_totals(&s), "gdb_loop", 1, 0, 4096);
	gdb_session_free(&s);
}
END_TEST

static Suite *gdb_server_suite(void)
{
	static char why[320];
	/* Debug registers that never fire (some hosts' guests) fire no Z1 either. */
	const char *no_debug_regs = mt_suite_hw_watchpoint_missing(why, sizeof(why));
	Suite *s = suite_create("gdb_server");
	TCase *tc = tcase_create("gdb_server");
	TCase *conditions = tcase_create("conditions");

	tcase_set_timeout(tc, 300);
	mt_tcase_add_tool_test(tc, stack_inside_a_probed_malloc_is_the_callers, "gdb gdbserver");
	mt_tcase_add_tool_test(tc, stack_inside_malloc_reached_by_continue_is_the_callers,
			       "gdb gdbserver");
	mt_tcase_add_tool_test(tc, writing_a_hidden_return_address_keeps_the_return,
			       "gdb gdbserver");
	mt_tcase_add_tool_test(tc, catch_syscall_stops_as_under_gdbserver, "gdb gdbserver");
	mt_tcase_add_tool_test(tc, catch_syscall_deleted_and_thread_names, "gdb gdbserver");
	mt_tcase_add_tool_test(tc, addresses_are_not_randomized, "gdb gdbserver");
	mt_tcase_add_tool_test(tc, summary_after_kill_quit_and_detach, "gdb");
	mt_tcase_add_tool_test(tc, follow_fork_child_stops_in_the_child, "gdb gdbserver");
	mt_tcase_add_tool_test(tc, detach_on_fork_off_keeps_both_processes, "gdb gdbserver");
	mt_tcase_add_tool_test(tc, catch_fork_and_vfork_stop_as_under_gdbserver, "gdb gdbserver");
	mt_tcase_add_tool_test(tc, catch_exec_stops_as_under_gdbserver, "gdb gdbserver");
	mt_tcase_add_tool_test(tc, catch_exec_of_a_threaded_process, "gdb gdbserver");
	suite_add_tcase(s, tc);
	tcase_set_timeout(conditions, 300);
	mt_tcase_add_tool_test(conditions, conditional_breakpoint_evaluated_in_the_stub,
			       "gdb gdbserver");
	if (no_debug_regs)
		mt_add_host_skipped_test(
		    conditions, hardware_breakpoint_condition_evaluated_in_the_stub, no_debug_regs);
	else
		mt_tcase_add_tool_test(conditions,
				       hardware_breakpoint_condition_evaluated_in_the_stub, "gdb");
	mt_tcase_add_tool_test(conditions, agent_dprintf_prints_without_stopping, "gdb");
	mt_tcase_add_tool_test(conditions, condition_with_other_threads_running, "gdb gdbserver");
	suite_add_tcase(s, conditions);
	return s;
}

int main(void)
{
	return mt_run_suite(gdb_server_suite());
}
