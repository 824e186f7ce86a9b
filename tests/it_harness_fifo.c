// SPDX-License-Identifier: GPL-2.0
/*
 * exec-harness under CodSpeed's runner, through the runner twin (tests/twin, Rust): the twin
 * creates /tmp/runner.ctl.fifo and /tmp/runner.ack.fifo as runner 5.0.2 does, runs
 * exec-harness with the runner's stdin plan and environment, decodes every frame with serde
 * types declared as the runner's crates/runner-shared/src/fifo.rs declares them (bincode 1, as
 * the runner decodes), and asserts every frame, its order and its answer; its last line is its
 * verdict. Rust rather than C so that the decoding is serde's and bincode's own, not a second
 * reading of the format by the code under test. With --tracker the twin is the whole memory
 * executor: codspeed-memtrack above exec-harness, the IPC's Enable/Disable for the FIFO's
 * StartProfiler/StopProfiler, and the one artifact decoded with rmp-serde and zstd.
 *
 * Each run gets a mount namespace with a private /tmp: the runner's FIFO paths are fixed, and
 * exec-harness runs of other tests on the machine must not find this twin's FIFOs. Without cargo
 * or Debian's crates (tools/install-deps) the tests cannot build the twin: each is then reported
 * skipped, with why (tests/lib/suite.h; with MT_NO_SKIP=1, as in CI, that fails).
 */
#include <check.h>
#include <errno.h>
#include <limits.h>
#include <pwd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "lib/twin.h"

#define TWIN	  MT_TWIN_BIN("runner-twin")
/* `make install` of this build, outside /tmp (which each run replaces), with CodSpeed's
 * capability layout: setcap on memtrack, the tracker; exec-harness a plain file. */
#define TWIN_ROOT MT_BUILD_DIR "/tests/twin-root"
#define TWIN_BIN  TWIN_ROOT "/usr/bin"
/* What the tracker needs as nobody on a kernel that runs the tracepoint watcher (it_track.c). */
#define CAPS	  "cap_bpf,cap_perfmon,cap_sys_ptrace,cap_checkpoint_restore,cap_dac_read_search+ep"
#define CHECKER	  MT_SOURCE_DIR "/tools/check-codspeed-artifacts"

/*
 * Walltime: a warm-up then 4 rounds; no warm-up and 3 rounds; and a single warm-up run longer
 * than max_time, which is the result (CodSpeed's early return: one marked round); and a shell
 * that fails when it starts with SIGPIPE ignored (bash's `trap -p` shows an ignored-at-entry
 * signal): Rust's Command, which runs CodSpeed's rounds, restores its default action. Memory
 * mode runs each once. churn N makes N malloc/free pairs (fixtures/README.md).
 */
#define CHURN FIXTURE("churn")
/* Compact, as serde writes it; the twin reads the plan to know each benchmark's URI. */
static const char plan_text[] =
    "[{\"command\":[\"" CHURN "\",\"100\"],\"walltime_args\":{\"warmup_time\":\"0.2s\","
    "\"max_time\":null,\"min_time\":null,\"max_rounds\":4,\"min_rounds\":null}},"
    "{\"command\":[\"true\"],\"name\":\"no warm-up\",\"walltime_args\":{\"warmup_time\":"
    "\"0s\",\"max_time\":null,\"min_time\":null,\"max_rounds\":null,\"min_rounds\":3}},"
    "{\"command\":[\"sleep\",\"0.01\"],\"name\":\"early return\",\"walltime_args\":"
    "{\"warmup_time\":\"1ms\",\"max_time\":\"1ns\"}},"
    "{\"command\":[\"bash\",\"-c\",\"[ -z \\\"$(trap -p PIPE)\\\" ]\"],"
    "\"name\":\"sigpipe\",\"walltime_args\":{\"warmup_time\":\"0s\",\"max_rounds\":1}}]\n";

/*
 * Memory mode end to end, under the tracker: benchmarks of known truth (fixtures/README.md),
 * churn's two counts apart so that a benchmark's events cannot pass for another's, and the
 * `mapping` fixture's maps and brk of known sizes. `leaks` runs before exec-harness in the same
 * bash: its 100 allocations are outside every window.
 */
static const char tracked_plan_text[] =
    "[{\"command\":[\"" CHURN
    "\",\"100\"]},{\"command\":[\"" FIXTURE("mapping") "\"]},{\"command\":[\"" CHURN
						       "\",\"300\"]}]\n";
#define TRACKED "--tracker " TWIN_BIN "/codspeed-memtrack --before " FIXTURE("leaks")

static char plan_path[PATH_MAX], tracked_plan_path[PATH_MAX];

enum who { AS_ROOT, AS_NOBODY };

/* The shell script that runs the twin in a /tmp of its own, dropping to drop's ids first. */
static void twin_script(char *script, size_t n, const char *drop, const char *mode,
			const char *plan, const char *fault, const char *extra)
{
	char before[64], after[2 * PATH_MAX];

	mt_tmp_keep_trees(before, sizeof(before), after, sizeof(after));
	snprintf(script, n,
		 "%smount -t tmpfs -o mode=1777 tmpfs /tmp && %sexec %s%s --mode %s --bin %s "
		 "--plan %s --checker %s%s%s %s",
		 before, after, drop, TWIN, mode, TWIN_BIN, plan, CHECKER, fault ? " --fault " : "",
		 fault ?: "", extra);
}

/*
 * The twin in its own /tmp, as root or as nobody, with a plan and further arguments; the test
 * fails unless its verdict is ok. Leaves the twin's output in twin_out.
 */
static struct mt_out twin_out;
static const char *const no_leak_check[] = {"ASAN_OPTIONS=detect_leaks=0", NULL};

static void twin_with(const char *mode, const char *plan, const char *fault, const char *extra,
		      enum who who)
{
	struct passwd *pw = getpwnam("nobody");
	char script[PATH_MAX * 5], drop[128] = "";
	struct mt_out *o = &twin_out;
	const char *verdict;

	mt_out_free(o);
	if (who == AS_NOBODY) {
		ck_assert_ptr_nonnull(pw);
		snprintf(drop, sizeof(drop), "setpriv --reuid=%u --regid=%u --clear-groups ",
			 (unsigned int)pw->pw_uid, (unsigned int)pw->pw_gid);
	}
	twin_script(script, sizeof(script), drop, mode, plan, fault, extra);
	/*
	 * Under the tracker, exec-harness (in a sanitizer build, memtrack's sanitized binary) is
	 * ptraced: LeakSanitizer's exit check, which attaches with ptrace itself, then waits for
	 * ever (as in it_security's signal storm). The tracker's own leaks are it_track's.
	 */
	ck_assert_int_eq(
	    mt_run((const char *[]){"unshare", "--mount", "/bin/sh", "-c", script, NULL},
		   strstr(extra, "--tracker") ? no_leak_check : NULL, NULL, 180, o),
	    0);
	verdict = strstr(o->out, "twin: ok");
	ck_assert_msg(o->code == 0 && verdict, "twin %s %s %s exited %d:\n%s%s", mode, fault ?: "",
		      extra, o->code, o->out, o->err);
	/* The verdict is the last line: nothing was checked after it. */
	ck_assert_ptr_eq(strchr(verdict, '\n'), o->out + strlen(o->out) - 1);
}

static void twin(const char *mode, const char *fault, enum who who)
{
	twin_with(mode, plan_path, fault, "", who);
}

START_TEST(test_walltime_frames)
{
	/* SetVersion, GetIntegrationMode twice (instrument-hooks tries its analysis instrument
	 * first), SetIntegration, then per benchmark StartProfiler, a marker pair per round in
	 * the sample window, StopProfiler, CurrentBenchmark; the results JSON as by hand. */
	twin("walltime", NULL, AS_ROOT);
	twin("walltime", NULL, AS_NOBODY);
}
END_TEST

START_TEST(test_memory_frames)
{
	/* One run per benchmark between StartProfiler and StopProfiler, nothing tracked nor
	 * written by exec-harness, and no privilege needed: as nobody it runs all the same. */
	twin("memory", NULL, AS_ROOT);
	twin("memory", NULL, AS_NOBODY);
}
END_TEST

START_TEST(test_runner_never_answers)
{
	twin("walltime", "silent", AS_ROOT);
	twin("memory", "stall:StopProfiler", AS_NOBODY);
}
END_TEST

START_TEST(test_runner_answers_err)
{
	twin("walltime", "err:StartProfiler", AS_ROOT);
	twin("memory", "err:GetIntegrationMode", AS_NOBODY);
}
END_TEST

START_TEST(test_runner_closes_fifo)
{
	twin("walltime", "close:AddMarker", AS_NOBODY);
	twin("memory", "close:StopProfiler", AS_ROOT);
}
END_TEST

/*
 * Memory mode as runner 5.0.2 runs it: codspeed-memtrack (capabilities on it alone) wraps the
 * bash that runs exec-harness (none); StartProfiler and StopProfiler become the IPC's Enable and
 * Disable; the one artifact holds each benchmark's truth inside its window and nothing else,
 * next to the runner's timestamps file.
 */
START_TEST(test_memory_end_to_end)
{
	static const char *const said[] = {"twin: ipc 5: Disable -> Ack", "churn: 100 Malloc",
					   "mapping: 22 Malloc", "churn: 300 Malloc"};

	for (enum who who = AS_ROOT; who <= AS_NOBODY; who++) {
		twin_with("memory", tracked_plan_path, NULL, TRACKED, who);
		for (size_t i = 0; i < sizeof(said) / sizeof(said[0]); i++)
			ck_assert_msg(strstr(twin_out.out, said[i]), "no '%s' in:\n%s", said[i],
				      twin_out.out);
	}
}
END_TEST

/* A failing runner with the tracker above exec-harness: the same bounded end, nothing left. */
START_TEST(test_memory_end_to_end_faults)
{
	twin_with("memory", tracked_plan_path, "err:StartProfiler", TRACKED, AS_NOBODY);
	twin_with("memory", tracked_plan_path, "close:StopProfiler", TRACKED, AS_ROOT);
	twin_with("memory", tracked_plan_path, "stall:CurrentBenchmark", TRACKED, AS_ROOT);
}
END_TEST

START_TEST(test_fifos_left_behind)
{
	/* FIFOs nobody reads (a runner gone): exec-harness runs as by hand, its results intact. */
	twin("walltime", "stale", AS_ROOT);
}
END_TEST

/* The twin, or why its tests are skipped. */
static const char *build_twin(void)
{
	if (geteuid())
		return "the twin's private /tmp needs root (unshare --mount)";
	return mt_build_twin();
}

static void write_plan(char *path, const char *name, const char *text)
{
	FILE *f;

	snprintf(path, PATH_MAX, "%s/%s", TWIN_ROOT, name);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

static void prepare(void)
{
	const char *setcap[] = {"setcap", CAPS, TWIN_BIN "/memtrack", NULL};
	struct mt_out o = {0};

	ck_assert_int_eq(mt_make_install(TWIN_ROOT, &o), 0);
	ck_assert_msg(o.code == 0, "make install: %s%s", o.out, o.err);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(setcap, NULL, NULL, 30, &o), 0);
	ck_assert_msg(o.code == 0, "setcap: %s", o.err);
	mt_out_free(&o);
	write_plan(plan_path, "plan.json", plan_text);
	write_plan(tracked_plan_path, "plan-tracked.json", tracked_plan_text);
}

/*
 * The capabilities given to the tracker do not reach the exec-harness the runner runs; the
 * codspeed-memtrack the runner finds on PATH is make install's link to that tracker, and
 * answers its install check as codspeed-memtrack 1.4.0 does (the runner splits it at the
 * first space and wants at least 1.4.0).
 */
START_TEST(test_capability_layout)
{
	const char *getcap[] = {"getcap", TWIN_BIN "/memtrack", TWIN_BIN "/exec-harness", NULL};
	const char *version[] = {TWIN_BIN "/codspeed-memtrack", "--version", NULL};
	struct mt_out o = {0};
	char target[PATH_MAX];
	ssize_t n;
	struct stat st;

	n = readlink(TWIN_BIN "/codspeed-memtrack", target, sizeof(target) - 1);
	ck_assert_msg(n > 0, "make install's codspeed-memtrack is not a link: %s", strerror(errno));
	target[n] = '\0';
	ck_assert_str_eq(target, "memtrack");
	ck_assert_int_eq(mt_run(version, NULL, NULL, 30, &o), 0);
	ck_assert_msg(o.code == 0, "codspeed-memtrack --version: %s", o.err);
	ck_assert_str_eq(o.out, "memtrack 1.4.0\n");
	mt_out_free(&o);
	ck_assert_int_eq(lstat(TWIN_BIN "/exec-harness", &st), 0);
	ck_assert_msg(S_ISREG(st.st_mode), "make install's exec-harness is not a file of its own");
	ck_assert_int_eq(mt_run(getcap, NULL, NULL, 30, &o), 0);
	ck_assert_msg(strstr(o.out, TWIN_BIN "/memtrack cap_") && !strstr(o.out, "exec-harness"),
		      "getcap:\n%s", o.out);
	mt_out_free(&o);
}
END_TEST

static Suite *fifo_suite(const char *why)
{
	Suite *s = suite_create("exec-harness-fifo");
	TCase *tc = tcase_create("twin");

	if (!why)
		tcase_add_unchecked_fixture(tc, prepare, NULL);
	/* A stalled runner costs exec-harness's 5 s answer timeout per run. */
	tcase_set_timeout(tc, 300);
	mt_add_test_unless(tc, test_capability_layout, why);
	mt_add_test_unless(tc, test_walltime_frames, why);
	mt_add_test_unless(tc, test_memory_frames, why);
	mt_add_test_unless(tc, test_runner_never_answers, why);
	mt_add_test_unless(tc, test_runner_answers_err, why);
	mt_add_test_unless(tc, test_runner_closes_fifo, why);
	mt_add_test_unless(tc, test_fifos_left_behind, why);
	mt_add_test_unless(tc, test_memory_end_to_end, why);
	mt_add_test_unless(tc, test_memory_end_to_end_faults, why);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(fifo_suite(build_twin()));
}
