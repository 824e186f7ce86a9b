// SPDX-License-Identifier: GPL-2.0
/*
 * Allocation stacks (memtrack run --stacks, docs/STACKS.md): the stacks fixture's allocations
 * come from known call chains (fixtures/README.md), and the report's folded stacks must name
 * them frame by frame with their exact counts, bytes and live bytes: through the PLT, from a
 * dlopen'd plugin, from a thread, from a signal handler, a recursion past the frame limit
 * (marked truncated), in a dynamic and a static binary.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define RECURSE_FRAMES 126 /* 128 pcs: malloc, stk_deep_leaf, then stk_recurse */

/* memtrack run -q --stacks [opt] -o DIR/a.mtk -- argv..., which must exit 0: the artifact. */
static char *record(const char *opt, const char *const *cmd, struct mt_out *o)
{
	char *art =
	    mt_record(MEMTRACK, NULL, (const char *const[]){"--stacks", opt, NULL}, cmd, 120, o);

	ck_assert_ptr_nonnull(art);
	ck_assert_msg(o->code == 0, "run failed (%d): %s", o->code, o->err);
	return art;
}

/*
 * The frames from the entry point to main: _start, __libc_start_main (exported), and glibc's
 * __libc_start_call_main, a static function named only where glibc's debug file is installed
 * (libc6-dbg; else "libc.so.6+0x..."), so the tests read it as "*".
 */
#define ENTRY  "_start;__libc_start_main;"
#define MAIN   ENTRY "*;main;"
/*
 * The paths both builds have: main calls run_common, a static function of stacks.c that gcc
 * inlines into main, a frame of its own from DWARF's inlined subroutines (docs/STACKS.md).
 */
#define COMMON MAIN "run_common;"

/* text with ENTRY, one frame and main at the start of a line made MAIN (to free). */
static char *entry_to_main(char *text)
{
	char *out = calloc(1, strlen(text) + 1), *save = NULL;

	for (char *line = strtok_r(text, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *rest = line + strlen(ENTRY), *semi = strchr(rest, ';');

		if (!strncmp(line, ENTRY, strlen(ENTRY)) && semi && !strncmp(semi, ";main;", 6)) {
			strcat(out, MAIN);
			strcat(out, semi + 6);
		} else {
			strcat(out, line);
		}
		strcat(out, "\n");
	}
	free(text);
	return out;
}

/* memtrack report --folded=metric on art: its stdout, through entry_to_main (to free). */
static char *folded(const char *art, const char *metric)
{
	char opt[32];
	const char *argv[] = {MEMTRACK, "report", opt, art, NULL};
	struct mt_out o;

	snprintf(opt, sizeof(opt), "--folded=%s", metric);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report failed: %s", o.err);
	free(o.err);
	return entry_to_main(o.out);
}

/* The frames of the one line of text that starts with prefix and ends with suffix. */
static int frames_of_line(const char *text, const char *prefix, const char *suffix)
{
	int found = 0, frames = 0;

	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n');
		size_t len = nl ? (size_t)(nl - l) : strlen(l), sl = strlen(suffix);

		if (!strncmp(l, prefix, strlen(prefix)) && len >= sl &&
		    !strncmp(l + len - sl, suffix, sl)) {
			found++;
			frames = 1;
			for (size_t i = 0; i < len; i++)
				frames += l[i] == ';';
		}
		l = nl ? nl + 1 : NULL;
	}
	ck_assert_msg(found == 1, "%d lines '%s...%s' in\n%.4000s", found, prefix, suffix, text);
	return frames;
}

/* The lines of text whose allocator's caller (the last frame) is one of the fixture's. */
static char *fixture_lines(const char *text)
{
	char *copy = strdup(text), *out = calloc(1, strlen(text) + 1), *save = NULL;

	for (char *line = strtok_r(copy, "\n", &save); line; line = strtok_r(NULL, "\n", &save)) {
		char *last = strrchr(line, ';');

		if (strncmp(last ? last + 1 : line, "stk_", 4))
			continue;
		strcat(out, line);
		strcat(out, "\n");
	}
	free(copy);
	return out;
}

static void expect_line(const char *lines, const char *want)
{
	char w[8192];

	const char *at;

	/* A whole line: at the start, or after a newline. */
	snprintf(w, sizeof(w), "\n%s\n", want);
	at = strstr(lines, w + 1);
	ck_assert_msg(at && (at == lines || strstr(lines, w)), "no line\n%.2000s\nin\n%.4000s",
		      want, lines);
}

/* The recursion's stack: cut at the frame limit, so marked truncated and without main. */
static void expect_recursion(const char *lines, unsigned long weight)
{
	char want[8192] = "[truncated];";

	for (int i = 0; i < RECURSE_FRAMES; i++)
		strcat(want, "stk_recurse;");
	snprintf(want + strlen(want), sizeof(want) - strlen(want), "stk_deep_leaf %lu", weight);
	expect_line(lines, want);
}

/* fixture_lines of the folded stacks by metric (to free). */
static char *fixture_folded(const char *art, const char *metric)
{
	char *all = folded(art, metric), *l = fixture_lines(all);

	free(all);
	return l;
}

/* The paths both builds have, by allocations, bytes and bytes never freed. */
static void expect_common(const char *art, int lines_expected)
{
	char *l = fixture_folded(art, "allocations"), *b = fixture_folded(art, "bytes");
	char *live = fixture_folded(art, "live");

	if (mt_count_lines(l, "") != lines_expected) {
		char *all = folded(art, "allocations");

		ck_abort_msg("%d of the fixture's lines, not %d, in:\n%.6000s",
			     mt_count_lines(l, ""), lines_expected, all);
	}
	expect_line(l, COMMON "stk_path_a;stk_leaf_malloc 3");
	expect_line(l, COMMON "stk_path_b;stk_mid_b;stk_leaf_calloc 2");
	expect_recursion(l, 1);
	/*
	 * A thread's stack ends complete (no marker) at glibc's clone3 and start_thread (named
	 * where glibc's debug file is installed).
	 */
	ck_assert_int_eq(frames_of_line(l, "", ";stk_thread_main;stk_thread_leaf 6"), 4);
	ck_assert_int_eq(mt_count_lines(l, "["), 1);
	/*
	 * Through the signal frame into the interrupted code, down to main: raise, then glibc's
	 * pthread_kill, where the signal struck, and the signal trampoline __restore_rt.
	 */
	ck_assert_int_eq(frames_of_line(l, COMMON "stk_raise;raise;", ";stk_on_signal 1"), 10);

	expect_line(b, COMMON "stk_path_a;stk_leaf_malloc 48");
	expect_line(b, COMMON "stk_path_b;stk_mid_b;stk_leaf_calloc 48");
	expect_recursion(b, 64);
	ck_assert_int_eq(frames_of_line(b, "", ";stk_thread_main;stk_thread_leaf 288"), 4);
	ck_assert_int_eq(frames_of_line(b, COMMON "stk_raise;raise;", ";stk_on_signal 72"), 10);
	/* Only the calloc'd blocks are never freed. */
	ck_assert_str_eq(live, COMMON "stk_path_b;stk_mid_b;stk_leaf_calloc 48\n");
	free(l);
	free(b);
	free(live);
}

START_TEST(dynamic_binary_call_chains)
{
	const char *cmd[] = {FIXTURE("stacks"), NULL};
	struct mt_out o;
	char *art = record(NULL, cmd, &o), *l, *b;

	expect_common(art, 7);
	l = fixture_folded(art, "allocations");
	/* Through the PLT into the fixture's library: the PLT stub is a jump, no frame. */
	expect_line(l, MAIN "stk_call_lib;stk_lib_alloc 4");
	/* The plugin's function, mapped after the start, called through a pointer. */
	expect_line(l, MAIN "stk_call_plugin;stk_plugin_alloc 5");
	b = fixture_folded(art, "bytes");
	expect_line(b, MAIN "stk_call_lib;stk_lib_alloc 128");
	expect_line(b, MAIN "stk_call_plugin;stk_plugin_alloc 200");
	free(l);
	free(b);
	free(art);
	mt_out_free(&o);
}
END_TEST

/* The same program with frame pointers: the tables, not the frame pointers, unwind it alike. */
START_TEST(frame_pointer_build_call_chains)
{
	const char *cmd[] = {FIXTURE("stacks_fp"), NULL};
	struct mt_out o;
	char *art = record(NULL, cmd, &o);

	expect_common(art, 7);
	free(art);
	mt_out_free(&o);
}
END_TEST

START_TEST(static_binary_call_chains)
{
	const char *cmd[] = {FIXTURE("stacks_static"), NULL};
	struct mt_out o;
	char *art = record(NULL, cmd, &o);

	expect_common(art, 5);
	free(art);
	mt_out_free(&o);
}
END_TEST

/* Sum of the weights of the lines of text that contain needle. */
static unsigned long weight_of(const char *text, const char *needle)
{
	unsigned long sum = 0;

	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n'), *sp;
		char *line = strndup(l, nl ? (size_t)(nl - l) : strlen(l));

		sp = strrchr(line, ' ');
		if (strstr(line, needle) && sp)
			sum += strtoul(sp + 1, NULL, 10);
		free(line);
		l = nl ? nl + 1 : NULL;
	}
	return sum;
}

/*
 * operator new from known functions; a std::vector grown from one (libstdc++'s frames between).
 * libstdc++'s operator new forwards to malloc, which is the probed call: operator new is the
 * allocator's caller. Names are demangled, with their parameters.
 */
START_TEST(cxx_call_chains)
{
	const char *cmd[] = {FIXTURE("stacks_cxx"), NULL};
	struct mt_out o;
	char *art = record(NULL, cmd, &o), *l = folded(art, "allocations");

	expect_line(l, MAIN "stk_cxx_path();stk_new_leaf();operator new(unsigned long) 3");
	/* Capacity 1, 2, 4 ... 128 for 100 push_backs. */
	ck_assert_uint_eq(weight_of(l, MAIN "stk_vector_grow();"), 8);
	free(l);
	l = folded(art, "bytes");
	expect_line(l, MAIN "stk_cxx_path();stk_new_leaf();operator new(unsigned long) 120");
	ck_assert_uint_eq(weight_of(l, MAIN "stk_vector_grow();"),
			  8 * (1 + 2 + 4 + 8 + 16 + 32 + 64 + 128));
	free(l);
	free(art);
	mt_out_free(&o);
}
END_TEST

/*
 * 100 threads allocate while their siblings make their malloc arenas (mmap, munmap, mprotect):
 * the kernel's mapping lookup only try-locks the address space and fails then, so frames were
 * placed from the process's cached text ranges. Every allocation keeps its whole stack: none
 * cut, all 40,000 at the one site, down to glibc's clone3.
 */
START_TEST(threads_keep_stacks_while_the_address_space_is_busy)
{
	const char *cmd[] = {FIXTURE("stk_threads"), "100", "400", NULL};
	struct mt_out o;
	char *art = record(NULL, cmd, &o), *l = folded(art, "allocations");

	ck_assert_msg(!strstr(l, "[cut]"), "stacks cut:\n%.3000s", l);
	/* glibc's clone3 and start_thread (named where its debug file is installed), then ours. */
	ck_assert_int_eq(frames_of_line(l, "", ";stk_thr_work;stk_thr_leaf 40000"), 4);
	free(l);
	free(art);
	mt_out_free(&o);
}
END_TEST

/* Whether a site of report --json has these functions as its first frames, innermost first. */
static bool site_starts_with(struct json_object *site, const char *const *fns, size_t n)
{
	struct json_object *frames = mt_json_get(site, "frames");

	if (json_object_array_length(frames) < n)
		return false;
	for (size_t k = 0; k < n; k++) {
		struct json_object *f = json_object_array_get_idx(frames, k);
		const char *fn = json_object_get_string(mt_json_get(f, "function"));

		if (!fn || strcmp(fn, fns[k]))
			return false;
	}
	return true;
}

/*
 * The JSON of the same sites (its sites are written one at a time): the path to stk_leaf_malloc
 * once, with its counts and the fixture's file, and the recursion's 128 frames, truncated.
 */
static void expect_json_sites(const char *art)
{
	static const char *const leaf[] = {"malloc", "stk_leaf_malloc", "stk_path_a", "run_common",
					   "main"};
	const char *argv[] = {MEMTRACK, "report", "--json", art, NULL};
	struct json_object *doc, *sites, *found = NULL, *deep = NULL;
	const char *file;
	struct mt_out r;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &r), 0);
	ck_assert_msg(r.code == 0, "report --json failed: %s", r.err);
	doc = json_tokener_parse(r.out);
	ck_assert_msg(doc != NULL, "not JSON: %.3000s", r.out);
	sites = mt_json_get(doc, "sites");
	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *s = json_object_array_get_idx(sites, i);

		if (site_starts_with(s, leaf, 5)) {
			ck_assert_msg(!found, "two sites of stk_leaf_malloc");
			found = s;
		}
		if (!strcmp(json_object_get_string(mt_json_get(s, "stack")), "truncated")) {
			ck_assert_msg(!deep, "two truncated sites");
			deep = s;
		}
	}
	ck_assert_msg(found, "no site of stk_leaf_malloc in %.3000s", r.out);
	ck_assert_int_eq(mt_json_i64(found, "allocations"), 3);
	ck_assert_int_eq(mt_json_i64(found, "bytes"), 48);
	ck_assert_str_eq(json_object_get_string(mt_json_get(found, "stack")), "complete");
	file = json_object_get_string(
	    mt_json_get(json_object_array_get_idx(mt_json_get(found, "frames"), 1), "file"));
	ck_assert_msg(file && strlen(file) > 16 &&
			  !strcmp(file + strlen(file) - 16, "/fixtures/stacks"),
		      "stk_leaf_malloc in %s", file);
	ck_assert_msg(deep, "no truncated site");
	ck_assert_int_eq(json_object_array_length(mt_json_get(deep, "frames")), RECURSE_FRAMES + 2);
	ck_assert_int_eq(mt_json_i64(deep, "bytes"), 64);
	json_object_put(doc);
	mt_out_free(&r);
}

/* Text without the frames' source lines (" at FILE:LINE", source_lines_name_the_calls). */
static bool is_line_suffix(const char *s)
{
	const char *end = strchrnul(s, '\n'), *colon;

	if (strncmp(s, " at ", 4))
		return false;
	s += 4;
	colon = memrchr(s, ':', (size_t)(end - s));
	if (!colon || colon + 1 == end || memchr(s, ' ', (size_t)(end - s)))
		return false;
	return strspn(colon + 1, "0123456789") == (size_t)(end - colon - 1);
}

static void strip_lines(char *s)
{
	char *w = s;

	while (*s) {
		if (is_line_suffix(s))
			s = strchrnul(s, '\n');
		else
			*w++ = *s++;
	}
	*w = '\0';
}

/* One stack per call site, whatever the number of calls: the kernel stores it once. */
START_TEST(report_lists_sites_with_frames)
{
	const char *cmd[] = {FIXTURE("stacks"), NULL};
	struct mt_out o, r;
	char *art = record(NULL, cmd, &o);
	const char *argv[] = {MEMTRACK, "report", "--top", "0", art, NULL};

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &r), 0);
	ck_assert_int_eq(r.code, 0);
	strip_lines(r.out);
	ck_assert_msg(strstr(r.out, " 3 allocations, 48 B; live at exit: 0 blocks, 0 B; "
				    "at the peak: 0 blocks, 0 B\n"
				    "      malloc\n"
				    "      stk_leaf_malloc\n"
				    "      stk_path_a\n"
				    "      run_common (inlined)\n"
				    "      main\n"),
		      "%.3000s", r.out);
	/* stk_mid_b's loop of two calls, unrolled: two call sites, the same functions. */
	ck_assert_int_eq(mt_count_lines(r.out,
					" 1 allocations, 24 B; live at exit: 1 blocks, 24 B; "
					"at the peak: 1 blocks, 24 B"),
			 2);
	ck_assert_msg(strstr(r.out, " 1 allocations, 64 B; live at exit: 0 blocks, 0 B; at the "
				    "peak: 0 blocks, 0 B (truncated: "),
		      "%.3000s", r.out);
	expect_json_sites(art);
	mt_out_free(&r);
	free(art);
	mt_out_free(&o);
}
END_TEST

/* Line n (from 1) of the fixture source path (relative to the repository), to free. */
static char *source_line(const char *path, long n)
{
	char full[512], *text, *at, *line;

	snprintf(full, sizeof(full), "%s/%s", MT_SOURCE_DIR, path);
	text = mt_slurp(full);
	ck_assert_msg(text, "cannot read %s", full);
	at = text;
	for (long i = 1; i < n && at; i++)
		at = strchr(at, '\n') ? strchr(at, '\n') + 1 : NULL;
	ck_assert_msg(at, "%s has no line %ld", path, n);
	line = strndup(at, strcspn(at, "\n"));
	free(text);
	return line;
}

/*
 * Every frame names its source file and line, from the DWARF line tables: the fixture's own
 * (built with -g), and glibc's debug file (libc6-dbg, found by build id) for malloc. The line
 * of a caller's frame is its call: the fixture's source line there names the frame it calls.
 * The text report says "FUNCTION at FILE:LINE".
 */
START_TEST(source_lines_name_the_calls)
{
	const char *cmd[] = {FIXTURE("stacks"), NULL};
	struct mt_out o, r;
	char *art = record(NULL, cmd, &o);
	const char *json[] = {MEMTRACK, "report", "--json", art, NULL};
	const char *text[] = {MEMTRACK, "report", "--top", "0", art, NULL};
	struct json_object *doc, *sites;
	int checked = 0, in_libc = 0;

	ck_assert_int_eq(mt_run(json, NULL, NULL, 60, &r), 0);
	ck_assert_int_eq(r.code, 0);
	doc = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(doc);
	sites = mt_json_get(doc, "sites");
	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *fr = mt_json_get(json_object_array_get_idx(sites, i), "frames");

		for (size_t k = 1; k < json_object_array_length(fr); k++) {
			struct json_object *f = json_object_array_get_idx(fr, k);
			struct json_object *callee = json_object_array_get_idx(fr, k - 1);
			const char *src = json_object_get_string(mt_json_get(f, "source"));
			const char *fn = json_object_get_string(mt_json_get(callee, "function"));
			char *line;

			if (k == 1 && !strcmp(fn ? fn : "", "malloc") &&
			    !strcmp(json_object_get_string(mt_json_get(callee, "source")) ?: "",
				    "malloc/malloc.c"))
				in_libc++;
			/* A direct call inside the fixture: its line names the callee. */
			if (!src || strcmp(src, "fixtures/stacks/stacks.c") || !fn ||
			    strcmp(json_object_get_string(mt_json_get(callee, "source")) ?: "",
				   src))
				continue;
			line = source_line(src, mt_json_i64(f, "line"));
			ck_assert_msg(strstr(line, fn), "%s:%lld is '%s', which does not call %s",
				      src, (long long)mt_json_i64(f, "line"), line, fn);
			free(line);
			checked++;
		}
	}
	ck_assert_int_gt(checked, 10);
	ck_assert_msg(in_libc > 0, "no malloc frame at malloc/malloc.c (libc6-dbg)");
	json_object_put(doc);
	mt_out_free(&r);
	ck_assert_int_eq(mt_run(text, NULL, NULL, 60, &r), 0);
	ck_assert_msg(strstr(r.out, "      stk_leaf_malloc at fixtures/stacks/stacks.c:"),
		      "%.3000s", r.out);
	ck_assert_msg(strstr(r.out, "      malloc at malloc/malloc.c:"), "%.3000s", r.out);
	mt_out_free(&r);
	free(art);
	mt_out_free(&o);
}
END_TEST

/* report --callers/--callees FUNC on the stacks fixture (fixtures/README.md's call chains). */
static char *calls(const char *art, const char *opt, const char *fn, int want_code)
{
	const char *argv[] = {MEMTRACK, "report", "--top", "0", opt, fn, art, NULL};
	struct mt_out r;
	char *out;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &r), 0);
	ck_assert_msg(r.code == want_code, "%s %s: %d: %s", opt, fn, r.code, r.err);
	out = want_code ? strdup(r.err) : strdup(r.out);
	mt_out_free(&r);
	return out;
}

/*
 * Who calls a function and what it calls, over the sites: stk_mid_b's two call sites in
 * stk_path_b merge into one callee row of two sites; malloc's callers include the fixture's
 * leaves; a function no site passes through is one sentence and status 1, as grep says so.
 */
START_TEST(callers_and_callees)
{
	const char *cmd[] = {FIXTURE("stacks"), NULL};
	struct mt_out o;
	char *art = record(NULL, cmd, &o), *s;

	s = calls(art, "--callees", "stk_path_b", 0);
	ck_assert_str_eq(
	    s, "Callees of stk_path_b (1, by bytes allocated)\n"
	       "  100.0%  2 allocations, 48 B; live at exit 48 B; 0 temporary; 2 sites"
	       "  stk_mid_b\n"
	       "  in all  2 allocations, 48 B; live at exit 48 B; 0 temporary; 2 sites\n");
	free(s);
	s = calls(art, "--callers", "stk_leaf_malloc", 0);
	ck_assert_msg(strstr(s, "  100.0%  3 allocations, 48 B; live at exit 0 B; 3 temporary; "
				"1 site  stk_path_a\n"),
		      "%s", s);
	free(s);
	s = calls(art, "--callers", "malloc", 0);
	ck_assert_msg(strstr(s, "3 allocations, 48 B; live at exit 0 B; 3 temporary; 1 site  "
				"stk_leaf_malloc\n"),
		      "%s", s);
	ck_assert_msg(strstr(s, "4 allocations, 128 B; live at exit 0 B; 4 temporary; 1 site  "
				"stk_lib_alloc\n"),
		      "%s", s);
	free(s);
	/* The allocator itself: its callee is "[self]". */
	s = calls(art, "--callees", "calloc", 0);
	ck_assert_msg(strstr(s, "  [self]\n"), "%s", s);
	free(s);
	s = calls(art, "--callers", "no_such_function", 1);
	ck_assert_str_eq(s, "memtrack: no allocation site passes through 'no_such_function'\n");
	free(s);
	free(art);
	mt_out_free(&o);
}
END_TEST

/* memtrack in a pid namespace of its own, under a pty, as users run it: the same stacks. */
START_TEST(in_a_pid_namespace_under_a_pty)
{
	char dir[64], art[128], line[512];
	const char *argv[] = {"unshare", "--pid",     "--fork", "--mount-proc", "script", "-qec",
			      line,	 "/dev/null", NULL};
	struct mt_out o;
	char *l;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(line, sizeof(line), "%s run -q --stacks -o %s -- %s", MEMTRACK, art,
		 FIXTURE("stacks"));
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 0, "run failed (%d): %s %s", o.code, o.out, o.err);
	l = fixture_folded(art, "allocations");
	expect_line(l, COMMON "stk_path_b;stk_mid_b;stk_leaf_calloc 2");
	expect_line(l, MAIN "stk_call_plugin;stk_plugin_alloc 5");
	expect_recursion(l, 1);
	free(l);
	mt_out_free(&o);
}
END_TEST

/*
 * A frame of 1 MiB: its CFA offset needs the table's wide row (bpf/unwind_row.h), and the stack
 * goes on through it to main (before the wide row it ended there, cut).
 */
START_TEST(one_mib_frame_unwinds_to_main)
{
	const char *cmd[] = {FIXTURE("stk_bigframe"), NULL};
	struct mt_out o;
	char *art = record(NULL, cmd, &o), *l = fixture_folded(art, "allocations");
	char *b = fixture_folded(art, "live");

	ck_assert_str_eq(l, MAIN "stk_big_frame;stk_big_leaf 1\n");
	ck_assert_str_eq(b, MAIN "stk_big_frame;stk_big_leaf 1000\n");
	free(l);
	free(b);
	free(art);
	mt_out_free(&o);
}
END_TEST

/* A file without call frame information: unwound by frame pointer, and -v says so. */
START_TEST(file_without_cfi_says_so)
{
	const char *cmd[] = {"env", "LD_PRELOAD=" FIXTURE("libnocfi.so"), FIXTURE("stacks"), NULL};
	struct mt_out o;
	char *art = record("-v", cmd, &o);

	ck_assert_msg(strstr(o.err, "libnocfi.so: no call frame information (.eh_frame, "
				    ".debug_frame): its frames are unwound by frame pointer\n"),
		      "%s", o.err);
	free(art);
	mt_out_free(&o);
}
END_TEST

/* With --no-stacks there are none, and the summary, the text report and --folded say how to get
 * them. */
START_TEST(no_stacks_with_no_stacks)
{
	char dir[64], art[128];
	const char *run[] = {MEMTRACK, "run", "--no-stacks",	 "-o",
			     art,      "--",  FIXTURE("stacks"), NULL};
	const char *rep[] = {MEMTRACK, "report", "--folded", art, NULL};
	const char *text[] = {MEMTRACK, "report", art, NULL};
	struct mt_out o;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	ck_assert_int_eq(mt_run(run, NULL, NULL, 120, &o), 0);
	ck_assert_int_eq(o.code, 0);
	ck_assert_msg(strstr(o.err,
			     "memtrack: where: no call stacks recorded (run with --stacks to "
			     "see the allocating sites)\n"),
		      "%s", o.err);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 1);
	ck_assert_str_eq(o.out, "");
	ck_assert_msg(strstr(o.err, "the run recorded no stacks (memtrack run --stacks records "
				    "them)\n"),
		      "%s", o.err);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(text, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 0);
	ck_assert_msg(strstr(o.out,
			     "\nTop allocation sites: none, the run recorded no call stacks "
			     "(memtrack run --stacks -- CMD records them; docs/STACKS.md)\n"),
		      "%s", o.out);
	ck_assert_int_eq(mt_count_lines(o.out, "allocation sites"), 1);
	mt_out_free(&o);
}
END_TEST

/* memtrack run -q -o ARTIFACT -- cmd, with the default stacks (the callers): the artifact. */
static char *record_callers(const char *const *cmd, struct mt_out *o)
{
	char *art = mt_record(MEMTRACK, NULL, NULL, cmd, 120, o);

	ck_assert_ptr_nonnull(art);
	return art;
}

/*
 * A program with operator new linked in and exported (as gcc's cc1): a plain run's stack goes
 * through operator new to the program's function that called it and ends there, as through
 * libstdc++.so; not on through the program's frames to main.
 */
START_TEST(plain_run_stops_at_operator_new_callers_in_the_program)
{
	const char *cmd[] = {FIXTURE("stacks_cxx_linked"), NULL};
	struct mt_out o;
	char *art = record_callers(cmd, &o), *l;

	ck_assert_msg(o.code == 0, "run failed (%d): %s", o.code, o.err);
	l = folded(art, "allocations");
	expect_line(l, "[truncated];stk_new_leaf();operator new(unsigned long) 3");
	/* The vector's growth: its caller is the program's _M_realloc_insert, inlines shown. */
	ck_assert_msg(mt_count_lines(l, "[truncated];void std::vector<long") == 1,
		      "the vector's growth does not start at its caller:\n%s", l);
	ck_assert_msg(!strstr(l, "main;"), "a stack went on past the caller:\n%s", l);
	free(l);
	free(art);
	mt_out_free(&o);
}
END_TEST

/*
 * A plain run keeps each allocation's caller per CPU (bpf/memtrack_emit.bpf.h): every call site
 * of the fixture keeps its own count, through a library's PLT, a dlopen'd plugin, a thread and a
 * signal handler; and a plugin loaded where another was unloaded, calling malloc from the same
 * return address, is its own caller, not the one kept for the first.
 */
START_TEST(plain_run_records_each_caller)
{
	const char *stacks[] = {FIXTURE("stacks"), NULL};
	const char *seq[] = {FIXTURE("dlopen_seq"), MT_BUILD_DIR "/fixtures", "50", NULL};
	char *art, *l;
	struct mt_out o;

	art = record_callers(stacks, &o);
	ck_assert_msg(o.code == 0, "run failed (%d): %s", o.code, o.err);
	l = fixture_folded(art, "allocations");
	ck_assert_msg(mt_count_lines(l, "") == 7, "not 7 lines of the fixture's:\n%s", l);
	expect_line(l, "[truncated];stk_leaf_malloc 3");
	expect_line(l, "[truncated];stk_leaf_calloc 2");
	expect_line(l, "[truncated];stk_deep_leaf 1");
	expect_line(l, "[truncated];stk_thread_leaf 6");
	expect_line(l, "[truncated];stk_on_signal 1");
	expect_line(l, "[truncated];stk_lib_alloc 4");
	expect_line(l, "[truncated];stk_plugin_alloc 5");
	free(l);
	free(art);
	mt_out_free(&o);

	art = record_callers(seq, &o);
	ck_assert_msg(o.code != 4, "plugin_race_1.so was not mapped where plugin_race_0.so was");
	ck_assert_msg(o.code == 0, "run failed (%d): %s", o.code, o.err);
	mt_out_free(&o);
	{
		const char *rep[] = {MEMTRACK, "report", art, NULL};

		ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 0, "report failed: %s", o.err);
		/* Two files, two sites of 50 calls each: not one of 100 named after the first. */
		ck_assert_msg(mt_count_lines(o.out, "      plugin_run at ") == 2 &&
				  mt_count_lines(o.out, " 50 allocations, ") == 2,
			      "not two sites of 50 calls in plugin_run:\n%.4000s", o.out);
	}
	free(art);
	mt_out_free(&o);
}
END_TEST

START_TEST(bad_options)
{
	const char *run[] = {MEMTRACK, "run", "--stacks=dwarf", "--", "true", NULL};
	const char *rep[] = {MEMTRACK, "report", "--folded=leaks", "x.mtk", NULL};
	const char *both[] = {MEMTRACK, "report", "--folded", "--json", "x.mtk", NULL};
	const char *by[] = {MEMTRACK, "report", "--sites-by", "count", "x.mtk", NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(run, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 2);
	ck_assert_msg(strstr(o.err, "--stacks takes none or kernel, not 'dwarf'"), "%s", o.err);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 2);
	ck_assert_msg(
	    strstr(
		o.err,
		"--folded takes allocations, bytes, live, peak, leaked or temporary, not 'leaks'"),
	    "%s", o.err);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(by, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 2);
	ck_assert_msg(
	    strstr(o.err,
		   "--sites-by takes allocations, bytes, live, peak or temporary, not 'count'"),
	    "%s", o.err);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(both, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 2);
	mt_out_free(&o);
}
END_TEST

/* tools/dhat-compare --json on a fixture: its exit status, and its document (to put). */
static struct json_object *dhat_compare(const char *fixture, int *code)
{
	const char *argv[] = {MT_SOURCE_DIR "/tools/dhat-compare",
			      "--memtrack",
			      MEMTRACK,
			      "--json",
			      "--",
			      fixture,
			      NULL};
	struct json_object *res;
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 300, &o), 0);
	*code = o.code;
	res = json_tokener_parse(o.out);
	ck_assert_msg(res != NULL, "%s: no JSON from dhat-compare: %s", fixture, o.err);
	mt_out_free(&o);
	return res;
}

/* The site whose innermost caller is first, and, when given, whose next one is second. */
static struct json_object *site_of(struct json_object *res, const char *first, const char *second)
{
	struct json_object *sites = mt_json_get(res, "sites"), *found = NULL;

	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *s = json_object_array_get_idx(sites, i);
		struct json_object *st = mt_json_get(s, "stack");

		if (strcmp(json_object_get_string(json_object_array_get_idx(st, 0)), first) ||
		    (second &&
		     (json_object_array_length(st) < 2 ||
		      strcmp(json_object_get_string(json_object_array_get_idx(st, 1)), second))))
			continue;
		ck_assert_msg(!found, "two sites at %s", first);
		found = s;
	}
	ck_assert_msg(found != NULL, "no site at %s", first);
	return found;
}

/* Which sides have the site, and its allocations on each (-1: absent). */
static void expect_site(struct json_object *site, int64_t dhat, int64_t memtrack)
{
	struct json_object *d = mt_json_get(site, "dhat"), *m = mt_json_get(site, "memtrack");

	ck_assert_int_eq(d ? mt_json_i64(d, "allocations") : -1, dhat);
	ck_assert_int_eq(m ? mt_json_i64(m, "allocations") : -1, memtrack);
}

/*
 * Valgrind's DHAT on the C++ fixture (docs/STACKS.md, "Compared with DHAT"): the same sites by
 * function names, inlined ones included (--read-inline-info=yes), with the same allocations,
 * bytes and blocks live at the end, every one.
 */
START_TEST(dhat_agrees_on_every_site)
{
	int code;
	struct json_object *res = dhat_compare(FIXTURE("stacks_cxx"), &code);

	ck_assert_int_eq(code, 0);
	ck_assert(json_object_get_boolean(mt_json_get(res, "exact")));
	ck_assert_int_eq(json_object_array_length(mt_json_get(res, "sites")), 3);
	expect_site(site_of(res, "stk_new_leaf()", "stk_cxx_path()"), 3, 3);
	/*
	 * The vector's growth: operator new from libstdc++'s allocate, inlined in allocate, in
	 * _M_allocate, in _M_realloc_insert, called from push_back, inlined in stk_vector_grow;
	 * Valgrind names an inlined function by its DWARF name, as dhat-compare does memtrack's.
	 */
	expect_site(site_of(res, "allocate", "allocate"), 8, 8);
	ck_assert_int_eq(mt_json_i64(mt_json_get(mt_json_get(res, "totals"), "dhat"), "bytes"),
			 74864);
	json_object_put(res);
}
END_TEST

/*
 * On the C fixture, DHAT and memtrack differ in two names only, with the same counts: the
 * plugin's function, which DHAT cannot name once the plugin is dlclose'd, and the signal
 * trampoline, which DHAT looks up one byte before it, outside any function.
 */
START_TEST(dhat_differs_only_in_two_names)
{
	int code;
	struct json_object *res = dhat_compare(FIXTURE("stacks"), &code), *sites;
	struct json_object *tot = mt_json_get(res, "totals");
	size_t exact = 0;

	ck_assert_int_eq(code, 1);
	expect_site(site_of(res, "[?]", "stk_call_plugin"), 5, -1);
	expect_site(site_of(res, "stk_plugin_alloc", "stk_call_plugin"), -1, 5);
	expect_site(site_of(res, "stk_on_signal", "[libc.so.6]"), 1, -1);
	expect_site(site_of(res, "stk_on_signal", "__restore_rt"), -1, 1);
	expect_site(site_of(res, "stk_leaf_calloc", NULL), 2, 2);
	sites = mt_json_get(res, "sites");
	for (size_t i = 0; i < json_object_array_length(sites); i++)
		exact += json_object_get_boolean(
		    mt_json_get(json_object_array_get_idx(sites, i), "exact"));
	ck_assert_int_eq(exact + 4, json_object_array_length(sites));
	ck_assert_int_ge(exact, 10);
	for (const char *const *k =
		 (const char *const[]){"allocations", "bytes", "live_blocks", "live_bytes", NULL};
	     *k; k++)
		ck_assert_int_eq(mt_json_i64(mt_json_get(tot, "dhat"), *k),
				 mt_json_i64(mt_json_get(tot, "memtrack"), *k));
	json_object_put(res);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("stacks");
	TCase *tc = tcase_create("stacks");
	TCase *tools = tcase_create("tools");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, dynamic_binary_call_chains);
	tcase_add_test(tc, static_binary_call_chains);
	tcase_add_test(tc, frame_pointer_build_call_chains);
	tcase_add_test(tc, cxx_call_chains);
	tcase_add_test(tc, threads_keep_stacks_while_the_address_space_is_busy);
	tcase_add_test(tc, report_lists_sites_with_frames);
	tcase_add_test(tc, source_lines_name_the_calls);
	tcase_add_test(tc, callers_and_callees);
	tcase_add_test(tc, plain_run_stops_at_operator_new_callers_in_the_program);
	tcase_add_test(tc, in_a_pid_namespace_under_a_pty);
	tcase_add_test(tc, file_without_cfi_says_so);
	tcase_add_test(tc, one_mib_frame_unwinds_to_main);
	tcase_add_test(tc, no_stacks_with_no_stacks);
	tcase_add_test(tc, plain_run_records_each_caller);
	tcase_add_test(tc, bad_options);
	suite_add_tcase(s, tc);

	/* Valgrind, which the kernel matrix's guest lacks. */
	tcase_set_tags(tools, "tools");
	tcase_set_timeout(tools, 600);
	mt_tcase_add_tool_test(tools, dhat_agrees_on_every_site, "valgrind");
	mt_tcase_add_tool_test(tools, dhat_differs_only_in_two_names, "valgrind");
	suite_add_tcase(s, tools);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
