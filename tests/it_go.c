// SPDX-License-Identifier: GPL-2.0
/*
 * Go's heap (family go): a pure Go program (fixtures/go/go_heap.go) allocates 10,000 objects of
 * 64 bytes in a loop of its own and prints the runtime's count of them (MemStats). memtrack counts
 * runtime.mallocgc's calls from that loop's stack exactly, with the program's count as a second
 * truth, and never claims a free or a live byte of the collected heap. The same program stripped
 * of .symtab is reported as not probed: never a complete recording. A cgo program has both heaps
 * counted: C.malloc at glibc's malloc, exact as before, and Go's.
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

#define GO_OBJECTS 10000
#define GO_SIZE	   64

/* Whether one of the site's frames is a function whose name ends in suffix. */
static bool site_has(struct json_object *site, const char *suffix)
{
	struct json_object *frames = mt_json_get(site, "frames");
	size_t n = strlen(suffix);

	for (size_t i = 0; i < json_object_array_length(frames); i++) {
		struct json_object *f =
		    mt_json_get(json_object_array_get_idx(frames, i), "function");
		const char *name = json_object_get_string(f);

		if (json_object_is_type(f, json_type_string) && strlen(name) >= n &&
		    !strcmp(name + strlen(name) - n, suffix))
			return true;
	}
	return false;
}

/* The sites whose stacks hold a function ending in suffix, summed: allocations and bytes. */
static void sites_sum(struct json_object *rep, const char *suffix, int64_t *allocs, int64_t *bytes)
{
	struct json_object *sites = mt_json_get(rep, "sites");

	*allocs = *bytes = 0;
	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *s = json_object_array_get_idx(sites, i);

		if (!site_has(s, suffix))
			continue;
		*allocs += mt_json_i64(s, "allocations");
		*bytes += mt_json_i64(s, "bytes");
	}
}

/* The one site whose stack holds function; fails the test unless there is exactly one. */
static struct json_object *site_of(struct json_object *rep, const char *function)
{
	struct json_object *sites = mt_json_get(rep, "sites"), *found = NULL;

	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *s = json_object_array_get_idx(sites, i);

		if (!site_has(s, function))
			continue;
		ck_assert_msg(!found, "two sites hold %s", function);
		found = s;
	}
	ck_assert_msg(found, "no site holds %s", function);
	return found;
}

/* The record of family in the report's families; fails the test when there is none. */
static struct json_object *family_of(struct json_object *rep, const char *family)
{
	struct json_object *fams = mt_json_get(rep, "families");

	for (size_t i = 0; i < json_object_array_length(fams); i++) {
		struct json_object *f = json_object_array_get_idx(fams, i);

		if (!strcmp(json_object_get_string(mt_json_get(f, "family")), family))
			return f;
	}
	ck_abort_msg("no family %s in the report", family);
	return NULL;
}

/*
 * memtrack run --strict --stacks -- go_heap, with either way of linking probes: the site of
 * main.allocate counts 10,000 calls and 640,000 bytes, as many as the runtime's own MemStats
 * counted over the loop; the program's file is family go, the recording complete, no free seen
 * and nothing live (the collector frees, no call does).
 */
START_TEST(go_heap_counted)
{
	const char *opts[] = {"--strict", "--stacks", NULL};
	const char *cmd[] = {FIXTURE("go_heap"), NULL};
	struct json_object *rep, *t, *f, *site;
	long long objects = -1, size = -1, mallocs = -1, bytes = -1;
	struct mt_out o = {0};
	const char *line;

	rep = mt_run_report_with(mt_memtrack_link_path(_i), opts, cmd, 120, &o);
	ck_assert_msg(rep, "no report: memtrack exit %d: %s", o.code, o.err ? o.err : "");
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	line = o.out ? strstr(o.out, "objects ") : NULL;
	ck_assert_msg(line && sscanf(line, "objects %lld size %lld mallocs %lld bytes %lld",
				     &objects, &size, &mallocs, &bytes) == 4,
		      "the program said: %s", o.out ? o.out : "");
	ck_assert_int_eq(objects, GO_OBJECTS);
	ck_assert_int_eq(size, GO_SIZE);

	site = site_of(rep, "main.allocate");
	ck_assert_int_eq(mt_json_i64(site, "allocations"), GO_OBJECTS);
	ck_assert_int_eq(mt_json_i64(site, "bytes"), GO_OBJECTS * GO_SIZE);
	/* The runtime's own count over the loop: the same calls. */
	ck_assert_int_eq(mt_json_i64(site, "allocations"), mallocs);
	ck_assert_int_eq(mt_json_i64(site, "bytes"), bytes);
	ck_assert_int_eq(mt_json_i64(site, "live_blocks"), 0);

	t = mt_json_get(rep, "totals");
	ck_assert_int_ge(mt_json_i64(t, "allocations"), GO_OBJECTS);
	ck_assert_int_eq(mt_json_i64(t, "frees"), 0);
	ck_assert_int_eq(mt_json_i64(t, "peak_bytes"), 0);
	ck_assert_int_eq(mt_json_i64(t, "live_blocks"), 0);
	ck_assert_int_eq(mt_json_i64(t, "dropped"), 0);
	f = family_of(rep, "go");
	ck_assert_int_eq(mt_json_i64(f, "allocations"), mt_json_i64(t, "allocations"));
	ck_assert(!json_object_get_boolean(mt_json_get(f, "frees_seen")));
	ck_assert(json_object_get_boolean(mt_json_get(rep, "complete")));
	ck_assert_int_eq(json_object_array_length(mt_json_get(rep, "not_probed")), 0);
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

/* The summary names the family and says what its counts leave out. */
START_TEST(go_heap_summary_says_frees_unseen)
{
	char dir[64], art[96];
	const char *cmd[] = {MEMTRACK, "run", "-o", art, "--", FIXTURE("go_heap"), NULL};
	struct mt_out o = {0};

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	ck_assert_int_eq(mt_run(cmd, NULL, NULL, 120, &o), 0);
	unlink(art);
	rmdir(dir);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_msg(strstr(o.err, FIXTURE("go_heap") " (go, 1 probes)"), "%s", o.err);
	ck_assert_msg(strstr(o.err, "memtrack: go: Go's collected heap, counted at "
				    "runtime.mallocgc (allocations, bytes); its frees are the "
				    "collector's and not seen"),
		      "%s", o.err);
	mt_out_free(&o);
}
END_TEST

/*
 * Goroutines whose stacks grow inside mallocgc's own stack check: the call starts again from the
 * entry once the stack has grown, and is one allocation. The sites of runtime.newobject called
 * from main.rec count the program's 60,200 (with the probe counting both starts, 60,580 in two
 * runs); the GC's own allocations under main.rec (gcStart's) are other sites.
 */
START_TEST(go_stack_growth_counted_once)
{
	const char *opts[] = {"--strict", "--stacks", NULL};
	const char *cmd[] = {FIXTURE("go_grow"), NULL};
	struct json_object *rep, *sites;
	struct mt_out o = {0};
	int64_t allocs = 0;

	rep = mt_run_report(opts, cmd, 120, &o);
	ck_assert_msg(rep, "no report: memtrack exit %d: %s", o.code, o.err ? o.err : "");
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_msg(o.out && strstr(o.out, "objects 60200 size 64\n"), "the program said: %s",
		      o.out ? o.out : "");
	sites = mt_json_get(rep, "sites");
	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *s = json_object_array_get_idx(sites, i);
		struct json_object *frames = mt_json_get(s, "frames");
		const char *f1, *f2;

		if (json_object_array_length(frames) < 3)
			continue;
		f1 = json_object_get_string(
		    mt_json_get(json_object_array_get_idx(frames, 1), "function"));
		f2 = json_object_get_string(
		    mt_json_get(json_object_array_get_idx(frames, 2), "function"));
		if (f1 && f2 && !strcmp(f1, "runtime.newobject") && !strcmp(f2, "main.rec"))
			allocs += mt_json_i64(s, "allocations");
	}
	ck_assert_int_eq(allocs, 60200);
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

/*
 * A cgo program: its 1,000 C.malloc(100) counted at glibc's malloc as before (the sites of its
 * cgo wrapper, _cgo_<hash>_Cfunc__Cmalloc; the switch to the system stack may split them in
 * two), its 1,000 Go objects at mallocgc, read from the local symbol the system's linker left.
 */
START_TEST(go_cgo_both_counted)
{
	const char *opts[] = {"--strict", "--stacks", NULL};
	const char *cmd[] = {FIXTURE("go_cgo"), NULL};
	struct json_object *rep, *site;
	struct mt_out o = {0};
	int64_t allocs, bytes;

	rep = mt_run_report(opts, cmd, 120, &o);
	ck_assert_msg(rep, "no report: memtrack exit %d: %s", o.code, o.err ? o.err : "");
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_msg(o.out && strstr(o.out, "rounds 1000\n"), "the program said: %s",
		      o.out ? o.out : "");
	sites_sum(rep, "_Cfunc__Cmalloc", &allocs, &bytes);
	ck_assert_int_eq(allocs, 1000);
	ck_assert_int_eq(bytes, 1000 * 100);
	site = site_of(rep, "main.allocate");
	ck_assert_int_eq(mt_json_i64(site, "allocations"), 1000);
	ck_assert_int_eq(mt_json_i64(site, "bytes"), 1000 * GO_SIZE);
	ck_assert_int_ge(mt_json_i64(family_of(rep, "glibc"), "frees"), 1000);
	ck_assert_int_ge(mt_json_i64(family_of(rep, "go"), "allocations"), 1000);
	ck_assert(json_object_get_boolean(mt_json_get(rep, "complete")));
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

/* Stripped of .symtab: mallocgc has no name left; not probed, with the reason; --strict: 125. */
START_TEST(go_stripped_is_not_probed)
{
	const char *opts[] = {"--strict", NULL};
	const char *cmd[] = {FIXTURE("go_heap_stripped"), NULL};
	struct json_object *rep, *np, *e;
	struct mt_out o = {0};

	rep = mt_run_report(opts, cmd, 120, &o);
	ck_assert_msg(rep, "no report: memtrack exit %d: %s", o.code, o.err ? o.err : "");
	ck_assert_msg(o.code == 125, "exit %d: %s", o.code, o.err);
	np = mt_json_get(rep, "not_probed");
	ck_assert_int_eq(json_object_array_length(np), 1);
	e = json_object_array_get_idx(np, 0);
	ck_assert_str_eq(json_object_get_string(mt_json_get(e, "path")),
			 FIXTURE("go_heap_stripped"));
	ck_assert_str_eq(json_object_get_string(mt_json_get(e, "reason")),
			 "a Go runtime without symbols (.symtab stripped): its heap "
			 "(runtime.mallocgc) is not recorded");
	ck_assert(!json_object_get_boolean(mt_json_get(rep, "complete")));
	ck_assert_int_eq(mt_json_i64(mt_json_get(rep, "totals"), "allocations"), 0);
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

/*
 * The program's build info made to read as Go 1.17's or older (its inline-strings flag cleared):
 * mallocgc's size may be on the stack there, so the function is refused with the reason, and the
 * recording is not complete.
 */
START_TEST(go_older_build_info_is_refused)
{
	static const char magic[] = "\xff Go buildinf:";
	char dir[64], path[96];
	const char *opts[] = {"--strict", NULL};
	const char *cmd[] = {path, NULL};
	struct json_object *rep, *np, *e;
	struct mt_out o = {0};
	char *bin, *at;
	struct stat st;
	size_t len;
	FILE *f;

	ck_assert_int_eq(stat(FIXTURE("go_heap"), &st), 0);
	len = (size_t)st.st_size;
	bin = mt_slurp(FIXTURE("go_heap"));
	ck_assert_ptr_nonnull(bin);
	at = memmem(bin, len, magic, sizeof(magic) - 1);
	ck_assert_msg(at && at + sizeof(magic) < bin + len, "no build info in go_heap");
	ck_assert_int_eq(at[sizeof(magic) - 1], 8); /* pointer size */
	at[sizeof(magic)] &= ~0x2;
	mt_tmpdir(dir);
	snprintf(path, sizeof(path), "%s/go_old", dir);
	f = fopen(path, "w");
	ck_assert_ptr_nonnull(f);
	ck_assert_uint_eq(fwrite(bin, 1, len, f), len);
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_int_eq(chmod(path, 0755), 0);
	free(bin);

	rep = mt_run_report(opts, cmd, 120, &o);
	unlink(path);
	rmdir(dir);
	ck_assert_msg(rep, "no report: memtrack exit %d: %s", o.code, o.err ? o.err : "");
	ck_assert_msg(o.code == 125, "exit %d: %s", o.code, o.err);
	np = mt_json_get(rep, "not_probed");
	ck_assert_int_eq(json_object_array_length(np), 1);
	e = json_object_array_get_idx(np, 0);
	ck_assert_str_eq(json_object_get_string(mt_json_get(e, "function")), "runtime.mallocgc");
	ck_assert_str_eq(json_object_get_string(mt_json_get(e, "reason")),
			 "no Go 1.18+ build info: the size may not be in RAX (register ABI), so "
			 "Go's heap is not recorded");
	ck_assert_int_eq(mt_json_i64(mt_json_get(rep, "totals"), "allocations"), 0);
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("go");
	TCase *tc = tcase_create("go");

	tcase_set_timeout(tc, 240);
	tcase_add_loop_test(tc, go_heap_counted, 0, 2);
	tcase_add_test(tc, go_heap_summary_says_frees_unseen);
	tcase_add_test(tc, go_cgo_both_counted);
	tcase_add_test(tc, go_stack_growth_counted_once);
	tcase_add_test(tc, go_stripped_is_not_probed);
	tcase_add_test(tc, go_older_build_info_is_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
