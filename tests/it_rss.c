// SPDX-License-Identifier: GPL-2.0
/*
 * RSS over time on fixtures/rss_points.c (fixtures/README.md has its truth): the samples memtrack
 * took while the fixture rested at each of its points equal what the fixture read of its own
 * /proc/self/status then, within RES; between points they move by the sizes the fixture touched;
 * its exit sample is its last reading; the report's peaks hold them. The same in a pid namespace.
 * Two processes at once: the tree's peak is their sum.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <check.h>
#include <json-c/json.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "reader/artifact_read.h"

#define MIB   (1024 * 1024ll)
/*
 * How far a sample may be from the fixture's reading around it: the kernel's RSS counters are
 * per-CPU (percpu_counter), and /proc reads their total without what each CPU still holds, up to
 * the counter's batch (32 pages) per CPU: 2 x 32 pages here (docs/PERFORMANCE.md, section 19). A
 * fold of that part moves the figures under a process at rest: the fixture saw 16 pages so.
 */
#define RES   (256 * 1024ll)
/* How far the known sizes may move RSS besides: page tables and the fixture's own pages. */
#define SLACK (512 * 1024ll)

enum { START, ANON, FILE_, SHARED, FREED, EXIT, POINTS };
static const char *const names[POINTS] = {"start", "anon", "file", "shared", "freed", "exit"};

struct point {
	unsigned long long t0, t1, anon, file, shmem, rss0, rss1;
};

struct run {
	int pid;
	struct point p[POINTS];
	/* memtrack's samples of the fixture at each point: their count, the last one's values */
	int seen[POINTS];
	long long anon[POINTS], file[POINTS], shmem[POINTS];
	long long worst; /* the largest distance of a sample's sum from the reading after it */
	bool has_exit;
	long long exit_rss;
};

static void parse_points(const char *out, struct run *r)
{
	const char *l = strstr(out, "pid ");

	ck_assert_msg(l && sscanf(l, "pid %d", &r->pid) == 1, "no pid in %s", out);
	for (int k = 0; k < POINTS; k++) {
		char want[32];
		struct point *p = &r->p[k];

		snprintf(want, sizeof(want), "point %s ", names[k]);
		l = strstr(out, want);
		ck_assert_msg(l && sscanf(l + strlen(want), "%llu %llu %llu %llu %llu %llu %llu",
					  &p->t0, &p->t1, &p->anon, &p->file, &p->shmem, &p->rss0,
					  &p->rss1) == 7,
			      "no %s in %s", want, out);
	}
}

static void take(struct run *r, const struct mt_artifact_rss *s)
{
	if ((int)s->pid != r->pid)
		return;
	if (s->why == MT_RSS_EXIT) {
		ck_assert_msg(!r->has_exit, "two exit samples");
		r->has_exit = true;
		r->exit_rss = (long long)(s->anon + s->file + s->shmem);
		return;
	}
	for (int k = 0; k < EXIT; k++) {
		if (s->ts_ns < r->p[k].t0 || s->ts_ns > r->p[k].t1)
			continue;
		r->seen[k]++;
		if (llabs((long long)(s->anon + s->file + s->shmem) - (long long)r->p[k].rss1) >
		    r->worst)
			r->worst = llabs((long long)(s->anon + s->file + s->shmem) -
					 (long long)r->p[k].rss1);
		r->anon[k] = (long long)s->anon;
		r->file[k] = (long long)s->file;
		r->shmem[k] = (long long)s->shmem;
	}
}

static void read_samples(const char *art, struct run *r)
{
	char err[MT_ARTIFACT_ERRLEN];
	struct mt_artifact_reader *rd;
	struct mt_artifact_item it;
	int ret;

	ck_assert_msg(mt_artifact_open(&rd, art, err, sizeof(err)) == 0, "%s", err);
	while ((ret = mt_artifact_next(rd, &it)) > 0)
		if (it.type == MT_ITEM_RSS)
			take(r, it.rss);
	ck_assert_msg(ret == 0, "%s", mt_artifact_error(rd));
	mt_artifact_close(rd);
}

static void near(long long got, long long want, long long tol, const char *what, int k)
{
	ck_assert_msg(llabs(got - want) <= tol, "%s at %s: %lld, not %lld (within %lld)", what,
		      names[k], got, want, tol);
}

/* The samples at rest are the fixture's readings; between points, the sizes it touched. */
static void check_points(const struct run *r)
{
	for (int k = 0; k < EXIT; k++) {
		const struct point *p = &r->p[k];

		long long lo = (long long)(p->rss0 < p->rss1 ? p->rss0 : p->rss1);
		long long hi = (long long)(p->rss0 < p->rss1 ? p->rss1 : p->rss0);
		long long sum = r->anon[k] + r->file[k] + r->shmem[k];

		ck_assert_msg(r->seen[k] > 0, "no sample while it rested at %s", names[k]);
		ck_assert_msg(sum >= lo - RES && sum <= hi + RES,
			      "RSS at %s: %lld, the fixture read %lld then %lld", names[k], sum, lo,
			      hi);
		near(r->anon[k], (long long)p->anon, RES, "anon", k);
		near(r->file[k], (long long)p->file, RES, "file", k);
		near(r->shmem[k], (long long)p->shmem, RES, "shmem", k);
	}
	/* 64 MiB of anonymous memory, 32 MiB of a file, 16 MiB shared, then the 64 MiB unmapped */
	near(r->anon[ANON] - r->anon[START], 64 * MIB, SLACK, "anon growth", ANON);
	near(r->file[FILE_] - r->file[ANON], 32 * MIB, SLACK, "file growth", FILE_);
	near(r->shmem[SHARED] - r->shmem[FILE_], 16 * MIB, SLACK, "shmem growth", SHARED);
	near(r->anon[SHARED] - r->anon[FREED], 64 * MIB, SLACK, "anon release", FREED);
	ck_assert_msg(r->has_exit, "no exit sample");
	near(r->exit_rss, (long long)r->p[EXIT].rss1, RES, "RSS", EXIT);
}

/* The report: the image's peak is at least the largest reading, the tree's the image's. */
static void check_report(const char *art, const struct run *r)
{
	const char *argv[] = {MEMTRACK, "report", "--json", art, NULL};
	struct json_object *rep, *images, *rss = NULL, *run;
	long long peak, tree;
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report: %s", o.err);
	rep = json_tokener_parse(o.out);
	ck_assert_ptr_nonnull(rep);
	images = mt_json_get(rep, "images");
	for (size_t i = 0; i < json_object_array_length(images); i++) {
		struct json_object *g = json_object_array_get_idx(images, i);

		if (mt_json_i64(g, "pid") == r->pid &&
		    json_object_get_type(mt_json_get(g, "rss")) == json_type_object)
			rss = mt_json_get(g, "rss");
	}
	ck_assert_msg(rss, "no rss for pid %d", r->pid);
	peak = mt_json_i64(rss, "peak_bytes");
	ck_assert_int_ge(peak, (long long)r->p[SHARED].rss1 - RES);
	ck_assert_int_ge(mt_json_i64(rss, "hwm_bytes"), (long long)r->p[SHARED].rss1 - RES);
	ck_assert_int_le(mt_json_i64(rss, "hwm_bytes"), (long long)r->p[SHARED].rss1 + SLACK);
	run = mt_json_get(rep, "rss");
	ck_assert_ptr_nonnull(run);
	tree = mt_json_i64(run, "tree_peak_bytes");
	/* the tree is the fixture alone: its largest sample */
	near(tree, (long long)r->p[SHARED].rss1, RES, "tree peak", SHARED);
	json_object_put(rep);
	mt_out_free(&o);
}

static void run_points(const char *const *wrap)
{
	char dir[64];
	const char *cmd[] = {FIXTURE("rss_points"), "64", dir, NULL};
	struct run r = {0};
	struct mt_out o;
	char *art;

	mt_tmpdir(dir);
	art = mt_record(MEMTRACK, wrap, NULL, cmd, 120, &o);
	ck_assert_ptr_nonnull(art);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	parse_points(o.out, &r);
	read_samples(art, &r);
	check_points(&r);
	check_report(art, &r);
	/* What the resolution was on this run, for docs/PERFORMANCE.md. */
	fprintf(stderr, "it_rss: %d %d %d %d %d samples at rest, the farthest %lld bytes away\n",
		r.seen[START], r.seen[ANON], r.seen[FILE_], r.seen[SHARED], r.seen[FREED], r.worst);
	mt_out_free(&o);
	unlink(art);
	*strrchr(art, '/') = '\0';
	rmdir(art);
	rmdir(dir);
	free(art);
}

START_TEST(rss_at_known_points)
{
	run_points(NULL);
}
END_TEST

START_TEST(rss_at_known_points_in_a_pid_namespace)
{
	run_points((const char *const[]){"unshare", "--pid", "--fork", "--mount-proc", NULL});
}
END_TEST

/* The figures of `point NAME ...` in out: the reading after the rest, and the lower of the two. */
static void point_of(const char *out, const char *name, long long *lo, long long *hi)
{
	unsigned long long t0, t1, anon, file, shmem, rss0, rss1;
	char want[32];
	const char *l;

	snprintf(want, sizeof(want), "point %s ", name);
	l = strstr(out, want);
	ck_assert_msg(l && sscanf(l + strlen(want), "%llu %llu %llu %llu %llu %llu %llu", &t0, &t1,
				  &anon, &file, &shmem, &rss0, &rss1) == 7,
		      "no %s in %s", want, out);
	*lo = (long long)(rss0 < rss1 ? rss0 : rss1);
	*hi = (long long)(rss0 < rss1 ? rss1 : rss0);
}

/*
 * rss_points fork: while the child rests, both processes are still, so the tree's peak is the
 * sum of the two readings; each image has its own RSS, the child's with its exit sample.
 */
START_TEST(rss_of_a_tree_at_one_instant)
{
	char dir[64];
	const char *cmd[] = {FIXTURE("rss_points"), "64", dir, "fork", NULL};
	long long plo, phi, clo, chi, tree;
	struct json_object *rep, *images, *run;
	int with_rss = 0, with_exit = 0;
	struct mt_out o;

	mt_tmpdir(dir);
	rep = mt_run_report(NULL, cmd, 120, &o);
	ck_assert_msg(rep && o.code == 0, "exit %d: %s", o.code, o.err);
	point_of(o.out, "parent", &plo, &phi);
	point_of(o.out, "child", &clo, &chi);
	run = mt_json_get(rep, "rss");
	ck_assert_ptr_nonnull(run);
	tree = mt_json_i64(run, "tree_peak_bytes");
	ck_assert_msg(tree >= plo + clo - RES && tree <= phi + chi + RES,
		      "tree peak %lld, not the parent's %lld .. %lld plus the child's %lld .. %lld",
		      tree, plo, phi, clo, chi);
	images = mt_json_get(rep, "images");
	for (size_t i = 0; i < json_object_array_length(images); i++) {
		struct json_object *r = mt_json_get(json_object_array_get_idx(images, i), "rss");

		if (json_object_get_type(r) != json_type_object)
			continue;
		with_rss++;
		with_exit += json_object_get_type(mt_json_get(r, "at_exit")) == json_type_object;
	}
	ck_assert_int_eq(with_rss, 2);
	ck_assert_int_eq(with_exit, 2);
	json_object_put(rep);
	mt_out_free(&o);
	rmdir(dir);
}
END_TEST

static Suite *rss_suite(void)
{
	Suite *s = suite_create("rss");
	TCase *tc = tcase_create("rss");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, rss_at_known_points);
	tcase_add_test(tc, rss_of_a_tree_at_one_instant);
	mt_tcase_add_tool_test(tc, rss_at_known_points_in_a_pid_namespace, "unshare");
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(rss_suite());
}
