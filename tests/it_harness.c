// SPDX-License-Identifier: GPL-2.0
/*
 * Integration tests of `memtrack exec-harness`: run the built binary, then read what it wrote
 * (the results file, its exit status, its stderr) the way a CI benchmark runner would.
 */
#include <check.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <ftw.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>
#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define MS 1e6

struct run_env {
	const char *input;   /* stdin text, NULL for none */
	const char *cwd;     /* NULL: unchanged */
	const char *profile; /* CODSPEED_PROFILE_FOLDER, NULL: unset */
};

static char tmpdir[] = "/tmp/mt-it-harness-XXXXXX";
/* The last run's output: the next run and teardown free it. */
static struct mt_out last;

static void setup(void)
{
	strcpy(tmpdir, "/tmp/mt-it-harness-XXXXXX");
	ck_assert_ptr_nonnull(mkdtemp(tmpdir));
}

static int rm_one(const char *path, const struct stat *st, int flag, struct FTW *ftw)
{
	(void)st;
	(void)flag;
	(void)ftw;
	return remove(path);
}

static void teardown(void)
{
	mt_out_free(&last);
	nftw(tmpdir, rm_one, 16, FTW_DEPTH | FTW_PHYS);
}

/* Runs memtrack with argv, feeding env->input on stdin. */
static const struct mt_out *run_env(const char **argv, const struct run_env *env)
{
	char profile[PATH_MAX + 32];
	const char *env_extra[] = {profile, NULL};

	if (env->profile)
		snprintf(profile, sizeof(profile), "CODSPEED_PROFILE_FOLDER=%s", env->profile);
	else
		snprintf(profile, sizeof(profile), "CODSPEED_PROFILE_FOLDER");
	mt_out_free(&last);
	ck_assert_int_eq(mt_run_input(argv, env_extra, env->cwd, env->input ?: "", 120, &last), 0);
	ck_assert_msg(WIFEXITED(last.status), "memtrack died: status 0x%x, stderr:\n%s",
		      last.status, last.err);
	return &last;
}

static const struct mt_out *run(const char **argv, const char *input)
{
	struct run_env env = {.input = input};

	return run_env(argv, &env);
}

#define ARGS(...) ((const char *[]){MEMTRACK, "exec-harness", __VA_ARGS__, NULL})

static void results_path(const char *dir, pid_t pid, char *path, size_t len)
{
	snprintf(path, len, "%s/results/%d.json", dir, (int)pid);
}

static struct json_object *load_results(const char *dir, const struct mt_out *r)
{
	char path[PATH_MAX];
	struct json_object *root;

	results_path(dir, r->pid, path, sizeof(path));
	ck_assert_msg(access(path, F_OK) == 0, "no results file %s; stderr:\n%s", path, r->err);
	root = json_object_from_file(path);
	ck_assert_msg(root != NULL, "%s is not JSON: %s", path, json_util_get_last_err());
	return root;
}

static struct json_object *benchmark(struct json_object *root, size_t i)
{
	struct json_object *b = mt_json_get(root, "benchmarks");

	ck_assert(json_object_is_type(b, json_type_array));
	ck_assert_uint_gt(json_object_array_length(b), i);
	return json_object_array_get_idx(b, i);
}

/* The invariants of any benchmark's statistics. */
static void check_stats(struct json_object *s)
{
	double min = mt_json_double(s, "min_ns"), q1 = mt_json_double(s, "q1_ns"),
	       med = mt_json_double(s, "median_ns");
	double q3 = mt_json_double(s, "q3_ns"), max = mt_json_double(s, "max_ns"),
	       mean = mt_json_double(s, "mean_ns");
	double rounds = mt_json_double(s, "rounds"), total = mt_json_double(s, "total_time");

	ck_assert_msg(min <= q1 && q1 <= med && med <= q3 && q3 <= max,
		      "quartiles out of order: %g %g %g %g %g", min, q1, med, q3, max);
	ck_assert(min <= mean && mean <= max);
	ck_assert(mt_json_double(s, "stdev_ns") >= 0);
	ck_assert(rounds >= 1);
	/* total_time is in seconds: the sum of the rounds. */
	ck_assert_msg(total >= rounds * min / 1e9 * 0.999 && total <= rounds * max / 1e9 * 1.001,
		      "total_time %g s does not fit %g rounds of %g..%g ns", total, rounds, min,
		      max);
	ck_assert(mt_json_double(s, "iqr_outlier_rounds") <= rounds);
	ck_assert(mt_json_double(s, "stdev_outlier_rounds") <= rounds);
	ck_assert(mt_json_double(s, "iter_per_round") == 1);
}

static bool one_line(const char *s)
{
	const char *nl = strchr(s, '\n');

	return nl && nl[1] == '\0';
}

START_TEST(test_sleep_twenty_rounds)
{
	struct json_object *root, *b, *s, *creator, *config;
	const struct mt_out *r;

	r = run(ARGS("--output", tmpdir, "--max-rounds", "20", "--", "sleep", "0.01"), NULL);
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	root = load_results(tmpdir, r);
	creator = mt_json_get(root, "creator");
	ck_assert_str_eq(json_object_get_string(mt_json_get(creator, "name")), "memtrack");
	ck_assert_int_eq(json_object_get_int(mt_json_get(creator, "pid")), r->pid);
	ck_assert_str_eq(
	    json_object_get_string(mt_json_get(mt_json_get(root, "instrument"), "type")),
	    "walltime");
	ck_assert_uint_eq(json_object_array_length(mt_json_get(root, "benchmarks")), 1);
	b = benchmark(root, 0);
	ck_assert_str_eq(json_object_get_string(mt_json_get(b, "name")), "sleep 0.01");
	ck_assert_str_eq(json_object_get_string(mt_json_get(b, "uri")), "exec_harness::sleep 0.01");
	config = mt_json_get(b, "config");
	ck_assert(mt_json_double(config, "max_rounds") == 20);
	ck_assert(mt_json_double(config, "warmup_time_ns") == 1e9);
	ck_assert_ptr_null(
	    mt_json_get(config, "max_time_ns")); /* rounds given: no default max_time */
	s = mt_json_get(b, "stats");
	check_stats(s);
	ck_assert(mt_json_double(s, "rounds") == 20);
	ck_assert(mt_json_double(s, "warmup_iters") >= 1);
	ck_assert_msg(mt_json_double(s, "median_ns") >= 5 * MS &&
			  mt_json_double(s, "median_ns") <= 200 * MS,
		      "median %g ns for sleep 0.01", mt_json_double(s, "median_ns"));
	ck_assert_msg(strstr(r->err, "median") && strstr(r->err, "sleep 0.01"), "no table:\n%s",
		      r->err);
	json_object_put(root);
}
END_TEST

START_TEST(test_max_time_bounds_rounds)
{
	struct json_object *root, *s;
	const struct mt_out *r;

	r = run(ARGS("-o", tmpdir, "--warmup-time", "100ms", "--max-time", "300ms", "-q", "--",
		     "sleep", "0.01"),
		NULL);
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	root = load_results(tmpdir, r);
	s = mt_json_get(benchmark(root, 0), "stats");
	check_stats(s);
	/*
	 * At least 10 ms a round: (300 ms + avg) / avg is at most 31. On a loaded machine a round
	 * can take 300 ms: then one round is CodSpeed's answer too (benchmark_loop.rs).
	 */
	ck_assert_msg(mt_json_double(s, "rounds") >= 1 && mt_json_double(s, "rounds") <= 31,
		      "%g rounds", mt_json_double(s, "rounds"));
	ck_assert_msg(r->err[0] == '\0', "--quiet printed:\n%s", r->err);
	json_object_put(root);
}
END_TEST

START_TEST(test_stdin_benchmarks)
{
	const char *input =
	    "[{\"command\": [\"true\"], \"name\": \"noop\"},\n"
	    " {\"command\": [\"sleep\", \"0.005\"], \"walltime_args\": {\"warmup_time\": \"50ms\", "
	    "\"max_time\": \"0\", \"min_time\": null, \"max_rounds\": 3, \"min_rounds\": null}},\n"
	    " {\"command\": [\"sh\", \"-c\", \"exit 0\"], \"name\": \"shell\", \"walltime_args\": "
	    "{\"warmup_time\": \"0\", \"max_time\": \"0\", \"min_rounds\": 2, "
	    "\"max_rounds\": 2}}]\n";
	struct json_object *root, *b;
	const struct mt_out *r;

	r = run(ARGS("-o", tmpdir, "--warmup-time", "50ms", "--max-time", "200ms", "-"), input);
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	root = load_results(tmpdir, r);
	ck_assert_uint_eq(json_object_array_length(mt_json_get(root, "benchmarks")), 3);
	b = benchmark(root, 0);
	ck_assert_str_eq(json_object_get_string(mt_json_get(b, "name")), "noop");
	ck_assert_str_eq(json_object_get_string(mt_json_get(b, "uri")), "exec_harness::noop");
	check_stats(mt_json_get(b, "stats"));
	/* max_time 0 lifts the command line's 200 ms: 3 and 2 rounds whatever the machine's load.
	 */
	b = benchmark(root, 1);
	ck_assert_str_eq(json_object_get_string(mt_json_get(b, "name")), "sleep 0.005");
	check_stats(mt_json_get(b, "stats"));
	ck_assert_msg(mt_json_double(mt_json_get(b, "stats"), "rounds") == 3, "%g rounds:\n%s",
		      mt_json_double(mt_json_get(b, "stats"), "rounds"), r->err);
	b = benchmark(root, 2);
	ck_assert_str_eq(json_object_get_string(mt_json_get(b, "name")), "shell");
	ck_assert(mt_json_double(mt_json_get(b, "stats"), "rounds") == 2);
	ck_assert(mt_json_double(mt_json_get(b, "stats"), "warmup_iters") == 0);
	json_object_put(root);
}
END_TEST

START_TEST(test_failing_command)
{
	char path[PATH_MAX];
	const struct mt_out *r;

	r = run(ARGS("-o", tmpdir, "--warmup-time", "50ms", "--", "false"), NULL);
	ck_assert_int_eq(r->code, 1);
	ck_assert_msg(strstr(r->err, "benchmark 'false' failed: the command exited with status 1"),
		      "%s", r->err);
	/* No results for an aborted run: a runner must not upload half a benchmark. */
	results_path(tmpdir, r->pid, path, sizeof(path));
	ck_assert_int_ne(access(path, F_OK), 0);

	r = run(ARGS("-o", tmpdir, "--warmup-time", "50ms", "--", "sh", "-c", "exit 3"), NULL);
	ck_assert_int_eq(r->code, 3);
}
END_TEST

START_TEST(test_missing_command)
{
	const struct mt_out *r;

	r = run(ARGS("-o", tmpdir, "--", "/nonexistent/mt-no-such-command"), NULL);
	ck_assert_int_eq(r->code, 127);
	ck_assert_msg(strstr(r->err, "memtrack: cannot run '/nonexistent/mt-no-such-command': "),
		      "%s", r->err);
	/* Found but not executable: 126, the shell convention. */
	r = run(ARGS("-o", tmpdir, "--", "/etc/passwd"), NULL);
	ck_assert_int_eq(r->code, 126);
	ck_assert_msg(strstr(r->err, "memtrack: cannot run '/etc/passwd': "), "%s", r->err);
}
END_TEST

START_TEST(test_bad_json)
{
	static const char *const inputs[] = {"[{\"command\": [\"true\"]", "not json",
					     "{\"command\": [\"true\"]}", "[]",
					     "[{\"command\": [\"true\"], \"walltime_args\": "
					     "{\"max_time\": \"3 parsecs\"}}]"};
	const struct mt_out *r;
	size_t i;

	for (i = 0; i < sizeof(inputs) / sizeof(inputs[0]); i++) {
		r = run(ARGS("-o", tmpdir, "-"), inputs[i]);
		ck_assert_msg(r->code == 2, "'%s': exit %d", inputs[i], r->code);
		ck_assert_msg(one_line(r->err) && !strncmp(r->err, "memtrack exec-harness: ", 23),
			      "'%s': not one sentence:\n%s", inputs[i], r->err);
	}
}
END_TEST

START_TEST(test_bad_duration)
{
	const struct mt_out *r;

	r = run(ARGS("-o", tmpdir, "--max-time", "3 parsecs", "--", "true"), NULL);
	ck_assert_int_eq(r->code, 2);
	ck_assert_msg(one_line(r->err) &&
			  strstr(r->err, "--max-time: invalid duration '3 parsecs'"),
		      "%s", r->err);
	r = run(ARGS("-o", tmpdir, "--warmup-time", "soon", "--", "true"), NULL);
	ck_assert_int_eq(r->code, 2);
	ck_assert(one_line(r->err));
}
END_TEST

START_TEST(test_usage_errors)
{
	const struct mt_out *r;

	r = run(ARGS("-o", tmpdir, "--min-rounds", "9", "--max-rounds", "3", "--", "true"), NULL);
	ck_assert_int_eq(r->code, 2);
	ck_assert_msg(one_line(r->err) && strstr(r->err, "min_rounds (9) cannot be greater"), "%s",
		      r->err);
	r = run(ARGS("--frobnicate", "--", "true"), NULL);
	ck_assert_int_eq(r->code, 2);
	ck_assert(one_line(r->err));
}
END_TEST

static void check_folder(const char *dir, const struct mt_out *r)
{
	struct json_object *root;

	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	root = load_results(dir, r);
	check_stats(mt_json_get(benchmark(root, 0), "stats"));
	json_object_put(root);
}

START_TEST(test_output_folders)
{
	struct run_env env = {.profile = tmpdir};
	char dot[PATH_MAX];
	const struct mt_out *r;

	r = run_env(ARGS("-q", "--warmup-time", "0", "--max-rounds", "2", "--", "true"), &env);
	check_folder(tmpdir, r);
	/* Neither --output nor the variable: ./.codspeed. */
	env.profile = NULL;
	env.cwd = tmpdir;
	r = run_env(ARGS("-q", "--warmup-time", "0", "--max-rounds", "2", "--", "true"), &env);
	snprintf(dot, sizeof(dot), "%s/.codspeed", tmpdir);
	check_folder(dot, r);
}
END_TEST

START_TEST(test_memory)
{
	struct json_object *root, *mem;
	const struct mt_out *r;

	r = run(ARGS("-o", tmpdir, "--warmup-time", "0", "--max-rounds", "3", "--memory", "--",
		     "sh", "-c", "true"),
		NULL);
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	root = load_results(tmpdir, r);
	ck_assert(mt_json_double(mt_json_get(benchmark(root, 0), "stats"), "rounds") == 3);
	mem = mt_json_get(benchmark(root, 0), "memory");
	/* Runners read every file of results/: the artifact lives beside it, not in it. */
	ck_assert_msg(strstr(json_object_get_string(mt_json_get(mem, "artifact")), "/memtrack/"),
		      "%s", json_object_get_string(mt_json_get(mem, "artifact")));
	ck_assert_msg(access(json_object_get_string(mt_json_get(mem, "artifact")), F_OK) == 0,
		      "no artifact %s", json_object_get_string(mt_json_get(mem, "artifact")));
	/* sh allocates: its totals cannot be zero, and nothing may have been dropped. */
	ck_assert(mt_json_double(mem, "peak_bytes") > 0);
	ck_assert(mt_json_double(mem, "allocations") > 0);
	ck_assert(mt_json_double(mem, "allocated_bytes") >= mt_json_double(mem, "peak_bytes"));
	ck_assert(mt_json_double(mem, "live_bytes_at_exit") <=
		  mt_json_double(mem, "allocated_bytes"));
	ck_assert(mt_json_double(mem, "dropped") == 0);
	ck_assert_msg(strstr(r->err, "allocations") && strstr(r->err, "live at exit"),
		      "no memory line:\n%s", r->err);
	json_object_put(root);
}
END_TEST

/*
 * Memory mode's benchmarks share one tracker, its event consumer and its spawning thread (issue
 * 30): each benchmark's totals are its own run's, exactly (fixtures/README.md: churn N makes N
 * allocations and N frees), none lost at a run's end nor carried into the next.
 */
START_TEST(test_memory_plan_exact)
{
	static const int n[] = {100, 1000, 7, 1000, 256};
	char input[1024], path[PATH_MAX];
	struct json_object *rep, *tot;
	const struct mt_out *r;
	size_t len = 0;
	pid_t pid;

	len += snprintf(input + len, sizeof(input) - len, "[");
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++)
		len += snprintf(input + len, sizeof(input) - len,
				"%s{\"name\": \"churn %zu\", \"command\": [\"%s\", \"%d\"]}",
				i ? ", " : "", i, FIXTURE("churn"), n[i]);
	snprintf(input + len, sizeof(input) - len, "]\n");
	r = run(ARGS("-o", tmpdir, "-m", "memory", "-"), input);
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	pid = r->pid;
	for (size_t i = 0; i < sizeof(n) / sizeof(n[0]); i++) {
		double q = n[i] / 256, m = n[i] % 256;

		/* DIR/memtrack/PID-N.mtk, N counting benchmarks from 0 (docs/HARNESS.md). */
		snprintf(path, sizeof(path), "%s/memtrack/%d-%zu.mtk", tmpdir, (int)pid, i);
		r = run((const char *[]){MEMTRACK, "report", "--json", path, NULL}, NULL);
		ck_assert_msg(r->code == 0, "report %s: %s", path, r->err);
		rep = json_tokener_parse(r->out);
		ck_assert_ptr_nonnull(rep);
		ck_assert(mt_json_get(rep, "complete") &&
			  json_object_get_boolean(mt_json_get(rep, "complete")));
		tot = mt_json_get(rep, "totals");
		ck_assert_msg(mt_json_double(tot, "allocations") == n[i],
			      "benchmark %zu: %g allocations, not %d", i,
			      mt_json_double(tot, "allocations"), n[i]);
		ck_assert(mt_json_double(tot, "frees") == n[i]);
		ck_assert_msg(mt_json_double(tot, "bytes_allocated") ==
				  16 * (32896 * q + m * (m + 1) / 2),
			      "benchmark %zu: %g bytes", i, mt_json_double(tot, "bytes_allocated"));
		json_object_put(rep);
	}
}
END_TEST

/* The names in dir but . and .., sorted, one per line. */
static void names_in(const char *dir, char *out, size_t len)
{
	struct dirent **e;
	int n = scandir(dir, &e, NULL, alphasort);
	size_t used = 0;

	ck_assert_msg(n >= 0, "%s: %s", dir, strerror(errno));
	out[0] = '\0';
	for (int i = 0; i < n; i++) {
		if (strcmp(e[i]->d_name, ".") && strcmp(e[i]->d_name, ".."))
			used += snprintf(out + used, len - used, "%s\n", e[i]->d_name);
		free(e[i]);
	}
	free(e);
}

/*
 * A plan whose second benchmark fails leaves what it left before the helper made files beside
 * the runs (harness_helper.c): nothing in results/ for the runner to read (the first
 * benchmark's CodSpeed artifact, converted while the second ran, is removed, and no temporary
 * file stays), and in memtrack/ the artifacts of the two runs that ran, not the third's, made
 * while the second ran.
 */
START_TEST(test_memory_plan_failed_publishes_nothing)
{
	char input[1024], dir[PATH_MAX + 16], names[1024], want[128];
	const struct mt_out *r;

	snprintf(input, sizeof(input),
		 "[{\"command\": [\"%s\", \"100\"]}, {\"command\": [\"false\"]},"
		 " {\"command\": [\"%s\", \"100\"]}]\n",
		 FIXTURE("churn"), FIXTURE("churn"));
	r = run(ARGS("-o", tmpdir, "-m", "memory", "-"), input);
	ck_assert_msg(r->code == 1, "exit %d:\n%s", r->code, r->err);
	ck_assert_msg(strstr(r->err, "benchmark 'false' failed"), "%s", r->err);
	snprintf(dir, sizeof(dir), "%s/results", tmpdir);
	names_in(dir, names, sizeof(names));
	ck_assert_msg(!names[0], "left in results/:\n%s", names);
	snprintf(dir, sizeof(dir), "%s/memtrack", tmpdir);
	names_in(dir, names, sizeof(names));
	snprintf(want, sizeof(want), "%d-0.mtk\n%d-1.mtk\n", (int)r->pid, (int)r->pid);
	ck_assert_str_eq(names, want);
}
END_TEST

/* A benchmark whose command cannot start leaves no artifact, made ahead or not. */
START_TEST(test_memory_plan_unstartable_leaves_no_artifact)
{
	char dir[PATH_MAX + 16], names[1024], want[128];
	const struct mt_out *r;

	r = run(ARGS("-o", tmpdir, "-m", "memory", "-"),
		"[{\"command\": [\"true\"]}, {\"command\": [\"/nonexistent/command\"]},"
		" {\"command\": [\"true\"]}]\n");
	ck_assert_msg(r->code == 127, "exit %d:\n%s", r->code, r->err);
	snprintf(dir, sizeof(dir), "%s/memtrack", tmpdir);
	names_in(dir, names, sizeof(names));
	snprintf(want, sizeof(want), "%d-0.mtk\n", (int)r->pid);
	ck_assert_str_eq(names, want);
}
END_TEST

/* ---- CodSpeed's exec-harness, each expectation with the CodSpeed source it is from */

#define CHECKER MT_SOURCE_DIR "/tools/check-codspeed-artifacts"

/* The rounds of the only benchmark of the results in tmpdir. */
static double rounds_of_run(const char **argv)
{
	struct json_object *root;
	const struct mt_out *r = run(argv, NULL);
	double rounds;

	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	root = load_results(tmpdir, r);
	rounds = mt_json_double(mt_json_get(benchmark(root, 0), "stats"), "rounds");
	json_object_put(root);
	return rounds;
}

/*
 * Items 5 and 6: crates/exec-harness/src/walltime/benchmark_loop.rs. Without warm-up one count
 * is taken by priority (extract_rounds_from_config: max_rounds first); a count of 0 still runs
 * the loop once; min_time 0 without a count stops after the first round.
 */
START_TEST(test_codspeed_round_counts)
{
	ck_assert(rounds_of_run(ARGS("-q", "-o", tmpdir, "--warmup-time", "0", "--min-rounds", "4",
				     "--max-rounds", "10", "--", "true")) == 10);
	ck_assert(rounds_of_run(ARGS("-q", "-o", tmpdir, "--warmup-time", "0", "--max-rounds", "0",
				     "--", "true")) == 1);
	ck_assert(rounds_of_run(ARGS("-q", "-o", tmpdir, "--warmup-time", "0", "--min-rounds", "0",
				     "--", "true")) == 1);
	ck_assert(rounds_of_run(ARGS("-q", "-o", tmpdir, "--warmup-time", "-0", "--min-time", "0",
				     "--", "true")) == 1);
}
END_TEST

/* Item 4: crates/exec-harness/src/walltime/config.rs parse_duration_to_ns, as the config says. */
START_TEST(test_codspeed_durations)
{
	struct json_object *root, *config;
	const struct mt_out *r;

	r = run(ARGS("-q", "-o", tmpdir, "--warmup-time", "500µs", "--max-time", "1m30s",
		     "--max-rounds", "2", "--", "true"),
		NULL);
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	root = load_results(tmpdir, r);
	config = mt_json_get(benchmark(root, 0), "config");
	ck_assert(mt_json_double(config, "warmup_time_ns") == 500000);
	ck_assert(mt_json_double(config, "max_time_ns") == 90e9);
	json_object_put(root);
	r = run(ARGS("-q", "-o", tmpdir, "--warmup-time", "1e-1", "--max-time", "2d",
		     "--max-rounds", "1", "--", "true"),
		NULL);
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	root = load_results(tmpdir, r);
	config = mt_json_get(benchmark(root, 0), "config");
	ck_assert(mt_json_double(config, "warmup_time_ns") == 1e8);
	ck_assert(mt_json_double(config, "max_time_ns") == 172800e9);
	json_object_put(root);
}
END_TEST

/*
 * Item 8: benchmark_loop.rs times a round from spawn() to wait() of the direct child. A command
 * that leaves a child behind ends its round when it exits: here the children wait on a FIFO
 * that is only opened once exec-harness is done, so waiting for them would never end.
 */
START_TEST(test_codspeed_round_ends_with_direct_child)
{
	char fifo[PATH_MAX], script[PATH_MAX + 64];
	const struct mt_out *r;
	int fd;

	snprintf(fifo, sizeof(fifo), "%s/release", tmpdir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	snprintf(script, sizeof(script), "cat %s >/dev/null 2>&1 </dev/null & exit 0", fifo);
	r = run(ARGS("-q", "-o", tmpdir, "--warmup-time", "0", "--max-rounds", "3", "--", "sh",
		     "-c", script),
		NULL);
	/* Release the three children (blocked opening the FIFO) before any assertion. */
	fd = open(fifo, O_WRONLY | O_NONBLOCK);
	if (fd >= 0)
		close(fd);
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	ck_assert(rounds_of_run(ARGS("-q", "-o", tmpdir, "--warmup-time", "0", "--max-rounds", "2",
				     "--", "true")) == 2);
}
END_TEST

/*
 * Item 7: crates/exec-harness/src/uri.rs cuts names to 1024 - 100 bytes, the URI keeping the
 * whole name; lib.rs reads stdin as UTF-8 and refuses anything else.
 */
START_TEST(test_codspeed_names_and_utf8)
{
	char name[1001], uri[1100];
	struct json_object *root, *b;
	const struct mt_out *r;

	memset(name, 'n', 1000);
	name[1000] = '\0';
	r = run(ARGS("-q", "-o", tmpdir, "--name", name, "--warmup-time", "0", "--max-rounds", "1",
		     "--", "true"),
		NULL);
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	root = load_results(tmpdir, r);
	b = benchmark(root, 0);
	ck_assert_uint_eq(strlen(json_object_get_string(mt_json_get(b, "name"))), 924);
	snprintf(uri, sizeof(uri), "exec_harness::%s", name);
	ck_assert_str_eq(json_object_get_string(mt_json_get(b, "uri")), uri);
	json_object_put(root);
	r = run(ARGS("-o", tmpdir, "-"), "[{\"command\": [\"true\"], \"name\": \"\xff\"}]");
	ck_assert_int_eq(r->code, 2);
	ck_assert_msg(strstr(r->err, "not valid UTF-8") && one_line(r->err), "%s", r->err);
}
END_TEST

/* Item 3: serde ignores undeclared keys (crates/exec-harness/src/lib.rs, BenchmarkCommand). */
START_TEST(test_codspeed_unknown_keys)
{
	const struct mt_out *r;

	r = run(ARGS("-q", "-o", tmpdir, "-"),
		"[{\"command\": [\"true\"], \"ignore_failure\": false, \"stdin\": null, "
		"\"walltime_args\": {\"warmup_time\": \"0\", \"max_rounds\": 2, \"future\": 1}}]");
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	ck_assert_msg(strstr(r->err, "unknown key \"ignore_failure\" ignored") &&
			  strstr(r->err, "unknown key \"walltime_args.future\" ignored"),
		      "%s", r->err);
}
END_TEST

/* Items 1 and 2: the name exec-harness (make install's copy; a link here) and --version (main.rs,
 * clap). */
static void link_exec_harness(char *bin, size_t len)
{
	char link[PATH_MAX + 32];

	snprintf(bin, len, "%s/bin", tmpdir);
	ck_assert_int_eq(mkdir(bin, 0755), 0);
	snprintf(link, sizeof(link), "%s/exec-harness", bin);
	ck_assert_int_eq(symlink(MEMTRACK, link), 0);
}

START_TEST(test_codspeed_version_and_name)
{
	char bin[PATH_MAX], exe[PATH_MAX + 32];
	const struct mt_out *r;

	link_exec_harness(bin, sizeof(bin));
	snprintf(exe, sizeof(exe), "%s/exec-harness", bin);
	r = run((const char *[]){exe, "--version", NULL}, NULL);
	ck_assert_int_eq(r->code, 0);
	/* src/binary_installer/versions.rs: "NAME VERSION", at least 1.3.0 (src/binary_pins.rs). */
	ck_assert_str_eq(r->out, "exec-harness 1.3.0\n");
	r = run(ARGS("--version"), NULL);
	ck_assert_str_eq(r->out, "exec-harness 1.3.0\n");
}
END_TEST

/* Decode and validate a profile folder with the independent checker; returns its summary. */
static struct json_object *check_artifacts(const char *mode, const char *folder)
{
	const char *argv[] = {"/usr/bin/python3", CHECKER, mode, folder, NULL};
	struct json_object *summary;
	struct mt_out o = {0};

	ck_assert_int_eq(mt_run_input(argv, NULL, NULL, "", 120, &o), 0);
	ck_assert_msg(o.code == 0, "check-codspeed-artifacts %s: %s", mode, o.err);
	summary = json_tokener_parse(o.out);
	ck_assert_ptr_nonnull(summary);
	mt_out_free(&o);
	return summary;
}

static double events_of_type(struct json_object *summary, const char *type)
{
	struct json_object *v;

	if (!json_object_object_get_ex(mt_json_get(summary, "events"), type, &v))
		return 0;
	return json_object_get_double(v);
}

/*
 * zeroed 7 5 (fixtures/README.md: 7 callocs, 5 mallocs) in memory mode: the report of its
 * artifact counts the 7 zeroed allocations, and CodSpeed's artifact has them as 7 Calloc
 * events beside the 5 Malloc, as the independent checker decodes them.
 */
START_TEST(test_memory_zeroed_allocations)
{
	char input[PATH_MAX + 64], path[PATH_MAX];
	struct json_object *rep, *tot, *summary;
	const struct mt_out *r;

	snprintf(input, sizeof(input),
		 "[{\"name\": \"zeroed\", \"command\": [\"%s\", \"7\", \"5\"]}]\n",
		 FIXTURE("zeroed"));
	r = run(ARGS("-o", tmpdir, "-m", "memory", "-"), input);
	ck_assert_msg(r->code == 0, "exit %d:\n%s", r->code, r->err);
	snprintf(path, sizeof(path), "%s/memtrack/%d-0.mtk", tmpdir, (int)r->pid);
	r = run((const char *[]){MEMTRACK, "report", "--json", path, NULL}, NULL);
	ck_assert_msg(r->code == 0, "report %s: %s", path, r->err);
	rep = json_tokener_parse(r->out);
	ck_assert_ptr_nonnull(rep);
	tot = mt_json_get(rep, "totals");
	ck_assert(mt_json_double(tot, "allocations") == 12);
	ck_assert_msg(mt_json_double(tot, "zeroed_allocations") == 7, "%g zeroed allocations",
		      mt_json_double(tot, "zeroed_allocations"));
	json_object_put(rep);
	r = run((const char *[]){MEMTRACK, "report", path, NULL}, NULL);
	ck_assert_msg(strstr(r->out, "  zeroed            7 (calloc and the like)\n"), "%s",
		      r->out);
	summary = check_artifacts("memory", tmpdir);
	ck_assert(events_of_type(summary, "Calloc") == 7);
	/* calloc(4, 8): CodSpeed's size is n * size */
	ck_assert(mt_json_double(mt_json_get(summary, "bytes"), "Calloc") == 7 * 32);
	ck_assert(events_of_type(summary, "Malloc") == 5);
	ck_assert(events_of_type(summary, "Free") == 12);
	json_object_put(summary);
}
END_TEST

/* memtrack report on calloc_realloc's artifact: fixtures/README.md's bytes, nothing live. */
static void report_calloc_realloc(const char *prof, struct json_object *files)
{
	char path[PATH_MAX * 2];
	struct json_object *rep, *calloc_n;
	const struct mt_out *r;
	bool seen = false;

	json_object_object_foreach(files, name, counts)
	{
		if (!json_object_object_get_ex(counts, "Calloc", &calloc_n))
			continue;
		snprintf(path, sizeof(path), "%s/results/%s", prof, name);
		r = run((const char *[]){MEMTRACK, "report", "--json", path, NULL}, NULL);
		ck_assert_msg(r->code == 0, "report: %s", r->err);
		rep = json_tokener_parse(r->out);
		ck_assert_ptr_nonnull(rep);
		ck_assert(mt_json_double(rep, "events") == 10);
		ck_assert(mt_json_double(rep, "bytes_allocated") == 4714);
		ck_assert(mt_json_double(rep, "live_blocks") == 0);
		ck_assert(mt_json_double(rep, "processes") == 1);
		json_object_put(rep);
		seen = true;
	}
	ck_assert(seen);
}

/*
 * Item 9 and item 5 of "Done when": the exact command line and stdin that CodSpeed's runner
 * writes for exec-harness (src/cli/exec/multi_targets.rs: build_pipe_command_from_json, serde's
 * compact BenchmarkCommand), run by a shell with exec-harness on PATH, in each mode the runner
 * sets through CODSPEED_RUNNER_MODE (src/executor/helpers/env.rs); the results are then
 * validated against the runner's structs and the memory artifact decoded independently, its
 * events counted against the fixtures' truth (fixtures/README.md: churn 1000, calloc_realloc).
 */
START_TEST(test_codspeed_runner_command)
{
	char bin[PATH_MAX], path[PATH_MAX * 2], prof[PATH_MAX + 32], env_prof[PATH_MAX + 64];
	char script[4096];
	const char *env[] = {path, env_prof, NULL, NULL};
	struct json_object *summary, *uris;
	struct mt_out o = {0};

	link_exec_harness(bin, sizeof(bin));
	snprintf(path, sizeof(path), "PATH=%s:%s", bin, getenv("PATH") ?: "/usr/bin:/bin");
	snprintf(script, sizeof(script),
		 "exec-harness - <<'CODSPEED_EOF'\n"
		 "[{\"command\":[\"%s\",\"1000\"],\"walltime_args\":{\"warmup_time\":null,"
		 "\"max_time\":null,\"min_time\":null,\"max_rounds\":3,\"min_rounds\":null}},"
		 "{\"command\":[\"%s\"],\"name\":\"calloc_realloc\",\"walltime_args\":"
		 "{\"warmup_time\":\"0s\",\"max_time\":null,\"min_time\":null,\"max_rounds\":null,"
		 "\"min_rounds\":2}}]\n"
		 "CODSPEED_EOF",
		 FIXTURE("churn"), FIXTURE("calloc_realloc"));

	snprintf(prof, sizeof(prof), "%s/walltime", tmpdir);
	snprintf(env_prof, sizeof(env_prof), "CODSPEED_PROFILE_FOLDER=%s", prof);
	env[2] = "CODSPEED_RUNNER_MODE=walltime";
	ck_assert_int_eq(
	    mt_run_input((const char *[]){"/bin/sh", "-c", script, NULL}, env, NULL, "", 300, &o),
	    0);
	ck_assert_msg(o.code == 0, "exit %d:\n%s", o.code, o.err);
	mt_out_free(&o);
	summary = check_artifacts("walltime", prof);
	ck_assert_uint_eq(json_object_array_length(mt_json_get(summary, "benchmarks")), 2);
	json_object_put(summary);

	snprintf(prof, sizeof(prof), "%s/memory", tmpdir);
	snprintf(env_prof, sizeof(env_prof), "CODSPEED_PROFILE_FOLDER=%s", prof);
	env[2] = "CODSPEED_RUNNER_MODE=memory";
	ck_assert_int_eq(
	    mt_run_input((const char *[]){"/bin/sh", "-c", script, NULL}, env, NULL, "", 300, &o),
	    0);
	ck_assert_msg(o.code == 0, "exit %d:\n%s", o.code, o.err);
	mt_out_free(&o);
	summary = check_artifacts("memory", prof);
	/* churn 1000: 1000 malloc, 1000 free; calloc_realloc: 1 calloc, 6 reallocs that return
	 * a block, the realloc to 0 that frees (a Free), 2 frees (free(NULL) is no event). */
	ck_assert(events_of_type(summary, "Malloc") == 1000);
	ck_assert(events_of_type(summary, "Calloc") == 1);
	ck_assert(events_of_type(summary, "Realloc") == 6);
	ck_assert(events_of_type(summary, "Free") == 1003);
	ck_assert(events_of_type(summary, "AlignedAlloc") == 0);
	uris = mt_json_get(summary, "uris");
	ck_assert_uint_eq(json_object_array_length(uris), 2);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(uris, 1)),
			 "exec_harness::calloc_realloc");
	ck_assert_uint_eq(json_object_object_length(mt_json_get(summary, "files")), 2);
	report_calloc_realloc(prof, mt_json_get(summary, "files"));
	json_object_put(summary);
}
END_TEST

/* Item 4 of the "What to build": memtrack report reads CodSpeed's artifact too. */
START_TEST(test_codspeed_report_corrupt)
{
	char path[PATH_MAX + 32];
	const struct mt_out *r;
	FILE *f;

	snprintf(path, sizeof(path), "%s/1.MemtrackArtifact.msgpack", tmpdir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("\x28\xb5\x2f\xfd garbage", f);
	fclose(f);
	r = run((const char *[]){MEMTRACK, "report", path, NULL}, NULL);
	ck_assert_int_eq(r->code, 1);
	ck_assert_msg(strstr(r->err, "not a CodSpeed memory artifact") && one_line(r->err), "%s",
		      r->err);
}
END_TEST

static Suite *harness_suite(void)
{
	Suite *s = suite_create("exec-harness");
	TCase *tc = tcase_create("binary");

	tcase_add_checked_fixture(tc, setup, teardown);
	/* Each run includes a warm-up and a supervisor start: far above Check's 4 s default. */
	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, test_sleep_twenty_rounds);
	tcase_add_test(tc, test_max_time_bounds_rounds);
	tcase_add_test(tc, test_stdin_benchmarks);
	tcase_add_test(tc, test_failing_command);
	tcase_add_test(tc, test_missing_command);
	tcase_add_test(tc, test_bad_json);
	tcase_add_test(tc, test_bad_duration);
	tcase_add_test(tc, test_usage_errors);
	tcase_add_test(tc, test_output_folders);
	tcase_add_test(tc, test_memory);
	tcase_add_test(tc, test_memory_plan_exact);
	tcase_add_test(tc, test_memory_plan_failed_publishes_nothing);
	tcase_add_test(tc, test_memory_plan_unstartable_leaves_no_artifact);
	tcase_add_test(tc, test_codspeed_round_counts);
	tcase_add_test(tc, test_codspeed_durations);
	tcase_add_test(tc, test_codspeed_round_ends_with_direct_child);
	tcase_add_test(tc, test_codspeed_names_and_utf8);
	tcase_add_test(tc, test_codspeed_unknown_keys);
	tcase_add_test(tc, test_codspeed_version_and_name);
	tcase_add_test(tc, test_codspeed_runner_command);
	tcase_add_test(tc, test_memory_zeroed_allocations);
	tcase_add_test(tc, test_codspeed_report_corrupt);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(harness_suite());
}
