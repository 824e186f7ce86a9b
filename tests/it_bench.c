// SPDX-License-Identifier: GPL-2.0
/*
 * Integration tests of `memtrack bench` (docs/BENCH.md): CodSpeed's runner in memory mode.
 * memtrack's own exec-harness under it, a plan of fixtures of known allocations, each a window
 * with exact figures; CodSpeed's real Node.js client (@codspeed/tinybench-plugin from npm,
 * tests/node, installed by tools/install-deps) with three benchmarks of known allocation, and the
 * comparison gate on two of its runs; and the bad inputs: FIFOs already there (a planted link,
 * another user's FIFO), garbage and an unknown protocol version on the FIFO, a window never
 * closed and nested ones, each one sentence and a bounded exit.
 *
 * Each run gets a mount namespace with a private /tmp (the FIFO paths are fixed and other
 * suites use them): it needs root, as memtrack does.
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "lib/browser.h"
#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "lib/twin.h"

#define NODE_MODULES MT_SOURCE_DIR "/tests/node/node_modules"
#define NODE_BENCH   MT_SOURCE_DIR "/tests/node/bench.cjs"
#define TOP	     MT_BUILD_DIR "/tests/it_bench.d"

static char dir[256];
static struct mt_out last;

static void setup(void)
{
	static int n;
	struct mt_out o = {0};

	snprintf(dir, sizeof(dir), TOP "/%d-%d", (int)getpid(), n++);
	mt_run((const char *[]){"mkdir", "-p", dir, NULL}, NULL, NULL, 10, &o);
	mt_out_free(&o);
}

static void teardown(void)
{
	struct mt_out o = {0};

	mt_out_free(&last);
	mt_run((const char *[]){"rm", "-rf", dir, NULL}, NULL, NULL, 60, &o);
	mt_out_free(&o);
}

/* script run by sh in dir, in a mount namespace whose /tmp is a fresh tmpfs. */
static const struct mt_out *in_ns(const char *script, const char *const *env)
{
	char full[20000], before[64], after[2 * PATH_MAX];

	/* A checkout under /tmp (its build, this test's folder, the node benchmark) is kept. */
	mt_tmp_keep_trees(before, sizeof(before), after, sizeof(after));
	snprintf(full, sizeof(full), "%smount -t tmpfs -o mode=1777 tmpfs /tmp && %s%s", before,
		 after, script);
	mt_out_free(&last);
	ck_assert_int_eq(mt_run((const char *[]){"unshare", "--mount", "--propagation", "private",
						 "/bin/sh", "-c", full, NULL},
				env, dir, 240, &last),
			 0);
	return &last;
}

static json_object *parse_json(const char *text)
{
	json_object *j = json_tokener_parse(text);

	ck_assert_msg(j, "not JSON: %s", text);
	return j;
}

static json_object *bench_named(json_object *doc, const char *name)
{
	json_object *list = mt_json_get(doc, "benchmarks");

	for (size_t i = 0; i < json_object_array_length(list); i++) {
		json_object *b = json_object_array_get_idx(list, i);

		if (!strcmp(json_object_get_string(mt_json_get(b, "name")), name))
			return b;
	}
	ck_abort_msg("no benchmark %s", name);
	return NULL;
}

/* ---- exec-harness: a plan of commands, each a window, exact ------------------------------ */

/*
 * A benchmark's heap over time: bounded, in time order, from [0, heap_at_start] to the stop, and
 * its largest point is the peak (heap_at_start + peak_bytes), exactly.
 */
static void expect_timeline(json_object *b)
{
	json_object *tl = mt_json_get(b, "timeline");
	size_t n = json_object_array_length(tl);
	long long prev = -1, top = 0, start = mt_json_i64(b, "heap_at_start");

	ck_assert_int_ge(n, 2);
	ck_assert_int_le(n, 200 + 2);
	for (size_t i = 0; i < n; i++) {
		json_object *p = json_object_array_get_idx(tl, i);
		long long t = json_object_get_int64(json_object_array_get_idx(p, 0));
		long long v = json_object_get_int64(json_object_array_get_idx(p, 1));

		ck_assert_int_ge(t, prev);
		ck_assert_int_ge(v, start);
		prev = t;
		top = v > top ? v : top;
		if (!i) {
			ck_assert_int_eq(t, 0);
			ck_assert_int_eq(v, start);
		}
	}
	ck_assert_int_eq(prev, mt_json_i64(b, "stop_ns") - mt_json_i64(b, "start_ns"));
	ck_assert_int_eq(top - start, mt_json_i64(b, "peak_bytes"));
}

/*
 * memtrack's own exec-harness is traced: under AddressSanitizer (make SANITIZE=1) its leak check
 * at exit cannot stop its threads, which memtrack traces, and would spin.
 */
static const char *const no_leak_check[] = {"ASAN_OPTIONS=detect_leaks=0", NULL};

#define PLAN                                                                                       \
	"[{\"command\":[\"" MT_BUILD_DIR "/fixtures/churn\",\"100\"],\"name\":\"churn100\"},"      \
	"{\"command\":[\"" MT_BUILD_DIR "/fixtures/churn\",\"300\"],\"name\":\"churn300\"},"       \
	"{\"command\":[\"" MT_BUILD_DIR "/fixtures/forks4\"],\"name\":\"forks4\"},"                \
	"{\"command\":[\"" MT_BUILD_DIR                                                            \
	"/fixtures/stress\",\"threads\",\"4\"],\"name\":\"threads\"}]"

/* Two benchmarks of churn: 100 and 300 blocks. */
#define TWO_CHURNS                                                                                 \
	"[{\"command\":[\"" MT_BUILD_DIR "/fixtures/churn\",\"100\"],\"name\":\"c100\"},"          \
	"{\"command\":[\"" MT_BUILD_DIR "/fixtures/churn\",\"300\"],\"name\":\"c300\"}]"

/* The plan text into dir/plan.json, its path into plan. */
static void write_plan(char *plan, size_t size, const char *text)
{
	FILE *f;

	snprintf(plan, size, "%s/plan.json", dir);
	f = fopen(plan, "w");
	ck_assert_ptr_nonnull(f);
	fputs(text, f);
	ck_assert_int_eq(fclose(f), 0);
}

START_TEST(exec_harness_plan_gives_each_benchmark_its_exact_figures)
{
	char script[8192], plan[512];
	const struct mt_out *o;
	json_object *doc, *b;

	write_plan(plan, sizeof(plan), PLAN);
	snprintf(script, sizeof(script),
		 MT_BUILD_DIR "/memtrack bench --json -o %s/a.mtk -- " MT_BUILD_DIR
			      "/memtrack exec-harness - < %s",
		 dir, plan);
	o = in_ns(script, no_leak_check);
	ck_assert_msg(o->code == 0, "exit %d: %s", o->code, o->err);
	doc = parse_json(o->out);
	ck_assert_int_eq(json_object_array_length(mt_json_get(doc, "benchmarks")), 4);
	/* fixtures/README.md: churn N allocates and frees N blocks, block i of 16 (1 + i % 256). */
	b = bench_named(doc, "churn100");
	ck_assert_str_eq(json_object_get_string(mt_json_get(b, "uri")), "exec_harness::churn100");
	ck_assert_int_eq(mt_json_i64(b, "allocations"), 100);
	ck_assert_int_eq(mt_json_i64(b, "frees"), 100);
	ck_assert_int_eq(mt_json_i64(b, "bytes_allocated"), 80800);
	ck_assert_int_eq(mt_json_i64(b, "average_allocation"), 808);
	ck_assert_int_eq(mt_json_i64(b, "peak_bytes"), 1600);
	ck_assert_int_eq(mt_json_i64(b, "live_at_end"), 0);
	expect_timeline(b);
	b = bench_named(doc, "churn300");
	ck_assert_int_eq(mt_json_i64(b, "allocations"), 300);
	ck_assert_int_eq(mt_json_i64(b, "bytes_allocated"), 542176);
	ck_assert_int_eq(mt_json_i64(b, "peak_bytes"), 4096);
	ck_assert_int_eq(mt_json_i64(b, "live_at_end"), 0);
	expect_timeline(b);
	/* The benchmark's children are its window's: forks4's whole tree; what the children
	 * leave is released at their exits, before the window closes. */
	b = bench_named(doc, "forks4");
	ck_assert_int_eq(mt_json_i64(b, "allocations"), 101);
	ck_assert_int_eq(mt_json_i64(b, "frees"), 95);
	ck_assert_int_eq(mt_json_i64(b, "bytes_allocated"), 10600);
	ck_assert_int_eq(mt_json_i64(b, "live_at_end"), 0);
	ck_assert(json_object_get_boolean(mt_json_get(b, "closed")));
	expect_timeline(b);
	/* Its threads are its window's: stress threads 4, glibc's DTV of each (calloc 272). */
	b = bench_named(doc, "threads");
	ck_assert_int_eq(mt_json_i64(b, "allocations"), 4);
	ck_assert_int_eq(mt_json_i64(b, "bytes_allocated"), 4 * 272);
	json_object_put(doc);

	/* memtrack report splits the artifact the same way. */
	snprintf(plan, sizeof(plan), "%s/a.mtk", dir);
	mt_out_free(&last);
	ck_assert_int_eq(
	    mt_run((const char *[]){MEMTRACK, "report", "--benchmarks", "--json", plan, NULL}, NULL,
		   NULL, 60, &last),
	    0);
	ck_assert_msg(last.code == 0, "exit %d: %s", last.code, last.err);
	doc = parse_json(last.out);
	b = bench_named(doc, "churn300");
	ck_assert_int_eq(mt_json_i64(b, "allocations"), 300);
	ck_assert_int_eq(mt_json_i64(b, "bytes_allocated"), 542176);
	json_object_put(doc);
}
END_TEST

/* With --stacks each window has its sites: churn's allocations all come from its main. */
START_TEST(stacks_give_each_benchmark_its_sites)
{
	char script[8192], plan[512];
	const struct mt_out *o;
	json_object *doc, *site, *frames;
	bool main_seen = false;

	write_plan(plan, sizeof(plan),
		   "[{\"command\":[\"" MT_BUILD_DIR "/fixtures/churn\",\"100\"],\"name\":\"c\"}]");
	snprintf(script, sizeof(script),
		 MT_BUILD_DIR "/memtrack bench --stacks --json -o %s/a.mtk -- " MT_BUILD_DIR
			      "/memtrack exec-harness - < %s",
		 dir, plan);
	o = in_ns(script, no_leak_check);
	ck_assert_msg(o->code == 0, "exit %d: %s", o->code, o->err);
	doc = parse_json(o->out);
	ck_assert_int_eq(mt_json_i64(bench_named(doc, "c"), "allocations"), 100);
	site = json_object_array_get_idx(mt_json_get(bench_named(doc, "c"), "sites"), 0);
	ck_assert_ptr_nonnull(site);
	ck_assert_int_eq(mt_json_i64(site, "allocations"), 100);
	ck_assert_int_eq(mt_json_i64(site, "bytes"), 80800);
	frames = mt_json_get(site, "frames");
	for (size_t i = 0; i < json_object_array_length(frames); i++)
		main_seen |=
		    !strcmp(json_object_get_string(json_object_array_get_idx(frames, i)), "main");
	ck_assert_msg(main_seen, "%s", json_object_to_json_string(site));
	json_object_put(doc);
}
END_TEST

/* ---- -o DIR: CodSpeed's profile folder ----------------------------------------------------- */

#define CHECKER MT_SOURCE_DIR "/tools/check-codspeed-artifacts"

/*
 * -o DIR/ leaves what CodSpeed's runner leaves after a memory run: results/ROOTPID.Memtrack
 * Artifact.msgpack with the events of the windows only (exec-harness allocates nothing in them:
 * churn's 100 and 300 mallocs and frees are all), results/ExecutionTimestamps.msgpack naming
 * both benchmarks, both decoded by the independent checker; memtrack's artifact in memtrack/. A
 * second run into the same folder is refused: the runner would read both runs' files as one.
 */
START_TEST(output_folder_is_codspeeds_profile_folder)
{
	char script[8192], plan[512], prof[512], path[2048];
	const struct mt_out *o;
	json_object *doc, *events;

	write_plan(plan, sizeof(plan), TWO_CHURNS);
	snprintf(prof, sizeof(prof), "%s/prof", dir);
	snprintf(script, sizeof(script),
		 MT_BUILD_DIR "/memtrack bench -o %s/ -- " MT_BUILD_DIR
			      "/memtrack exec-harness - < %s",
		 prof, plan);
	o = in_ns(script, no_leak_check);
	ck_assert_msg(o->code == 0, "exit %d: %s", o->code, o->err);
	ck_assert_msg(strstr(o->err, "CodSpeed's profile folder"), "%s", o->err);
	snprintf(path, sizeof(path), "%s/results/ExecutionTimestamps.msgpack", prof);
	ck_assert_msg(access(path, R_OK) == 0, "no %s", path);
	snprintf(path, sizeof(path), "ls %s/memtrack/*.mtk %s/results/*.MemtrackArtifact.msgpack",
		 prof, prof);
	mt_out_free(&last);
	ck_assert_int_eq(
	    mt_run((const char *[]){"/bin/sh", "-c", path, NULL}, NULL, NULL, 10, &last), 0);
	ck_assert_msg(last.code == 0 && mt_count_lines(last.out, "") == 2, "%s%s", last.out,
		      last.err);

	mt_out_free(&last);
	ck_assert_int_eq(
	    mt_run((const char *[]){CHECKER, "memory", prof, NULL}, NULL, NULL, 60, &last), 0);
	ck_assert_msg(last.code == 0, "checker: %s", last.err);
	doc = parse_json(last.out);
	events = mt_json_get(doc, "events");
	ck_assert_int_eq(mt_json_i64(events, "Malloc"), 400);
	ck_assert_int_eq(mt_json_i64(events, "Free"), 400);
	ck_assert_str_eq(json_object_to_json_string(mt_json_get(doc, "uris")),
			 "[ \"exec_harness::c100\", \"exec_harness::c300\" ]");
	json_object_put(doc);

	o = in_ns(script, no_leak_check);
	ck_assert_msg(o->code == 2, "exit %d: %s", o->code, o->err);
	ck_assert_msg(strstr(o->err, "results/ holds files of another run"), "%s", o->err);
}
END_TEST

/* ---- the runner twin turned around --------------------------------------------------------- */

#define TWIN_INTEGRATION MT_TWIN_BIN("twin_integration")

/* The twin (tests/twin), or why its test is skipped. */
static const char *twin_missing(void)
{
	return mt_cargo_build(MT_SOURCE_DIR "/tests/twin", MT_TWIN_DIR,
			      (const char *const[]){"twin_integration", NULL});
}

/*
 * tests/twin's twin_integration plays an integration against memtrack bench: each of memtrack's
 * replies, decoded with the runner's types, is what runner 5.0.2 answers (the twin fails
 * otherwise); its two windows hold exactly the blocks it allocated and freed in them; the
 * profile folder of -o DIR/ decodes with the runner's types, every event in a sample, and its
 * ExecutionTimestamps holds what the runner notes of the commands sent: its samples, and each
 * AddMarker's marker as it came (a SampleStart(1) before any window, each benchmark's RoundStart
 * and RoundEnd), in the order sent, in the runner's encoding. With frames the runner answers
 * Err, memtrack answers Err too, and exits 1 for them.
 */
START_TEST(twin_integration_gets_the_runners_answers)
{
	char cmd[1024], sent[sizeof(dir) + 16];
	const struct mt_out *o;
	json_object *doc, *b;

	o = in_ns(MT_BUILD_DIR "/memtrack bench --json -o prof/ -- " TWIN_INTEGRATION
			       " client --sent sent.json",
		  NULL);
	ck_assert_msg(o->code == 0, "exit %d: %s", o->code, o->err);
	ck_assert_msg(strstr(o->err, "twin: ok: 14 frames, 2 benchmarks"), "%s", o->err);
	doc = parse_json(o->out);
	b = bench_named(doc, "alloc_3x4096");
	ck_assert_str_eq(json_object_get_string(mt_json_get(b, "uri")),
			 "twin_integration::alloc_3x4096");
	ck_assert_int_eq(mt_json_i64(b, "allocations"), 3);
	ck_assert_int_eq(mt_json_i64(b, "frees"), 3);
	ck_assert_int_eq(mt_json_i64(b, "bytes_allocated"), 3 * 4096);
	ck_assert_int_eq(mt_json_i64(b, "peak_bytes"), 3 * 4096);
	ck_assert_int_eq(mt_json_i64(b, "live_at_end"), 0);
	b = bench_named(doc, "alloc_100000");
	ck_assert_int_eq(mt_json_i64(b, "allocations"), 1);
	ck_assert_int_eq(mt_json_i64(b, "frees"), 1);
	ck_assert_int_eq(mt_json_i64(b, "bytes_allocated"), 100000);
	ck_assert_int_eq(mt_json_i64(b, "peak_bytes"), 100000);
	json_object_put(doc);

	snprintf(cmd, sizeof(cmd), "%s/prof", dir);
	snprintf(sent, sizeof(sent), "%s/sent.json", dir);
	mt_out_free(&last);
	ck_assert_int_eq(mt_run((const char *[]){TWIN_INTEGRATION, "profile", cmd, sent, NULL},
				NULL, NULL, 60, &last),
			 0);
	ck_assert_msg(last.code == 0, "%s%s", last.out, last.err);
	ck_assert_msg(strstr(last.out, "(Malloc 4, Free 4, other "), "%s", last.out);
	/* 4 samples' markers and 5 AddMarkers' */
	ck_assert_msg(strstr(last.out,
			     "in 2 samples, 9 markers as the runner notes them (2 rounds "
			     "in their samples), the same bytes re-encoded, uris "
			     "twin_integration::alloc_3x4096,twin_integration::alloc_100000"),
		      "%s", last.out);

	o = in_ns(MT_BUILD_DIR "/memtrack bench -o b.mtk -- " TWIN_INTEGRATION " client --refused",
		  NULL);
	ck_assert_msg(o->code == 1, "exit %d: %s%s", o->code, o->out, o->err);
	ck_assert_msg(strstr(o->out, "twin: ok: 16 frames, 2 benchmarks"), "%s", o->out);
	ck_assert_msg(strstr(o->err, "PingProfiler is no message an integration sends"), "%s",
		      o->err);
}
END_TEST

/* ---- the HTML report of a bench artifact ------------------------------------------------ */

/* The attribute name of the first tag of dom that begins with tag, as a number. */
static long long dom_number(const char *dom, const char *tag, const char *name)
{
	char *v = mt_html_attr(dom, tag, name);
	long long n = atoll(v);

	free(v);
	return n;
}

/* The page drawn by chromium with #frag (to free). */
static char *page_dom(const char *html, const char *frag)
{
	char url[PATH_MAX + 64];

	snprintf(url, sizeof(url), "file://%s#%s", html, frag);
	return mt_browser_dom(url);
}

/*
 * report --html on a bench artifact: the page lists every benchmark with its figures (the
 * --json document's), and choosing one (#bench=NAME, as its button does) makes its window the
 * page's time range: the flamegraph's range covers the window in whole buckets and holds at
 * least the benchmark's allocations, and its own heap over time is drawn, its peak the peak's.
 */
START_TEST(html_page_chooses_a_benchmark)
{
	char script[8192], plan[512], art[512], html[512], tag[64];
	const struct mt_out *o;
	json_object *doc, *list;
	long long start_mono;
	char *dom;

	write_plan(plan, sizeof(plan), TWO_CHURNS);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(html, sizeof(html), "%s/a.html", dir);
	snprintf(script, sizeof(script),
		 MT_BUILD_DIR "/memtrack bench --stacks --json -o %s -- " MT_BUILD_DIR
			      "/memtrack exec-harness - < %s",
		 art, plan);
	o = in_ns(script, no_leak_check);
	ck_assert_msg(o->code == 0, "exit %d: %s", o->code, o->err);
	doc = parse_json(o->out);
	list = mt_json_get(doc, "benchmarks");
	ck_assert_int_eq(json_object_array_length(list), 2);
	mt_out_free(&last);
	ck_assert_int_eq(mt_run((const char *[]){MEMTRACK, "report", "--json", art, NULL}, NULL,
				NULL, 60, &last),
			 0);
	ck_assert_int_eq(last.code, 0);
	start_mono = mt_json_int(last.out, "start_mono_ns");
	mt_out_free(&last);
	ck_assert_int_eq(mt_run((const char *[]){MEMTRACK, "report", "--html", html, art, NULL},
				NULL, NULL, 60, &last),
			 0);
	ck_assert_msg(last.code == 0, "exit %d: %s", last.code, last.err);

	/* Nothing chosen: each benchmark's row and its figures. */
	dom = page_dom(html, "");
	ck_assert_int_eq(dom_number(dom, "<section id=\"benchmarks\"", "data-rendered"), 1);
	ck_assert_ptr_null(strstr(dom, "data-selected="));
	for (size_t k = 0; k < 2; k++) {
		json_object *b = json_object_array_get_idx(list, k);

		snprintf(tag, sizeof(tag), "<tr class=\"bench\" data-bench=\"%zu\"", k);
		ck_assert_int_eq(dom_number(dom, tag, "data-allocations"),
				 mt_json_i64(b, "allocations"));
		ck_assert_int_eq(dom_number(dom, tag, "data-bytes-allocated"),
				 mt_json_i64(b, "bytes_allocated"));
		ck_assert_int_eq(dom_number(dom, tag, "data-peak-bytes"),
				 mt_json_i64(b, "peak_bytes"));
		ck_assert_int_eq(dom_number(dom, tag, "data-live-at-end"),
				 mt_json_i64(b, "live_at_end"));
	}
	free(dom);

	/* Each chosen in turn: its figures shown, its window the view's range. */
	for (size_t k = 0; k < 2; k++) {
		json_object *b = json_object_array_get_idx(list, k);
		long long from = mt_json_i64(b, "start_ns") - start_mono;
		long long to = mt_json_i64(b, "stop_ns") - start_mono;
		char frag[64];

		snprintf(frag, sizeof(frag), "weight=allocations&bench=%s",
			 json_object_get_string(mt_json_get(b, "name")));
		dom = page_dom(html, frag);
		ck_assert_int_eq(dom_number(dom, "<section id=\"benchmarks\"", "data-selected"),
				 (long long)k);
		ck_assert_int_eq(dom_number(dom, "<div id=\"bench-shown\"", "data-allocations"),
				 mt_json_i64(b, "allocations"));
		ck_assert_int_eq(dom_number(dom, "<div id=\"bench-shown\"", "data-peak-bytes"),
				 mt_json_i64(b, "peak_bytes"));
		ck_assert_int_eq(dom_number(dom, "<div id=\"bench-plot\"", "data-peak"),
				 mt_json_i64(b, "peak_bytes"));
		ck_assert_int_eq(dom_number(dom, "<div id=\"bench-plot\"", "data-points"),
				 (long long)json_object_array_length(mt_json_get(b, "timeline")));
		ck_assert_int_le(dom_number(dom, "<div id=\"flame\"", "data-range-from"), from);
		ck_assert_int_ge(dom_number(dom, "<div id=\"flame\"", "data-range-to"), to);
		ck_assert_int_ge(dom_number(dom, "<div id=\"flame\"", "data-total"),
				 mt_json_i64(b, "allocations"));
		free(dom);
	}
	json_object_put(doc);
}
END_TEST

/* ---- CodSpeed's Node.js client ------------------------------------------------------------ */

/* fixtures/README.md, "Node.js benchmarks": COUNT typed arrays of SIZE bytes each. */
static const struct {
	const char *name;
	long long size, count;
} node_truth[] = {
    {"alloc_64k_x10", 64 * 1024, 10},
    {"alloc_128k_x20", 128 * 1024, 20},
    {"alloc_1m_x5", 1024 * 1024, 5},
};
/* What Node.js and V8 allocate beside the arrays in a window (docs/BENCH.md): at most this. */
#define NODE_SLACK (64 * 1024)

/* memtrack bench of the node benchmarks in dir (with .git, which @codspeed/core requires). */
static const struct mt_out *node_bench(const char *opts, const char *double_name)
{
	char script[16384], env_double[128];
	const char *env[] = {"NODE_PATH=" NODE_MODULES, env_double, NULL};

	snprintf(env_double, sizeof(env_double), "MT_BENCH_DOUBLE=%s",
		 double_name ? double_name : "");
	snprintf(script, sizeof(script),
		 "mkdir -p .git && cp " NODE_BENCH " bench.cjs && " MT_BUILD_DIR
		 "/memtrack bench %s -- node bench.cjs",
		 opts);
	return in_ns(script, env);
}

static const char *node_missing(void)
{
	if (access(NODE_MODULES "/@codspeed/tinybench-plugin/package.json", R_OK))
		return "tests/node/node_modules has no @codspeed/tinybench-plugin "
		       "(tools/install-deps "
		       "installs it)";
	return NULL;
}

START_TEST(node_tinybench_benchmarks_have_their_figures)
{
	char opts[512];
	const struct mt_out *o;
	json_object *doc;

	snprintf(opts, sizeof(opts), "--json -o %s/n.mtk", dir);
	o = node_bench(opts, NULL);
	ck_assert_msg(o->code == 0, "exit %d: %s", o->code, o->err);
	doc = parse_json(o->out);
	ck_assert_int_eq(json_object_array_length(mt_json_get(doc, "benchmarks")), 3);
	for (size_t i = 0; i < 3; i++) {
		json_object *b = bench_named(doc, node_truth[i].name);
		long long truth = node_truth[i].size * node_truth[i].count;
		char uri[128];

		snprintf(uri, sizeof(uri), "bench.cjs::%s", node_truth[i].name);
		ck_assert_str_eq(json_object_get_string(mt_json_get(b, "uri")), uri);
		ck_assert(json_object_get_boolean(mt_json_get(b, "closed")));
		/* The arrays, exactly, and V8's own small allocations within the slack. */
		ck_assert_int_ge(mt_json_i64(b, "bytes_allocated"), truth);
		ck_assert_int_le(mt_json_i64(b, "bytes_allocated"), truth + NODE_SLACK);
		ck_assert_int_ge(mt_json_i64(b, "allocations"), node_truth[i].count);
		ck_assert_int_ge(mt_json_i64(b, "peak_bytes"), truth);
		ck_assert_int_le(mt_json_i64(b, "peak_bytes"), truth + NODE_SLACK);
		/* Kept until the function returns: no GC ran between (V8's flags, BENCH.md). */
		ck_assert_int_ge(mt_json_i64(b, "live_at_end"), truth);
	}
	json_object_put(doc);
}
END_TEST

START_TEST(comparison_gate_fails_for_the_changed_benchmark_only)
{
	char opts[2048], base[512], md[512], *text;
	const struct mt_out *o;
	FILE *f;

	snprintf(base, sizeof(base), "%s/base.json", dir);
	snprintf(md, sizeof(md), "%s/pr.md", dir);
	o = node_bench("-q --json", NULL);
	ck_assert_msg(o->code == 0, "exit %d: %s", o->code, o->err);
	f = fopen(base, "w");
	ck_assert_ptr_nonnull(f);
	fputs(o->out, f);
	fclose(f);

	/* Unchanged: within 10%. */
	snprintf(opts, sizeof(opts), "--compare %s --max-increase bytes_allocated=10%%", base);
	o = node_bench(opts, NULL);
	ck_assert_msg(o->code == 0, "exit %d: %s", o->code, o->err);

	/* One benchmark's allocations doubled: exit 3, that benchmark alone over its limit. */
	snprintf(opts, sizeof(opts),
		 "--compare %s --max-increase bytes_allocated=10%% --max-increase "
		 "allocations=50%% --markdown %s",
		 base, md);
	o = node_bench(opts, "alloc_128k_x20");
	ck_assert_msg(o->code == 3, "exit %d: %s", o->code, o->err);
	ck_assert_int_eq(mt_count_lines(o->err, "exceeds its limit"), 2);
	ck_assert_msg(strstr(o->err, "1 benchmark exceeds a --max-increase limit"), "%s", o->err);
	text = mt_slurp(md);
	ck_assert_ptr_nonnull(text);
	ck_assert_msg(strstr(text, "1 of 3 benchmarks exceed a limit"), "%s", text);
	ck_assert_int_eq(mt_count_lines(text, "exceeds a limit |"), 1);
	ck_assert_int_eq(mt_count_lines(text, "alloc\\_128k\\_x20"), 1);
	ck_assert_msg(strstr(strstr(text, "alloc\\_128k\\_x20"), "exceeds a limit"), "%s", text);
	free(text);
}
END_TEST

/* ---- bad input ------------------------------------------------------------------------- */

START_TEST(fifos_already_there_are_refused_never_taken_over)
{
	const struct mt_out *o;

	/* A link planted where the FIFO goes: refused, its target untouched. */
	o = in_ns(
	    "echo keep > /tmp/target && ln -s /tmp/target /tmp/runner.ctl.fifo && " MT_BUILD_DIR
	    "/memtrack bench -o a.mtk -- true; echo rc=$?; cat /tmp/target; ls -l /tmp",
	    NULL);
	ck_assert_msg(strstr(o->out, "rc=1\nkeep\n"), "%s\n%s", o->out, o->err);
	ck_assert_msg(strstr(o->err, "/tmp/runner.ctl.fifo exists: another runner"), "%s", o->err);
	ck_assert_msg(strstr(o->out, "runner.ctl.fifo -> /tmp/target"), "%s", o->out);
	ck_assert_msg(!strstr(o->out, "runner.ack.fifo"), "%s", o->out);

	/* Another user's FIFO: refused, left as it was. */
	o = in_ns("mkfifo -m 0666 /tmp/runner.ack.fifo && chown nobody /tmp/runner.ack.fifo "
		  "&& " MT_BUILD_DIR
		  "/memtrack bench -o a.mtk -- true; echo rc=$?; stat -c '%U %F' "
		  "/tmp/runner.ack.fifo; ls /tmp",
		  NULL);
	ck_assert_msg(strstr(o->out, "rc=1\nnobody fifo\n"), "%s\n%s", o->out, o->err);
	ck_assert_msg(strstr(o->err, "/tmp/runner.ack.fifo exists"), "%s", o->err);
	/* The control FIFO made before it is removed again. */
	ck_assert_msg(!strstr(o->out, "runner.ctl.fifo"), "%s", o->out);
}
END_TEST

/* Under sudo the command runs as the invoking user, who must open the FIFOs read-write. */
START_TEST(fifos_belong_to_the_commands_user)
{
	const char *env[] = {"SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody", NULL};
	const struct mt_out *o;

	chmod(dir, 0777);
	o = in_ns(MT_BUILD_DIR "/memtrack bench -q -o a.mtk -- sh -c 'id -u; stat -c \"%U %a %F\" "
			       "/tmp/runner.ctl.fifo /tmp/runner.ack.fifo'; ls -A /tmp",
		  env);
	ck_assert_msg(strstr(o->out, "65534\nnobody 600 fifo\nnobody 600 fifo\n"), "%s\n%s", o->out,
		      o->err);
	/* Removed at the end. */
	ck_assert_msg(!strstr(o->out, "runner."), "%s", o->out);
}
END_TEST

/*
 * A shell client, dir/client.sh: send each frame (printf escapes) on the control FIFO and read
 * an answer after each (bounded: a missing answer ends the client, not the test). then: more
 * shell after them.
 */
static void client(const char *frames, const char *then)
{
	char path[512];
	FILE *f;

	snprintf(path, sizeof(path), "%s/client.sh", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f,
		"exec 3<>/tmp/runner.ctl.fifo 4<>/tmp/runner.ack.fifo\n"
		"for f in %s; do\n"
		"\tprintf \"$f\" >&3\n"
		"\ttimeout 5 head -c 8 <&4 | od -An -tu1\n"
		"done\n%s\n",
		frames, then ? then : "");
	fclose(f);
}

#define F_START	     "'\\004\\0\\0\\0\\001\\0\\0\\0'"
#define F_STOP	     "'\\004\\0\\0\\0\\002\\0\\0\\0'"
#define F_VERSION    "'\\014\\0\\0\\0\\010\\0\\0\\0\\003\\0\\0\\0\\0\\0\\0\\0'"
#define BENCH_CLIENT MT_BUILD_DIR "/memtrack bench -o a.mtk -- sh client.sh"

START_TEST(an_unknown_protocol_version_is_one_sentence)
{
	const struct mt_out *o;

	client(F_VERSION, NULL);
	o = in_ns(BENCH_CLIENT, NULL);
	ck_assert_msg(o->code == 1, "exit %d: %s", o->code, o->err);
	ck_assert_msg(strstr(o->err, "the integration speaks protocol version 3;"), "%s", o->err);
	/* Answered Err (variant 6), not left waiting. */
	ck_assert_msg(strstr(o->out, "4   0   0   0   6   0   0   0"), "%s", o->out);
}
END_TEST

START_TEST(garbage_on_the_fifo_is_one_sentence_never_a_hang)
{
	const struct mt_out *o;

	/* A length of 4 GiB, then anything: one Err, the rest discarded. */
	client("'\\377\\377\\377\\377xyz'", "head -c 100 /dev/urandom >&3");
	o = in_ns(BENCH_CLIENT, NULL);
	ck_assert_msg(o->code == 1, "exit %d: %s", o->code, o->err);
	ck_assert_msg(
	    strstr(o->err, "a frame of 4294967295 bytes on the runner FIFO is no message"), "%s",
	    o->err);
	ck_assert_msg(strstr(o->out, "255 255 255 255") == NULL, "%s", o->out);
	/* A frame of a good length whose variant is none: Err, and the next one is served. */
	client("'\\004\\0\\0\\0\\077\\0\\0\\0' " F_START, NULL);
	o = in_ns(BENCH_CLIENT, NULL);
	ck_assert_msg(o->code == 1, "exit %d: %s", o->code, o->err);
	ck_assert_msg(strstr(o->err, "is not one of CodSpeed's protocol (no variant)"), "%s",
		      o->err);
	ck_assert_msg(
	    strstr(o->out, "4   0   0   0   6   0   0   0\n   4   0   0   0   3   0   0   0"), "%s",
	    o->out);
}
END_TEST

/* Under sudo, the profile folder and its files are the invoking user's, who uploads them. */
START_TEST(profile_folder_belongs_to_the_commands_user)
{
	const char *env[] = {"SUDO_UID=65534", "SUDO_GID=65534", "SUDO_USER=nobody", NULL};
	const struct mt_out *o;

	chmod(dir, 0777);
	client(F_START " " F_STOP, NULL);
	o = in_ns(MT_BUILD_DIR "/memtrack bench -q -o prof/ -- sh client.sh && stat -c '%U %n' "
			       "prof prof/results prof/memtrack prof/results/* prof/memtrack/*",
		  env);
	ck_assert_msg(o->code == 0, "exit %d: %s%s", o->code, o->out, o->err);
	ck_assert_int_eq(mt_count_lines(o->out, "nobody prof"), 6);
	ck_assert_msg(strstr(o->out, "nobody prof/results/ExecutionTimestamps.msgpack\n"), "%s",
		      o->out);
	ck_assert_msg(strstr(o->out, ".MemtrackArtifact.msgpack\n"), "%s", o->out);
}
END_TEST

START_TEST(a_window_never_closed_and_nested_ones_are_reported)
{
	const struct mt_out *o;
	json_object *doc, *list;

	client(F_START " " F_START " " F_STOP " " F_START, NULL);
	o = in_ns(MT_BUILD_DIR "/memtrack bench --json -o a.mtk -- sh client.sh", NULL);
	ck_assert_msg(o->code == 0, "exit %d: %s", o->code, o->err);
	ck_assert_msg(strstr(o->err, "StartProfiler while a benchmark window is open"), "%s",
		      o->err);
	ck_assert_msg(strstr(o->err, "never closed"), "%s", o->err);
	doc = parse_json(o->out);
	list = mt_json_get(doc, "benchmarks");
	ck_assert_int_eq(json_object_array_length(list), 2);
	ck_assert_int_eq(mt_json_i64(json_object_array_get_idx(list, 0), "nested"), 1);
	ck_assert(
	    json_object_get_boolean(mt_json_get(json_object_array_get_idx(list, 0), "closed")));
	ck_assert(
	    !json_object_get_boolean(mt_json_get(json_object_array_get_idx(list, 1), "closed")));
	json_object_put(doc);
}
END_TEST

static Suite *bench_suite(void)
{
	Suite *s = suite_create("bench");
	TCase *tc = tcase_create("bench");
	const char *root =
	    geteuid() ? "memtrack bench needs root here (BPF, unshare --mount)" : NULL;
	const char *node = root ? root : node_missing();

	tcase_set_timeout(tc, 600);
	tcase_add_checked_fixture(tc, setup, teardown);
	mt_add_test_unless(tc, exec_harness_plan_gives_each_benchmark_its_exact_figures, root);
	mt_add_test_unless(tc, stacks_give_each_benchmark_its_sites, root);
	mt_add_test_unless(tc, fifos_already_there_are_refused_never_taken_over, root);
	mt_add_test_unless(tc, fifos_belong_to_the_commands_user, root);
	mt_add_test_unless(tc, an_unknown_protocol_version_is_one_sentence, root);
	mt_add_test_unless(tc, garbage_on_the_fifo_is_one_sentence_never_a_hang, root);
	mt_add_test_unless(tc, a_window_never_closed_and_nested_ones_are_reported, root);
	mt_add_test_unless(tc, output_folder_is_codspeeds_profile_folder, root);
	mt_add_test_unless(tc, profile_folder_belongs_to_the_commands_user, root);
	mt_add_test_unless(tc, twin_integration_gets_the_runners_answers,
			   root ? root : twin_missing());
	if (root)
		mt_add_test_unless(tc, html_page_chooses_a_benchmark, root);
	else
		mt_tcase_add_tool_test(tc, html_page_chooses_a_benchmark, "chromium");
	if (node) {
		mt_add_test_unless(tc, node_tinybench_benchmarks_have_their_figures, node);
		mt_add_test_unless(tc, comparison_gate_fails_for_the_changed_benchmark_only, node);
	} else {
		mt_tcase_add_tool_test(tc, node_tinybench_benchmarks_have_their_figures, "node");
		mt_tcase_add_tool_test(tc, comparison_gate_fails_for_the_changed_benchmark_only,
				       "node");
	}
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(bench_suite());
}
