// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack report --diff BASE NEW on two real runs: the two versions of fixtures/diff_sites
 * (fixtures/README.md: one site doubled, one removed, one new, one process image more), whose
 * deltas are exact, in text, in JSON and in the page of --html; the --max-increase limits' exit
 * status; and a real program's two workloads (sqlite3 filling a table, without and with an index).
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

static char *art[2];

/* memtrack run --stacks of cmd, which must exit 0: the artifact's path (to free). */
static char *record(const char *const *cmd)
{
	const char *opts[] = {"--stacks", NULL};
	struct mt_out o;
	char *a = mt_record(MEMTRACK, NULL, opts, cmd, 120, &o);

	ck_assert_ptr_nonnull(a);
	ck_assert_msg(o.code == 0, "run failed (%d): %s", o.code, o.err);
	mt_out_free(&o);
	return a;
}

static void setup(void)
{
	const char *a[] = {FIXTURE("diff_sites"), "a", NULL};
	const char *b[] = {FIXTURE("diff_sites"), "b", NULL};

	art[0] = record(a);
	art[1] = record(b);
}

static void teardown(void)
{
	for (int i = 0; i < 2; i++) {
		unlink(art[i]);
		free(art[i]);
	}
}

/* memtrack report --diff [extra...] BASE NEW: fills *o, returns its exit code. */
static int diff(const char *const *extra, const char *base, const char *new, struct mt_out *o)
{
	const char *argv[16] = {MEMTRACK, "report", "--diff"};
	int n = 3;

	for (int i = 0; extra && extra[i]; i++)
		argv[n++] = extra[i];
	argv[n++] = base;
	argv[n++] = new;
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, o), 0);
	return o->code;
}

/* The row of array key whose "key" ends with suffix. */
static struct json_object *row(struct json_object *doc, const char *level, const char *suffix)
{
	struct json_object *a, *r, *k;

	ck_assert(json_object_object_get_ex(doc, level, &a));
	for (size_t i = 0; i < json_object_array_length(a); i++) {
		const char *s;

		r = json_object_array_get_idx(a, i);
		ck_assert(json_object_object_get_ex(r, "key", &k));
		s = json_object_get_string(k);
		if (strlen(s) >= strlen(suffix) && !strcmp(s + strlen(s) - strlen(suffix), suffix))
			return r;
	}
	ck_abort_msg("no %s row ending in '%s'", level, suffix);
	return NULL;
}

/* Row r's metric m is base -> new, and r is in `in`. */
static void expect(struct json_object *r, const char *in, const char *m, int64_t base, int64_t new)
{
	struct json_object *v, *x;

	ck_assert(json_object_object_get_ex(r, "in", &x));
	ck_assert_str_eq(json_object_get_string(x), in);
	ck_assert_msg(json_object_object_get_ex(r, m, &v), "no %s", m);
	ck_assert_int_eq(mt_json_i64(v, "base"), base);
	ck_assert_int_eq(mt_json_i64(v, "new"), new);
	ck_assert_int_eq(mt_json_i64(v, "change"), new - base);
}

START_TEST(fixture_deltas_are_exact_in_json)
{
	const char *extra[] = {"--json", NULL};
	struct json_object *doc, *tree, *r;
	struct mt_out o;

	ck_assert_int_eq(diff(extra, art[0], art[1], &o), 0);
	doc = json_tokener_parse(o.out);
	ck_assert_msg(doc, "%s", o.out);
	ck_assert(json_object_object_get_ex(doc, "tree", &tree));
	/* a: 10 x 100 + 5 x 1000; b: 20 x 100 + 3 x 64, and its child's 4096. */
	json_object_object_add(tree, "key", json_object_new_string("tree"));
	json_object_object_add(tree, "in", json_object_new_string("both"));
	expect(tree, "both", "allocations", 15, 24);
	expect(tree, "both", "bytes", 6000, 6288);
	expect(tree, "both", "temporary", 15, 24);
	/* Two images of diff_sites in b: each named by its place. */
	r = row(doc, "images", "diff_sites at 0");
	expect(r, "both", "allocations", 15, 23);
	expect(r, "both", "bytes", 6000, 2192);
	r = row(doc, "images", "diff_sites at 0.0");
	expect(r, "new", "allocations", 0, 1);
	expect(r, "new", "bytes", 0, 4096);
	expect(row(doc, "sites", ";main;kept;malloc"), "both", "bytes", 1000, 2000);
	expect(row(doc, "sites", ";main;kept;malloc"), "both", "allocations", 10, 20);
	expect(row(doc, "sites", ";main;dropped;malloc"), "base", "bytes", 5000, 0);
	expect(row(doc, "sites", ";main;added;malloc"), "new", "allocations", 0, 3);
	expect(row(doc, "sites", "__libc_start_call_main;main;malloc"), "new", "bytes", 0, 4096);
	expect(row(doc, "families", "glibc"), "both", "allocations", 15, 24);
	json_object_put(doc);
	mt_out_free(&o);
}
END_TEST

START_TEST(fixture_deltas_in_text)
{
	struct mt_out o;

	ck_assert_int_eq(diff(NULL, art[0], art[1], &o), 0);
	ck_assert_msg(strstr(o.out, "  allocations  15 -> 24  +9 (+60.0%)\n"), "%s", o.out);
	ck_assert_msg(
	    strstr(o.out, "  bytes        6000 (5.9 KiB) -> 6288 (6.1 KiB)  +288 (+4.8%)\n"), "%s",
	    o.out);
	ck_assert_msg(strstr(o.out, ";main;dropped;malloc  [only in base]\n"
				    "      allocations  5 -> 0  -5 (-100.0%)\n"),
		      "%s", o.out);
	ck_assert_msg(strstr(o.out, ";main;kept;malloc\n"
				    "      allocations  10 -> 20  +10 (+100.0%)\n"
				    "      bytes        1000 -> 2000 (2.0 KiB)  +1000 (+100.0%)\n"),
		      "%s", o.out);
	ck_assert_msg(strstr(o.out, ";main;added;malloc  [only in new]\n"
				    "      allocations  0 -> 3  +3 (new)\n"),
		      "%s", o.out);
	ck_assert_msg(strstr(o.out, "process images (by program, then arguments and place in the "
				    "tree): 2 changed of 2\n"),
		      "%s", o.out);
	mt_out_free(&o);
	/* A run compared with itself: nothing changed anywhere. */
	ck_assert_int_eq(diff(NULL, art[0], art[0], &o), 0);
	ck_assert_msg(strstr(o.out, "allocation sites (by stack, outermost frame first): 0 changed "
				    "of 2\n"),
		      "%s", o.out);
	mt_out_free(&o);
}
END_TEST

/*
 * The comparison as a page: the tree's values and changes exact (data-v, which the page's
 * script formats), the changed sites with both values in their titles, the limits; one file,
 * nothing printed, and the artifacts are not written over.
 */
START_TEST(fixture_deltas_in_html)
{
	const char *peak[] = {"--max-increase", "peak=10", "--html", NULL, NULL};
	const char *onto[] = {"--html", art[0], NULL};
	char page[256], *html;
	struct mt_out o;

	snprintf(page, sizeof(page), "%s.html", art[0]);
	peak[3] = page;
	ck_assert_int_eq(diff(peak, art[0], art[1], &o), 3);
	ck_assert_str_eq(o.out, "");
	ck_assert_str_eq(o.err, "memtrack: peak grew by 309.6% (at most 10.0% allowed)\n");
	mt_out_free(&o);
	html = mt_slurp(page);
	ck_assert_ptr_nonnull(html);
	ck_assert_ptr_null(strstr(html, " src="));
	ck_assert_ptr_null(strstr(html, " href="));
	ck_assert_msg(strstr(html, "<tr data-metric=\"bytes\"><td class=\"fn\">bytes</td>"
				   "<td class=\"num bytes\" data-v=\"6000\">6000</td>"
				   "<td class=\"num bytes\" data-v=\"6288\">6288</td>"
				   "<td class=\"num bytes delta\" data-v=\"288\">288</td>"
				   "<td class=\"pc\">+4.8%</td></tr>"),
		      "%.3000s", html);
	ck_assert_msg(
	    strstr(html, ";main;dropped;malloc</td><td>base</td>"
			 "<td class=\"num delta\" data-v=\"-5\" title=\"5 -&gt; 0 (-100.0%)\">"),
	    "%.3000s", strstr(html, "diff-sites"));
	ck_assert_ptr_nonnull(strstr(html, ";main;kept;malloc</td><td>both</td>"
					   "<td class=\"num delta\" data-v=\"10\""));
	ck_assert_ptr_nonnull(strstr(html, "limit: peak may grow by 10.0%: exceeded"));
	ck_assert_ptr_nonnull(strstr(html, "allocation sites (by stack, outermost frame first): "
					   "4 changed of 4</h2>"));
	free(html);
	unlink(page);
	ck_assert_int_eq(diff(onto, art[0], art[1], &o), 1);
	ck_assert_msg(strstr(o.err, "is the artifact BASE: not overwritten"), "%s", o.err);
	mt_out_free(&o);
	ck_assert_int_eq(diff(NULL, art[0], art[1], &o), 0);
	mt_out_free(&o);
}
END_TEST

START_TEST(limits_decide_the_exit_status)
{
	const char *held[] = {"--max-increase", "bytes=5", "--max-increase", "allocations=60%",
			      NULL};
	const char *bytes[] = {"--max-increase", "bytes=4.5", NULL};
	const char *peak[] = {"--max-increase", "peak=10%", "--json", NULL};
	const char *shrink[] = {"--max-increase", "bytes=0", NULL};
	const char *bad[] = {"--max-increase", "speed=5", NULL};
	struct mt_out o;

	ck_assert_int_eq(diff(held, art[0], art[1], &o), 0);
	ck_assert_str_eq(o.err, "");
	mt_out_free(&o);
	ck_assert_int_eq(diff(bytes, art[0], art[1], &o), 3);
	ck_assert_str_eq(o.err, "memtrack: bytes grew by 4.8% (at most 4.5% allowed)\n");
	mt_out_free(&o);
	/* The peak: 1000 bytes in a, b's child's 4096. */
	ck_assert_int_eq(diff(peak, art[0], art[1], &o), 3);
	ck_assert_msg(strstr(o.out, "\"metric\":\"peak\""), "%s", o.out);
	ck_assert_msg(strstr(o.out, "\"exceeded\":true"), "%s", o.out);
	mt_out_free(&o);
	/* The other way round the bytes shrink: any limit holds. */
	ck_assert_int_eq(diff(shrink, art[1], art[0], &o), 0);
	mt_out_free(&o);
	ck_assert_int_eq(diff(bad, art[0], art[1], &o), 2);
	ck_assert_msg(strstr(o.err, "--max-increase takes METRIC=PERCENT"), "%s", o.err);
	mt_out_free(&o);
}
END_TEST

START_TEST(usage_errors)
{
	const char *one[] = {MEMTRACK, "report", "--diff", "x", NULL};
	const char *svg[] = {MEMTRACK, "report", "--diff", "--svg", "o.svg", "x", "y", NULL};
	const char *html[] = {MEMTRACK, "report", "--diff", "--json", "--html",
			      "o.html", "x",	  "y",	    NULL};
	const char *nodiff[] = {MEMTRACK, "report", "--max-increase", "peak=1", "x", NULL};
	const char *const *cases[] = {one, svg, html, nodiff};
	const char *said[] = {"--diff compares two artifacts",
			      "--diff prints text or --json, or writes --html, not --svg",
			      "--html writes a file, --json prints: choose one",
			      "--max-increase limits a --diff"};
	struct mt_out o;

	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++) {
		ck_assert_int_eq(mt_run(cases[i], NULL, NULL, 30, &o), 0);
		ck_assert_int_eq(o.code, 2);
		ck_assert_msg(strstr(o.err, said[i]), "%s", o.err);
		mt_out_free(&o);
	}
	ck_assert_int_eq(diff(NULL, art[0], "/nonexistent.mtk", &o), 1);
	ck_assert_msg(strstr(o.err, "/nonexistent.mtk: cannot open"), "%s", o.err);
	ck_assert_str_eq(o.out, "");
	mt_out_free(&o);
}
END_TEST

/*
 * A real program, two workloads: sqlite3 inserting 5,000 rows, then the same with an index
 * built over them. The index build sorts: the sorter's sites appear only in the new run, and the
 * peak grows.
 */
START_TEST(sqlite3_with_an_index)
{
	const char *plain[] = {
	    "sqlite3", ":memory:",
	    "create table t(x); insert into t select value from generate_series(1, 5000);", NULL};
	const char *indexed[] = {"sqlite3", ":memory:",
				 "create table t(x); insert into t select value from "
				 "generate_series(1, 5000); create index i on t(x);",
				 NULL};
	const char *extra[] = {"--json", "--max-increase", "peak=0", NULL};
	char *a = record(plain), *b = record(indexed);
	struct json_object *doc, *tree, *v, *sites;
	struct mt_out o;
	size_t new_only = 0;

	ck_assert_int_eq(diff(extra, a, b, &o), 3);
	doc = json_tokener_parse(o.out);
	ck_assert_ptr_nonnull(doc);
	ck_assert(json_object_object_get_ex(doc, "tree", &tree));
	ck_assert(json_object_object_get_ex(tree, "peak", &v));
	ck_assert_int_gt(mt_json_i64(v, "change"), 0);
	ck_assert(json_object_object_get_ex(doc, "sites", &sites));
	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *in, *key;

		json_object_object_get_ex(json_object_array_get_idx(sites, i), "in", &in);
		json_object_object_get_ex(json_object_array_get_idx(sites, i), "key", &key);
		if (!strcmp(json_object_get_string(in), "new") &&
		    strstr(json_object_get_string(key), "sqlite3VdbeSorter"))
			new_only++;
	}
	ck_assert_msg(new_only > 0, "no site of the sorter (the index build) only in the new run");
	json_object_put(doc);
	mt_out_free(&o);
	unlink(a);
	unlink(b);
	free(a);
	free(b);
}
END_TEST

/* A copy of diff_sites at DIR/NAME/diff_sites (to free): the program built at another path. */
static char *copy_fixture(const char *dir, const char *name)
{
	char sub[160], *path = NULL;
	const char *cp[] = {"cp", FIXTURE("diff_sites"), NULL, NULL};
	struct mt_out o;

	snprintf(sub, sizeof(sub), "%s/%s", dir, name);
	ck_assert_int_eq(mkdir(sub, 0755), 0);
	ck_assert_int_gt(asprintf(&path, "%s/diff_sites", sub), 0);
	cp[2] = path;
	ck_assert_int_eq(mt_run(cp, NULL, NULL, 30, &o), 0);
	ck_assert_int_eq(o.code, 0);
	mt_out_free(&o);
	return path;
}

/*
 * The same program built at two paths (one file copied to two directories), run with the same
 * arguments: its process images match by program name and its file by name, the two paths
 * named in the row, and the comparison finds nothing changed at any level.
 */
START_TEST(one_program_at_two_paths)
{
	const char *extra[] = {"--json", NULL};
	char dir[64], *exe[2], *a[2];
	struct json_object *doc, *images, *r, *v, *x;
	struct mt_out o;

	mt_tmpdir(dir);
	for (int i = 0; i < 2; i++) {
		exe[i] = copy_fixture(dir, i ? "new" : "base");
		a[i] = record((const char *const[]){exe[i], "a", NULL});
	}
	ck_assert_int_eq(diff(extra, a[0], a[1], &o), 0);
	doc = json_tokener_parse(o.out);
	ck_assert_msg(doc, "%s", o.out);
	ck_assert(json_object_object_get_ex(doc, "images", &images));
	ck_assert_int_eq(json_object_array_length(images), 1);
	r = row(doc, "images", "diff_sites");
	expect(r, "both", "allocations", 15, 15);
	expect(r, "both", "bytes", 6000, 6000);
	ck_assert(json_object_object_get_ex(r, "exe", &x));
	ck_assert(json_object_object_get_ex(x, "base", &v));
	ck_assert_str_eq(json_object_get_string(v), exe[0]);
	ck_assert(json_object_object_get_ex(x, "new", &v));
	ck_assert_str_eq(json_object_get_string(v), exe[1]);
	json_object_put(doc);
	mt_out_free(&o);
	ck_assert_int_eq(diff(NULL, a[0], a[1], &o), 0);
	ck_assert_msg(strstr(o.out, "place in the tree): 0 changed of 1\n"), "%s", o.out);
	/* The executable's file too: one row, by name, not one only in each run. */
	ck_assert_msg(strstr(o.out, "files (by name): 0 changed of "), "%s", o.out);
	ck_assert_msg(
	    strstr(o.out, "allocation sites (by stack, outermost frame first): 0 changed"), "%s",
	    o.out);
	mt_out_free(&o);
	for (int i = 0; i < 2; i++) {
		unlink(a[i]);
		free(a[i]);
		unlink(exe[i]);
		*strrchr(exe[i], '/') = '\0';
		rmdir(exe[i]);
		free(exe[i]);
	}
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("diff");
	TCase *tc = tcase_create("diff");

	tcase_set_timeout(tc, 300);
	tcase_add_checked_fixture(tc, setup, teardown);
	tcase_add_test(tc, fixture_deltas_are_exact_in_json);
	tcase_add_test(tc, fixture_deltas_in_text);
	tcase_add_test(tc, fixture_deltas_in_html);
	tcase_add_test(tc, limits_decide_the_exit_status);
	tcase_add_test(tc, usage_errors);
	tcase_add_test(tc, sqlite3_with_an_index);
	suite_add_tcase(s, tc);
	tc = tcase_create("paths");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, one_program_at_two_paths);
	suite_add_tcase(s, tc);
	return mt_run_suite(s);
}
