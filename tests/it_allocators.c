// SPDX-License-Identifier: GPL-2.0
/*
 * Allocators linked statically under names of their own (fixtures/README.md, "Allocators linked
 * statically"): jemalloc as Rust's jemalloc-sys builds it (every name prefixed _rjem_),
 * mimalloc reached only through its aligned entries, as Rust's mimalloc crate calls it, and
 * through its heap entries; snmalloc and rpmalloc as their Rust crates link them. Every call
 * counted, with both probe placements, and every zeroed one flagged so; and the same programs
 * stripped of .symtab, whose allocator cannot be probed, reported as not probed: never a
 * complete recording.
 */
#include <check.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "bpf/memtrack.h"
#include "classify/classify.h"
#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "lib/twin.h"
#include "reader/artifact_read.h"

/*
 * fixtures/rust_jemalloc, built by cargo offline from Debian's crates (mt_cargo_build), once for
 * every build tree as the twins are: it links nothing of memtrack's, and builds jemalloc.
 */
#define RUST_JE_DIR   MT_SOURCE_DIR "/build-rust-alloc"
#define RUST_JE_BIN   RUST_JE_DIR "/target/debug/rust-jemalloc"
#define RUST_BUMP_BIN RUST_JE_DIR "/target/debug/rust-bump"

static const char *const placements[] = {"--probe-placement=smart", "--probe-placement=entry"};

struct truth {
	int64_t allocations, frees, reallocs, bytes;
};

static void assert_counts(struct json_object *t, const char *what, struct truth want)
{
	ck_assert_msg(mt_json_i64(t, "allocations") == want.allocations, "%s: allocations %lld",
		      what, (long long)mt_json_i64(t, "allocations"));
	ck_assert_msg(mt_json_i64(t, "frees") == want.frees, "%s: frees %lld", what,
		      (long long)mt_json_i64(t, "frees"));
	ck_assert_msg(mt_json_i64(t, "reallocs") == want.reallocs, "%s: reallocs %lld", what,
		      (long long)mt_json_i64(t, "reallocs"));
	ck_assert_msg(mt_json_i64(t, "bytes_allocated") == want.bytes, "%s: bytes %lld", what,
		      (long long)mt_json_i64(t, "bytes_allocated"));
}

/* The report's record of the file at path; fails the test when there is none. */
static struct json_object *file_at(struct json_object *rep, const char *path)
{
	struct json_object *files = mt_json_get(rep, "files");

	for (size_t i = 0; i < json_object_array_length(files); i++) {
		struct json_object *f = json_object_array_get_idx(files, i);
		struct json_object *p = mt_json_get(f, "path");

		if (json_object_is_type(p, json_type_string) &&
		    !strcmp(json_object_get_string(p), path))
			return f;
	}
	ck_abort_msg("no file %s in the report", path);
	return NULL;
}

/* The events of the artifact at mtk flagged MT_EV_ZEROED (the call handed out zeroed memory). */
static long long zeroed_events(const char *mtk)
{
	char err[MT_ARTIFACT_ERRLEN];
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	long long n = 0;
	int ret;

	ck_assert_msg(mt_artifact_open(&r, mtk, err, sizeof(err)) == 0, "%s", err);
	while ((ret = mt_artifact_next(r, &it)) > 0)
		for (size_t i = 0; it.type == MT_ITEM_EVENTS && i < it.n_events; i++)
			n += !!(it.events[i].flags & MT_EV_ZEROED);
	ck_assert_int_eq(ret, 0);
	mt_artifact_close(r);
	return n;
}

/*
 * memtrack run --strict PLACEMENT FIXTURE 10: every call of the program's own allocator counted
 * (its calls into glibc: none), zeroed ones flagged so, nothing left unprobed, the file labelled
 * with its family. want NULL: the counts the program printed (tally.h).
 */
static void assert_exact(int placement, const char *path, const char *family,
			 const struct truth *want, long long zeroed)
{
	const char *opts[] = {"--strict", placements[placement], NULL};
	const char *cmd[] = {path, "10", NULL};
	struct json_object *rep, *f;
	struct mt_out o = {0}, r = {0};
	struct truth printed;
	char *mtk;

	mtk = mt_record(MEMTRACK, NULL, opts, cmd, 120, &o);
	ck_assert_msg(mtk && o.code == 0, "exit %d: %s", o.code, o.err ? o.err : "");
	if (!want) {
		long long a, r, fr, b;

		ck_assert_msg(
		    sscanf(o.out,
			   "allocations %lld reallocs %lld frees %lld bytes %lld zeroed %lld", &a,
			   &r, &fr, &b, &zeroed) == 5,
		    "the program said: %s", o.out);
		printed = (struct truth){a, fr, r, b};
		want = &printed;
	}
	ck_assert_int_eq(mt_run((const char *const[]){MEMTRACK, "report", "--json", mtk, NULL},
				NULL, NULL, 60, &r),
			 0);
	ck_assert_msg(r.code == 0, "report: %s", r.err);
	rep = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(rep);
	ck_assert_int_eq(mt_json_i64(mt_json_get(rep, "totals"), "dropped"), 0);
	assert_counts(mt_json_get(rep, "totals"), "total", *want);
	f = file_at(rep, path);
	assert_counts(f, path, *want);
	ck_assert_str_eq(json_object_get_string(mt_json_get(f, "family")), family);
	ck_assert(json_object_get_boolean(mt_json_get(rep, "complete")));
	ck_assert_int_eq(json_object_array_length(mt_json_get(rep, "not_probed")), 0);
	ck_assert_int_eq(zeroed_events(mtk), zeroed);
	json_object_put(rep);
	mt_record_remove(mtk);
	mt_out_free(&r);
	mt_out_free(&o);
}

/*
 * 10 rounds of malloc, calloc, mallocx (zeroed), rallocx, realloc, aligned_alloc and four
 * releases.
 */
START_TEST(jemalloc_prefixed_exact)
{
	assert_exact(_i, FIXTURE("je_prefixed"), "jemalloc", &(struct truth){40, 40, 20, 90120},
		     20);
}
END_TEST

/* 10 rounds of mi_malloc_aligned, mi_zalloc_aligned, mi_realloc_aligned and two mi_free. */
START_TEST(mimalloc_aligned_only_exact)
{
	assert_exact(_i, FIXTURE("mi_aligned"), "mimalloc", &(struct truth){20, 20, 10, 60000}, 10);
}
END_TEST

/*
 * mimalloc's entries that take a heap first (the size one register on), its strdups (the size
 * read from the copy), mi_expand, mi_recalloc_aligned, mi_rezalloc and its sized and aligned
 * frees: what the program printed.
 */
START_TEST(mimalloc_heap_exact)
{
	assert_exact(_i, FIXTURE("mi_heap"), "mimalloc", NULL, 0);
}
END_TEST

/* snmalloc as its Rust crate links it: sn_rust_alloc and its kin, and its sn_ libc API. */
START_TEST(snmalloc_crate_exact)
{
	assert_exact(_i, FIXTURE("sn_rust"), "snmalloc", NULL, 0);
}
END_TEST

/* rpmalloc as its Rust crate links it: rpaligned_alloc and its kin, and its heap API. */
START_TEST(rpmalloc_crate_exact)
{
	assert_exact(_i, FIXTURE("rp_rust"), "rpmalloc", NULL, 0);
}
END_TEST

/* The report's entry of not_recorded for function; fails the test when there is none. */
static struct json_object *not_recorded(struct json_object *rep, const char *function)
{
	struct json_object *a = mt_json_get(rep, "not_recorded");

	for (size_t i = 0; i < json_object_array_length(a); i++) {
		struct json_object *u = json_object_array_get_idx(a, i);
		struct json_object *f = mt_json_get(u, "function");

		if (json_object_is_type(f, json_type_string) &&
		    !strcmp(json_object_get_string(f), function))
			return u;
	}
	ck_abort_msg("%s is not among the functions not recorded", function);
	return NULL;
}

/* A fixture's "unrecorded" calls (fixtures/README.md): functions and their counts. */
struct unrecorded_case {
	const char *fixture, *family;
	const char *function[2];
	long long calls[2];
	bool frees_heap[2];
};

static const struct unrecorded_case unrecorded_cases[] = {
    {"mi_heap", "mimalloc", {"mi_heap_destroy", "mi_wcsdup"}, {3, 2}, {true, false}},
    {"sn_rust", "snmalloc", {"sn_reallocarr"}, {2}, {false}},
    {"rp_rust", "rpmalloc", {"rpmalloc_heap_free_all"}, {2}, {true}},
};

/* The case's function i: its calls counted, its file named, said in the JSON and the text. */
static void assert_not_recorded(struct json_object *rep, const char *text,
				const struct unrecorded_case *c, const char *path, int i)
{
	struct json_object *u = not_recorded(rep, c->function[i]);
	char said[4400];

	ck_assert_int_eq(mt_json_i64(u, "calls"), c->calls[i]);
	ck_assert_str_eq(json_object_get_string(mt_json_get(u, "path")), path);
	ck_assert(json_object_get_boolean(mt_json_get(u, "frees_heap")) == c->frees_heap[i]);
	snprintf(said, sizeof(said), "%s's %s was called %lld times in %s", c->family,
		 c->function[i], c->calls[i], path);
	ck_assert_msg(strstr(json_object_get_string(mt_json_get(u, "reason")), said), "%s",
		      json_object_get_string(mt_json_get(u, "reason")));
	ck_assert_msg(strstr(text, said), "the text report does not say: %s", said);
}

/*
 * Functions memtrack counts but does not record (docs/PROBES.md), called by `FIXTURE 2
 * unrecorded`: mi_heap_destroy and mi_wcsdup, sn_reallocarr, rpmalloc_heap_free_all. Each is
 * named with its count of calls, the recording is incomplete and --strict exits 125, with each
 * way of linking (odd iterations: 6.1's perf links). Without those calls the same programs'
 * recordings are complete (the _exact tests).
 */
START_TEST(not_recorded_calls_counted)
{
	const struct unrecorded_case *c = &unrecorded_cases[_i / 2];
	const char *opts[] = {"--strict", NULL};
	char path[4096];
	const char *cmd[] = {path, "2", "unrecorded", NULL};
	struct mt_out o = {0}, r = {0}, t = {0};
	struct json_object *rep, *why;
	size_t n = c->function[1] ? 2 : 1;
	char *mtk;

	snprintf(path, sizeof(path), "%s/fixtures/%s", MT_BUILD_DIR, c->fixture);
	mtk = mt_record(mt_memtrack_link_path(_i % 2), NULL, opts, cmd, 120, &o);
	ck_assert_msg(mtk && o.code == 125, "exit %d: %s", o.code, o.err ? o.err : "");
	ck_assert_int_eq(mt_run((const char *const[]){MEMTRACK, "report", "--json", mtk, NULL},
				NULL, NULL, 60, &r),
			 0);
	ck_assert_int_eq(
	    mt_run((const char *const[]){MEMTRACK, "report", mtk, NULL}, NULL, NULL, 60, &t), 0);
	ck_assert_msg(r.code == 0 && t.code == 0, "report: %s%s", r.err, t.err);
	rep = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(rep);
	ck_assert(!json_object_get_boolean(mt_json_get(rep, "complete")));
	why = mt_json_get(rep, "incomplete");
	ck_assert_int_eq(json_object_array_length(why), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(why, 0)), "not_recorded");
	ck_assert_int_eq(json_object_array_length(mt_json_get(rep, "not_recorded")), n);
	for (size_t i = 0; i < n; i++)
		assert_not_recorded(rep, t.out, c, path, (int)i);
	json_object_put(rep);
	mt_record_remove(mtk);
	mt_out_free(&t);
	mt_out_free(&r);
	mt_out_free(&o);
}
END_TEST

/*
 * `mi_heap 2 nested`: functions counted, not recorded, whose blocks come from a strdup memtrack
 * records (fixtures/README.md). Each block is counted once, at the strdup: mimalloc's figures are
 * what the program printed, glibc's the three copies its realpath made (freed by
 * mi_heap_realpath with glibc's free). mi_realpath runs into mi_heap_realpath: its calls are
 * counted there, the one into the program's buffer too. mi_wdupenv_s, which allocates nothing
 * outside Windows, is not probed. The recording still does not claim to be complete.
 */
START_TEST(not_recorded_nested_recorded_once)
{
	const char *opts[] = {"--strict", NULL};
	char path[4096], real[PATH_MAX];
	const char *cmd[] = {path, "2", "nested", NULL};
	struct mt_out o = {0}, r = {0};
	struct json_object *rep, *glibc = NULL, *files;
	long long a, re, fr, b, z, copy;
	char *mtk;

	snprintf(path, sizeof(path), "%s/fixtures/mi_heap", MT_BUILD_DIR);
	ck_assert_ptr_nonnull(realpath(path, real));
	copy = (long long)strlen(real) + 1;
	mtk = mt_record(mt_memtrack_link_path(_i), NULL, opts, cmd, 120, &o);
	ck_assert_msg(mtk && o.code == 125, "exit %d: %s", o.code, o.err ? o.err : "");
	ck_assert_msg(sscanf(o.out,
			     "allocations %lld reallocs %lld frees %lld bytes %lld zeroed %lld", &a,
			     &re, &fr, &b, &z) == 5,
		      "the program said: %s", o.out);
	ck_assert_int_eq(mt_run((const char *const[]){MEMTRACK, "report", "--json", mtk, NULL},
				NULL, NULL, 60, &r),
			 0);
	ck_assert_msg(r.code == 0, "report: %s", r.err);
	rep = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(rep);
	assert_counts(file_at(rep, path), path, (struct truth){a, fr, re, b});
	files = mt_json_get(rep, "files");
	for (size_t i = 0; i < json_object_array_length(files); i++) {
		struct json_object *f = json_object_array_get_idx(files, i);
		const char *family = json_object_get_string(mt_json_get(f, "family"));

		if (family && !strcmp(family, "glibc"))
			glibc = f;
	}
	ck_assert_ptr_nonnull(glibc);
	assert_counts(glibc, "glibc", (struct truth){3, 3, 0, 3 * copy});
	/* the two heaps' own structs, which mi_heap_new allocates inline */
	ck_assert_int_eq(mt_json_i64(mt_json_get(rep, "totals"), "unmatched_frees"), 2);
	ck_assert(!json_object_get_boolean(mt_json_get(rep, "complete")));
	ck_assert_int_eq(json_object_array_length(mt_json_get(rep, "not_recorded")), 2);
	ck_assert_int_eq(mt_json_i64(not_recorded(rep, "mi_heap_realpath"), "calls"), 4);
	ck_assert_int_eq(mt_json_i64(not_recorded(rep, "mi_dupenv_s"), "calls"), 1);
	json_object_put(rep);
	mt_record_remove(mtk);
	mt_out_free(&r);
	mt_out_free(&o);
}
END_TEST

/* The classification of path, which must succeed. */
static struct mt_classification classified(const char *path)
{
	struct mt_classification c;

	ck_assert_int_eq(mt_classify_path(path, MT_PLACE_SMART, &c), 0);
	return c;
}

/* c's point named name, of kind kind; fails the test when there is none. */
static const struct mt_probe_point *need(const struct mt_classification *c, const char *name,
					 enum mt_kind kind)
{
	for (size_t i = 0; i < c->n_points; i++)
		if (!strcmp(c->points[i].symbol, name) && c->points[i].role == MT_ROLE_ENTRY) {
			ck_assert_int_eq(c->points[i].kind, kind);
			return &c->points[i];
		}
	ck_abort_msg("no point %s", name);
	return NULL;
}

/*
 * The Rust crates' interfaces of snmalloc and rpmalloc (fixtures/special/sn_crate.c and
 * rp_crate.c), each file labelled with its allocator.
 */
START_TEST(snmalloc_and_rpmalloc_crates)
{
	struct mt_classification c = classified(FIXTURE("sn_rust"));
	const struct mt_probe_point *p;

	ck_assert_int_eq(c.family, MT_FAM_SNMALLOC);
	ck_assert(need(&c, "sn_rust_alloc_zeroed", MT_K_ALIGNED_ALLOC)->zeroes);
	p = need(&c, "sn_rust_realloc", MT_K_REALLOC_ALIGNED);
	ck_assert_uint_eq(p->layout, MT_L_SN_REALLOC);
	ck_assert_uint_eq(mt_point_args(p), MT_ARG_RDI | MT_ARG_RSI | MT_ARG_RCX);
	need(&c, "sn_rust_dealloc", MT_K_FREE_SIZED);
	mt_classification_free(&c);
	c = classified(FIXTURE("rp_rust"));
	ck_assert_int_eq(c.family, MT_FAM_RPMALLOC);
	p = need(&c, "rpaligned_calloc", MT_K_CALLOC_ALIGNED);
	ck_assert(p->zeroes && !p->heap_first);
	ck_assert_uint_eq(p->layout, MT_L_ALIGNED_CALLOC);
	p = need(&c, "rpmalloc_heap_aligned_realloc", MT_K_REALLOC_ALIGNED);
	ck_assert(p->heap_first && !p->zeroes);
	ck_assert_uint_eq(p->layout, MT_L_ALIGNED_REALLOC);
	ck_assert_uint_eq(mt_point_args(p), MT_ARG_RSI | MT_ARG_RDX | MT_ARG_RCX);
	ck_assert(need(&c, "rpmalloc_heap_free", MT_K_FREE)->heap_first);
	mt_classification_free(&c);
	c = classified(FIXTURE("sn_rust_stripped"));
	ck_assert_int_eq(c.unnamed, MT_FAM_SNMALLOC);
	mt_classification_free(&c);
	c = classified(FIXTURE("rp_rust_stripped"));
	ck_assert_int_eq(c.unnamed, MT_FAM_RPMALLOC);
	mt_classification_free(&c);
}
END_TEST

/*
 * Stripped of .symtab, the allocator has no names left to probe: the file is listed as not
 * probed with the reason, the recording is incomplete, --strict exits 125.
 */
static void assert_unnamed(const char *path, const char *family)
{
	const char *opts[] = {"--strict", NULL};
	const char *cmd[] = {path, "10", NULL};
	struct json_object *rep, *np, *e;
	char reason[128];
	struct mt_out o = {0};

	snprintf(reason, sizeof(reason),
		 "contains %s, statically linked and stripped: its calls are not recorded", family);
	rep = mt_run_report(opts, cmd, 120, &o);
	ck_assert_msg(rep, "no report: memtrack exit %d: %s", o.code, o.err ? o.err : "");
	ck_assert_msg(o.code == 125, "exit %d: %s", o.code, o.err);
	np = mt_json_get(rep, "not_probed");
	ck_assert_int_eq(json_object_array_length(np), 1);
	e = json_object_array_get_idx(np, 0);
	ck_assert_str_eq(json_object_get_string(mt_json_get(e, "path")), path);
	ck_assert_str_eq(json_object_get_string(mt_json_get(e, "reason")), reason);
	ck_assert(!json_object_get_boolean(mt_json_get(rep, "complete")));
	json_object_put(rep);
	mt_out_free(&o);
}

START_TEST(jemalloc_stripped_is_not_probed)
{
	assert_unnamed(FIXTURE("je_prefixed_stripped"), "jemalloc");
}
END_TEST

START_TEST(mimalloc_stripped_is_not_probed)
{
	assert_unnamed(FIXTURE("mi_aligned_stripped"), "mimalloc");
}
END_TEST

START_TEST(snmalloc_stripped_is_not_probed)
{
	assert_unnamed(FIXTURE("sn_rust_stripped"), "snmalloc");
}
END_TEST

/*
 * rpmalloc has no message of its own: it is told by its huge page probe's text and the
 * pthread_create its crate's build exports. A static glibc program, stripped, has the same text
 * but no pthread_create to export: it stays a static executable without an allocator found.
 */
START_TEST(rpmalloc_stripped_is_not_probed)
{
	struct mt_classification c = classified(FIXTURE("nosyms"));

	ck_assert_int_eq(c.unnamed, MT_FAM_NONE);
	mt_classification_free(&c);
	assert_unnamed(FIXTURE("rp_rust_stripped"), "rpmalloc");
}
END_TEST

/*
 * Real Rust programs whose #[global_allocator] counts its own calls: jemalloc-sys inside it
 * (rust-jemalloc), or a bump allocator of the program's own that only Rust's allocator shims can
 * see (rust-bump). The program file's counts in memtrack's report are the program's own, exactly
 * (the shims and jemalloc both probed, each call counted once); the process's total is those
 * plus glibc's few calls from Rust's runtime (fixtures/README.md), nothing unprobed.
 */
static void assert_rust_exact(const char *bin, const char *family)
{
	const char *opts[] = {"--strict", NULL};
	const char *cmd[] = {bin, "1000", NULL};
	struct json_object *rep, *f, *libc_file = NULL, *files;
	long long a, r, fr, b;
	struct truth own, glibc;
	struct mt_out o = {0};

	rep = mt_run_report(opts, cmd, 120, &o);
	ck_assert_msg(rep, "no report: memtrack exit %d: %s", o.code, o.err ? o.err : "");
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_msg(sscanf(o.out, "allocations %lld reallocs %lld frees %lld bytes %lld", &a, &r,
			     &fr, &b) == 4,
		      "the program said: %s", o.out);
	own = (struct truth){a, fr, r, b};
	f = file_at(rep, bin);
	ck_assert_str_eq(json_object_get_string(mt_json_get(f, "family")), family);
	assert_counts(f, "the Rust program's own", own);
	files = mt_json_get(rep, "files");
	for (size_t i = 0; i < json_object_array_length(files); i++) {
		struct json_object *g = json_object_array_get_idx(files, i);

		if (!strcmp(json_object_get_string(mt_json_get(g, "family")), "glibc"))
			libc_file = g;
	}
	ck_assert_ptr_nonnull(libc_file);
	glibc = (struct truth){mt_json_i64(libc_file, "allocations"),
			       mt_json_i64(libc_file, "frees"), mt_json_i64(libc_file, "reallocs"),
			       mt_json_i64(libc_file, "bytes_allocated")};
	ck_assert_msg(glibc.allocations + glibc.reallocs <= 16, "glibc: %lld calls",
		      (long long)(glibc.allocations + glibc.reallocs));
	assert_counts(mt_json_get(rep, "totals"), "total",
		      (struct truth){own.allocations + glibc.allocations, own.frees + glibc.frees,
				     own.reallocs + glibc.reallocs, own.bytes + glibc.bytes});
	ck_assert_int_eq(mt_json_i64(mt_json_get(rep, "totals"), "dropped"), 0);
	ck_assert(json_object_get_boolean(mt_json_get(rep, "complete")));
	json_object_put(rep);
	mt_out_free(&o);
}

START_TEST(rust_global_allocator_exact)
{
	assert_rust_exact(RUST_JE_BIN, "jemalloc");
}
END_TEST

START_TEST(rust_own_allocator_exact)
{
	assert_rust_exact(RUST_BUMP_BIN, "rust");
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("allocators");
	TCase *tc = tcase_create("static");
	TCase *rust = tcase_create("rust");
	const char *why;

	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, jemalloc_prefixed_exact, 0, 2);
	tcase_add_loop_test(tc, mimalloc_aligned_only_exact, 0, 2);
	tcase_add_test(tc, jemalloc_stripped_is_not_probed);
	tcase_add_loop_test(tc, mimalloc_heap_exact, 0, 2);
	tcase_add_loop_test(tc, not_recorded_calls_counted, 0,
			    2 * (int)(sizeof(unrecorded_cases) / sizeof(unrecorded_cases[0])));
	tcase_add_loop_test(tc, not_recorded_nested_recorded_once, 0, 2);
	tcase_add_loop_test(tc, snmalloc_crate_exact, 0, 2);
	tcase_add_loop_test(tc, rpmalloc_crate_exact, 0, 2);
	tcase_add_test(tc, mimalloc_stripped_is_not_probed);
	tcase_add_test(tc, snmalloc_stripped_is_not_probed);
	tcase_add_test(tc, rpmalloc_stripped_is_not_probed);
	tcase_add_test(tc, snmalloc_and_rpmalloc_crates);
	suite_add_tcase(s, tc);
	tcase_set_timeout(rust, 120);
	why = mt_cargo_build(MT_SOURCE_DIR "/fixtures/rust_jemalloc", RUST_JE_DIR,
			     (const char *const[]){"rust-jemalloc", "rust-bump", NULL});
	mt_add_test_unless(rust, rust_global_allocator_exact, why);
	mt_add_test_unless(rust, rust_own_allocator_exact, why);
	suite_add_tcase(s, rust);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
