// SPDX-License-Identifier: GPL-2.0
/*
 * `memtrack report --pprof` end to end: the stacks fixtures (fixtures/stacks/, truth in
 * fixtures/README.md) recorded with --stacks, their profile read by Go's pprof (Debian's
 * golang-go, offline, nothing symbolised by pprof): its totals must be the report's, each
 * function's flat weight the folded stacks' weight of the lines it ends, for every sample type,
 * the fixture's functions at their exact counts, and the mappings must carry the files' build
 * ids. And every bad input is one sentence and a non-zero exit, with no profile left behind.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/* [wrap...] memtrack run -q --stacks -o DIR/a.mtk -- cmd..., which must exit 0: the artifact. */
static char *record_in(const char *const *wrap, const char *const *cmd)
{
	struct mt_out o;
	char *art =
	    mt_record(MEMTRACK, wrap, (const char *const[]){"--stacks", NULL}, cmd, 120, &o);

	ck_assert_ptr_nonnull(art);
	ck_assert_msg(o.code == 0, "run failed (%d): %s", o.code, o.err);
	mt_out_free(&o);
	return art;
}

static char *record(const char *const *cmd)
{
	return record_in(NULL, cmd);
}

/* memtrack report ARGS... ART: stdout (to free); the report must succeed. */
static char *report(const char *opt, const char *art)
{
	const char *argv[] = {MEMTRACK, "report", opt, art, NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report %s failed (%d): %s", opt, o.code, o.err);
	free(o.err);
	return o.out;
}

/* memtrack report --pprof ART.pb.gz ART: the profile's path (to free). */
static char *profile_of(const char *art)
{
	char *prof = malloc(strlen(art) + 8);
	const char *argv[] = {MEMTRACK, "report", "--pprof", prof, art, NULL};
	struct mt_out o;

	sprintf(prof, "%s.pb.gz", art);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report --pprof failed (%d): %s", o.code, o.err);
	ck_assert_str_eq(o.out, "");
	ck_assert_str_eq(o.err, "");
	mt_out_free(&o);
	return prof;
}

/*
 * go tool pprof -symbolize=SYM OPT [-sample_index=INDEX] PROFILE, offline, with a home and
 * caches of its own: stdout (to free). SYM "none": the names are memtrack's; "force": pprof's
 * own, from the mappings' files (addr2line), with -lines their source lines.
 */
static char *go_pprof_sym(const char *sym, const char *opt, const char *index, const char *prof)
{
	char dir[64], home[96], cache[96], path[96], tmp[96], si[64], symbolize[32];
	const char *env[] = {home,
			     cache,
			     path,
			     tmp,
			     "GOFLAGS=",
			     "GOPROXY=off",
			     "GOTOOLCHAIN=local",
			     "GOTELEMETRY=off",
			     "PPROF_BINARY_PATH=/nonexistent",
			     NULL};
	const char *argv[16] = {"go", "tool", "pprof", symbolize, opt};
	const char *rm[] = {"rm", "-rf", dir, NULL};
	struct mt_out o, r;
	int n = 5;

	mt_tmpdir(dir);
	/* "lines": memtrack's own names and source lines, -lines without pprof's symboliser. */
	snprintf(symbolize, sizeof(symbolize), "-symbolize=%s",
		 strcmp(sym, "lines") ? sym : "none");
	if (!strcmp(sym, "force") || !strcmp(sym, "lines"))
		argv[n++] = "-lines";
	snprintf(home, sizeof(home), "HOME=%s", dir);
	snprintf(cache, sizeof(cache), "GOCACHE=%s/cache", dir);
	snprintf(path, sizeof(path), "GOPATH=%s/go", dir);
	snprintf(tmp, sizeof(tmp), "PPROF_TMPDIR=%s", dir);
	if (index) {
		snprintf(si, sizeof(si), "-sample_index=%s", index);
		argv[n++] = si;
		argv[n++] = "-nodefraction=0";
		argv[n++] = "-nodecount=100000";
		if (strstr(index, "_space"))
			argv[n++] = "-unit=B"; /* bytes as integers, not "1.50kB" */
	}
	argv[n++] = prof;
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, env, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 0,
		      "go tool pprof failed (%d; 127: no go, which tools/install-deps installs "
		      "as golang-go): %s",
		      o.code, o.err);
	free(o.err);
	ck_assert_int_eq(mt_run(rm, NULL, NULL, 60, &r), 0);
	mt_out_free(&r);
	return o.out;
}

static char *go_pprof(const char *opt, const char *index, const char *prof)
{
	return go_pprof_sym("none", opt, index, prof);
}

/* ---- reading what pprof printed ---------------------------------------------------------- */

/* The lines of text after the line equal to start, up to the line equal to end (NULL: all). */
static char *section(const char *text, const char *start, const char *end)
{
	char s[64], e[64];
	const char *a, *b;

	snprintf(s, sizeof(s), "\n%s\n", start);
	a = strstr(text, s);
	ck_assert_msg(a, "no '%s' in\n%.3000s", start, text);
	a += strlen(s);
	if (!end)
		return strdup(a);
	snprintf(e, sizeof(e), "\n%s\n", end);
	b = strstr(a, e);
	ck_assert_msg(b, "no '%s' in\n%.3000s", end, text);
	return strndup(a, (size_t)(b - a + 1));
}

/* Sums of each value of the samples of pprof -raw: "V1 V2 V3 V4: LOC...". */
static void raw_totals(const char *raw, long long sum[4], int *samples)
{
	char *s = section(raw, "Samples:", "Locations"), *save = NULL;

	memset(sum, 0, 4 * sizeof(*sum));
	*samples = 0;
	for (char *l = strtok_r(s, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		long long v[4];

		if (sscanf(l, " %lld %lld %lld %lld:", &v[0], &v[1], &v[2], &v[3]) != 4)
			continue;
		for (int i = 0; i < 4; i++)
			sum[i] += v[i];
		(*samples)++;
	}
	free(s);
}

/*
 * A weight as pprof -top -unit=B prints it: an integer, "B" after bytes. Returns the text after
 * it and its spaces, or NULL when s does not start with one.
 */
static const char *weight(const char *s, long long *v)
{
	char *end;

	while (*s == ' ')
		s++;
	if (*s < '0' || *s > '9')
		return NULL;
	*v = strtoll(s, &end, 10);
	if (*end == 'B')
		end++;
	if (*end != ' ')
		return NULL;
	while (*end == ' ')
		end++;
	return end;
}

/* A percentage and the spaces after it, or NULL. */
static const char *percent(const char *s)
{
	char *end;

	strtod(s, &end);
	if (end == s || *end != '%')
		return NULL;
	for (end++; *end == ' '; end++)
		;
	return end;
}

/*
 * Each line of pprof -top, "FLAT FLAT% SUM% CUM CUM% NAME", given to fn with its weights; a line
 * of another shape is skipped.
 */
static void top_lines(const char *top,
		      void (*fn)(const char *name, long long flat, long long cum, void *arg),
		      void *arg)
{
	for (const char *l = top; l && *l;) {
		const char *nl = strchr(l, '\n'), *at;
		char *line = strndup(l, nl ? (size_t)(nl - l) : strlen(l));
		long long flat, cum;

		at = weight(line, &flat);
		at = at ? percent(at) : NULL;
		at = at ? percent(at) : NULL;
		at = at ? weight(at, &cum) : NULL;
		at = at ? percent(at) : NULL;
		if (at)
			fn(at, flat, cum, arg);
		free(line);
		l = nl ? nl + 1 : NULL;
	}
}

struct top_query {
	const char *top, *fn; /* fn: a name, or a prefix of names */
	bool cum;
	long long found; /* -1: not seen */
};

/*
 * pprof -top names a function inlined where it is counted "NAME (inline)", on a line apart from
 * its own calls: both are the function's.
 */
static void weight_of_name(const char *name, long long flat, long long cum, void *arg)
{
	struct top_query *q = arg;
	size_t n = strlen(q->fn);

	if (strncmp(name, q->fn, n) || (name[n] && strcmp(name + n, " (inline)")))
		return;
	q->found = (q->found < 0 ? 0 : q->found) + (q->cum ? cum : flat);
}

static void sum_of_prefixed(const char *name, long long flat, long long cum, void *arg)
{
	struct top_query *q = arg;

	(void)cum;
	if (!strncmp(name, q->fn, strlen(q->fn)))
		q->found += flat;
}

/* The flat (or, with cum, the cumulative) weight of function fn in pprof -top; 0 if absent. */
static long long top_weight(const char *top, const char *fn, bool cum)
{
	struct top_query q = {.top = top, .fn = fn, .cum = cum, .found = -1};

	top_lines(top, weight_of_name, &q);
	return q.found < 0 ? 0 : q.found;
}

/* The flat weights of the lines of pprof -top whose name starts with prefix, summed. */
static long long top_flat_prefixed(const char *top, const char *prefix)
{
	struct top_query q = {.top = top, .fn = prefix};

	top_lines(top, sum_of_prefixed, &q);
	return q.found;
}

static long long top_flat(const char *top, const char *fn)
{
	return top_weight(top, fn, false);
}

/* ---- reading what memtrack printed --------------------------------------------------------- */

/* The function a folded line ends in (the allocator's caller), and the line's weight. */
static bool folded_leaf(const char *line, char *fn, size_t n, long long *weight)
{
	const char *sp = strrchr(line, ' '), *semi;

	if (!sp)
		return false;
	semi = memrchr(line, ';', (size_t)(sp - line));
	semi = semi ? semi + 1 : line;
	snprintf(fn, n, "%.*s", (int)(sp - semi), semi);
	*weight = atoll(sp + 1);
	return true;
}

/* Functions ending folded lines, and the sum of the weights of the lines each ends. */
struct leaves {
	char *fn[4096];
	long long weight[4096];
	int n;
};

static void add_leaf(struct leaves *v, const char *fn, long long w)
{
	for (int i = 0; i < v->n; i++) {
		if (!strcmp(v->fn[i], fn)) {
			v->weight[i] += w;
			return;
		}
	}
	ck_assert_int_lt(v->n, 4096);
	v->fn[v->n] = strdup(fn);
	v->weight[v->n++] = w;
}

/*
 * Every function that ends a folded line (named by the symboliser: not "file+0x..." nor a
 * marker) has, in pprof -top of the same weight, that many flat: the folded lines it ends, all
 * summed. Returns how many functions were compared.
 */
static int expect_flat_equals_folded(const char *prof, const char *art, const char *index,
				     const char *metric)
{
	char opt[32], *folded, *top, *save = NULL, fn[4096];
	struct leaves *v = calloc(1, sizeof(*v));
	int compared = 0;

	snprintf(opt, sizeof(opt), "--folded=%s", metric);
	folded = report(opt, art);
	for (char *l = strtok_r(folded, "\n", &save); l; l = strtok_r(NULL, "\n", &save)) {
		long long w;

		if (folded_leaf(l, fn, sizeof(fn), &w) && !strstr(fn, "+0x") && fn[0] != '[')
			add_leaf(v, fn, w);
	}
	top = go_pprof("-top", index, prof);
	for (int i = 0; i < v->n; i++) {
		long long flat = top_flat(top, v->fn[i]);

		ck_assert_msg(flat == v->weight[i], "%s: %s flat %lld in pprof, %lld folded\n%s",
			      index, v->fn[i], flat, v->weight[i], top);
		free(v->fn[i]);
		compared++;
	}
	free(v);
	free(folded);
	free(top);
	return compared;
}

/* The report's totals as pprof's four sample types count them. */
static void json_totals(const char *art, long long t[4])
{
	char *out = report("--json", art);
	struct json_object *doc = json_tokener_parse(out), *tot;

	ck_assert_ptr_nonnull(doc);
	tot = mt_json_get(doc, "totals");
	/* A site counts allocations and reallocs alike: both hand out a block. */
	t[0] = mt_json_i64(tot, "allocations") + mt_json_i64(tot, "reallocs");
	t[1] = mt_json_i64(tot, "bytes_allocated");
	t[2] = mt_json_i64(tot, "live_blocks");
	t[3] = mt_json_i64(tot, "live_bytes");
	/* Allocations without their stack are in no sample: none here. */
	ck_assert_int_eq(mt_json_i64(mt_json_get(doc, "dropped"), "stacks_lost"), 0);
	json_object_put(doc);
	free(out);
}

static void expect_totals(const char *prof, const char *art)
{
	char *raw = go_pprof("-raw", NULL, prof);
	long long sum[4], want[4];
	int samples;

	raw_totals(raw, sum, &samples);
	json_totals(art, want);
	ck_assert_int_gt(samples, 0);
	for (int i = 0; i < 4; i++)
		ck_assert_msg(sum[i] == want[i], "value %d: %lld in pprof, %lld in the report\n%s",
			      i, sum[i], want[i], raw);
	free(raw);
}

/* The build id readelf -n (binutils, not memtrack) finds in file. */
static char *build_id_of(const char *file)
{
	const char *argv[] = {"readelf", "-n", file, NULL};
	struct mt_out o;
	char *at, id[64] = "";

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	at = strstr(o.out, "Build ID: ");
	ck_assert_msg(at, "%s", o.out);
	sscanf(at + 10, "%63[0-9a-f]", id);
	mt_out_free(&o);
	return strdup(id);
}

/* pprof -raw lists a mapping of file with its build id. */
static void expect_mapping(const char *raw, const char *file)
{
	char *maps = section(raw, "Mappings", NULL), *id = build_id_of(file), want[4200];

	snprintf(want, sizeof(want), " %s %s", file, id);
	ck_assert_msg(strstr(maps, want), "no '%s' in\n%s", want, maps);
	free(id);
	free(maps);
}

/* ---- the tests ----------------------------------------------------------------------------- */

/* The fixture's lines of fixtures/README.md, by function: calls, bytes, live bytes. */
static const struct {
	const char *fn;
	long long calls, bytes, live;
} truth[] = {
    {"stk_thread_leaf", 6, 288, 0}, {"stk_plugin_alloc", 5, 200, 0}, {"stk_lib_alloc", 4, 128, 0},
    {"stk_leaf_malloc", 3, 48, 0},  {"stk_leaf_calloc", 2, 48, 48},  {"stk_deep_leaf", 1, 64, 0},
    {"stk_on_signal", 1, 72, 0},
};

START_TEST(stacks_profile_equals_the_report)
{
	const char *cmd[] = {FIXTURE("stacks"), NULL};
	char *art = record(cmd), *prof = profile_of(art), *top, *raw;

	expect_totals(prof, art);
	ck_assert_int_ge(expect_flat_equals_folded(prof, art, "alloc_objects", "allocations"), 7);
	ck_assert_int_ge(expect_flat_equals_folded(prof, art, "alloc_space", "bytes"), 7);
	ck_assert_int_ge(expect_flat_equals_folded(prof, art, "inuse_space", "live"), 1);
	top = go_pprof("-top", "alloc_objects", prof);
	for (size_t i = 0; i < sizeof(truth) / sizeof(truth[0]); i++)
		ck_assert_int_eq(top_flat(top, truth[i].fn), truth[i].calls);
	free(top);
	/* The fixture's blocks never freed: stk_leaf_calloc's two. */
	top = go_pprof("-top", "inuse_objects", prof);
	ck_assert_int_eq(top_flat(top, "stk_leaf_calloc"), 2);
	ck_assert_int_eq(top_flat(top, "stk_leaf_malloc"), 0);
	free(top);
	raw = go_pprof("-raw", NULL, prof);
	expect_mapping(raw, FIXTURE("stacks"));
	expect_mapping(raw, FIXTURE("libstk.so"));
	free(raw);
	unlink(prof);
	free(prof);
	free(art);
}
END_TEST

/*
 * pprof's own symboliser, forced over every mapping, finds the same functions at the profile's
 * addresses, and their source lines: each mapping turns an address back into its file's offset
 * (the program, the fixture's library, the dlopen'd plugin). The files are named as the
 * fixtures' build compiled them (fixtures/fixtures.mk, from the repository's root).
 */
/*
 * The stacks fixture's allocating functions, with their files' source lines, as go tool pprof
 * -top -lines shows them with symbolize (force: pprof's own symboliser; lines: memtrack's).
 */
static void expect_fixture_lines(const char *symbolize)
{
	const char *cmd[] = {FIXTURE("stacks"), NULL};
	char *art = record(cmd), *prof = profile_of(art);
	char *top = go_pprof_sym(symbolize, "-top", "alloc_objects", prof);

	ck_assert_int_eq(top_flat_prefixed(top, "stk_leaf_malloc fixtures/stacks/stacks.c:"), 3);
	ck_assert_int_eq(top_flat_prefixed(top, "stk_leaf_calloc fixtures/stacks/stacks.c:"), 2);
	ck_assert_int_eq(top_flat_prefixed(top, "stk_lib_alloc fixtures/stacks/libstk.c:"), 4);
	ck_assert_int_eq(top_flat_prefixed(top, "stk_plugin_alloc fixtures/stacks/stk_plugin.c:"),
			 5);
	free(top);
	unlink(prof);
	free(prof);
	free(art);
}

START_TEST(pprof_names_the_same_functions_from_the_files)
{
	expect_fixture_lines("force");
}
END_TEST

/*
 * memtrack's profile carries its frames' source lines (Line.line, Function.filename, the
 * mappings' has_line_numbers): pprof -lines shows them with its own symboliser off, the same as
 * pprof finds them from the files.
 */
START_TEST(pprof_reads_memtracks_source_lines)
{
	expect_fixture_lines("lines");
}
END_TEST

/* C++: demangled names, operator new the allocator's caller, libstdc++'s frames between. */
START_TEST(cxx_names_are_demangled)
{
	const char *cmd[] = {FIXTURE("stacks_cxx"), NULL};
	char *art = record(cmd), *prof = profile_of(art), *top;

	expect_totals(prof, art);
	ck_assert_int_ge(expect_flat_equals_folded(prof, art, "alloc_objects", "allocations"), 1);
	ck_assert_int_ge(expect_flat_equals_folded(prof, art, "alloc_space", "bytes"), 1);
	top = go_pprof("-top", "alloc_objects", prof);
	/* 3 from stk_new_leaf, 8 from the vector's growth (fixtures/README.md). */
	ck_assert_int_eq(top_flat(top, "operator new(unsigned long)"), 3 + 8);
	ck_assert_int_eq(top_weight(top, "stk_new_leaf()", true), 3);
	ck_assert_int_eq(top_weight(top, "stk_vector_grow()", true), 8);
	/* pprof names the profile's file after its first mapping: the command's. */
	ck_assert_msg(!strncmp(top, "File: stacks_cxx\n", 17), "%s", top);
	free(top);
	unlink(prof);
	free(prof);
	free(art);
}
END_TEST

/*
 * Two processes, a static and a dynamic build of one program, each with a thread and a signal
 * handler: one profile, their sums.
 */
START_TEST(processes_of_a_tree_add_up)
{
	/* As a user may run it: in a pid namespace of its own, in a session of its own. */
	const char *wrap[] = {"unshare", "--pid", "--fork", "--mount-proc", "setsid", "-w", NULL};
	const char *cmd[] = {
	    "sh", "-c", "\"$0\" & \"$1\"; wait", FIXTURE("stacks_static"), FIXTURE("stacks"), NULL};
	char *art = record_in(wrap, cmd), *prof = profile_of(art), *top, *raw;

	expect_totals(prof, art);
	expect_flat_equals_folded(prof, art, "alloc_objects", "allocations");
	top = go_pprof("-top", "alloc_objects", prof);
	ck_assert_int_eq(top_flat(top, "stk_leaf_malloc"), 2 * 3);
	ck_assert_int_eq(top_flat(top, "stk_thread_leaf"), 2 * 6);
	ck_assert_int_eq(top_flat(top, "stk_lib_alloc"), 4);
	free(top);
	raw = go_pprof("-raw", NULL, prof);
	expect_mapping(raw, FIXTURE("stacks_static"));
	expect_mapping(raw, FIXTURE("stacks"));
	free(raw);
	unlink(prof);
	free(prof);
	free(art);
}
END_TEST

/* ---- exports by process: forks4 (fixtures/README.md), the parent and its 4 children -------- */

#define FORKS4_IMAGES 5

/* forks4's images in the JSON report: pid, bytes allocated and peak of each, in their order. */
static void forks4_images(struct json_object *doc, long long pid[], long long bytes[],
			  long long peak[])
{
	struct json_object *images = mt_json_get(doc, "images");

	ck_assert_int_eq(json_object_array_length(images), FORKS4_IMAGES);
	for (int k = 0; k < FORKS4_IMAGES; k++) {
		struct json_object *g = json_object_array_get_idx(images, k);

		pid[k] = mt_json_i64(g, "pid");
		bytes[k] = mt_json_i64(g, "bytes_allocated");
		peak[k] = mt_json_i64(g, "peak_bytes");
	}
}

static struct json_object *json_of(const char *art)
{
	char *text = report("--json", art);
	struct json_object *doc = json_tokener_parse(text);

	ck_assert_ptr_nonnull(doc);
	free(text);
	return doc;
}

/* The index of pid among forks4's images. */
static int image_of(const long long pid[], long long p)
{
	for (int k = 0; k < FORKS4_IMAGES; k++)
		if (pid[k] == p)
			return k;
	ck_abort_msg("no image of pid %lld", p);
	return -1;
}

/*
 * report --folded=bytes --by-process: every line under its process's root frame "forks4 (pid
 * N)", each root's lines adding up to its image's bytes (child k: 10 (k + 1) blocks of 32 (k + 1)
 * bytes); without --by-process no line has such a root.
 */
START_TEST(folded_by_process)
{
	const char *cmd[] = {FIXTURE("forks4"), NULL};
	char *art = record(cmd), *text;
	const char *argv[] = {MEMTRACK, "report", "--folded=bytes", "--by-process", art, NULL};
	struct json_object *doc = json_of(art);
	long long pid[FORKS4_IMAGES], bytes[FORKS4_IMAGES], peak[FORKS4_IMAGES];
	long long seen[FORKS4_IMAGES] = {0};
	struct mt_out o;

	forks4_images(doc, pid, bytes, peak);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "%s", o.err);
	for (char *l = o.out, *nl; (nl = strchr(l, '\n')); l = nl + 1) {
		long long p;

		*nl = '\0';
		ck_assert_msg(sscanf(l, "forks4 (pid %lld);", &p) == 1, "no root: %.200s", l);
		ck_assert_ptr_nonnull(strrchr(l, ' '));
		seen[image_of(pid, p)] += atoll(strrchr(l, ' ') + 1);
	}
	for (int k = 0; k < FORKS4_IMAGES; k++)
		ck_assert_int_eq(seen[k], bytes[k]);
	ck_assert_int_eq(bytes[FORKS4_IMAGES - 1], 40 * 128);
	mt_out_free(&o);
	text = report("--folded=bytes", art);
	ck_assert_ptr_null(strstr(text, "(pid "));
	free(text);
	json_object_put(doc);
	unlink(art);
	free(art);
}
END_TEST

/*
 * report --json's over_time: the heap's line of the tree peaks at the report's peak, each
 * image's line at its image's peak, at most a few thousand buckets of bucket_ns; and the RSS the
 * supervisor sampled has its lines too.
 */
START_TEST(json_over_time)
{
	const char *cmd[] = {FIXTURE("forks4"), NULL};
	char *art = record(cmd);
	struct json_object *doc = json_of(art), *ot = mt_json_get(doc, "over_time"), *heap, *lines;
	long long pid[FORKS4_IMAGES], bytes[FORKS4_IMAGES], peak[FORKS4_IMAGES], top = 0;
	struct json_object *tree;

	forks4_images(doc, pid, bytes, peak);
	ck_assert_int_gt(mt_json_i64(ot, "bucket_ns"), 0);
	ck_assert_int_le(mt_json_i64(ot, "buckets"), 2000);
	ck_assert_int_eq(mt_json_i64(ot, "peak_bytes"),
			 mt_json_i64(mt_json_get(doc, "totals"), "peak_bytes"));
	heap = mt_json_get(ot, "heap");
	tree = mt_json_get(mt_json_get(heap, "tree"), "max");
	ck_assert_int_le(json_object_array_length(tree), mt_json_i64(ot, "buckets"));
	for (size_t b = 0; b < json_object_array_length(tree); b++) {
		long long v = json_object_get_int64(json_object_array_get_idx(tree, b));

		top = v > top ? v : top;
	}
	ck_assert_int_eq(top, mt_json_i64(ot, "peak_bytes"));
	lines = mt_json_get(heap, "images");
	ck_assert_int_eq(json_object_array_length(lines), FORKS4_IMAGES);
	ck_assert_int_eq(mt_json_i64(heap, "images_hidden"), 0);
	for (size_t i = 0; i < json_object_array_length(lines); i++) {
		struct json_object *l = json_object_array_get_idx(lines, i), *max;
		int k = image_of(pid, mt_json_i64(l, "pid"));

		top = 0;
		max = mt_json_get(l, "max");
		for (size_t b = 0; b < json_object_array_length(max); b++) {
			long long v = json_object_get_int64(json_object_array_get_idx(max, b));

			top = v > top ? v : top;
		}
		ck_assert_int_eq(top, peak[k]);
		ck_assert_int_eq(mt_json_i64(l, "image"), k);
	}
	ck_assert_int_gt(json_object_array_length(
			     mt_json_get(mt_json_get(mt_json_get(ot, "rss"), "tree"), "max")),
			 0);
	json_object_put(doc);
	unlink(art);
	free(art);
}
END_TEST

/*
 * pprof's samples carry the pid and program of their process image: pprof -raw's samples of
 * each pid add up to that image's bytes, every program label is forks4.
 */
START_TEST(pprof_labels_by_process)
{
	const char *cmd[] = {FIXTURE("forks4"), NULL};
	char *art = record(cmd), *prof = profile_of(art), *raw;
	struct json_object *doc = json_of(art);
	long long pid[FORKS4_IMAGES], bytes[FORKS4_IMAGES], peak[FORKS4_IMAGES];
	long long seen[FORKS4_IMAGES] = {0}, space = -1;
	int labelled = 0;

	forks4_images(doc, pid, bytes, peak);
	raw = go_pprof("-raw", NULL, prof);
	/* A sample's values end with ':' and its locations; its labels follow, a line each. */
	for (char *l = strstr(raw, "Samples:"), *nl; l && (nl = strchr(l, '\n')); l = nl + 1) {
		long long objects, v;
		char *label;

		*nl = '\0';
		if (strchr(l, ':') && !strchr(l, '[') && sscanf(l, " %lld %lld", &objects, &v) == 2)
			space = v;
		if ((label = strstr(l, "program:[")))
			ck_assert_msg(!strncmp(label, "program:[forks4]", 16), "%s", l);
		if (!(label = strstr(l, "pid:[")))
			continue;
		ck_assert_int_ge(space, 0);
		seen[image_of(pid, atoll(label + 5))] += space;
		space = -1;
		labelled++;
	}
	ck_assert_int_ge(labelled, FORKS4_IMAGES);
	for (int k = 0; k < FORKS4_IMAGES; k++)
		ck_assert_int_eq(seen[k], bytes[k]);
	free(raw);
	json_object_put(doc);
	unlink(prof);
	free(prof);
	unlink(art);
	free(art);
}
END_TEST

/* The command failed with code, one line on stderr containing said, nothing on stdout. */
static void expect_refused(const char *const *argv, int code, const char *said)
{
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == code, "exit %d, not %d: %s", o.code, code, o.err);
	ck_assert_str_eq(o.out, "");
	ck_assert_int_eq(mt_count_lines(o.err, ""), 1);
	ck_assert_msg(strstr(o.err, said), "'%s' not in: %s", said, o.err);
	mt_out_free(&o);
}

static bool exists(const char *path)
{
	struct stat st;

	return !stat(path, &st);
}

/* Without --stacks there are no sites: refused as --folded refuses, and no file is written. */
START_TEST(no_stacks_is_refused)
{
	char dir[64], art[128], prof[160];
	const char *run[] = {MEMTRACK,		"run", "-q", "--no-stacks", "-o", art, "--",
			     FIXTURE("stacks"), NULL};
	const char *rep[] = {MEMTRACK, "report", "--pprof", prof, art, NULL};
	struct mt_out o;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(prof, sizeof(prof), "%s/p.pb.gz", dir);
	ck_assert_int_eq(mt_run(run, NULL, NULL, 120, &o), 0);
	ck_assert_int_eq(o.code, 0);
	mt_out_free(&o);
	expect_refused(rep, 1, "the run recorded no stacks (memtrack run --stacks records them)");
	ck_assert(!exists(prof));
}
END_TEST

/*
 * A run with --stacks that made no allocation call (exit_code 0: none, fixtures/README.md) has
 * no sites: its folded stacks are empty and its profile has no sample, neither is refused as a
 * run without --stacks.
 */
START_TEST(no_allocations_is_an_empty_profile)
{
	char dir[64], art[128], prof[160];
	const char *run[] = {
	    MEMTRACK, "run", "-q", "--stacks", "-o", art, "--", FIXTURE("exit_code"), "0", NULL};
	const char *folded[] = {MEMTRACK, "report", "--folded", art, NULL};
	const char *pprof[] = {MEMTRACK, "report", "--pprof", prof, art, NULL};
	const char *const *reports[] = {folded, pprof};
	struct mt_out o;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(prof, sizeof(prof), "%s/p.pb.gz", dir);
	ck_assert_int_eq(mt_run(run, NULL, NULL, 120, &o), 0);
	ck_assert_int_eq(o.code, 0);
	mt_out_free(&o);
	for (size_t i = 0; i < sizeof(reports) / sizeof(reports[0]); i++) {
		ck_assert_int_eq(mt_run(reports[i], NULL, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 0, "%s: exit %d: %s", reports[i][2], o.code, o.err);
		ck_assert_str_eq(o.out, "");
		ck_assert_str_eq(o.err, "");
		mt_out_free(&o);
	}
	ck_assert(exists(prof));
	unlink(prof);
	unlink(art);
	rmdir(dir);
}
END_TEST

START_TEST(bad_inputs_are_one_sentence)
{
	const char *cmd[] = {FIXTURE("stacks"), NULL};
	char *art = record(cmd), dir[64], junk[128], prof[160], bytes[] = "not an artifact\n";
	const char *corrupt[] = {MEMTRACK, "report", "--pprof", prof, junk, NULL};
	const char *no_dir[] = {MEMTRACK, "report", "--pprof", "/nonexistent/p.pb.gz", art, NULL};
	const char *a_dir[] = {MEMTRACK, "report", "--pprof", dir, art, NULL};
	const char *itself[] = {MEMTRACK, "report", "--pprof", art, art, NULL};
	const char *json[] = {MEMTRACK, "report", "--json", "--pprof", prof, art, NULL};
	const char *folded[] = {MEMTRACK, "report", "--pprof", prof, "--folded", art, NULL};
	const char *no_arg[] = {MEMTRACK, "report", art, "--pprof", NULL};
	const char *twice[] = {MEMTRACK, "report", "--pprof", prof, "--html", prof, art, NULL};
	char *before = mt_slurp(art), *after;
	FILE *f;

	mt_tmpdir(dir);
	snprintf(junk, sizeof(junk), "%s/junk.mtk", dir);
	snprintf(prof, sizeof(prof), "%s/p.pb.gz", dir);
	f = fopen(junk, "w");
	fputs(bytes, f);
	fclose(f);
	expect_refused(corrupt, 1, junk);
	ck_assert(!exists(prof));
	expect_refused(no_dir, 1, "memtrack: cannot create /nonexistent/p.pb.gz: No such file");
	expect_refused(a_dir, 1, "Is a directory");
	expect_refused(itself, 1, "writing there would overwrite the artifact");
	after = mt_slurp(art);
	ck_assert_str_eq(after, before);
	expect_refused(json, 2, "--pprof writes a file, --json prints: choose one");
	expect_refused(folded, 2, "--pprof writes a file, --folded prints: choose one");
	expect_refused(no_arg, 2, "--pprof");
	/* the page would replace the profile */
	expect_refused(twice, 2, "--html and --pprof both write");
	ck_assert(!exists(prof));
	free(before);
	free(after);
	free(art);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("pprof");
	TCase *tc = tcase_create("pprof");
	TCase *tools = tcase_create("tools");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, no_stacks_is_refused);
	tcase_add_test(tc, no_allocations_is_an_empty_profile);
	tcase_add_test(tc, bad_inputs_are_one_sentence);
	tcase_add_test(tc, folded_by_process);
	tcase_add_test(tc, json_over_time);
	suite_add_tcase(s, tc);
	/* Go's pprof (golang-go), which the kernel matrix's guest lacks. */
	tcase_set_tags(tools, "tools");
	tcase_set_timeout(tools, 300);
	mt_tcase_add_tool_test(tools, stacks_profile_equals_the_report, "go");
	mt_tcase_add_tool_test(tools, pprof_names_the_same_functions_from_the_files, "go");
	mt_tcase_add_tool_test(tools, pprof_reads_memtracks_source_lines, "go");
	mt_tcase_add_tool_test(tools, cxx_names_are_demangled, "go");
	mt_tcase_add_tool_test(tools, processes_of_a_tree_add_up, "go");
	mt_tcase_add_tool_test(tools, pprof_labels_by_process, "go");
	suite_add_tcase(s, tools);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
