// SPDX-License-Identifier: GPL-2.0
/*
 * Integration tests of stop points (--stop-at) and of the handoff to gdb, run the way a person
 * runs them: memtrack in its own session (setsid) or in a terminal (script), the process taken
 * with the gdb command memtrack prints, memtrack waiting for it to the end (docs/STOPS.md).
 */
#include <check.h>
#include <signal.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define HANDOFF_SH MT_SOURCE_DIR "/tests/lib/handoff.sh"

struct handoff {
	char dir[64], art[128], errpath[128];
	struct mt_out o;	    /* the driver's: state=, gdb:, rc= */
	char *err;		    /* memtrack's stderr */
	struct json_object *report; /* report --json of the artifact */
};

/* Run memtrack with opts on cmd through tests/lib/handoff.sh (how: setsid or pty). */
static void handoff_run(struct handoff *h, const char *how, const char *gdb,
			const char *const *opts, const char *const *cmd)
{
	const char *argv[64] = {"sh",	  HANDOFF_SH, how,  gdb,   h->errpath,
				MEMTRACK, "run",      "-o", h->art};
	const char *rep[] = {MEMTRACK, "report", "--json", h->art, NULL};
	struct mt_out r;
	size_t n = 9;

	mt_tmpdir(h->dir);
	snprintf(h->art, sizeof(h->art), "%s/a.mtk", h->dir);
	snprintf(h->errpath, sizeof(h->errpath), "%s/err", h->dir);
	for (size_t i = 0; opts[i]; i++)
		argv[n++] = opts[i];
	argv[n++] = "--";
	for (size_t i = 0; cmd[i] && n < 63; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &h->o), 0);
	h->err = mt_slurp(h->errpath);
	ck_assert_msg(h->err, "no stderr from memtrack: %s", h->o.out);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &r), 0);
	ck_assert_msg(r.code == 0, "report: %s", r.err);
	h->report = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(h->report);
	mt_out_free(&r);
}

static void handoff_free(struct handoff *h)
{
	char cmd[160];

	json_object_put(h->report);
	free(h->err);
	mt_out_free(&h->o);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", h->dir);
	ck_assert_int_eq(system(cmd), 0);
}

/* The process was stopped when handed over, gdb ran it to its end, memtrack exited with rc. */
static void assert_handed_and_ended(const struct handoff *h, int rc)
{
	char want[32];

	ck_assert_msg(strstr(h->o.out, "state=T\n"), "%s\n%s", h->o.out, h->err);
	ck_assert_msg(strstr(h->o.out, "gdb: [Inferior 1 (process "), "%s", h->o.out);
	snprintf(want, sizeof(want), "rc=%d\n", rc);
	ck_assert_msg(strstr(h->o.out, want), "%s\n%s", h->o.out, h->err);
	ck_assert_ptr_nonnull(strstr(h->err, "-ex 'handle SIGSTOP nostop noprint pass'"));
	ck_assert_ptr_nonnull(strstr(h->err, "was handed to a debugger"));
}

static void assert_counts(const struct handoff *h, int64_t allocs, int64_t frees, int64_t unmatched)
{
	struct json_object *t = mt_json_get(h->report, "totals");

	ck_assert_int_eq(mt_json_i64(t, "allocations"), allocs);
	ck_assert_int_eq(mt_json_i64(t, "frees"), frees);
	ck_assert_int_eq(mt_json_i64(t, "unmatched_frees"), unmatched);
	ck_assert_int_eq(mt_json_i64(t, "dropped"), 0);
}

/* The image of process pos ("0") after exec execs, in the report. */
static struct json_object *image_at(const struct handoff *h, const char *pos, int exec)
{
	struct json_object *a = mt_json_get(h->report, "images");

	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *g = json_object_array_get_idx(a, i);
		const char *p = json_object_get_string(mt_json_get(g, "position"));

		if (p && strcmp(p, pos) == 0 && mt_json_i64(g, "exec") == exec)
			return g;
	}
	ck_abort_msg("no image %s+%d in %s", pos, exec, json_object_to_json_string(a));
	return NULL;
}

/*
 * The image was handed off after before_allocs allocations and before_frees frees of its own;
 * mapped_after: the one file it mapped after, or NULL for none.
 */
static void assert_handoff(const struct handoff *h, struct json_object *image,
			   int64_t before_allocs, int64_t before_frees, const char *mapped_after)
{
	struct json_object *ho = mt_json_get(image, "handoff"), *late;

	ck_assert_msg(ho, "not handed off: %s", json_object_to_json_string(image));
	ck_assert_int_eq(mt_json_i64(mt_json_get(ho, "before"), "allocations"), before_allocs);
	ck_assert_int_eq(mt_json_i64(mt_json_get(ho, "before"), "frees"), before_frees);
	late = mt_json_get(ho, "mapped_after");
	ck_assert_int_eq(json_object_array_length(late), mapped_after ? 1 : 0);
	if (mapped_after)
		ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(late, 0)),
				 mapped_after);
	ck_assert_int_eq(json_object_get_boolean(mt_json_get(h->report, "complete")),
			 !mapped_after);
}

/* A file's counts in the report, by path. */
static struct json_object *file_at(const struct handoff *h, const char *path)
{
	struct json_object *a = mt_json_get(h->report, "files");

	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *f = json_object_array_get_idx(a, i);
		const char *p = json_object_get_string(mt_json_get(f, "path"));

		if (p && strcmp(p, path) == 0)
			return f;
	}
	ck_abort_msg("no file %s", path);
	return NULL;
}

/* In its own session: the root, handed over at its exec, survives; memtrack exits with its 7. */
START_TEST(handoff_at_exec_in_own_session)
{
	const char *opts[] = {"--stop-at", "exec", NULL};
	const char *cmd[] = {FIXTURE("exit_code"), "7", NULL};
	struct handoff h;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 7);
	ck_assert_ptr_nonnull(strstr(h.err, "exit_code exited with 7"));
	handoff_free(&h);
}
END_TEST

/*
 * In a terminal: handed over right after the plugin is mapped, the allocations before (ld.so's
 * and dlopen's) and after (the plugin's 100 pairs, through libc's probes) are all recorded.
 */
START_TEST(handoff_at_map_in_a_pty_records_before_and_after)
{
	const char *opts[] = {"--stop-at", "map:plugin_plain.so", NULL};
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_plain.so"), "100", NULL};
	struct handoff h;

	handoff_run(&h, "pty", "continue", opts, cmd);
	assert_handed_and_ended(&h, 0);
	assert_counts(&h, 7 + 100, 1 + 100, 0);
	handoff_free(&h);
}
END_TEST

/*
 * A worker thread maps the stop point's file while 8 threads run: the whole process is handed
 * over (gdb attaches every thread), and everything is recorded (fixtures/README.md).
 */
START_TEST(handoff_at_a_worker_threads_mapping)
{
	const char *opts[] = {"--stop-at", "map:plugin_race_3.so", NULL};
	const char *cmd[] = {FIXTURE("dlopen_race"), MT_BUILD_DIR "/fixtures", "10", NULL};
	struct handoff h;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 0);
	ck_assert_ptr_nonnull(strstr(h.err, "1 process, 9 threads"));
	/* 16 of the threads' releases at exit free tcache chunks already freed: unmatched. */
	assert_counts(&h, 58 + 80, 88, 16);
	handoff_free(&h);
}
END_TEST

/*
 * Handed over at its exec, before its first instruction: libc, which ld.so maps after the
 * handoff, was linked before (the loader's view, src/classify/loaddeps.c), so not even its first
 * calls are missed. Everything is after the handoff, and said so.
 */
START_TEST(handoff_at_exec_records_from_the_first_call)
{
	const char *opts[] = {"--stop-at", "exec", NULL};
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_plain.so"), "100", NULL};
	struct handoff h;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 0);
	assert_counts(&h, 7 + 100, 1 + 100, 0);
	assert_handoff(&h, image_at(&h, "0", 0), 0, 0, NULL);
	ck_assert_msg(
	    strstr(
		h.err,
		"right after its exec of " FIXTURE(
		    "dlopen_plugin") ": 0 "
				     "allocations, 0 frees recorded before, 107 allocations, 101 "
				     "frees after\n"),
	    "%s", h.err);
	ck_assert_ptr_nonnull(strstr(h.err, "its allocations recorded throughout"));
	handoff_free(&h);
}
END_TEST

/* A preload is linked ahead too: the allocator is jemalloc from the first call (exec:GLOB). */
START_TEST(handoff_at_exec_links_the_preload)
{
	const char *opts[] = {"--stop-at", "exec:preload_target", NULL};
	const char *cmd[] = {"env", "LD_PRELOAD=libjemalloc.so.2", FIXTURE("preload_target"), NULL};
	struct handoff h;
	struct json_object *g;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 0);
	g = image_at(&h, "0", 1);
	ck_assert_int_eq(mt_json_i64(g, "allocations"), 18);
	ck_assert_int_eq(mt_json_i64(g, "reallocs"), 1);
	ck_assert_int_eq(mt_json_i64(g, "frees"), 17);
	ck_assert_int_eq(mt_json_i64(g, "bytes_allocated"), 87204);
	assert_handoff(&h, g, 0, 0, NULL);
	handoff_free(&h);
}
END_TEST

/*
 * A library dlopened after the handoff (while gdb has the process) is probed without stopping
 * it: memtrack is woken by its request. Its calls before that may be missing, and the report
 * says so; libc's are all there (fixtures/README.md: libc 11 allocations, 1 free for dlopen).
 */
START_TEST(handoff_then_dlopen_is_probed_and_said)
{
	const char *opts[] = {"--stop-at", "exec", NULL};
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_mimalloc.so"), "100", NULL};
	const char *mi = "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2.0";
	struct handoff h;
	struct json_object *f;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 0);
	assert_handoff(&h, image_at(&h, "0", 0), 0, 0, mi);
	f = file_at(&h, "/usr/lib/x86_64-linux-gnu/libc.so.6");
	ck_assert_int_eq(mt_json_i64(f, "allocations"), 11);
	ck_assert_int_eq(mt_json_i64(f, "frees"), 1);
	ck_assert_int_le(mt_json_i64(file_at(&h, mi), "allocations"), 100);
	ck_assert_msg(strstr(h.err,
			     "memtrack: WARNING: process 0 mapped files with allocators after "
			     "its handoff, probed without stopping it: its calls into them "
			     "before that may be missing: /usr/lib/x86_64-linux-gnu/"
			     "libmimalloc.so.2.0\n"),
		      "%s", h.err);
	ck_assert_ptr_nonnull(strstr(h.err, "but for calls into files it mapped later"));
	handoff_free(&h);
}
END_TEST

/* At a dlopen's mapping, what the plugin needs (libmimalloc) is linked ahead: nothing missed. */
START_TEST(handoff_at_map_links_the_plugins_needs)
{
	const char *opts[] = {"--stop-at", "map:plugin_mimalloc.so", NULL};
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_mimalloc.so"), "100", NULL};
	struct handoff h;

	handoff_run(&h, "pty", "continue", opts, cmd);
	assert_handed_and_ended(&h, 0);
	assert_counts(&h, 11 + 100, 1 + 100, 0);
	ck_assert_int_eq(
	    mt_json_i64(file_at(&h, "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2.0"), "allocations"),
	    100);
	ck_assert_ptr_null(strstr(h.err, "may be missing"));
	handoff_free(&h);
}
END_TEST

/*
 * A child forked after the handoff is not memtrack's tracee: not recorded, and said so (its
 * truth, fixtures/README.md: 10 allocations, 10 frees; recorded: none).
 */
START_TEST(handoff_then_fork_is_said_unrecorded)
{
	const char *opts[] = {"--stop-at", "exec", NULL};
	const char *cmd[] = {FIXTURE("scope_cases"), "fork", "10", NULL};
	struct handoff h;
	struct json_object *child;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 0);
	assert_counts(&h, 0, 0, 0);
	child = json_object_array_get_idx(mt_json_get(h.report, "images"), 1);
	ck_assert_ptr_nonnull(child);
	ck_assert_int_eq(json_object_get_boolean(mt_json_get(child, "allocations_recorded")), 0);
	ck_assert_int_eq(
	    json_object_get_boolean(mt_json_get(image_at(&h, "0", 0), "allocations_recorded")), 1);
	ck_assert_msg(strstr(h.err,
			     "memtrack: WARNING: processes created after the handoff are not "
			     "recorded (memtrack is not their tracer): 1 image(s), pids: "),
		      "%s", h.err);
	handoff_free(&h);
}
END_TEST

/* gdb attaches and detaches at once: the process runs on by itself, no kill -CONT needed. */
START_TEST(handoff_runs_on_after_gdb_detaches)
{
	const char *opts[] = {"--stop-at", "map:plugin_plain.so", NULL};
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_plain.so"), "100", NULL};
	struct handoff h;

	handoff_run(&h, "pty", "detach", opts, cmd);
	ck_assert_msg(strstr(h.o.out, "gdb: [Inferior 1 (process "), "%s", h.o.out);
	ck_assert_msg(strstr(h.o.out, "rc=0\n"), "%s\n%s", h.o.out, h.err);
	assert_counts(&h, 7 + 100, 1 + 100, 0);
	handoff_free(&h);
}
END_TEST

/*
 * A debugger attaches and detaches faster than memtrack looks at the process (every 100 ms):
 * gdb as fast as it goes, and ptrace_blip, in microseconds. The attach is seen all the same (the
 * BPF side marks it), and the process runs on, every time.
 */
START_TEST(handoff_runs_on_after_quick_detaches)
{
	const char *opts[] = {"--stop-at", "exec", NULL};
	const char *cmd[] = {FIXTURE("exit_code"), "3", NULL};
	const char *how[] = {"quick", "blip:" FIXTURE("ptrace_blip")};

	for (int i = 0; i < 10; i++) {
		struct handoff h;

		handoff_run(&h, i % 2 ? "pty" : "setsid", how[i / 2 % 2], opts, cmd);
		ck_assert_msg(strstr(h.o.out, "gdb: [Inferior 1 (process "), "%s", h.o.out);
		ck_assert_msg(strstr(h.o.out, "rc=3\n"), "run %d: %s\n%s", i, h.o.out, h.err);
		handoff_free(&h);
	}
}
END_TEST

/*
 * A debugger that only detaches, and a process that dlopens a plugin without an allocator and
 * ends at once: often gone before memtrack could open the plugin's mapping. Found again by its
 * inode, the plugin is not named as mapped late: the run is complete, every time.
 */
START_TEST(handoff_then_quick_end_stays_complete)
{
	const char *opts[] = {"--stop-at", "exec", NULL};
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_plain.so"), "0", NULL};

	for (int i = 0; i < 20; i++) {
		struct handoff h;

		handoff_run(&h, "setsid", "quick", opts, cmd);
		ck_assert_msg(strstr(h.o.out, "rc=0\n"), "run %d: %s\n%s", i, h.o.out, h.err);
		assert_handoff(&h, image_at(&h, "0", 0), 0, 0, NULL);
		handoff_free(&h);
	}
}
END_TEST

/* exec:GLOB: any process of the tree, here the shell's first child, by the program's name. */
START_TEST(stop_at_exec_glob_any_process)
{
	const char *opts[] = {"--stop-at", "exec:exit_*", NULL};
	const char *cmd[] = {"sh", "-c", FIXTURE("exit_code") " 3; exit 4", NULL};
	struct handoff h;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 4);
	ck_assert_msg(
	    strstr(h.err, "(0.0) is stopped right after its exec of " FIXTURE("exit_code")), "%s",
	    h.err);
	ck_assert_msg(strstr(h.o.out, "exited with code 03]"), "%s", h.o.out);
	handoff_free(&h);
}
END_TEST

/* proc:POS aims at one process: the shell's second child, not its first (same program). */
START_TEST(stop_at_proc_position)
{
	const char *opts[] = {"--stop-at", "proc:0.1,exec:exit_code", NULL};
	const char *cmd[] = {"sh", "-c", FIXTURE("exit_code") " 1; " FIXTURE("exit_code") " 2",
			     NULL};
	struct handoff h;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 2);
	ck_assert_msg(strstr(h.err, "(0.1) is stopped"), "%s", h.err);
	ck_assert_msg(strstr(h.o.out, "exited with code 02]"), "%s", h.o.out);
	handoff_free(&h);
}
END_TEST

/* map:GLOB matches the name a program asks for (the soname), not only the file's real name. */
START_TEST(stop_at_map_by_soname)
{
	const char *opts[] = {"--stop-at", "map:libmimalloc.so.2", NULL};
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_mimalloc.so"), "100", NULL};
	struct handoff h;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 0);
	ck_assert_msg(
	    strstr(h.err, "right after mapping /usr/lib/x86_64-linux-gnu/libmimalloc.so.2."), "%s",
	    h.err);
	assert_counts(&h, 11 + 100, 1 + 100, 0);
	handoff_free(&h);
}
END_TEST

/* map:GLOB matches the files execve maps: the dynamic loader, at the command's exec. */
START_TEST(stop_at_map_of_the_loader)
{
	const char *opts[] = {"--stop-at", "map:ld-linux-*", NULL};
	const char *cmd[] = {FIXTURE("exit_code"), "5", NULL};
	struct handoff h;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 5);
	ck_assert_msg(strstr(h.err, "(0) is stopped right after its exec, which mapped "
				    "/usr/lib/x86_64-linux-gnu/ld-linux-x86-64.so.2"),
		      "%s", h.err);
	handoff_free(&h);
}
END_TEST

/*
 * Two processes map the plugin at the same moment: the first match is handed over, the other
 * runs on under memtrack, and the whole tree is recorded (fixtures/README.md: each as
 * dlopen_plugin plugin_plain.so 10).
 */
START_TEST(stop_at_first_match_only)
{
	const char *opts[] = {"--stop-at", "map:plugin_plain.so", NULL};
	const char *cmd[] = {FIXTURE("map_race"), FIXTURE("plugin_plain.so"), "10", NULL};
	struct handoff h;

	handoff_run(&h, "setsid", "continue", opts, cmd);
	assert_handed_and_ended(&h, 0);
	ck_assert_int_eq(mt_count_lines(h.err, "is stopped right after mapping"), 1);
	assert_counts(&h, 2 * (7 + 10), 2 * (1 + 10), 0);
	handoff_free(&h);
}
END_TEST

/* pid is gone (reaped by whoever it was left to) within 5 s. */
static bool gone_soon(pid_t pid)
{
	const struct timespec tick = {0, 10 * 1000 * 1000};

	for (int i = 0; i < 500 && mt_pid_alive(pid); i++)
		nanosleep(&tick, NULL);
	return !mt_pid_alive(pid);
}

/* The pid memtrack printed in text ("Attach with: gdb -p PID"). */
static pid_t printed_pid(const char *text)
{
	const char *p = strstr(text, "gdb -p ");

	ck_assert_msg(p, "no pid printed: %s", text);
	return (pid_t)atoi(p + 7);
}

/*
 * A process handed off at its exec waits for a debugger that no one runs, memtrack in a session
 * of its own: a termination signal, to memtrack or to its group (timeout, Ctrl-C, a closed
 * terminal), ends that wait within 1 s, the process getting the signal as in any run, memtrack
 * exiting like it. Before, a signal to the group stayed pending for the stopped process and
 * memtrack waited for it for ever.
 */
START_TEST(handoff_waiting_for_a_debugger_ends_on_signals)
{
	static const struct {
		int sig;
		bool group;
	} sends[] = {{SIGTERM, false}, {SIGTERM, true}, {SIGINT, true}, {SIGHUP, true}};
	char dir[64], art[128], out[128];
	const char *argv[] = {MEMTRACK,		  "run", "-q", "-o", art, "--stop-at", "exec", "--",
			      FIXTURE("sleeper"), "30",	 NULL};
	int status;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	for (size_t i = 0; i < sizeof(sends) / sizeof(sends[0]); i++) {
		pid_t pid, cmd;
		char *text;
		long ms;

		unlink(out);
		pid = mt_spawn_session(argv, out);
		text = mt_wait_for_text(out, "Attach with", 60000);
		ck_assert_msg(text, "memtrack did not hand the process off");
		cmd = printed_pid(text);
		free(text);
		ck_assert_int_eq(kill(sends[i].group ? -pid : pid, sends[i].sig), 0);
		ms = mt_wait_ms(pid, 1000, &status);
		if (ms < 0)
			kill(cmd, SIGKILL); /* left stopped by the failed run */
		ck_assert_msg(ms >= 0, "signal %d%s: memtrack still waits after 1 s", sends[i].sig,
			      sends[i].group ? " to the group" : "");
		ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) == 128 + sends[i].sig,
			      "signal %d: status %#x", sends[i].sig, status);
		ck_assert(gone_soon(cmd));
	}
	unlink(art);
	unlink(out);
	rmdir(dir);
}
END_TEST

/*
 * gdb took the handed-off process and holds it at its prompt: a SIGTERM to memtrack ends the
 * tree as documented, the handed-off process with it (the signal, which gdb holds, then SIGKILL
 * after the two grace periods): memtrack exits within 10 s. Before, its SIGKILL spared the
 * handed-off process and memtrack waited for gdb.
 */
START_TEST(handoff_held_by_gdb_ends_with_the_tree)
{
	char dir[64], art[128], out[128], said[128], pid_s[16];
	const char *argv[] = {MEMTRACK,		  "run", "-q", "-o", art, "--stop-at", "exec", "--",
			      FIXTURE("sleeper"), "30",	 NULL};
	const char *gdb[] = {"gdb", "-nx", "-q", "-p", pid_s, "-ex", "echo attached\\n", NULL};
	int status, in;
	pid_t pid, cmd, g;
	char *text;
	long ms;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(out, sizeof(out), "%s/out", dir);
	snprintf(said, sizeof(said), "%s/gdb", dir);
	pid = mt_spawn_session(argv, out);
	text = mt_wait_for_text(out, "Attach with", 60000);
	ck_assert_msg(text, "memtrack did not hand the process off");
	cmd = printed_pid(text);
	free(text);
	snprintf(pid_s, sizeof(pid_s), "%d", (int)cmd);
	g = mt_spawn_fed(gdb, said, &in);
	ck_assert_int_gt(g, 0);
	text = mt_wait_for_text(said, "attached", 60000);
	ck_assert_msg(text, "gdb did not attach");
	free(text);
	ck_assert_int_eq(kill(pid, SIGTERM), 0);
	ms = mt_wait_ms(pid, 10000, &status);
	if (ms < 0)
		kill(cmd, SIGKILL);
	close(in); /* gdb reads the end of its commands and quits */
	ck_assert_int_ge(mt_wait_ms(g, 30000, &in), 0);
	ck_assert_msg(ms >= 0, "memtrack still waits 10 s after SIGTERM");
	ck_assert_msg(WIFEXITED(status) && WEXITSTATUS(status) >= 128, "status %#x", status);
	ck_assert(gone_soon(cmd));
	unlink(art);
	unlink(out);
	unlink(said);
	rmdir(dir);
}
END_TEST

/* A stop point never reached: one line at the end, the run as without it. */
START_TEST(stop_point_never_reached)
{
	const char *argv[] = {MEMTRACK,	   "run",
			      "-o",	   "/dev/null",
			      "--stop-at", "map:nothing-*.so",
			      "--",	   FIXTURE("exit_code"),
			      "6",	   NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 6);
	ck_assert_int_eq(
	    mt_count_lines(o.err, "memtrack: the stop point 'map:nothing-*.so' was never reached"),
	    1);
	mt_out_free(&o);
}
END_TEST

/* A malformed stop point: one sentence, exit 2. */
START_TEST(stop_point_malformed)
{
	static const char *const bad[] = {"nowhere", "map:",	"exec:",	"proc:1",
					  "proc:0.", "proc:0,", "proc:0.x,exec"};
	const char *argv[] = {MEMTRACK, "run", "--stop-at", NULL, "--", "true", NULL};
	struct mt_out o;

	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		argv[3] = bad[i];
		ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
		ck_assert_int_eq(o.code, 2);
		ck_assert_msg(strstr(o.err, "invalid --stop-at"), "%s: %s", bad[i], o.err);
		mt_out_free(&o);
	}
}
END_TEST

/* The --trace-stops file of one run of cmd (tracked, the artifact thrown away), opt: NULL or one.
 */
static char *trace_with(const char *opt, const char *const *cmd)
{
	char dir[64], path[128], *text;
	const char *argv[32] = {MEMTRACK, "run", "-q", "-o", "/dev/null", "--trace-stops", path};
	struct mt_out o;
	size_t n = 7;

	mt_tmpdir(dir);
	snprintf(path, sizeof(path), "%s/stops.json", dir);
	if (opt)
		argv[n++] = opt;
	argv[n++] = "--";
	for (size_t i = 0; cmd[i] && n < 31; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	mt_out_free(&o);
	text = mt_slurp_trace(path);
	ck_assert_ptr_nonnull(text);
	unlink(path);
	rmdir(dir);
	return text;
}

static char *trace_of(const char *const *cmd)
{
	return trace_with(NULL, cmd);
}

/* 20 runs of cmd give one trace, byte for byte; returns it. */
static char *one_trace_in_20(const char *const *cmd)
{
	char *first = trace_of(cmd);

	for (int i = 1; i < 20; i++) {
		char *again = trace_of(cmd);

		ck_assert_msg(strcmp(first, again) == 0, "run %d differs:\n%s\nfrom:\n%s", i, again,
			      first);
		free(again);
	}
	return first;
}

/*
 * Siblings that run at the same time, exec, and dlopen files of their own and shared ones, with
 * and without an allocator: one trace in 20 runs. Every process that maps libmimalloc without
 * links of its own stops for it (the 3 children; the leaves inherited theirs), whoever came
 * first; a file is one record, not a detail of whichever stop handled it.
 */
START_TEST(concurrent_tree_has_one_trace)
{
	const char *cmd[] = {FIXTURE("conc_tree"), MT_BUILD_DIR "/fixtures", NULL};
	char *t = one_trace_in_20(cmd);

	ck_assert_int_eq(mt_count_lines(t, "\"kind\":\"map\",\"path\":\"/usr/lib/x86_64-linux-gnu/"
					   "libmimalloc.so.2"),
			 3);
	ck_assert_int_eq(mt_count_lines(t, "\"kind\":\"exec\""), 7);
	ck_assert_int_eq(mt_count_lines(t, "{\"kind\":\"file\",\"path\":\"" MT_BUILD_DIR
					   "/fixtures/plugin_race_"),
			 6);
	ck_assert_int_eq(mt_count_lines(t, "\"family\":\"mimalloc\""), 1);
	free(t);
}
END_TEST

/* The seq of proc's "mapped" record of a path ending in name, or -1. */
static int64_t mapped_seq(const char *trace, const char *proc, const char *name)
{
	char want[64], *line;
	int64_t seq = -1;

	snprintf(want, sizeof(want), "{\"proc\":\"%s\",", proc);
	for (const char *l = trace; *l && seq < 0;
	     l += strcspn(l, "\n") + (l[strcspn(l, "\n")] != 0)) {
		struct json_object *o;
		const char *path;

		line = strndup(l, strcspn(l, "\n"));
		ck_assert_ptr_nonnull(line);
		o = strncmp(line, want, strlen(want)) || !strstr(line, "\"kind\":\"mapped\"")
			? NULL
			: json_tokener_parse(line);
		free(line);
		if (!o)
			continue;
		path = json_object_get_string(mt_json_get(o, "path"));
		if (strlen(path) > strlen(name) &&
		    !strcmp(path + strlen(path) - strlen(name), name))
			seq = mt_json_i64(o, "seq");
		json_object_put(o);
	}
	return seq;
}

/*
 * --trace-maps: each process's first mapping of every file after its exec is in the log, in the
 * process's own order, files without an allocator included: conc_tree's leaves dlopen
 * plugin_plain.so, then plugin_race_K.so, neither with an allocator. The same in two runs.
 */
START_TEST(trace_maps_orders_every_file)
{
	const char *cmd[] = {FIXTURE("conc_tree"), MT_BUILD_DIR "/fixtures", NULL};
	char *a = trace_with("--trace-maps", cmd), *b = trace_with("--trace-maps", cmd);
	char leaf[16], race[32];

	ck_assert_str_eq(a, b);
	/* The root, its 3 children and their 6 leaves (after their exec) dlopen it. */
	ck_assert_int_eq(mt_count_lines(a, "\"kind\":\"mapped\",\"path\":\"" MT_BUILD_DIR
					   "/fixtures/plugin_plain.so\""),
			 9);
	/* Leaf j of child k is conc_tree DIR leaf 2k+j: plugin_plain.so, then its plugin_race. */
	for (int k = 0; k < 3; k++) {
		for (int j = 0; j < 2; j++) {
			snprintf(leaf, sizeof(leaf), "0.%d.%d", k, j);
			snprintf(race, sizeof(race), "/plugin_race_%d.so", 2 * k + j);
			ck_assert_int_ge(mapped_seq(a, leaf, "/plugin_plain.so"), 1);
			ck_assert_int_gt(mapped_seq(a, leaf, race),
					 mapped_seq(a, leaf, "/plugin_plain.so"));
		}
	}
	free(a);
	free(b);
}
END_TEST

/* A shell pipeline of three programs that run at the same time: one trace in 20 runs. */
START_TEST(pipeline_has_one_trace)
{
	const char *cmd[] = {
	    "sh", "-c", "xz -c " FIXTURE("conc_tree") " | bzip2 -c | zstd -c >/dev/null", NULL};
	char *t = one_trace_in_20(cmd);

	ck_assert_ptr_nonnull(strstr(t, "{\"proc\":\"0.2\",\"thread\":0,\"seq\":1,\"kind\":"
					"\"exec\",\"path\":\"/usr/bin/zstd\"}"));
	free(t);
}
END_TEST

/* A clone names the new thread in a key of its own: the record's "thread" is the creator's. */
START_TEST(clone_names_its_new_thread_apart)
{
	const char *cmd[] = {FIXTURE("threads"), "2", NULL};
	char *t = trace_of(cmd);

	ck_assert_ptr_nonnull(strstr(t, "{\"proc\":\"0\",\"thread\":0,\"seq\":2,\"kind\":"
					"\"clone\",\"new_thread\":1}\n"));
	ck_assert_ptr_nonnull(strstr(t, "{\"proc\":\"0\",\"thread\":0,\"seq\":3,\"kind\":"
					"\"clone\",\"new_thread\":2}\n"));
	free(t);
}
END_TEST

/* The record of t whose text starts with start, as a string of its own (to free). */
static char *record_of(const char *t, const char *start)
{
	const char *r = strstr(t, start);

	ck_assert_msg(r != NULL, "no record %s in:\n%s", start, t);
	return strndup(r, strcspn(r, "\n"));
}

/*
 * The frames from the entry point to main, outermost last: glibc's __libc_start_call_main is a
 * static function, named where glibc's debug file is installed (libc6-dbg), else by its file.
 */
static bool ends_at_entry(const char *rec, const char *from_main)
{
	static const char *const tails[] = {"\"__libc_start_call_main\",\"__libc_start_main\","
					    "\"_start\"]}",
					    "\"libc.so.6\",\"__libc_start_main\",\"_start\"]}"};
	const char *m = strstr(rec, from_main);

	if (!m)
		return false;
	m += strlen(from_main);
	for (size_t i = 0; i < sizeof(tails) / sizeof(tails[0]); i++)
		if (!strcmp(m, tails[i]))
			return true;
	return false;
}

/*
 * A map stop names who mapped the file, by function names only, the same in every run:
 * dlopen_plugin's load_plugin dlopens plugin_mimalloc.so, and ld.so maps the plugin's
 * libmimalloc (a file with probes) inside that dlopen. From dlopen out, the frames are exactly
 * the program's; inside it, glibc's loader's. The libc map stop at start-up is ld.so's alone.
 */
START_TEST(map_stop_names_who_mapped)
{
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_mimalloc.so"), "10", NULL};
	char *a = trace_of(cmd), *b = trace_of(cmd);
	char *mi = record_of(a, "{\"proc\":\"0\",\"thread\":0,\"seq\":2,\"kind\":\"map\",\"path\":"
				"\"/usr/lib/x86_64-linux-gnu/libmimalloc.so.2");
	char *libc = record_of(a, "{\"proc\":\"0\",\"thread\":0,\"seq\":1,\"kind\":\"map\","
				  "\"path\":\"/usr/lib/x86_64-linux-gnu/libc.so.6\",");

	ck_assert_str_eq(a, b);
	ck_assert_msg(ends_at_entry(mi, ",\"dlopen\",\"load_plugin\",\"main\","), "%s", mi);
	/* No offsets, no frame the unwinder could not follow or name. */
	ck_assert_msg(!strstr(mi, "+0x") && !strstr(mi, "\"?\"") && !strstr(mi, "[cut]"), "%s", mi);
	ck_assert_msg(strstr(libc, ",\"backtrace\":[\"") && !strstr(libc, "\"main\"") &&
			  !strstr(libc, "+0x") && !strstr(libc, "[cut]"),
		      "%s", libc);
	free(libc);
	free(mi);
	free(a);
	free(b);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("stops");
	TCase *tc = tcase_create("stop points");
	TCase *traces = tcase_create("traces");
	TCase *tools = tcase_create("tools");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, stop_point_never_reached);
	tcase_add_test(tc, stop_point_malformed);
	suite_add_tcase(s, tc);
	tcase_set_timeout(traces, 600);
	tcase_add_test(traces, concurrent_tree_has_one_trace);
	tcase_add_test(traces, clone_names_its_new_thread_apart);
	tcase_add_test(traces, map_stop_names_who_mapped);
	tcase_add_test(traces, trace_maps_orders_every_file);
	suite_add_tcase(s, traces);

	/* gdb and script, which the kernel matrix's guest lacks. */
	tcase_set_tags(tools, "tools");
	tcase_set_timeout(tools, 240);
	mt_tcase_add_tool_test(tools, handoff_at_exec_in_own_session, "gdb script");
	mt_tcase_add_tool_test(tools, handoff_at_map_in_a_pty_records_before_and_after,
			       "gdb script");
	mt_tcase_add_tool_test(tools, handoff_at_a_worker_threads_mapping, "gdb script");
	mt_tcase_add_tool_test(tools, handoff_runs_on_after_gdb_detaches, "gdb script");
	mt_tcase_add_tool_test(tools, handoff_runs_on_after_quick_detaches, "gdb script");
	mt_tcase_add_tool_test(tools, handoff_then_quick_end_stays_complete, "gdb script");
	mt_tcase_add_tool_test(tools, handoff_at_exec_records_from_the_first_call, "gdb script");
	mt_tcase_add_tool_test(tools, handoff_at_exec_links_the_preload, "gdb script");
	mt_tcase_add_tool_test(tools, handoff_then_dlopen_is_probed_and_said, "gdb script");
	mt_tcase_add_tool_test(tools, handoff_at_map_links_the_plugins_needs, "gdb script");
	mt_tcase_add_tool_test(tools, handoff_then_fork_is_said_unrecorded, "gdb script");
	mt_tcase_add_tool_test(tools, stop_at_exec_glob_any_process, "gdb script");
	mt_tcase_add_tool_test(tools, stop_at_proc_position, "gdb script");
	mt_tcase_add_tool_test(tools, stop_at_map_by_soname, "gdb script");
	mt_tcase_add_tool_test(tools, stop_at_map_of_the_loader, "gdb script");
	mt_tcase_add_tool_test(tools, stop_at_first_match_only, "gdb script");
	tcase_add_test(tc, handoff_waiting_for_a_debugger_ends_on_signals);
	mt_tcase_add_tool_test(tools, handoff_held_by_gdb_ends_with_the_tree, "gdb");
	mt_tcase_add_tool_test(tools, pipeline_has_one_trace, "gdb script");
	suite_add_tcase(s, tools);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
