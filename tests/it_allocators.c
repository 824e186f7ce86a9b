// SPDX-License-Identifier: GPL-2.0
/*
 * Allocators linked statically under names of their own (fixtures/README.md, "Allocators linked
 * statically"): jemalloc as Rust's jemalloc-sys builds it (every name prefixed _rjem_) and
 * mimalloc reached only through its aligned entries, as Rust's mimalloc crate calls it. Every
 * call counted, with both probe placements; and the same programs stripped of .symtab, whose
 * allocator cannot be probed, reported as not probed: never a complete recording.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "lib/twin.h"

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

/*
 * memtrack run --strict PLACEMENT FIXTURE 10: every call of the program's own allocator counted
 * (its calls into glibc: none), nothing left unprobed, the file labelled with its family.
 */
static void assert_exact(int placement, const char *path, const char *family, struct truth want)
{
	const char *opts[] = {"--strict", placements[placement], NULL};
	const char *cmd[] = {path, "10", NULL};
	struct json_object *rep, *f;
	struct mt_out o = {0};

	rep = mt_run_report(opts, cmd, 120, &o);
	ck_assert_msg(rep, "no report: memtrack exit %d: %s", o.code, o.err ? o.err : "");
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_int_eq(mt_json_i64(mt_json_get(rep, "totals"), "dropped"), 0);
	assert_counts(mt_json_get(rep, "totals"), "total", want);
	f = file_at(rep, path);
	assert_counts(f, path, want);
	ck_assert_str_eq(json_object_get_string(mt_json_get(f, "family")), family);
	ck_assert(json_object_get_boolean(mt_json_get(rep, "complete")));
	ck_assert_int_eq(json_object_array_length(mt_json_get(rep, "not_probed")), 0);
	json_object_put(rep);
	mt_out_free(&o);
}

/* 10 rounds of malloc, calloc, mallocx, rallocx, realloc, aligned_alloc and four releases. */
START_TEST(jemalloc_prefixed_exact)
{
	assert_exact(_i, FIXTURE("je_prefixed"), "jemalloc", (struct truth){40, 40, 20, 90120});
}
END_TEST

/* 10 rounds of mi_malloc_aligned, mi_zalloc_aligned, mi_realloc_aligned and two mi_free. */
START_TEST(mimalloc_aligned_only_exact)
{
	assert_exact(_i, FIXTURE("mi_aligned"), "mimalloc", (struct truth){20, 20, 10, 60000});
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
	tcase_add_test(tc, mimalloc_stripped_is_not_probed);
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
