// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of what the benchmark harness reads, against CodSpeed's exec-harness 1.3.0
 * (CodSpeedHQ/codspeed): the duration grammar of config.rs (Rust's f64, then humantime 2.3), the
 * JSON benchmark reader and the command-line errors that must stop before anything runs. The
 * statistics and the round plan: unit_harness.c.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/duration.h"
#include "base/utf8.h"
#include "cmd/cmd.h"
#include "harness/harness.h"
#include "harness/harness_duration.h"
#include "harness/harness_stats.h"
#include "lib/suite.h"

#define MS  1000000ULL
#define SEC 1000000000ULL

/* ---- Durations (config.rs: parse_duration_to_ns; humantime 2.3.0 src/duration.rs) --------- */

static const struct {
	const char *text;
	uint64_t ns;
} good_durations[] = {
    /* config.rs's own tests */
    {"1", SEC},
    {"0.5", 500 * MS},
    {"0", 0},
    {"1.5", 1500 * MS},
    {"1s", SEC},
    {"500ms", 500 * MS},
    {"2m", 120 * SEC},
    {"1h", 3600 * SEC},
    {"1.5s", 1500 * MS},
    {"  1s  ", SEC},
    /* humantime's units and spans */
    {"1sec", SEC},
    {"1min", 60 * SEC},
    {"1 s", SEC},
    {"1m30s", 90 * SEC},
    {"500µs", 500000},
    {"2d", 2 * 86400 * SEC},
    {"1w", 604800 * SEC},
    {"1M", 2630016 * SEC},
    {"1y", 31557600 * SEC},
    {"2h 37min", 9420 * SEC},
    {"1 000s", 1000 * SEC}, /* humantime skips blanks inside a number */
    {"3 secs 4 millis", 3004 * MS},
    {"1.5h", 5400 * SEC},
    {"0.5m", 30 * SEC},
    {"1.000000001s", SEC + 1},
    /* Rust's f64 first: exponents, signs, inf and nan, then `as u64` */
    {"1e-1", 100 * MS},
    {"1E3", 1000 * SEC},
    {"+2", 2 * SEC},
    {"-0", 0},
    {"-1", 0},	/* a negative f64 saturates to 0 */
    {"nan", 0}, /* NaN converts to 0 */
    {"inf", UINT64_MAX},
    {"-Infinity", 0},
    {".25", 250 * MS},
    {"2.", 2 * SEC},
    {"0.3", 300 * MS},
    {"1.1", 1100000000ULL},		   /* 1.1 * 1e9 rounds to 1100000000.0000002 */
    {"0.000000001", 1},			   /* 1e-9 * 1e9 == 1.0000000000000002 */
    {"0.0000000019", 1},		   /* truncated, not rounded */
    {"18446744073.709551615", UINT64_MAX}, /* past 2^64 ns once in a double: saturates */
    {"\u00a01s\u3000", SEC},		   /* Unicode white space is trimmed too */
    /* Duration::as_nanos() as u64 keeps the low 64 bits */
    {"600y", (uint64_t)((unsigned __int128)600 * 31557600 * SEC)},
};

START_TEST(test_duration_good)
{
	char err[256] = "";
	uint64_t ns = 12345;
	const char *t = good_durations[_i].text;

	ck_assert_msg(mt_harness_parse_duration(t, &ns, err, sizeof(err)) == 0, "'%s': %s", t, err);
	ck_assert_msg(ns == good_durations[_i].ns, "'%s' gave %llu ns, expected %llu", t,
		      (unsigned long long)ns, (unsigned long long)good_durations[_i].ns);
}
END_TEST

static const struct {
	const char *text;
	const char *says; /* a part of the message */
} bad_durations[] = {
    /* config.rs's own tests */
    {"invalid", "invalid duration 'invalid'"},
    {"1x", "unknown or missing time unit"},
    {"", "value was empty"},
    /* humantime's refusals */
    {"   ", "value was empty"},
    {"1 2", "unknown or missing time unit"},
    {"1.0ns", "below one nanosecond"},
    {"0.5ns", "below one nanosecond"},
    {"1.0000000001s", "below one nanosecond"},
    {"0.001h", "below one nanosecond"}, /* 3.6 s: a fraction of an hour must be whole seconds */
    {"1.s", "invalid character"},
    {"1s,", "invalid character"},
    {"1μs", "invalid character"}, /* Greek mu, not the micro sign */
    {"s", "expected a number"},
    {"-1s", "expected a number"},
    {"1e", "unknown or missing time unit"},
    {"0x10", "unknown or missing time unit"},
    {"99999999999999999999s", "number too large"},
    {"18446744073709551615s 1s", "number too large"},
};

START_TEST(test_duration_bad)
{
	char err[256] = "";
	uint64_t ns = 0;
	const char *t = bad_durations[_i].text;

	ck_assert_int_eq(mt_harness_parse_duration(t, &ns, err, sizeof(err)), -EINVAL);
	ck_assert_msg(strstr(err, bad_durations[_i].says), "'%s': message '%s' lacks '%s'", t, err,
		      bad_durations[_i].says);
}
END_TEST

/* clap reads a u64 with u64::from_str: an optional '+', digits, 0 included. */
START_TEST(test_counts)
{
	uint64_t v = 7;

	ck_assert_int_eq(mt_harness_parse_count("0", &v), 0);
	ck_assert_uint_eq(v, 0);
	ck_assert_int_eq(mt_harness_parse_count("+12", &v), 0);
	ck_assert_uint_eq(v, 12);
	ck_assert_int_eq(mt_harness_parse_count("18446744073709551615", &v), 0);
	ck_assert_uint_eq(v, UINT64_MAX);
	ck_assert_int_eq(mt_harness_parse_count("18446744073709551616", &v), -EINVAL);
	ck_assert_int_eq(mt_harness_parse_count("-1", &v), -EINVAL);
	ck_assert_int_eq(mt_harness_parse_count(" 1", &v), -EINVAL);
	ck_assert_int_eq(mt_harness_parse_count("+", &v), -EINVAL);
	ck_assert_int_eq(mt_harness_parse_count("", &v), -EINVAL);
	ck_assert_int_eq(mt_harness_parse_count("1.0", &v), -EINVAL);
}
END_TEST

/* UTF-8 up front, and names cut on a character boundary. */
START_TEST(test_utf8)
{
	const char *ok = "caf\xc3\xa9 \xe2\x82\xac \xf0\x9f\x98\x80";
	const char *bad[] = {"\xff", "\xc3", "\xc0\xaf", "\xed\xa0\x80", "\xf4\x90\x80\x80",
			     "a\x80"};
	size_t i;

	ck_assert(mt_utf8_valid(ok, strlen(ok)));
	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
		ck_assert_msg(!mt_utf8_valid(bad[i], strlen(bad[i])), "bad[%zu]", i);
	ck_assert_uint_eq(mt_utf8_prefix("abc", 924), 3);
	ck_assert_uint_eq(mt_utf8_prefix("abcdef", 4), 4);
	/* "é" is 2 bytes at 3..4: a cut at 4 would split it. */
	ck_assert_uint_eq(mt_utf8_prefix("abc\xc3\xa9z", 4), 3);
}
END_TEST

START_TEST(test_duration_format)
{
	char b[32];

	ck_assert_str_eq(mt_format_duration(812, b, sizeof(b)), "812 ns");
	ck_assert_str_eq(mt_format_duration(12345, b, sizeof(b)), "12.3 us");
	ck_assert_str_eq(mt_format_duration(4560000, b, sizeof(b)), "4.56 ms");
	ck_assert_str_eq(mt_format_duration(1234000000.0, b, sizeof(b)), "1.23 s");
	ck_assert_str_eq(mt_format_duration(125e9, b, sizeof(b)), "125 s");
	ck_assert_str_eq(mt_format_duration(0, b, sizeof(b)), "0 ns");
}
END_TEST

/* ---- Benchmarks from JSON ----------------------------------------------------------------- */

static int parse(const char *text, struct mt_bench_list *l, char *err)
{
	struct mt_bench_limits none = {0};

	err[0] = '\0';
	return mt_harness_json_parse(text, strlen(text), &none, l, err, 256);
}

START_TEST(test_json_benchmarks)
{
	const char *text =
	    "[{\"command\": [\"sleep\", \"0.01\"], \"name\": \"nap\", \"walltime_args\": "
	    "{\"warmup_time\": \"1s\", \"max_time\": \"3s\", \"min_time\": null, "
	    "\"max_rounds\": null, \"min_rounds\": null}},\n"
	    " {\"command\": [\"true\"], \"walltime_args\": {\"max_rounds\": 7, \"min_time\": 0.5}},"
	    " {\"command\": [\"echo\", \"a b\"], \"name\": null}]";
	struct mt_bench_list l;
	char err[256];

	ck_assert_msg(parse(text, &l, err) == 0, "%s", err);
	ck_assert_uint_eq(l.n, 3);
	ck_assert_str_eq(l.v[0].name, "nap");
	ck_assert_str_eq(l.v[0].argv[0], "sleep");
	ck_assert_str_eq(l.v[0].argv[1], "0.01");
	ck_assert_ptr_null(l.v[0].argv[2]);
	ck_assert(l.v[0].limits.has_warmup && l.v[0].limits.warmup_ns == SEC);
	ck_assert(l.v[0].limits.has_max_time && l.v[0].limits.max_time_ns == 3 * SEC);
	ck_assert(!l.v[0].limits.has_min_time && !l.v[0].limits.has_max_rounds);
	ck_assert_ptr_null(l.v[1].name);
	ck_assert(l.v[1].limits.has_max_rounds && l.v[1].limits.max_rounds == 7);
	ck_assert(l.v[1].limits.has_min_time && l.v[1].limits.min_time_ns == 500 * MS);
	ck_assert_ptr_null(l.v[2].name);
	ck_assert_str_eq(l.v[2].argv[1], "a b");
	mt_bench_list_free(&l);
	ck_assert_uint_eq(l.n, 0);
}
END_TEST

START_TEST(test_json_overrides_command_line)
{
	struct mt_bench_limits cli = {
	    .has_max_rounds = true, .max_rounds = 3, .has_warmup = true, .warmup_ns = 0};
	const char *text = "[{\"command\": [\"true\"], \"walltime_args\": {\"max_rounds\": 9, "
			   "\"warmup_time\": null}}, {\"command\": [\"true\"]}]";
	struct mt_bench_list l;
	char err[256] = "";

	ck_assert_msg(mt_harness_json_parse(text, strlen(text), &cli, &l, err, sizeof(err)) == 0,
		      "%s", err);
	ck_assert_uint_eq(l.v[0].limits.max_rounds, 9);
	ck_assert(l.v[0].limits.has_warmup && l.v[0].limits.warmup_ns == 0);
	ck_assert_uint_eq(l.v[1].limits.max_rounds, 3);
	mt_bench_list_free(&l);
}
END_TEST

static const struct {
	const char *text;
	const char *says;
} bad_json[] = {
    {"", "no input"},
    {" \n", "no input"},
    {"[{\"command\": [\"true\"]}", "ends before"},
    {"[{\"command\": [\"true\"],}]", "invalid JSON at byte"},
    {"[{\"command\": [\"true\"]}] x", "invalid JSON at byte 24"},
    {"{\"command\": [\"true\"]}", "expected a JSON array"},
    {"[]", "holds no benchmark"},
    {"[42]", "benchmark 1 is not a JSON object"},
    {"[{}]", "benchmark 1 has no \"command\""},
    {"[{\"command\": []}]", "non-empty array of strings"},
    {"[{\"command\": \"true\"}]", "non-empty array of strings"},
    {"[{\"command\": [\"true\", 1]}]", "array of strings"},
    {"[{\"command\": [\"\"]}]", "the program in \"command\" is empty"},
    {"[{\"command\": [\"a\\u0000b\"]}]", "without NUL bytes"},
    {"[{\"command\": [\"true\"], \"name\": 3}]", "\"name\" must be a string"},
    {"[{\"command\": [\"true\"]}, {\"command\": [\"true\"], \"walltime_args\": []}]",
     "benchmark 2: \"walltime_args\" must be an object"},
    {"[{\"command\": [\"true\"], \"walltime_args\": {\"max_time\": \"3 parsecs\"}}]",
     "walltime_args.max_time: invalid duration '3 parsecs'"},
    {"[{\"command\": [\"true\"], \"walltime_args\": {\"max_time\": true}}]",
     "walltime_args.max_time must be a duration"},
    {"[{\"command\": [\"true\"], \"walltime_args\": {\"max_rounds\": -1}}]",
     "walltime_args.max_rounds must be a non-negative integer"},
    {"[{\"command\": [\"true\"], \"walltime_args\": {\"min_rounds\": 2.5}}]",
     "walltime_args.min_rounds must be a non-negative integer"},
};

/*
 * serde ignores keys BenchmarkCommand and WalltimeExecutionArgs do not declare
 * (crates/exec-harness/src/lib.rs, walltime/config.rs: no deny_unknown_fields), and newer runners
 * add some. So are they here, with a warning. An empty name and a count of 0 are values too.
 */
START_TEST(test_json_unknown_keys_accepted)
{
	const char *text = "[{\"command\": [\"true\"], \"ignore_failure\": true, \"stdin\": \"x\", "
			   "\"name\": \"\", \"walltime_args\": {\"maxtime\": \"1s\", "
			   "\"max_rounds\": 0}}]";
	struct mt_bench_list l;
	char err[256];

	ck_assert_msg(parse(text, &l, err) == 0, "%s", err);
	ck_assert_uint_eq(l.n, 1);
	ck_assert_str_eq(l.v[0].name, "");
	ck_assert(l.v[0].limits.has_max_rounds && l.v[0].limits.max_rounds == 0);
	ck_assert(!l.v[0].limits.has_max_time);
	mt_bench_list_free(&l);
}
END_TEST

START_TEST(test_json_errors)
{
	struct mt_bench_list l;
	char err[256];

	ck_assert_int_eq(parse(bad_json[_i].text, &l, err), -EINVAL);
	ck_assert_msg(strstr(err, bad_json[_i].says), "'%s': message '%s' lacks '%s'",
		      bad_json[_i].text, err, bad_json[_i].says);
	ck_assert_ptr_null(strchr(err, '\n'));
	ck_assert_uint_eq(l.n, 0);
	ck_assert_ptr_null(l.v);
}
END_TEST

/* ---- Command-line errors: exit 2 before anything runs ------------------------------------- */

static int run_harness(const char **args)
{
	int argc = 0;

	while (args[argc])
		argc++;
	return mt_cmd_harness(argc, (char **)args);
}

#define HARNESS(...) run_harness((const char *[]){"exec-harness", __VA_ARGS__, NULL})

START_TEST(test_cli_usage_errors)
{
	ck_assert_int_eq(run_harness((const char *[]){"exec-harness", NULL}), 2);
	ck_assert_int_eq(HARNESS("--max-time", "3 parsecs", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--warmup-time", "1.0ns", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--max-rounds", "abc", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--max-rounds", "-3", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--bogus", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("-x", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--max-time"), 2);
	ck_assert_int_eq(HARNESS("--name", "n", "-"), 2);
	ck_assert_int_eq(HARNESS("--", ""), 2);
}
END_TEST

/*
 * crates/exec-harness/src/main.rs and lib.rs: -m/--measurement-mode or
 * $CODSPEED_RUNNER_MODE takes walltime, memory or simulation (alias instrumentation); memtrack
 * refuses simulation with one sentence. Arguments that are not UTF-8 are refused, as clap does.
 */
START_TEST(test_cli_modes_and_utf8)
{
	ck_assert_int_eq(HARNESS("-m", "simulation", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--mode", "instrumentation", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--measurement-mode", "bogus", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("-m", "Walltime", "--", "true"), 2); /* clap: case-sensitive */
	ck_assert_int_eq(HARNESS("-m", "memory", "--memory", "--", "true"), 2);
	setenv("CODSPEED_RUNNER_MODE", "simulation", 1);
	ck_assert_int_eq(HARNESS("--", "true"), 2);
	setenv("CODSPEED_RUNNER_MODE", "\xff", 1);
	ck_assert_int_eq(HARNESS("--", "true"), 2);
	unsetenv("CODSPEED_RUNNER_MODE");
	ck_assert_int_eq(HARNESS("--name", "caf\xe9", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--", "true", "\xc3"), 2);
}
END_TEST

/* The runner's install check (src/binary_installer/versions.rs) parses
 * "NAME VERSION" from stdout and needs at least the pinned 1.3.0 (src/binary_pins.rs). */
START_TEST(test_cli_version)
{
	char out[64] = "";
	FILE *f = tmpfile();

	ck_assert_ptr_nonnull(f);
	fflush(stdout);
	ck_assert_int_ne(dup2(fileno(f), STDOUT_FILENO), -1);
	ck_assert_int_eq(HARNESS("--version"), 0);
	ck_assert_int_eq(HARNESS("-V", "--", "true"), 0);
	fflush(stdout);
	rewind(f);
	ck_assert_uint_eq(fread(out, 1, sizeof(out) - 1, f), 38);
	ck_assert_str_eq(out, "exec-harness 1.3.0\nexec-harness 1.3.0\n");
	fclose(f);
}
END_TEST

/* Limits are checked before the output folder is made or anything runs. */
START_TEST(test_cli_bad_limits)
{
	ck_assert_int_eq(HARNESS("--min-rounds", "10", "--max-rounds", "5", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--min-time", "2s", "--max-time", "1s", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--warmup-time", "0", "--max-time", "0", "--", "true"), 2);
	ck_assert_int_eq(HARNESS("--max-time", "0", "--", "true"), 2);
}
END_TEST

START_TEST(test_cli_help)
{
	/* Each test runs in its own process (Check's fork mode): the help text goes nowhere. */
	ck_assert_ptr_nonnull(freopen("/dev/null", "w", stdout));
	ck_assert_int_eq(HARNESS("--help"), 0);
	ck_assert_int_eq(HARNESS("-h", "--", "true"), 0);
}
END_TEST

static Suite *harness_input_suite(void)
{
	Suite *s = suite_create("harness_input");
	TCase *dur = tcase_create("duration");
	TCase *json = tcase_create("json");
	TCase *cli = tcase_create("cli");

	tcase_add_loop_test(dur, test_duration_good, 0,
			    sizeof(good_durations) / sizeof(good_durations[0]));
	tcase_add_loop_test(dur, test_duration_bad, 0,
			    sizeof(bad_durations) / sizeof(bad_durations[0]));
	tcase_add_test(dur, test_duration_format);
	tcase_add_test(dur, test_counts);
	tcase_add_test(dur, test_utf8);
	tcase_add_test(json, test_json_benchmarks);
	tcase_add_test(json, test_json_overrides_command_line);
	tcase_add_loop_test(json, test_json_errors, 0, sizeof(bad_json) / sizeof(bad_json[0]));
	tcase_add_test(json, test_json_unknown_keys_accepted);
	tcase_add_test(cli, test_cli_usage_errors);
	tcase_add_test(cli, test_cli_bad_limits);
	tcase_add_test(cli, test_cli_help);
	tcase_add_test(cli, test_cli_modes_and_utf8);
	tcase_add_test(cli, test_cli_version);
	suite_add_tcase(s, dur);
	suite_add_tcase(s, json);
	suite_add_tcase(s, cli);
	return s;
}

int main(void)
{
	return mt_run_suite(harness_input_suite());
}
