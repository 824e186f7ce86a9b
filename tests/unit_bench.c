// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack bench's split (src/aggregate/bench.c) and comparison (bench_compare.c) over artifacts
 * written here: how marks pair into windows as the runner pairs them, which processes a window
 * counts, and each figure of docs/BENCH.md, "What each figure means".
 */
#include <check.h>
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aggregate/bench.h"
#include "aggregate/bench_compare.h"
#include "base/privileges.h"
#include "codspeed/codspeed_stamps.h"
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "writer/artifact.h"

static struct mt_artifact_writer *w;
static uint64_t t, nev;

static char *const argv_x[] = {"x", NULL};

static void ev(uint32_t pid, uint8_t kind, uint64_t addr, uint64_t size)
{
	struct mt_event e = {.ts_ns = ++t,
			     .pid = pid,
			     .tid = pid,
			     .addr = addr,
			     .size = size,
			     .file_id = 1,
			     .kind = kind};

	ck_assert_int_eq(mt_artifact_write_events(w, &e, 1), 0);
	nev++;
}

static void proc(uint32_t pid, uint32_t parent, const char *pos)
{
	struct mt_artifact_process p = {.pid = pid, .parent = parent};

	snprintf(p.exe, sizeof(p.exe), "/bin/p%u", pid);
	snprintf(p.position, sizeof(p.position), "%s", pos);
	ck_assert_int_eq(mt_artifact_write_process(w, &p), 0);
}

static void fork_of(uint32_t parent, uint32_t child, const char *pos)
{
	struct mt_event e = {
	    .ts_ns = ++t, .pid = parent, .tid = parent, .addr = child, .kind = MT_K_FORK};

	ck_assert_int_eq(mt_artifact_write_events(w, &e, 1), 0);
	nev++;
	proc(child, parent, pos);
}

static void mark(uint8_t what, int32_t pid, const char *uri)
{
	struct mt_artifact_bench b = {.ts_ns = ++t, .pid = pid, .what = what};

	snprintf(b.uri, sizeof(b.uri), "%s", uri);
	ck_assert_int_eq(mt_artifact_write_bench(w, &b), 0);
}

/*
 * Process 100 starts 200 (the benchmark's) and 300 (another). Window 1: 200 allocates 1000 and
 * 50, frees its block of before the window (100) and the 1000; 300 allocates 5, not the window's.
 * A second CurrentBenchmark names nothing, a StopProfiler closes nothing, then window 2 opens,
 * nested once, and never closes.
 */
static char *write_run(void)
{
	struct mt_artifact_header h = {.watcher = "fentry", .argc = 1, .argv = argv_x};
	struct mt_artifact_footer foot = {0};
	char *path = mt_tmpfile();

	t = nev = 0;
	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	proc(100, 0, "0");
	fork_of(100, 200, "0.0");
	fork_of(100, 300, "0.1");
	ev(200, MT_K_MALLOC, 0x1000, 100);
	mark(MT_BENCH_START, 0, "");
	ev(200, MT_K_MALLOC, 0x2000, 1000);
	ev(300, MT_K_MALLOC, 0x9000, 5);
	ev(200, MT_K_FREE, 0x1000, 0);
	ev(200, MT_K_MALLOC, 0x3000, 50);
	ev(200, MT_K_FREE, 0x2000, 0);
	mark(MT_BENCH_STOP, 0, "");
	mark(MT_BENCH_URI, 200, "file.js::group::one");
	mark(MT_BENCH_URI, 200, "file.js::stray");
	mark(MT_BENCH_STOP, 0, "");
	mark(MT_BENCH_START, 0, "");
	mark(MT_BENCH_START, 0, "");
	ev(200, MT_K_MALLOC, 0x4000, 7);
	foot.events = nev;
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	return path;
}

START_TEST(windows_pair_and_count_as_documented)
{
	struct mt_bench_split *s;
	char err[160], *path = write_run();
	const struct mt_bench_window *w1, *w2;

	ck_assert_int_eq(mt_bench_split_load(path, &s, err, sizeof(err)), 0);
	ck_assert_uint_eq(s->n, 2);
	ck_assert_uint_eq(s->stray_uris, 1);
	ck_assert_uint_eq(s->stray_stops, 1);
	/* Outside every window: 200's block before it, 300's call in it. */
	ck_assert_uint_eq(s->outside, 2);
	w1 = &s->w[0];
	ck_assert_str_eq(w1->uri, "file.js::group::one");
	ck_assert_str_eq(w1->name, "one");
	ck_assert_int_eq(w1->pid, 200);
	ck_assert(!w1->not_closed);
	ck_assert_uint_eq(w1->allocations, 2);
	ck_assert_uint_eq(w1->frees, 2);
	ck_assert_uint_eq(w1->bytes_allocated, 1050);
	ck_assert_uint_eq(mt_bench_average(w1), 525);
	ck_assert_uint_eq(w1->heap_at_start, 100);
	ck_assert_uint_eq(w1->peak_bytes, 1000); /* 100 + 1000, above the 100 of the start */
	ck_assert_uint_eq(w1->live_at_end, 50);
	ck_assert_uint_eq(w1->live_blocks_at_end, 1);
	/*
	 * Its heap over time: 100 at the start (ts 4); one bucket (the window's 6 ns are less
	 * than its first width) whose largest value, 1100, is the peak; 50 at the stop, 6 ns in.
	 */
	ck_assert_uint_eq(w1->n_timeline, 3);
	ck_assert_uint_eq(w1->timeline[0].t_ns, 0);
	ck_assert_uint_eq(w1->timeline[0].live_bytes, 100);
	ck_assert_uint_eq(w1->timeline[1].t_ns, 0);
	ck_assert_uint_eq(w1->timeline[1].live_bytes, 1100);
	ck_assert_uint_eq(w1->timeline[2].t_ns, 6);
	ck_assert_uint_eq(w1->timeline[2].live_bytes, 50);
	w2 = &s->w[1];
	ck_assert_str_eq(w2->uri, "");
	ck_assert_str_eq(w2->name, "window 2");
	ck_assert(w2->not_closed);
	ck_assert_uint_eq(w2->nested, 1);
	/* No CurrentBenchmark: the whole tree, whose 55 bytes were live at its start. */
	ck_assert_uint_eq(w2->heap_at_start, 55);
	ck_assert_uint_eq(w2->allocations, 1);
	ck_assert_uint_eq(w2->peak_bytes, 7);
	ck_assert_uint_eq(w2->live_at_end, 7);
	mt_bench_split_free(s);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(comparison_marks_only_the_grown_metric)
{
	static const char base[] =
	    "{\"benchmarks\":[{\"uri\":\"file.js::group::one\",\"name\":\"one\",\"allocations\":2,"
	    "\"bytes_allocated\":500,\"average_allocation\":250,\"peak_bytes\":1000,"
	    "\"live_at_end\":50},{\"uri\":\"gone::x\",\"name\":\"x\",\"allocations\":1,"
	    "\"bytes_allocated\":1,\"average_allocation\":1,\"peak_bytes\":1,\"live_at_end\":0}]}";
	struct mt_bench_limits lim = {
	    .n = 2, .metric = {MT_BM_BYTES_ALLOCATED, MT_BM_PEAK}, .max_percent = {100, 0}};
	struct mt_bench_split *s;
	struct mt_bench_cmp *c;
	char err[160], *path = write_run();

	ck_assert_int_eq(mt_bench_split_load(path, &s, err, sizeof(err)), 0);
	ck_assert_int_eq(mt_bench_compare(s, base, strlen(base), &lim, &c, err, sizeof(err)), 0);
	/* one (both), window 2 (new), x (gone). */
	ck_assert_uint_eq(c->n, 3);
	ck_assert(c->rows[0].in_base && c->rows[0].in_new);
	ck_assert(c->rows[0].exceeded[MT_BM_BYTES_ALLOCATED]); /* 500 -> 1050: +110% */
	ck_assert(!c->rows[0].exceeded[MT_BM_PEAK]);	       /* 1000 -> 1000 */
	ck_assert(!c->rows[1].in_base && !c->rows[1].exceeded[MT_BM_BYTES_ALLOCATED]);
	ck_assert(!c->rows[2].in_new);
	ck_assert_uint_eq(c->n_exceeded, 1);
	mt_bench_cmp_free(c);
	/* Not a document of memtrack bench: one sentence. */
	ck_assert_int_eq(
	    mt_bench_compare(s, "{\"benchmarks\":[{\"uri\":1}]}", 26, &lim, &c, err, sizeof(err)),
	    -EINVAL);
	ck_assert_msg(strstr(err, "benchmark 1 has no string"), "%s", err);
	ck_assert_int_eq(mt_bench_compare(s, "[", 1, &lim, &c, err, sizeof(err)), -EINVAL);
	mt_bench_split_free(s);
	unlink(path);
	free(path);
}
END_TEST

/*
 * A window of 1,000 changes 1 ms apart, the heap growing to its peak at the 700th and falling
 * back: at most MT_BENCH_TIMELINE_MAX + 2 points, in time order, the peak one of them exactly.
 */
START_TEST(a_long_window_has_a_bounded_timeline_with_its_peak)
{
	struct mt_artifact_header h = {.watcher = "fentry", .argc = 1, .argv = argv_x};
	struct mt_artifact_footer foot = {0};
	const struct mt_bench_window *bw;
	struct mt_bench_split *s;
	char err[160], *path = mt_tmpfile();
	uint64_t top = 0;

	t = nev = 0;
	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	proc(100, 0, "0");
	mark(MT_BENCH_START, 0, "");
	for (int i = 0; i < 1000; i++) {
		t += 1000 * 1000;
		if (i < 700)
			ev(100, MT_K_MALLOC, 0x10000 + 16 * (uint64_t)i, 8);
		else
			ev(100, MT_K_FREE, 0x10000 + 16 * (uint64_t)(i - 700), 0);
	}
	mark(MT_BENCH_STOP, 0, "");
	foot.events = nev;
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);

	ck_assert_int_eq(mt_bench_split_load(path, &s, err, sizeof(err)), 0);
	bw = &s->w[0];
	ck_assert_uint_eq(bw->peak_bytes, 700 * 8);
	ck_assert_uint_le(bw->n_timeline, MT_BENCH_TIMELINE_MAX + 2);
	ck_assert_uint_ge(bw->n_timeline, MT_BENCH_TIMELINE_MAX / 2);
	for (size_t i = 0; i < bw->n_timeline; i++) {
		if (i)
			ck_assert_uint_ge(bw->timeline[i].t_ns, bw->timeline[i - 1].t_ns);
		if (bw->timeline[i].live_bytes > top)
			top = bw->timeline[i].live_bytes;
	}
	ck_assert_uint_eq(top, 700 * 8);
	ck_assert_uint_eq(bw->timeline[bw->n_timeline - 1].t_ns, bw->stop_ns - bw->start_ns);
	ck_assert_uint_eq(bw->timeline[bw->n_timeline - 1].live_bytes, 400 * 8);
	mt_bench_split_free(s);
	unlink(path);
	free(path);
}
END_TEST

/*
 * The runner's ExecutionTimestamps of write_run's marks (codspeed_stamps.c): a SampleStart at
 * the first StartProfiler, its SampleEnd, the stray StopProfiler and the nested StartProfiler
 * ignored, every CurrentBenchmark noted, the stray one too; the tracker's windows the samples,
 * the last one never disabled.
 */
START_TEST(execution_timestamps_are_the_runners_notes_of_the_marks)
{
	struct mt_codspeed_stamps st = {0};
	char err[160], *path = write_run();

	ck_assert_int_eq(mt_codspeed_stamps_of(path, &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.n_markers, 3);
	ck_assert_int_eq(st.markers[0].kind, MT_CS_SAMPLE_START);
	ck_assert_uint_eq(st.markers[0].ts_ns, 4);
	ck_assert_int_eq(st.markers[1].kind, MT_CS_SAMPLE_END);
	ck_assert_uint_eq(st.markers[1].ts_ns, 10);
	ck_assert_int_eq(st.markers[2].kind, MT_CS_SAMPLE_START);
	ck_assert_uint_eq(st.markers[2].ts_ns, 14);
	ck_assert_uint_eq(st.n_uris, 2);
	ck_assert_uint_eq(st.uris[0].ts_ns, 11);
	ck_assert_str_eq(st.uris[0].uri, "file.js::group::one");
	ck_assert_str_eq(st.uris[1].uri, "file.js::stray");
	ck_assert_uint_eq(st.n_windows, 2);
	ck_assert_uint_eq(st.windows[0].start_ns, 4);
	ck_assert_uint_eq(st.windows[0].end_ns, 10);
	ck_assert_uint_eq(st.windows[1].start_ns, 14);
	ck_assert_uint_eq(st.windows[1].end_ns, UINT64_MAX);
	mt_codspeed_stamps_free(&st);
	unlink(path);
	free(path);
}
END_TEST

static void added(uint8_t marker, uint64_t ts_ns)
{
	struct mt_artifact_bench b = {.ts_ns = ++t,
				      .pid = 42,
				      .what = MT_BENCH_MARKER,
				      .marker = marker,
				      .marker_ts_ns = ts_ns};

	ck_assert_int_eq(mt_artifact_write_bench(w, &b), 0);
}

/*
 * A window (StartProfiler at 1, StopProfiler at 4) with a round's markers sent inside it, then a
 * SampleStart and a SampleEnd sent as markers (outside every window, the second beyond 32 bits),
 * a marker of a kind this version does not know, and a benchmark's URI at 8.
 */
static char *write_markers(void)
{
	struct mt_artifact_header h = {.watcher = "fentry", .argc = 1, .argv = argv_x};
	struct mt_artifact_footer foot = {0};
	char *path = mt_tmpfile();

	t = 0;
	ck_assert_int_eq(mt_artifact_create(&w, path, &h), 0);
	mark(MT_BENCH_START, 0, "");
	added(MT_BENCH_ROUND_START, 200);
	added(MT_BENCH_ROUND_END, 70000);
	mark(MT_BENCH_STOP, 0, "");
	added(MT_BENCH_SAMPLE_START, 1);
	added(MT_BENCH_SAMPLE_END, 5000000000ull);
	added(9, 77);
	mark(MT_BENCH_URI, 42, "a");
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	return path;
}

/*
 * An integration's AddMarker (codspeed_stamps.c): its marker joins the runner's samples in
 * ExecutionTimestamps' markers as it came, in the order of the marks, whatever its kind, and a
 * SampleStart or SampleEnd sent as a marker opens or closes no window of the tracker (the runner
 * pushes it to the list, nothing more). The file is what the runner's rmp_serde::to_vec_named
 * writes of ExecutionTimestamps, byte for byte (these bytes are rmp-serde's, printed by the twin's
 * types): named fields, each marker a map of its variant's name to its timestamp, each integer in
 * its shortest form. A split of the same artifact counts the one window, the markers in none.
 */
START_TEST(added_markers_are_carried_as_the_runner_adds_them)
{
	static const char want[] = "\x82\xa9uri_by_ts\x91\x92\x08\xa1"
				   "a"
				   "\xa7markers\x96"
				   "\x81\xabSampleStart\x01"
				   "\x81\xaaRoundStart\xcc\xc8"
				   "\x81\xa8RoundEnd\xce\x00\x01\x11\x70"
				   "\x81\xa9SampleEnd\x04"
				   "\x81\xabSampleStart\x01"
				   "\x81\xa9SampleEnd\xcf\x00\x00\x00\x01\x2a\x05\xf2\x00";
	static const struct mt_identity me;
	struct mt_codspeed_stamps st = {0};
	struct mt_bench_split *split;
	char err[160], got[256], *path = write_markers(), *out = mt_tmpfile();
	size_t n;
	FILE *f;

	ck_assert_int_eq(mt_codspeed_stamps_of(path, &st, err, sizeof(err)), 0);
	ck_assert_uint_eq(st.n_markers, 6);
	ck_assert_int_eq(st.markers[1].kind, MT_CS_ROUND_START);
	ck_assert_uint_eq(st.markers[1].ts_ns, 200);
	ck_assert_int_eq(st.markers[5].kind, MT_CS_SAMPLE_END);
	ck_assert_uint_eq(st.markers[5].ts_ns, 5000000000ull);
	ck_assert_uint_eq(st.n_windows, 1);
	ck_assert_uint_eq(st.windows[0].start_ns, 1);
	ck_assert_uint_eq(st.windows[0].end_ns, 4);
	ck_assert_int_eq(mt_codspeed_write_stamps(out, &st, &me, err, sizeof(err)), 0);
	f = fopen(out, "rb");
	ck_assert_ptr_nonnull(f);
	n = fread(got, 1, sizeof(got), f);
	fclose(f);
	ck_assert_uint_eq(n, sizeof(want) - 1);
	ck_assert_mem_eq(got, want, n);

	ck_assert_int_eq(mt_bench_split_load(path, &split, err, sizeof(err)), 0);
	ck_assert_uint_eq(split->n, 1);
	ck_assert_str_eq(split->w[0].uri, "a");
	ck_assert_uint_eq(split->stray_uris + split->stray_stops + split->w[0].nested, 0);
	mt_bench_split_free(split);
	mt_codspeed_stamps_free(&st);
	unlink(out);
	unlink(path);
	free(out);
	free(path);
}
END_TEST

static Suite *bench_suite(void)
{
	Suite *s = suite_create("bench_split");
	TCase *tc = tcase_create("split");

	tcase_add_test(tc, windows_pair_and_count_as_documented);
	tcase_add_test(tc, comparison_marks_only_the_grown_metric);
	tcase_add_test(tc, a_long_window_has_a_bounded_timeline_with_its_peak);
	tcase_add_test(tc, execution_timestamps_are_the_runners_notes_of_the_marks);
	tcase_add_test(tc, added_markers_are_carried_as_the_runner_adds_them);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(bench_suite());
}
