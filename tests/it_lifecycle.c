// SPDX-License-Identifier: GPL-2.0
/*
 * One ordered stream: process images across exec, vfork children in their parent's
 * memory, frees and reallocs across threads, reused pids. Exact against the lifecycle fixture's
 * truth (fixtures/README.md, "lifecycle").
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define LIFECYCLE FIXTURE("lifecycle")

struct img_truth {
	int64_t allocations, frees, reallocs, unmatched, bytes;
	int64_t live_blocks, live_bytes; /* at its exec or exit */
};

static struct json_object *run_report(const char *const *cmd)
{
	struct mt_out o;
	struct json_object *rep = mt_run_report(NULL, cmd, 120, &o);

	ck_assert_msg(rep, "no report: %s", o.err);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_int_eq(mt_json_i64(mt_json_get(rep, "totals"), "dropped"), 0);
	mt_out_free(&o);
	return rep;
}

static struct json_object *images(struct json_object *rep)
{
	return mt_json_get(rep, "images");
}

/* The image at position pos after exec execs of its process; the test fails when there is none. */
static struct json_object *image_at(struct json_object *rep, const char *pos, int64_t exec)
{
	struct json_object *a = images(rep), *g, *p;

	for (size_t i = 0; i < json_object_array_length(a); i++) {
		g = json_object_array_get_idx(a, i);
		if (json_object_object_get_ex(g, "position", &p) && p &&
		    !strcmp(json_object_get_string(p), pos) && mt_json_i64(g, "exec") == exec)
			return g;
	}
	ck_abort_msg("no image at %s+%lld", pos, (long long)exec);
	return NULL;
}

static void assert_image(struct json_object *g, const char *what, const char *ended,
			 struct img_truth w)
{
	struct json_object *live = mt_json_get(g, ended);

	ck_assert_msg(mt_json_i64(g, "allocations") == w.allocations, "%s: allocations %lld", what,
		      (long long)mt_json_i64(g, "allocations"));
	ck_assert_msg(mt_json_i64(g, "frees") == w.frees, "%s: frees %lld", what,
		      (long long)mt_json_i64(g, "frees"));
	ck_assert_msg(mt_json_i64(g, "reallocs") == w.reallocs, "%s: reallocs %lld", what,
		      (long long)mt_json_i64(g, "reallocs"));
	if (w.unmatched >= 0)
		ck_assert_msg(mt_json_i64(g, "unmatched_frees") == w.unmatched,
			      "%s: unmatched %lld", what,
			      (long long)mt_json_i64(g, "unmatched_frees"));
	ck_assert_msg(mt_json_i64(g, "bytes_allocated") == w.bytes, "%s: bytes %lld", what,
		      (long long)mt_json_i64(g, "bytes_allocated"));
	ck_assert_msg(live, "%s: no %s", what, ended);
	ck_assert_msg(mt_json_i64(live, "blocks") == w.live_blocks, "%s: %s blocks %lld", what,
		      ended, (long long)mt_json_i64(live, "blocks"));
	ck_assert_msg(mt_json_i64(live, "bytes") == w.live_bytes, "%s: %s bytes %lld", what, ended,
		      (long long)mt_json_i64(live, "bytes"));
}

static const char *str_of(struct json_object *g, const char *key)
{
	struct json_object *v = mt_json_get(g, key);

	return v ? json_object_get_string(v) : NULL;
}

/* The reproducer: env's blocks go with env's image, leaky's are its own. */
START_TEST(env_wrapper_exec)
{
	const char *cmd[] = {"env", "FOO=1", LIFECYCLE, "leaky", NULL};
	struct json_object *rep = run_report(cmd), *leaky = image_at(rep, "0", 1);

	assert_image(leaky, "leaky", "live_at_exit",
		     (struct img_truth){10, 0, 0, 0, 10000, 10, 10000});
	ck_assert_ptr_nonnull(strstr(str_of(leaky, "exe"), "/lifecycle"));
	ck_assert_ptr_nonnull(strstr(str_of(image_at(rep, "0", 0), "exe"), "env"));
	ck_assert(json_object_get_type(mt_json_get(image_at(rep, "0", 0), "live_at_exit")) ==
		  json_type_null);
	ck_assert_int_eq(json_object_array_length(images(rep)), 2);
	json_object_put(rep);
}
END_TEST

/* selfexec 3: four images of one process, each with its own 3 blocks of 100 bytes. */
START_TEST(self_exec_chain)
{
	const char *cmd[] = {LIFECYCLE, "selfexec", "3", NULL};
	struct json_object *rep = run_report(cmd), *t = mt_json_get(rep, "totals");

	ck_assert_int_eq(json_object_array_length(images(rep)), 4);
	for (int64_t k = 0; k < 4; k++)
		assert_image(image_at(rep, "0", k), "selfexec",
			     k < 3 ? "live_at_exec" : "live_at_exit",
			     (struct img_truth){3, 0, 0, 0, 300, 3, 300});
	/* Totals are the sums of the images: 12 blocks never freed, none live twice. */
	ck_assert_int_eq(mt_json_i64(t, "allocations"), 12);
	ck_assert_int_eq(mt_json_i64(t, "live_blocks"), 12);
	ck_assert_int_eq(mt_json_i64(t, "peak_bytes"), 300);
	json_object_put(rep);
}
END_TEST

/* The vfork child's malloc lives in its parent's memory: the parent's free matches it. */
START_TEST(vfork_child_mallocs_parent_frees)
{
	const char *cmd[] = {LIFECYCLE, "vfork", NULL};
	struct json_object *rep = run_report(cmd), *child = image_at(rep, "0.0", 0);

	ck_assert(json_object_get_boolean(mt_json_get(child, "shared_memory")));
	ck_assert_str_eq(str_of(child, "parent"), "0");
	/* Its exec releases nothing: the block is its parent's. */
	assert_image(child, "vfork child", "live_at_exec",
		     (struct img_truth){1, 0, 0, 0, 512, 0, 0});
	assert_image(image_at(rep, "0", 0), "parent", "live_at_exit",
		     (struct img_truth){0, 1, 0, 0, 0, 0, 0});
	ck_assert(!json_object_get_boolean(mt_json_get(image_at(rep, "0.0", 1), "shared_memory")));
	ck_assert_int_eq(mt_json_i64(mt_json_get(rep, "totals"), "live_blocks"), 0);
	json_object_put(rep);
}
END_TEST

/*
 * 100,000 blocks malloc'd by one thread and freed by another: every free is counted, none is
 * lost to another thread's reuse of the address. Two DTVs of 272 bytes stay; the releases of the
 * threads' tcaches at their exits are unmatched.
 */
static void producer_consumer(const char *n, int64_t blocks)
{
	const char *cmd[] = {LIFECYCLE, "pingpong", n, NULL};
	struct json_object *rep = run_report(cmd);

	/* pingpong's blocks and its two threads' DTVs (272 bytes each), which stay. */
	assert_image(image_at(rep, "0", 0), "pingpong", "live_at_exit",
		     (struct img_truth){blocks + 2, blocks, 0, -1, 32 * blocks + 544, 2, 544});
	json_object_put(rep);
}

START_TEST(producer_consumer_10000)
{
	producer_consumer("10000", 10000);
}
END_TEST

/*
 * The size. Tagged "long": under the kernel matrix's emulation every hand-over between
 * the two spinning threads waits for the other vCPU's time slice, and 100,000 of them take
 * minutes there; the 10,000 above runs on every kernel.
 */
START_TEST(producer_consumer_100000)
{
	producer_consumer("100000", 100000);
}
END_TEST

/* A realloc's old block is released at its entry: the other thread may get it meanwhile. */
START_TEST(realloc_under_concurrent_allocator)
{
	const char *cmd[] = {LIFECYCLE, "realloc", "20000", NULL};
	struct json_object *rep = run_report(cmd), *g = image_at(rep, "0", 0);

	/* grower: 1 malloc(16), reallocs to 16 + 16 i, 1 free; churner: 20000 pairs; 2 DTVs. */
	assert_image(g, "realloc", "live_at_exit",
		     (struct img_truth){20003, 20001, 20000, -1, 3210872368, 2, 544});
	json_object_put(rep);
}
END_TEST

/* 8 threads exit with full tcaches: glibc's frees of cached chunks are unmatched, not frees. */
START_TEST(threads_exit_with_tcaches)
{
	const char *cmd[] = {FIXTURE("threads8"), NULL};
	struct json_object *rep = run_report(cmd), *g = image_at(rep, "0", 0);
	struct json_object *live = mt_json_get(g, "live_at_exit");
	int64_t l = mt_json_i64(live, "blocks");

	/* L of the 8 DTVs are kept with cached stacks, the others freed (timing). */
	ck_assert(l >= 0 && l <= 8);
	assert_image(g, "threads8", "live_at_exit",
		     (struct img_truth){8008, 8000 + 8 - l, 0, 16, 2306176, l, 272 * l});
	json_object_put(rep);
}
END_TEST

/* The one other image with a's pid (a fork that missed the pid is a child of another pid). */
static struct json_object *same_pid_elsewhere(struct json_object *rep, struct json_object *a)
{
	struct json_object *all = images(rep), *found = NULL;

	for (size_t i = 0; i < json_object_array_length(all); i++) {
		struct json_object *g = json_object_array_get_idx(all, i);

		if (g == a || mt_json_i64(g, "pid") != mt_json_i64(a, "pid"))
			continue;
		ck_assert_msg(!found, "pid %lld in three images", (long long)mt_json_i64(a, "pid"));
		found = g;
	}
	ck_assert_msg(found, "no other image with pid %lld", (long long)mt_json_i64(a, "pid"));
	return found;
}

/*
 * Two children with one pid (the fixture sets ns_last_pid, memtrack runs as the first process
 * of a pid namespace of its own): two images, each with its own block live at exit.
 */
START_TEST(reused_pid_two_images)
{
	const char *argv[] = {"unshare", "--pid", "--fork", "--mount-proc", MEMTRACK, "run", "-q",
			      "-o",	 NULL,	  "--",	    LIFECYCLE,	    "reuse",  NULL};
	const char *rep_argv[] = {MEMTRACK, "report", "--json", NULL, NULL};
	char dir[64], art[128];
	struct json_object *rep, *a, *b;
	struct mt_out o;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	argv[8] = art;
	rep_argv[3] = art;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(rep_argv, NULL, NULL, 60, &o), 0);
	rep = json_tokener_parse(o.out);
	mt_out_free(&o);
	ck_assert_ptr_nonnull(rep);
	a = image_at(rep, "0.0", 0);
	b = same_pid_elsewhere(rep, a);
	assert_image(a, "first", "live_at_exit", (struct img_truth){1, 0, 0, 0, 100, 1, 100});
	assert_image(b, "second", "live_at_exit", (struct img_truth){1, 0, 0, 0, 200, 1, 200});
	json_object_put(rep);
	unlink(art);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("lifecycle");
	TCase *tc = tcase_create("lifecycle");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, env_wrapper_exec);
	tcase_add_test(tc, self_exec_chain);
	tcase_add_test(tc, vfork_child_mallocs_parent_frees);
	tcase_add_test(tc, producer_consumer_10000);
	tcase_add_test(tc, realloc_under_concurrent_allocator);
	tcase_add_test(tc, threads_exit_with_tcaches);
	tcase_add_test(tc, reused_pid_two_images);
	suite_add_tcase(s, tc);

	tc = tcase_create("long");
	tcase_set_tags(tc, "long");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, producer_consumer_100000);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
