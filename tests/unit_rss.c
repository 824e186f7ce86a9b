// SPDX-License-Identifier: GPL-2.0
/*
 * The RSS sample record (docs/FORMAT.md, type 11) through the writer and the reader, and its
 * counts (aggregate/rss.h): an image's peak is its largest sample or its kernel high-water
 * mark, the tree's peak the largest sum of the running images' latest samples, an image that
 * ended counts no more, and a sample of a kind this version does not know is passed over.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "aggregate/report.h"
#include "lib/mtrun.h"
#include "output/output.h"
#include "lib/suite.h"
#include "reader/artifact_read.h"
#include "writer/artifact.h"

static char *const argv0[] = {"tree", NULL};
static const struct mt_artifact_header header = {
    .start_time_ns = 1, .start_mono_ns = 1000, .watcher = "tracepoint", .argc = 1, .argv = argv0};

#define MIB (1024 * 1024ull)

static struct mt_artifact_rss sample(uint64_t ts, uint32_t pid, uint64_t anon, uint64_t file)
{
	return (struct mt_artifact_rss){.ts_ns = ts,
					.pid = pid,
					.why = MT_RSS_TICK,
					.anon = anon,
					.file = file,
					.shmem = 4096,
					.hwm = anon + file + 4096};
}

static struct mt_event stream(uint64_t ts, uint32_t pid, uint8_t kind, uint64_t addr)
{
	return (struct mt_event){.ts_ns = ts, .pid = pid, .tid = pid, .addr = addr, .kind = kind};
}

static void put(struct mt_artifact_writer *w, struct mt_artifact_rss s)
{
	ck_assert_int_eq(mt_artifact_write_rss(w, &s), 0);
}

static void put_event(struct mt_artifact_writer *w, struct mt_event e)
{
	ck_assert_int_eq(mt_artifact_write_events(w, &e, 1), 0);
}

/*
 * Process 10 forks 11 at t = 2000. Samples (anon + file, each + 4 KiB shared):
 *   t 3000: 10 = 1 + 1 MiB, 11 = 2 + 0 MiB        tree 4 MiB + 8 KiB
 *   t 3500: 10 vforks 12, whose sample at 3600 (50 MiB: its parent's memory) is not the tree's;
 *           12 exits at 3700
 *   t 4000: 10 = 5 + 1 MiB (its peak)              tree 8 MiB + 8 KiB: the tree's peak
 *   t 5000: 11's exit sample, 1 MiB anon; then 11 exits (its high-water mark was 9 MiB)
 *   t 6000: 10 = 6 + 1 MiB                          tree 7 MiB + 4 KiB: 11 no longer counts
 *   t 7000: a sample of an unknown kind, 100 MiB: passed over
 */
static char *write_mtk(void)
{
	struct mt_artifact_process p10 = {.pid = 10, .position = "0"};
	struct mt_artifact_process p11 = {.pid = 11, .parent = 10, .position = "0.0"};
	struct mt_artifact_process p12 = {.pid = 12, .parent = 10, .position = "0.1"};
	struct mt_artifact_footer foot = {.events = 4, .end_mono_ns = 9000};
	struct mt_event vf;
	struct mt_artifact_writer *w;
	struct mt_artifact_rss s;
	char *path = mt_tmpfile();

	ck_assert_int_eq(mt_artifact_create(&w, path, &header), 0);
	ck_assert_int_eq(mt_artifact_write_process(w, &p10), 0);
	put_event(w, stream(2000, 10, MT_K_FORK, 11));
	ck_assert_int_eq(mt_artifact_write_process(w, &p11), 0);
	put(w, sample(3000, 10, MIB, MIB));
	put(w, sample(3000, 11, 2 * MIB, 0));
	vf = stream(3500, 10, MT_K_FORK, 12);
	vf.size = 1; /* in its parent's memory */
	put_event(w, vf);
	ck_assert_int_eq(mt_artifact_write_process(w, &p12), 0);
	put(w, sample(3600, 12, 50 * MIB, 0));
	put_event(w, stream(3700, 12, MT_K_EXIT, 0));
	put(w, sample(4000, 10, 5 * MIB, MIB));
	s = sample(5000, 11, MIB, 0);
	s.why = MT_RSS_EXIT;
	s.hwm = 9 * MIB;
	put(w, s);
	put_event(w, stream(5100, 11, MT_K_EXIT, 0));
	put(w, sample(6000, 10, 6 * MIB, MIB));
	s = sample(7000, 10, 100 * MIB, 0);
	s.why = 77;
	put(w, s);
	ck_assert_int_eq(mt_artifact_finish(w, &foot), 0);
	return path;
}

START_TEST(rss_records_read_back)
{
	char *path = write_mtk(), err[MT_ARTIFACT_ERRLEN];
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	struct mt_artifact_rss seen[8];
	int n = 0, ret;

	ck_assert_int_eq(mt_artifact_open(&r, path, err, sizeof(err)), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0)
		if (it.type == MT_ITEM_RSS && n < 8)
			seen[n++] = *it.rss;
	ck_assert_int_eq(ret, 0);
	ck_assert(!mt_artifact_truncated(r));
	mt_artifact_close(r);
	ck_assert_int_eq(n, 7);
	ck_assert_uint_eq(seen[0].ts_ns, 3000);
	ck_assert_uint_eq(seen[0].pid, 10);
	ck_assert_uint_eq(seen[0].why, MT_RSS_TICK);
	ck_assert_uint_eq(seen[0].anon, MIB);
	ck_assert_uint_eq(seen[0].file, MIB);
	ck_assert_uint_eq(seen[0].shmem, 4096);
	ck_assert_uint_eq(seen[0].hwm, 2 * MIB + 4096);
	ck_assert_uint_eq(seen[4].why, MT_RSS_EXIT);
	ck_assert_uint_eq(seen[4].hwm, 9 * MIB);
	ck_assert_uint_eq(seen[6].why, 77);
	unlink(path);
	free(path);
}
END_TEST

START_TEST(rss_peaks_per_image_and_tree)
{
	char *path = write_mtk(), err[MT_ARTIFACT_ERRLEN];
	const struct mt_rss_image *a, *b;
	struct mt_report *rep;

	ck_assert_int_eq(mt_report_load(path, &rep, err, sizeof(err)), 0);
	ck_assert_uint_eq(rep->n_images, 3);
	a = mt_rss_of(rep->rss, 0);
	b = mt_rss_of(rep->rss, 1);
	/* the vfork child: its own figures are its samples, the tree did not add them */
	ck_assert(rep->images[2].shared_memory);
	ck_assert_uint_eq(mt_rss_of(rep->rss, 2)->peak, 50 * MIB + 4096);
	ck_assert_ptr_nonnull(a);
	ck_assert_ptr_nonnull(b);
	/* the unknown kind is not counted: 3 samples of 10, 2 of 11, 1 of 12 */
	ck_assert_uint_eq(rep->rss->samples, 6);
	ck_assert_uint_eq(a->samples, 3);
	ck_assert_uint_eq(a->peak, 7 * MIB + 4096);
	ck_assert_uint_eq(a->peak_anon, 6 * MIB);
	ck_assert_uint_eq(a->peak_ns, 5000); /* from the header's start, 1000 */
	ck_assert(!a->has_exit);
	ck_assert_uint_eq(mt_rss_image_peak(a), 7 * MIB + 4096);
	/* 11's samples peaked at 2 MiB, but the kernel saw 9 MiB: its peak is the kernel's */
	ck_assert_uint_eq(b->peak, 2 * MIB + 4096);
	ck_assert_uint_eq(mt_rss_image_peak(b), 9 * MIB);
	ck_assert(b->has_exit);
	ck_assert_uint_eq(b->exit_anon, MIB);
	ck_assert_uint_eq(b->now, 0);
	/* the tree: 5 + 1 + 2 MiB of the two at t 4000, more than 10 alone later (7 MiB) */
	ck_assert_uint_eq(rep->rss->tree_peak, 8 * MIB + 2 * 4096);
	ck_assert_uint_eq(rep->rss->tree_peak_ns, 3000);
	ck_assert_uint_eq(rep->rss->tree_now, 7 * MIB + 4096);
	/* the lines over time: 11's drops to 0 at its exit, the tree's peak is a point */
	ck_assert_uint_eq(rep->timeline->rss_images[1].now, 0);
	ck_assert_uint_eq(rep->timeline->rss_tree.now, 7 * MIB + 4096);
	mt_report_free(rep);
	unlink(path);
	free(path);
}
END_TEST

/* What out_fn writes of the report of write_mtk(), NUL-terminated (to free). */
static char *render(int (*out_fn)(const struct mt_report *rep, FILE *out))
{
	char *path = write_mtk(), err[MT_ARTIFACT_ERRLEN], *buf = NULL;
	struct mt_report *rep;
	size_t len = 0;
	FILE *f = open_memstream(&buf, &len);

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(mt_report_load(path, &rep, err, sizeof(err)), 0);
	ck_assert_int_eq(out_fn(rep, f), 0);
	fclose(f);
	mt_report_free(rep);
	unlink(path);
	free(path);
	return buf;
}

static int text_all(const struct mt_report *rep, FILE *out)
{
	return mt_output_text(rep, out, 0);
}

/* The SVG: a dashed path per image with samples and the tree's, their peaks exact. */
START_TEST(rss_lines_in_the_svg)
{
	char *svg = render(mt_output_svg);

	ck_assert_int_eq(mt_count_lines(svg, "<path class=\"rss-tree\" data-peak=\"8396800\""), 1);
	ck_assert_int_eq(mt_count_lines(svg, "<path class=\"rss\" data-image=\"0\" "
					     "data-peak=\"7344128\""),
			 1);
	ck_assert_int_eq(mt_count_lines(svg, "<path class=\"rss\" data-image=\"1\" "
					     "data-peak=\"2101248\""),
			 1);
	/* the heap's lines are what they were: the tree's, no image allocated */
	ck_assert_int_eq(mt_count_lines(svg, "<polyline "), 1);
	free(svg);
}
END_TEST

/* The text report and the JSON: the tree's peak, and each image's with the kernel's mark. */
START_TEST(rss_in_text_and_json)
{
	char *text = render(text_all), *json = render(mt_output_json);

	ck_assert_msg(strstr(text, "peak RSS of the tree  8.0 MiB (8396800 bytes) at 0.000 s"),
		      "%s", text);
	ck_assert_msg(strstr(text, "9.0 MiB   2.0 MiB       0 B   4.0 KiB   9.0 MiB   1.0 MiB"),
		      "%s", text);
	ck_assert_ptr_nonnull(strstr(json, "\"tree_peak_bytes\":8396800"));
	ck_assert_ptr_nonnull(strstr(json, "\"hwm_bytes\":9437184"));
	ck_assert_ptr_nonnull(strstr(json, "\"peak_bytes\":9437184"));
	free(text);
	free(json);
}
END_TEST

static Suite *rss_suite(void)
{
	Suite *s = suite_create("rss");
	TCase *tc = tcase_create("rss");

	tcase_add_test(tc, rss_records_read_back);
	tcase_add_test(tc, rss_peaks_per_image_and_tree);
	tcase_add_test(tc, rss_lines_in_the_svg);
	tcase_add_test(tc, rss_in_text_and_json);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(rss_suite());
}
