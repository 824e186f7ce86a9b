// SPDX-License-Identifier: GPL-2.0
/*
 * Mapped memory: `memtrack run --mappings` records the tree's mmap, munmap, mremap
 * and brk, the allocator's own told apart, and the report counts them (src/aggregate/mapped.h)
 * exactly for the fixtures of known truth (fixtures/README.md, "mapped"): bytes mapped after each
 * of the fixture's calls, at peak and at its exit; the same with the command in a pid namespace
 * of its own, and with memtrack in one.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "aggregate/report.h"
#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "reader/artifact_read.h"

#define IN_PIDNS "unshare", "--pid", "--fork", "--mount-proc"

static char tmpdir[64], mtk[128];

static void setup(void)
{
	mt_tmpdir(tmpdir);
	snprintf(mtk, sizeof(mtk), "%s/run.mtk", tmpdir);
}

static void teardown(void)
{
	struct mt_out o = {0};

	mt_run((const char *[]){"rm", "-rf", tmpdir, NULL}, NULL, NULL, 60, &o);
	mt_out_free(&o);
}

/* pre (what memtrack runs under, may be empty) memtrack run OPT -o mtk -- cmd...; exit 0. */
static void record(const char *const *pre, const char *opt, const char *const *cmd)
{
	const char *argv[32];
	struct mt_out o;
	int n = 0;

	for (; pre && *pre; pre++)
		argv[n++] = *pre;
	argv[n++] = MEMTRACK;
	argv[n++] = "run";
	argv[n++] = "-q";
	if (opt)
		argv[n++] = opt;
	argv[n++] = "-o";
	argv[n++] = mtk;
	argv[n++] = "--";
	for (; *cmd; cmd++)
		argv[n++] = *cmd;
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 0, "memtrack run: %d: %s", o.code, o.err);
	mt_out_free(&o);
}

/* The report of mtk, and in it the last image whose program's path ends in /name. */
static struct mt_report *load(const char *name, size_t *image)
{
	char err[256], suffix[64];
	struct mt_report *rep;

	ck_assert_msg(mt_report_load(mtk, &rep, err, sizeof(err)) == 0, "%s", err);
	snprintf(suffix, sizeof(suffix), "/%s", name);
	for (size_t i = rep->n_images; i-- > 0;) {
		const char *exe = rep->images[i].exe;
		size_t n = strlen(exe);

		if (n >= strlen(suffix) && !strcmp(exe + n - strlen(suffix), suffix)) {
			*image = i;
			return rep;
		}
	}
	ck_abort_msg("no image of %s in the report", name);
	return NULL;
}

/* ---- the records ------------------------------------------------------------------------------
 */

#define MAX_SEEN 64

/* The mapping records of one pid after its last exec, in stream order. */
struct seen {
	uint32_t pid;
	size_t n;
	struct mt_artifact_mapping m[MAX_SEEN];
};

static void collect(struct seen *s)
{
	char err[MT_ARTIFACT_ERRLEN];
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	int ret;

	ck_assert_int_eq(mt_artifact_open(&r, mtk, err, sizeof(err)), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		for (size_t i = 0; it.type == MT_ITEM_EVENTS && i < it.n_events; i++)
			if (it.events[i].kind == MT_K_EXEC && it.events[i].pid == s->pid)
				s->n = 0;
		if (it.type == MT_ITEM_MAPPING && it.mapping->pid == s->pid) {
			ck_assert_uint_lt(s->n, MAX_SEEN);
			s->m[s->n++] = *it.mapping;
		}
	}
	ck_assert_int_eq(ret, 0);
	mt_artifact_close(r);
}

/* The index of the fixture's first call (its mmap of 12,388 bytes). */
static size_t first_own(const struct seen *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (s->m[i].what == MT_MAP_MMAP && s->m[i].len == 12388)
			return i;
	ck_abort_msg("no mmap of 12388 bytes among %zu records", s->n);
	return 0;
}

/*
 * fixtures/README.md, "mapped": the fixture's calls from A on, as recorded. glibc's malloc moves
 * the break at its first call (its tcache) and maps the 1 MiB block, inside malloc: the
 * allocator's; the munmap comes from free, which has no return probe.
 */
static const struct {
	uint8_t what;
	uint64_t len;
	bool allocator;
} calls[] = {
    {MT_MAP_MMAP, 12388, false},     {MT_MAP_MMAP, 8192, false},    {MT_MAP_MMAP, 65536, false},
    {MT_MAP_MREMAP, 131072, false},  {MT_MAP_MMAP, 8192, false},    {MT_MAP_MMAP, 4096, false},
    {MT_MAP_MUNMAP, 4096, false},    {MT_MAP_BRK, 0, true},	    {MT_MAP_MMAP, 1052672, true},
    {MT_MAP_MUNMAP, 1052672, false}, {MT_MAP_BRK, 0, false},	    {MT_MAP_BRK, 0, false},
    {MT_MAP_MUNMAP, 131072, false},  {MT_MAP_MUNMAP, 12388, false},
};
#define N_CALLS (sizeof(calls) / sizeof(calls[0]))

static void check_calls(const struct seen *s)
{
	size_t at = first_own(s);

	ck_assert_uint_eq(s->n - at, N_CALLS);
	for (size_t i = 0; i < N_CALLS; i++) {
		const struct mt_artifact_mapping *m = &s->m[at + i];

		ck_assert_msg(m->what == calls[i].what, "call %zu: what %u", i, m->what);
		if (calls[i].len)
			ck_assert_uint_eq(m->len, calls[i].len);
		ck_assert_msg(!!(m->origin & MT_MAP_IN_ALLOCATOR) == calls[i].allocator,
			      "call %zu: origin %u", i, m->origin);
		ck_assert_int_eq(m->error, 0);
	}
	/* E and F: the program's own file, private then shared. */
	ck_assert_str_eq(s->m[at + 4].name, "mapped");
	ck_assert_int_eq(s->m[at + 4].flags & MAP_TYPE, MAP_PRIVATE);
	ck_assert_int_eq(s->m[at + 5].flags & MAP_TYPE, MAP_SHARED);
	/* J and K: the break up by 65,536 and back. */
	ck_assert_uint_eq(s->m[at + 10].addr, s->m[at + 11].addr + 65536);
}

START_TEST(run_records_mappings_with_their_origin)
{
	struct mt_report *rep;
	struct seen s = {0};
	size_t img;

	record(NULL, "--mappings", (const char *[]){FIXTURE("mapped"), NULL});
	rep = load("mapped", &img);
	s.pid = rep->images[img].pid;
	mt_report_free(rep);
	collect(&s);
	check_calls(&s);
}
END_TEST

/* Without --mappings a run records none: its cost is opt-in (docs/PERFORMANCE.md, 18). */
START_TEST(run_without_mappings_records_none)
{
	struct mt_report *rep;
	struct seen s = {0};
	size_t img;

	record(NULL, NULL, (const char *[]){FIXTURE("mapped"), NULL});
	rep = load("mapped", &img);
	s.pid = rep->images[img].pid;
	ck_assert(!mt_mapped_any(rep->mapped));
	mt_report_free(rep);
	collect(&s);
	ck_assert_uint_eq(s.n, 0);
}
END_TEST

/* ---- the counts -------------------------------------------------------------------------------
 */

enum { AP, AS, FP, FS, BRK, AMMAP, ABRK };

/* Per step from A on: what each class holds above the baseline, -1 for "more than it". */
static const int64_t steps[N_CALLS][MT_MAPPED_CLASSES] = {
    [0] = {[AP] = 16384},
    [1] = {[AP] = 16384, [AS] = 8192},
    [2] = {[AP] = 81920, [AS] = 8192},
    [3] = {[AP] = 147456, [AS] = 8192},
    [4] = {[AP] = 147456, [AS] = 8192, [FP] = 8192},
    [5] = {[AP] = 147456, [AS] = 8192, [FP] = 8192, [FS] = 4096},
    [6] = {[AP] = 143360, [AS] = 8192, [FP] = 8192, [FS] = 4096},
    [7] = {[AP] = 143360, [AS] = 8192, [FP] = 8192, [FS] = 4096, [ABRK] = -1},
    [8] = {[AP] = 143360, [AS] = 8192, [FP] = 8192, [FS] = 4096, [AMMAP] = 1052672, [ABRK] = -1},
    [9] = {[AP] = 143360, [AS] = 8192, [FP] = 8192, [FS] = 4096, [ABRK] = -1},
    [10] = {[AP] = 143360, [AS] = 8192, [FP] = 8192, [FS] = 4096, [BRK] = 65536, [ABRK] = -1},
    [11] = {[AP] = 143360, [AS] = 8192, [FP] = 8192, [FS] = 4096, [ABRK] = -1},
    [12] = {[AP] = 12288, [AS] = 8192, [FP] = 8192, [FS] = 4096, [ABRK] = -1},
    [13] = {[AS] = 8192, [FP] = 8192, [FS] = 4096, [ABRK] = -1},
};

static void check_step(size_t i, const struct mt_mapped_counts *base,
		       const struct mt_mapped_counts *c)
{
	for (int k = 0; k < MT_MAPPED_CLASSES; k++) {
		if (steps[i][k] < 0)
			ck_assert_msg(c->now[k] > base->now[k], "step %zu class %d", i, k);
		else
			ck_assert_msg(c->now[k] == base->now[k] + (uint64_t)steps[i][k],
				      "step %zu class %d: %llu, baseline %llu", i, k,
				      (unsigned long long)c->now[k],
				      (unsigned long long)base->now[k]);
	}
}

/*
 * The records replayed one by one through the counting (mapped.h), against the table; returns
 * the baseline (the counts before A) and the counts at the end in *base and *end.
 */
static void replay_mapped(const struct seen *s, struct mt_mapped_counts *base,
			  struct mt_mapped_counts *end)
{
	struct mt_mapped *mp = mt_mapped_new(0);
	size_t at = first_own(s);

	ck_assert_ptr_nonnull(mp);
	for (size_t i = 0; i < s->n; i++) {
		if (i == at)
			*base = *mt_mapped_image(mp, 0);
		ck_assert_int_eq(mt_mapped_record(mp, 0, &s->m[i]), 0);
		if (i >= at)
			check_step(i - at, base, mt_mapped_image(mp, 0));
	}
	*end = *mt_mapped_image(mp, 0);
	mt_mapped_free(mp);
}

/* fixtures/README.md, "mapped": over time, at peak, at exit, in the report of a run of it. */
static void check_mapped(void)
{
	struct mt_mapped_counts base = {0}, end = {0};
	const struct mt_mapped_counts *c;
	struct mt_report *rep;
	struct seen s = {0};
	size_t img;

	rep = load("mapped", &img);
	s.pid = rep->images[img].pid;
	collect(&s);
	check_calls(&s);
	replay_mapped(&s, &base, &end);
	ck_assert(mt_mapped_any(rep->mapped));
	c = mt_mapped_image(rep->mapped, img);
	ck_assert(c->ended);
	for (int k = 0; k < MT_MAPPED_CLASSES; k++)
		ck_assert_uint_eq(c->now[k], end.now[k]);
	ck_assert_uint_eq(c->mapped, base.mapped + 20480);
	ck_assert_uint_eq(c->peak_mapped, base.mapped + 167936);
	ck_assert_uint_eq(c->peak_beyond, base.beyond + 229376);
	ck_assert_uint_eq(c->peak[MT_MAPPED_ALLOC_MMAP], 1052672);
	/* At H: the mapped of F's peak less G's page, the allocator's break and block. */
	ck_assert_uint_eq(c->peak_all,
			  base.mapped + 163840 + c->peak[MT_MAPPED_ALLOC_BRK] + 1052672);
	ck_assert_uint_eq(c->now[MT_MAPPED_ALLOC_MMAP], 0);
	ck_assert_uint_eq(c->now[MT_MAPPED_BRK], 0);
	ck_assert_uint_eq(c->peak[MT_MAPPED_BRK], 65536);
	ck_assert_uint_eq(c->calls[MT_MAP_BRK], 3);
	/* The tree holds the image's at once: its peak is at least the image's. */
	ck_assert_uint_ge(mt_mapped_tree(rep->mapped)->peak_beyond, c->peak_beyond);
	ck_assert_uint_eq(mt_mapped_tree(rep->mapped)->beyond, 0); /* every process exited */
	mt_report_free(rep);
}

/* fixtures/README.md, "mapped", brk_musl: exact from 0, as nothing else maps in it. */
static void check_brk_musl(void)
{
	static const uint64_t breaks[] = {16384, 49152, 32768};
	struct mt_mapped *mp = mt_mapped_new(0);
	const struct mt_mapped_counts *c;
	struct mt_report *rep;
	struct seen s = {0};
	size_t img;

	rep = load("brk_musl", &img);
	s.pid = rep->images[img].pid;
	collect(&s);
	ck_assert_uint_eq(s.n, 3);
	for (size_t i = 0; i < s.n; i++) {
		ck_assert_int_eq(s.m[i].what, MT_MAP_BRK);
		ck_assert_int_eq(s.m[i].origin, 0);
		ck_assert_int_eq(mt_mapped_record(mp, 0, &s.m[i]), 0);
		ck_assert_uint_eq(mt_mapped_image(mp, 0)->now[MT_MAPPED_BRK], breaks[i]);
		ck_assert_uint_eq(mt_mapped_image(mp, 0)->beyond, breaks[i]);
	}
	mt_mapped_free(mp);
	c = mt_mapped_image(rep->mapped, img);
	ck_assert(c->ended);
	ck_assert_uint_eq(c->mapped, 0);
	ck_assert_uint_eq(c->peak_mapped, 0);
	ck_assert_uint_eq(c->now[MT_MAPPED_BRK], 32768);
	ck_assert_uint_eq(c->peak[MT_MAPPED_BRK], 49152);
	ck_assert_uint_eq(c->beyond, 32768);
	ck_assert_uint_eq(c->peak_beyond, 49152);
	ck_assert_uint_eq(c->now[MT_MAPPED_ALLOC_BRK] + c->now[MT_MAPPED_ALLOC_MMAP], 0);
	mt_report_free(rep);
}

/*
 * fixtures/README.md, "mapped", mapped_arena: the thread's stack is the program's, the arena
 * glibc maps inside the thread's first malloc the allocator's, and what glibc unmaps of it too.
 */
START_TEST(thread_stack_and_arena_told_apart)
{
	struct mt_mapped *mp = mt_mapped_new(0);
	const struct mt_mapped_counts *c, *r;
	struct mt_report *rep;
	struct seen s = {0};
	size_t img, stack = 0, arena = 0;

	record(NULL, "--mappings", (const char *[]){FIXTURE("mapped_arena"), NULL});
	rep = load("mapped_arena", &img);
	s.pid = rep->images[img].pid;
	collect(&s);
	for (size_t i = 0; i < s.n; i++) {
		uint64_t mapped = mt_mapped_image(mp, 0)->mapped;
		uint64_t alloc = mt_mapped_image(mp, 0)->now[MT_MAPPED_ALLOC_MMAP];

		ck_assert_int_eq(mt_mapped_record(mp, 0, &s.m[i]), 0);
		r = mt_mapped_image(mp, 0);
		if (s.m[i].what == MT_MAP_MMAP && (s.m[i].flags & MAP_STACK)) {
			ck_assert_uint_eq(s.m[i].len, 1052672);
			ck_assert_int_eq(s.m[i].origin, 0);
			ck_assert_uint_eq(r->mapped, mapped + 1052672);
			ck_assert_uint_eq(r->now[MT_MAPPED_ALLOC_MMAP], alloc);
			stack++;
		}
		if (s.m[i].what == MT_MAP_MMAP && s.m[i].len == 134217728) {
			ck_assert_int_eq(s.m[i].origin, MT_MAP_IN_ALLOCATOR);
			ck_assert_uint_eq(r->mapped, mapped);
			ck_assert_uint_eq(r->now[MT_MAPPED_ALLOC_MMAP], alloc + 134217728);
			arena++;
		}
	}
	ck_assert_uint_eq(stack, 1);
	ck_assert_uint_eq(arena, 1);
	mt_mapped_free(mp);
	c = mt_mapped_image(rep->mapped, img);
	ck_assert_uint_eq(c->now[MT_MAPPED_ALLOC_MMAP], 67108864);
	ck_assert_uint_eq(c->peak[MT_MAPPED_ALLOC_MMAP], 134217728);
	ck_assert_uint_ge(c->mapped, 1052672); /* the stack, kept in glibc's cache */
	mt_report_free(rep);
}
END_TEST

START_TEST(mapped_over_time_peak_and_exit)
{
	record(NULL, "--mappings", (const char *[]){FIXTURE("mapped"), NULL});
	check_mapped();
}
END_TEST

START_TEST(brk_only_static_musl)
{
	const struct mt_mapped_counts *t;
	struct mt_report *rep;
	size_t img;

	record(NULL, "--mappings", (const char *[]){FIXTURE("brk_musl"), NULL});
	check_brk_musl();
	/* One process: the tree's peak is its. */
	rep = load("brk_musl", &img);
	t = mt_mapped_tree(rep->mapped);
	ck_assert_uint_eq(t->peak_beyond, 49152);
	ck_assert_uint_eq(t->peak[MT_MAPPED_BRK], 49152);
	mt_report_free(rep);
}
END_TEST

/* The command in a pid namespace of its own: the BPF side names it by memtrack's pids. */
START_TEST(command_in_a_pid_namespace)
{
	record(NULL, "--mappings",
	       (const char *[]){"unshare", "--pid", "--fork", FIXTURE("mapped"), NULL});
	check_mapped();
	record(NULL, "--mappings",
	       (const char *[]){"unshare", "--pid", "--fork", FIXTURE("brk_musl"), NULL});
	check_brk_musl();
}
END_TEST

/* memtrack itself in one, as in a container. */
START_TEST(memtrack_in_a_pid_namespace)
{
	record((const char *[]){IN_PIDNS, NULL}, "--mappings",
	       (const char *[]){FIXTURE("mapped"), NULL});
	check_mapped();
}
END_TEST

/* ---- the reports ------------------------------------------------------------------------------
 */

static char *report_out(const char *const *args)
{
	const char *argv[8] = {MEMTRACK, "report"};
	struct mt_out o;
	char *out;
	int n = 2;

	for (; *args; args++)
		argv[n++] = *args;
	argv[n++] = mtk;
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "memtrack report: %s", o.err);
	out = o.out;
	o.out = NULL;
	mt_out_free(&o);
	return out;
}

/* The JSON document's numbers are the counts; the text and the picture say them. */
START_TEST(reports_say_the_mapped_memory)
{
	struct json_object *doc, *tree, *im = NULL, *images;
	const struct mt_mapped_counts *c, *t;
	char *out, want[128], svg[160];
	struct mt_report *rep;
	size_t img;

	record(NULL, "--mappings", (const char *[]){FIXTURE("mapped"), NULL});
	rep = load("mapped", &img);
	c = mt_mapped_image(rep->mapped, img);
	t = mt_mapped_tree(rep->mapped);
	out = report_out((const char *[]){"--json", NULL});
	doc = json_tokener_parse(out);
	ck_assert_ptr_nonnull(doc);
	tree = mt_json_get(doc, "mapped");
	ck_assert_int_eq(mt_json_i64(tree, "peak_beyond_heap"), (int64_t)t->peak_beyond);
	ck_assert_int_eq(mt_json_i64(tree, "peak_mapped"), (int64_t)t->peak_mapped);
	ck_assert_int_eq(mt_json_i64(mt_json_get(tree, "peak"), "brk"), 65536);
	ck_assert_int_eq(mt_json_i64(mt_json_get(tree, "peak"), "allocator_mmap"), 1052672);
	images = mt_json_get(doc, "images");
	im = mt_json_get(json_object_array_get_idx(images, img), "mapped");
	ck_assert_int_eq(mt_json_i64(im, "mapped_at_end"), (int64_t)c->mapped);
	ck_assert_int_eq(mt_json_i64(im, "peak_mapped"), (int64_t)c->peak_mapped);
	ck_assert_int_eq(mt_json_i64(mt_json_get(im, "at_end"), "anon_shared"), 8192);
	ck_assert_int_eq(mt_json_i64(mt_json_get(im, "at_end"), "file_shared"), 4096);
	ck_assert_int_eq(mt_json_i64(mt_json_get(im, "calls"), "mremap"), 1);
	json_object_put(doc);
	free(out);
	out = report_out((const char *[]){NULL});
	ck_assert_ptr_nonnull(strstr(out, "\nMapped memory (mmap, mremap, brk;"));
	ck_assert_ptr_nonnull(strstr(out, "  peak brk          64.0 KiB"));
	ck_assert_ptr_nonnull(strstr(out, "/fixtures/mapped\n"));
	free(out);
	snprintf(svg, sizeof(svg), "%s/m.svg", tmpdir);
	free(report_out((const char *[]){"--svg", svg, "--over-time", NULL}));
	out = mt_slurp(svg);
	ck_assert_ptr_nonnull(out);
	snprintf(want, sizeof(want), "<polyline class=\"mapped\" data-peak=\"%llu\"",
		 (unsigned long long)t->peak_beyond);
	ck_assert_msg(strstr(out, want), "no %s", want);
	free(out);
	mt_report_free(rep);
}
END_TEST

/* A run without mapping records says nothing of them: no section, null, no line. */
START_TEST(reports_without_mappings_say_nothing)
{
	struct json_object *doc;
	char *out, svg[160];

	record(NULL, NULL, (const char *[]){FIXTURE("mapped"), NULL});
	out = report_out((const char *[]){"--json", NULL});
	doc = json_tokener_parse(out);
	ck_assert_ptr_nonnull(doc);
	ck_assert(json_object_object_get_ex(doc, "mapped", NULL));
	ck_assert_ptr_null(mt_json_get(doc, "mapped"));
	json_object_put(doc);
	free(out);
	out = report_out((const char *[]){NULL});
	ck_assert_ptr_null(strstr(out, "Mapped memory"));
	free(out);
	snprintf(svg, sizeof(svg), "%s/m.svg", tmpdir);
	free(report_out((const char *[]){"--svg", svg, "--over-time", NULL}));
	out = mt_slurp(svg);
	ck_assert_ptr_nonnull(out);
	ck_assert_ptr_null(strstr(out, "class=\"mapped\""));
	free(out);
}
END_TEST

/* Mappings need the recording: without it, one sentence and the usage status. */
START_TEST(mappings_without_tracking_refused)
{
	struct mt_out o;

	ck_assert_int_eq(mt_run((const char *[]){MEMTRACK, "run", "--no-track", "--mappings", "--",
						 "true", NULL},
				NULL, NULL, 60, &o),
			 0);
	ck_assert_int_eq(o.code, 2);
	ck_assert_int_eq(mt_count_lines(o.err, ""), 1);
	ck_assert_ptr_nonnull(strstr(o.err, "--no-track excludes -o, --leaks, --mappings"));
	mt_out_free(&o);
}
END_TEST

static Suite *mapped_suite(void)
{
	const char *root_why = geteuid() ? "no root" : NULL;
	Suite *s = suite_create("mapped");
	TCase *rec = tcase_create("records"), *counts = tcase_create("counts"),
	      *reports = tcase_create("reports");

	tcase_add_checked_fixture(rec, setup, teardown);
	tcase_set_timeout(rec, 120);
	mt_add_test_unless(rec, run_records_mappings_with_their_origin, root_why);
	mt_add_test_unless(rec, run_without_mappings_records_none, root_why);
	tcase_add_test(rec, mappings_without_tracking_refused);
	suite_add_tcase(s, rec);
	tcase_add_checked_fixture(counts, setup, teardown);
	tcase_set_timeout(counts, 180);
	mt_add_test_unless(counts, mapped_over_time_peak_and_exit, root_why);
	mt_add_test_unless(counts, brk_only_static_musl, root_why);
	mt_add_test_unless(counts, thread_stack_and_arena_told_apart, root_why);
	mt_add_test_unless(counts, command_in_a_pid_namespace, root_why);
	mt_add_test_unless(counts, memtrack_in_a_pid_namespace, root_why);
	suite_add_tcase(s, counts);
	tcase_add_checked_fixture(reports, setup, teardown);
	tcase_set_timeout(reports, 120);
	mt_add_test_unless(reports, reports_say_the_mapped_memory, root_why);
	mt_add_test_unless(reports, reports_without_mappings_say_nothing, root_why);
	suite_add_tcase(s, reports);
	return s;
}

int main(void)
{
	return mt_run_suite(mapped_suite());
}
