// SPDX-License-Identifier: GPL-2.0
/*
 * Integration tests of tracers inside the traced tree (docs/STOPS.md, "A tracer inside the tree"):
 * strace, gdb and a program that traces its own child (PTRACE_TRACEME), run under memtrack as
 * bare, with their own output and status; memtrack steps aside for each process they trace,
 * records its allocations, and says which processes went to which tracer.
 */
#include <check.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/* Every run here ends in seconds: a hang is killed at this bound and fails the test. */
#define BOUND_S 60

struct traced {
	struct mt_out bare, o;	    /* the command alone, and under memtrack run -q */
	struct json_object *report; /* report --json of memtrack's artifact */
};

/* Run cmd alone, then under memtrack (opts: more run options, may be NULL). */
static void run_both(struct traced *r, const char *const *opts, const char *const *cmd)
{
	ck_assert_int_eq(mt_run(cmd, NULL, NULL, BOUND_S, &r->bare), 0);
	r->report = mt_run_report(opts, cmd, BOUND_S, &r->o);
	ck_assert_msg(r->report, "no report: rc %d\n%s", r->o.code, r->o.err);
	/* Bounded: nothing was killed at the bound, and the status is the command's own. */
	ck_assert_msg(r->o.code == r->bare.code, "rc %d under memtrack, %d bare\n%s\n%s", r->o.code,
		      r->bare.code, r->o.out, r->o.err);
}

static void traced_free(struct traced *r)
{
	json_object_put(r->report);
	mt_out_free(&r->bare);
	mt_out_free(&r->o);
}

/* How many images were handed to a tracer (each said so: to whom, at which call). */
static int handed_to_tracers(const struct traced *r)
{
	struct json_object *a = mt_json_get(r->report, "images");
	int n = 0;

	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *ho = mt_json_get(json_object_array_get_idx(a, i), "handoff");

		if (!ho)
			continue;
		ck_assert_str_eq(json_object_get_string(mt_json_get(ho, "to")), "tracer");
		ck_assert_ptr_nonnull(strstr(json_object_get_string(mt_json_get(ho, "at")),
					     "to its tracer, process "));
		n++;
	}
	return n;
}

/* The last image of the process at position pos. */
static struct json_object *last_image(const struct traced *r, const char *pos)
{
	struct json_object *a = mt_json_get(r->report, "images"), *found = NULL;

	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *g = json_object_array_get_idx(a, i);
		const char *p = json_object_get_string(mt_json_get(g, "position"));

		if (p && strcmp(p, pos) == 0)
			found = g;
	}
	ck_assert_msg(found, "no image at %s: %s", pos, json_object_to_json_string(a));
	return found;
}

/* The position of the process handed over by request (PTRACE_TRACEME, ...) whose last image
 * made allocs allocations: the traced program. */
static const char *traced_program(const struct traced *r, const char *request, int64_t allocs)
{
	struct json_object *a = mt_json_get(r->report, "images");

	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *g = json_object_array_get_idx(a, i), *ho;
		const char *pos = json_object_get_string(mt_json_get(g, "position"));
		struct json_object *last;

		ho = mt_json_get(g, "handoff");
		if (!ho || !strstr(json_object_get_string(mt_json_get(ho, "at")), request))
			continue;
		last = last_image(r, pos);
		if (mt_json_i64(last, "allocations") == allocs &&
		    mt_json_i64(last, "frees") == allocs &&
		    json_object_get_boolean(mt_json_get(last, "allocations_recorded")))
			return pos;
	}
	ck_abort_msg("no process handed over at its %s with %lld allocations: %s", request,
		     (long long)allocs, json_object_to_json_string(a));
	return NULL;
}

/* The tracer ran as bare (status 0, no refusal) and got at least n processes of the tree. */
static void assert_tracer_ran(const struct traced *r, int n)
{
	ck_assert_int_eq(r->o.code, 0);
	ck_assert_ptr_null(strstr(r->o.err, "Operation not permitted"));
	ck_assert_int_ge(handed_to_tracers(r), n);
}

static void assert_complete(const struct traced *r)
{
	ck_assert_msg(json_object_get_boolean(mt_json_get(r->report, "complete")), "%s",
		      json_object_to_json_string(mt_json_get(r->report, "incomplete")));
}

/* strace -f, quiet: the same (empty) output and status, its tracees handed over to it. */
START_TEST(strace_follows_forks_of_true)
{
	const char *cmd[] = {"strace", "-f", "-o", "/dev/null", "true", NULL};
	struct traced r;

	run_both(&r, NULL, cmd);
	ck_assert_int_eq(r.o.code, 0);
	ck_assert_str_eq(r.o.out, r.bare.out);
	ck_assert_str_eq(r.o.err, r.bare.err);
	/* strace's probes of PTRACE_SEIZE and of PTRACE_GET_SYSCALL_INFO, then the command. */
	ck_assert_int_ge(handed_to_tracers(&r), 2);
	assert_complete(&r);
	traced_free(&r);
}
END_TEST

/* strace -f sh -c 'echo hi': the shell's output, strace's trace of it, strace's status. */
START_TEST(strace_traces_a_shell)
{
	const char *cmd[] = {"strace", "-f", "sh", "-c", "echo hi", NULL};
	struct traced r;

	run_both(&r, NULL, cmd);
	assert_tracer_ran(&r, 2);
	ck_assert_str_eq(r.o.out, "hi\n");
	ck_assert_msg(strstr(r.o.err, "write(1, \"hi\\n\", 3)"), "%s", r.o.err);
	ck_assert_msg(strstr(r.o.err, "+++ exited with 0 +++\n"), "%s", r.o.err);
	traced_free(&r);
}
END_TEST

/*
 * The program strace runs is recorded: scope_cases alloc 100 makes 100 malloc/free pairs, in the
 * process strace attached (PTRACE_SEIZE), after its exec.
 */
START_TEST(strace_tracee_allocations_recorded)
{
	const char *cmd[] = {"strace", "-f",  "-o", "/dev/null", FIXTURE("scope_cases"),
			     "alloc",  "100", NULL};
	struct traced r;

	run_both(&r, NULL, cmd);
	ck_assert_int_eq(r.o.code, 0);
	traced_program(&r, "PTRACE_SEIZE", 100);
	assert_complete(&r);
	traced_free(&r);
}
END_TEST

/*
 * A process the traced shell forks belongs to strace (the kernel attaches it to strace, not to
 * memtrack): not recorded, and said so, with why.
 */
START_TEST(strace_children_of_tracee_said_unrecorded)
{
	const char *cmd[] = {
	    "strace", "-f", "-o", "/dev/null", "sh", "-c", FIXTURE("scope_cases") " alloc 10; true",
	    NULL};
	char *art = mt_tmpfile();
	const char *argv[] = {MEMTRACK,	   "run",    "-o", art,
			      "--",	   "strace", "-f", "-o",
			      "/dev/null", "sh",     "-c", FIXTURE("scope_cases") " alloc 10; true",
			      NULL};
	struct json_object *child;
	struct traced r;
	struct mt_out o;

	run_both(&r, NULL, cmd);
	ck_assert_int_eq(r.o.code, 0);
	child = NULL;
	for (size_t i = 0; i < json_object_array_length(mt_json_get(r.report, "images")); i++) {
		struct json_object *g =
		    json_object_array_get_idx(mt_json_get(r.report, "images"), i);

		if (!json_object_get_boolean(mt_json_get(g, "allocations_recorded")))
			child = g;
	}
	ck_assert_msg(child, "%s", json_object_to_json_string(r.report));
	ck_assert_int_eq(mt_json_i64(child, "allocations"), 0);
	ck_assert_int_eq(mt_json_i64(child, "exec"), 1); /* its fork's image, then its exec's */
	ck_assert_int_eq(mt_run(argv, NULL, NULL, BOUND_S, &o), 0);
	ck_assert_msg(strstr(o.err,
			     "memtrack: WARNING: processes created after the handoff are not "
			     "recorded (memtrack is not their tracer): 2 image(s), pids: "),
		      "%s", o.err);
	ck_assert_msg(strstr(o.err, ") was handed to its tracer, process 0 (/usr/bin/strace), at "
				    "its PTRACE_SEIZE: "),
		      "%s", o.err);
	mt_out_free(&o);
	unlink(art);
	free(art);
	traced_free(&r);
}
END_TEST

/* gdb -batch -ex run -ex bt: the program runs under gdb, gdb stops at its signal and says where. */
START_TEST(gdb_runs_a_program)
{
	const char *cmd[] = {
	    "gdb", "-batch", "-nx", "-ex", "run", "-ex", "bt", "--args", FIXTURE("die_signal"),
	    "11",  NULL};
	struct traced r;

	run_both(&r, NULL, cmd);
	/* gdb's check of ptrace's features, then the startup shell that execs the program. */
	assert_tracer_ran(&r, 2);
	ck_assert_str_eq(r.o.out, r.bare.out);
	ck_assert_msg(strstr(r.o.out, "Program received signal SIGSEGV"), "%s", r.o.out);
	ck_assert_msg(strstr(r.o.out, " in main ("), "%s", r.o.out);
	traced_free(&r);
}
END_TEST

/* The program gdb runs (through its startup shell) is recorded from its first instruction. */
START_TEST(gdb_inferior_allocations_recorded)
{
	const char *cmd[] = {
	    "gdb",   "-batch", "-nx", "-ex", "run", "--args", FIXTURE("scope_cases"),
	    "alloc", "100",    NULL};
	struct traced r;

	run_both(&r, NULL, cmd);
	ck_assert_int_eq(r.o.code, 0);
	ck_assert_msg(strstr(r.o.out, "exited normally]"), "%s", r.o.out);
	traced_program(&r, "PTRACE_TRACEME", 100);
	assert_complete(&r);
	traced_free(&r);
}
END_TEST

/* A child that asks its parent to trace it, stops, allocates, exits: as bare, and recorded. */
START_TEST(traceme_child_runs_and_is_recorded)
{
	const char *cmd[] = {FIXTURE("traceme"), "10", NULL};
	struct json_object *g, *ho;
	struct traced r;

	run_both(&r, NULL, cmd);
	ck_assert_int_eq(r.o.code, 0);
	ck_assert_str_eq(r.o.out, "traced: stop, exit 5\n");
	ck_assert_str_eq(r.o.out, r.bare.out);
	g = last_image(&r, "0.0");
	ho = mt_json_get(g, "handoff");
	ck_assert_ptr_nonnull(ho);
	ck_assert_str_eq(
	    json_object_get_string(mt_json_get(ho, "at")),
	    "to its tracer, process 0 (" FIXTURE("traceme") "), at its PTRACE_TRACEME");
	ck_assert_int_eq(mt_json_i64(mt_json_get(ho, "before"), "allocations"), 0);
	ck_assert_int_eq(mt_json_i64(g, "allocations"), 10);
	ck_assert_int_eq(mt_json_i64(g, "frees"), 10);
	assert_complete(&r);
	traced_free(&r);
}
END_TEST

/* The traced child execs: its tracer sees the exec's SIGTRAP, the new program is recorded. */
START_TEST(traceme_child_execs_and_is_recorded)
{
	const char *cmd[] = {FIXTURE("traceme"), "10", FIXTURE("scope_cases"), "alloc", "20", NULL};
	struct traced r;

	run_both(&r, NULL, cmd);
	ck_assert_int_eq(r.o.code, 0);
	ck_assert_str_eq(r.o.out, "traced: stop, exec, exit 0\n");
	ck_assert_int_eq(mt_json_i64(last_image(&r, "0.0"), "allocations"), 20);
	assert_complete(&r);
	traced_free(&r);
}
END_TEST

/* PTRACE_ATTACH by one process of the tree on another: the attach works, both run on. */
START_TEST(attach_to_a_sibling)
{
	const char *cmd[] = {
	    "sh", "-c", FIXTURE("sleeper") " 0.3 & " FIXTURE("ptrace_blip") " $!; wait $!", NULL};
	struct traced r;

	run_both(&r, NULL, cmd);
	ck_assert_int_eq(r.o.code, 0);
	ck_assert_str_eq(r.o.out, "detached\n");
	ck_assert_int_eq(handed_to_tracers(&r), 1);
	traced_free(&r);
}
END_TEST

/*
 * Anti-debugging tricks: a child traces its parent, or a process its sibling, with PTRACE_ATTACH
 * or PTRACE_SEIZE, waits for the stop and detaches. Each goes on as bare: the tracing works, the
 * same output and status, the target handed over to the tracer.
 */
START_TEST(tracing_a_parent_or_sibling_runs_as_bare)
{
	static const char *const who[] = {"parent", "sibling"}, *const how[] = {"attach", "seize"};
	const char *cmd[] = {FIXTURE("ptrace_kin"), NULL, NULL, NULL};
	struct traced r;

	for (size_t i = 0; i < 4; i++) {
		cmd[1] = who[i / 2];
		cmd[2] = how[i % 2];
		run_both(&r, NULL, cmd);
		ck_assert_int_eq(r.o.code, 0);
		ck_assert_str_eq(r.o.out, r.bare.out);
		ck_assert_msg(strstr(r.o.out, "traced "), "%s %s: %s", cmd[1], cmd[2], r.o.out);
		ck_assert_int_eq(handed_to_tracers(&r), 1);
		traced_free(&r);
	}
}
END_TEST

/*
 * The command traces its parent, memtrack itself (PTRACE_ATTACH, then PTRACE_SEIZE): it works as
 * with any parent (the bare run's parent here would be this test), memtrack says so once and the
 * run ends as a run does. Before, memtrack's supervisor was the thread the call stopped, and the
 * tracing process's SIGCHLD stop waited for it: both stopped for ever, only SIGKILL ended them.
 */
START_TEST(tracing_memtrack_itself_goes_on)
{
	static const char *const how[] = {"attach", "seize"};
	const char *cmd[] = {FIXTURE("ptrace_kin"), "up", NULL, NULL};
	struct json_object *report;
	struct mt_out o;

	for (size_t i = 0; i < 2; i++) {
		cmd[2] = how[i];
		report = mt_run_report(NULL, cmd, BOUND_S, &o);
		ck_assert_msg(o.code == 0, "%s: rc %d (137: killed at the bound)\n%s", how[i],
			      o.code, o.err);
		ck_assert_str_eq(o.out, "traced up\n");
		ck_assert_int_eq(mt_count_lines(o.err, "traced memtrack itself (PTRACE_"), 1);
		ck_assert_ptr_nonnull(report);
		json_object_put(report);
		mt_out_free(&o);
	}
}
END_TEST

/* The tracer's call is in --trace-stops, with the process it got, the same in every run. */
START_TEST(traceme_in_trace_stops)
{
	char *a, *b, dir[64], pa[128], pb[128];
	const char *cmd[] = {FIXTURE("traceme"), "3", NULL};
	const char *opts_a[] = {"--trace-stops", pa, NULL}, *opts_b[] = {"--trace-stops", pb, NULL};
	struct json_object *ra, *rb;
	struct mt_out o;

	mt_tmpdir(dir);
	snprintf(pa, sizeof(pa), "%s/a.jsonl", dir);
	snprintf(pb, sizeof(pb), "%s/b.jsonl", dir);
	ra = mt_run_report(opts_a, cmd, BOUND_S, &o);
	mt_out_free(&o);
	rb = mt_run_report(opts_b, cmd, BOUND_S, &o);
	mt_out_free(&o);
	a = mt_slurp_trace(pa);
	b = mt_slurp_trace(pb);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	ck_assert_msg(strstr(a, "{\"proc\":\"0.0\",\"thread\":0,\"seq\":1,\"kind\":\"ptrace\","
				"\"request\":\"PTRACE_TRACEME\",\"handed_over\":\"0.0\"}\n"),
		      "%s", a);
	ck_assert_str_eq(a, b);
	free(a);
	free(b);
	json_object_put(ra);
	json_object_put(rb);
}
END_TEST

static Suite *innertrace_suite(void)
{
	Suite *s = suite_create("innertrace");
	TCase *strace = tcase_create("strace"), *gdb = tcase_create("gdb"),
	      *own = tcase_create("own");

	tcase_set_timeout(strace, 4 * BOUND_S);
	tcase_set_timeout(gdb, 4 * BOUND_S);
	tcase_set_timeout(own, 4 * BOUND_S);
	/* strace and gdb, which the kernel matrix's guest lacks: skipped there, said so. */
	tcase_set_tags(strace, "tools");
	tcase_set_tags(gdb, "tools");
	mt_tcase_add_tool_test(strace, strace_follows_forks_of_true, "strace");
	mt_tcase_add_tool_test(strace, strace_traces_a_shell, "strace");
	mt_tcase_add_tool_test(strace, strace_tracee_allocations_recorded, "strace");
	mt_tcase_add_tool_test(strace, strace_children_of_tracee_said_unrecorded, "strace");
	mt_tcase_add_tool_test(gdb, gdb_runs_a_program, "gdb");
	mt_tcase_add_tool_test(gdb, gdb_inferior_allocations_recorded, "gdb");
	tcase_add_test(own, traceme_child_runs_and_is_recorded);
	tcase_add_test(own, traceme_child_execs_and_is_recorded);
	tcase_add_test(own, attach_to_a_sibling);
	tcase_add_test(own, tracing_a_parent_or_sibling_runs_as_bare);
	tcase_add_test(own, tracing_memtrack_itself_goes_on);
	tcase_add_test(own, traceme_in_trace_stops);
	suite_add_tcase(s, strace);
	suite_add_tcase(s, gdb);
	suite_add_tcase(s, own);
	return s;
}

int main(void)
{
	return mt_run_suite(innertrace_suite());
}
