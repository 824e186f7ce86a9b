// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack against Valgrind on real programs from Debian, per process (docs/VALGRIND.md): each
 * program runs under `valgrind --trace-children=yes --run-libc-freeres=no --run-cxx-freeres=no`
 * and under memtrack, with the same input files and the same fixed environment
 * (tools/valgrind-compare), and every process's allocs, frees, bytes and live blocks and bytes
 * at exit must be Valgrind's under the counting relation. Two fixtures of known truth check the
 * relation itself.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define COMPARE MT_SOURCE_DIR "/tools/valgrind-compare"

/* Fixed commit identity and dates: the same commit, byte for byte, in both runs. */
#define GIT_ENV                                                                                    \
	"GIT_AUTHOR_NAME=memtrack", "GIT_AUTHOR_EMAIL=memtrack@example.org",                       \
	    "GIT_COMMITTER_NAME=memtrack", "GIT_COMMITTER_EMAIL=memtrack@example.org",             \
	    "GIT_AUTHOR_DATE=@1700000000 +0000", "GIT_COMMITTER_DATE=@1700000000 +0000",           \
	    "GIT_CONFIG_NOSYSTEM=1"

#define PERL_SCRIPT                                                                                \
	"my %n; while (<STDIN>) { chomp; my @f = split /,/; $n{$f[1]} += $f[2];"                   \
	" push @{$w{$f[1]}}, $f[0] if $f[2] % 7 == 0 }"                                            \
	" for my $k (sort keys %n) { printf \"%s %d %s\\n\", $k, $n{$k},"                          \
	" join \"|\", sort @{$w{$k} || []} }"

struct vg_case {
	const char *name;
	const char *argv[12];
	const char *in;	     /* stdin, a file of the case's directory (NULL: none) */
	const char *prepare; /* shell command run in the directory before each run */
	const char *env[10];
	int min_processes;
};

static const struct vg_case cases[] = {
    {"vg_relation", {FIXTURE("vg_relation")}, .min_processes = 1},
    {"vg_containers", {FIXTURE("vg_containers")}, .min_processes = 1},
    {"sqlite3", {"/usr/bin/sqlite3", "db"}, "script.sql", "rm -f db", .min_processes = 1},
    {"sort", {"/usr/bin/sort", "-t,", "-k2,2", "-k3n", "input.csv"}, .min_processes = 1},
    {"mawk",
     {"/usr/bin/mawk", "-F,", "{ s[$2] += $3; n[$1]++ } END { for (k in s) print k, s[k], n[k] }",
      "input.csv"},
     .min_processes = 1},
    {"sed",
     {"/usr/bin/sed", "-E", "s/([a-z]+)([0-9]+)/\\2-\\1/; /^9/d", "input.csv"},
     .min_processes = 1},
    {"gzip", {"/usr/bin/gzip", "-9", "-n", "-c", "input.csv"}, .min_processes = 1},
    /* perl seeds its hash function at random: bucket splits, and so reallocs, vary per run. */
    {"perl",
     {"/usr/bin/perl", "-e", PERL_SCRIPT},
     "input.csv",
     .env = {"PERL_HASH_SEED=0", "PERL_PERTURB_KEYS=0"},
     .min_processes = 1},
    /*
     * The files are dated long before the index: one written in the index's second is "racily
     * clean" to git, which then reads it again, more allocations in whichever run was quicker.
     */
    {"git-commit",
     {"/usr/bin/git", "commit", "-q", "-m", "the input"},
     NULL,
     "touch -d @1700000000 input.csv script.sql && rm -rf .git && git init -q && "
     "git add input.csv script.sql",
     {GIT_ENV},
     .min_processes = 1},
    /* dash forks each element of the pipeline, the child execs it. */
    {"sh-pipeline",
     {"/bin/sh", "-c", "sort -t, -k2,2 input.csv | gzip -9 -n -c | wc -c"},
     .min_processes = 4},
    {"env-wrapper",
     {"/usr/bin/env", "FOO=1", "/usr/bin/sed", "-n", "1p", "input.csv"},
     .min_processes = 1},
    /* dash vforks for a command that is not its last; the child execs cat. */
    {"sh-vfork", {"/bin/sh", "-c", "cat input.csv; true"}, .min_processes = 2},
    /* make posix_spawns sh -c for each line; dash forks the pipeline's elements. */
    {"make", {"/usr/bin/make", "-s", "-f", "Makefile.vg"}, .min_processes = 7},
};

/* Deterministic inputs: a CSV of 3,000 lines and an SQL script, from a fixed LCG. */
static unsigned int lcg(unsigned int *state)
{
	*state = *state * 1103515245u + 12345u;
	return (*state >> 16) & 0x7fff;
}

static const char *const words[] = {"alpha", "beta",  "gamma", "delta", "epsilon", "zeta",
				    "eta",   "theta", "iota",  "kappa", "lambda",  "mu"};
#define NWORDS (sizeof(words) / sizeof(words[0]))

static void write_inputs(const char *dir)
{
	char path[128];
	unsigned int seed = 11;
	FILE *f;

	snprintf(path, sizeof(path), "%s/input.csv", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	for (int i = 0; i < 3000; i++)
		fprintf(f, "%s%u,%s,%u\n", words[lcg(&seed) % NWORDS], lcg(&seed) % 100,
			words[lcg(&seed) % NWORDS], lcg(&seed) * 3u % 100000);
	ck_assert_int_eq(fclose(f), 0);

	snprintf(path, sizeof(path), "%s/script.sql", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("create table t(id integer primary key, name text, v integer);\n"
	      "create index tv on t(v);\nbegin;\n",
	      f);
	for (int i = 0; i < 500; i++)
		fprintf(f, "insert into t(name, v) values('%s%d', %u);\n",
			words[lcg(&seed) % NWORDS], i, lcg(&seed) % 1000);
	fputs("commit;\n"
	      "select substr(name, 1, 3), count(*), sum(v) from t group by 1 order by 2 desc, 1;\n"
	      "select count(*) from t where v > 500;\n",
	      f);
	ck_assert_int_eq(fclose(f), 0);

	snprintf(path, sizeof(path), "%s/Makefile.vg", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fputs("all:\n\t@sed -n 2p input.csv | cat\n\t@gzip -n -c input.csv | wc -c\n", f);
	ck_assert_int_eq(fclose(f), 0);
}

/* tools/valgrind-compare --json on the case, in dir; returns its report (to put). */
static struct json_object *compare(const struct vg_case *c, const char *dir, int *code)
{
	const char *argv[48] = {COMPARE, "--json", "--memtrack", MEMTRACK, "--cwd", dir};
	char in[128];
	struct json_object *res;
	struct mt_out o;
	int n = 6;

	if (c->in) {
		snprintf(in, sizeof(in), "%s/%s", dir, c->in);
		argv[n++] = "--stdin";
		argv[n++] = in;
	}
	if (c->prepare) {
		argv[n++] = "--prepare";
		argv[n++] = c->prepare;
	}
	for (int i = 0; c->env[i]; i++) {
		argv[n++] = "--env";
		argv[n++] = c->env[i];
	}
	argv[n++] = "--";
	for (int i = 0; c->argv[i]; i++)
		argv[n++] = c->argv[i];
	argv[n] = NULL;

	ck_assert_int_eq(mt_run(argv, NULL, dir, 1800, &o), 0);
	ck_assert_msg(o.code == 0 || o.code == 1, "%s: the comparison could not be made (%d): %s",
		      c->name, o.code, o.err);
	res = json_tokener_parse(o.out);
	ck_assert_msg(res != NULL, "%s: no JSON from valgrind-compare: %s", c->name, o.err);
	*code = o.code;
	mt_out_free(&o);
	return res;
}

static const char *const counts[] = {"allocs", "frees", "bytes", "live_blocks", "live_bytes"};

/* One process pair: how many of its counts differ, each said on stderr. */
static int differences(const char *name, struct json_object *p)
{
	struct json_object *vg = mt_json_get(p, "valgrind"), *mt, *d;
	const char *exe = json_object_get_string(mt_json_get(p, "exe"));
	int n = 0;

	if (!json_object_object_get_ex(p, "memtrack_as_valgrind", &mt) || !vg) {
		d = mt_json_get(p, "differences");
		fprintf(stderr, "  %s: %s #%d: %s\n", name, exe, (int)mt_json_i64(p, "index"),
			json_object_get_string(json_object_array_get_idx(d, 0)));
		return 1;
	}
	for (size_t i = 0; i < sizeof(counts) / sizeof(counts[0]); i++) {
		int64_t want = mt_json_i64(vg, counts[i]), got = mt_json_i64(mt, counts[i]);

		if (want == got)
			continue;
		fprintf(stderr, "  %s: %s #%d: %s: valgrind %lld, memtrack %lld\n", name, exe,
			(int)mt_json_i64(p, "index"), counts[i], (long long)want, (long long)got);
		n++;
	}
	if (!n)
		fprintf(stderr,
			"  %s: %s #%d: exact: %lld allocs, %lld frees, %lld bytes, %lld bytes in "
			"%lld blocks at exit\n",
			name, exe, (int)mt_json_i64(p, "index"),
			(long long)mt_json_i64(vg, "allocs"), (long long)mt_json_i64(vg, "frees"),
			(long long)mt_json_i64(vg, "bytes"),
			(long long)mt_json_i64(vg, "live_bytes"),
			(long long)mt_json_i64(vg, "live_blocks"));
	return n;
}

/* The case's directory and everything the programs left in it (a git repository, a database). */
static void remove_dir(const char *dir)
{
	const char *argv[] = {"/bin/rm", "-rf", dir, NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 0);
	mt_out_free(&o);
}

START_TEST(per_process)
{
	const struct vg_case *c = &cases[_i];
	struct json_object *res, *procs, *p;
	int code, differ = 0;
	char dir[64];
	size_t np;

	mt_tmpdir(dir);
	write_inputs(dir);
	res = compare(c, dir, &code);
	procs = mt_json_get(res, "processes");
	np = json_object_array_length(procs);
	ck_assert_msg((int)np >= c->min_processes, "%s: %zu processes", c->name, np);
	for (size_t i = 0; i < np; i++) {
		p = json_object_array_get_idx(procs, i);
		if (differences(c->name, p))
			differ++;
	}
	/* The tool's verdict and this file's reading of its numbers agree. */
	ck_assert_int_eq(code == 0, differ == 0);
	ck_assert_int_eq(json_object_get_boolean(mt_json_get(res, "exact")), differ == 0);
	ck_assert_msg(differ == 0, "%s: %d of %zu processes differ from valgrind", c->name, differ,
		      np);
	json_object_put(res);
	remove_dir(dir);
}
END_TEST

/* The relation itself, on a fixture of known truth (fixtures/vg_relation.c). */
START_TEST(relation_truth)
{
	struct json_object *res, *p, *vg, *mt;
	char dir[64];
	int code;

	mt_tmpdir(dir);
	res = compare(&cases[0], dir, &code);
	ck_assert_int_eq(code, 0);
	ck_assert_int_eq(json_object_array_length(mt_json_get(res, "processes")), 1);
	p = json_object_array_get_idx(mt_json_get(res, "processes"), 0);
	vg = mt_json_get(p, "valgrind");
	mt = mt_json_get(p, "memtrack");
	ck_assert_int_eq(mt_json_i64(vg, "allocs"), 12);
	ck_assert_int_eq(mt_json_i64(vg, "frees"), 9);
	ck_assert_int_eq(mt_json_i64(vg, "bytes"), 1150);
	ck_assert_int_eq(mt_json_i64(vg, "live_blocks"), 3);
	ck_assert_int_eq(mt_json_i64(vg, "live_bytes"), 66);
	ck_assert_int_eq(mt_json_i64(vg, "realloc_null"), 2);
	ck_assert_int_eq(mt_json_i64(vg, "realloc_zero"), 1);
	ck_assert_int_eq(mt_json_i64(mt, "allocations"), 8);
	ck_assert_int_eq(mt_json_i64(mt, "reallocs"), 5);
	ck_assert_int_eq(mt_json_i64(mt, "frees"), 6);
	/* memtrack's own count of the two shapes, which the relation now takes from its report. */
	ck_assert_int_eq(mt_json_i64(mt, "realloc_null"), 2);
	ck_assert_int_eq(mt_json_i64(mt, "realloc_zero"), 1);
	json_object_put(res);
	remove_dir(dir);
}
END_TEST

static Suite *valgrind_suite(void)
{
	Suite *s = suite_create("valgrind");
	TCase *tc = tcase_create("per_process");

	tcase_set_timeout(tc, 1800);
	mt_tcase_add_tool_test(tc, relation_truth, "valgrind");
	mt_add_tool_test(tc, per_process, 0, sizeof(cases) / sizeof(cases[0]), "valgrind");
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(valgrind_suite());
}
