// SPDX-License-Identifier: GPL-2.0
/*
 * Leak suppressions (aggregate/suppress.h, suppress_parse.h; docs/LEAKS.md): memcheck's syntax
 * read, each malformed file refused with its file and line, the globs, the stack matching with
 * `...`, and loss records hidden and counted as suppressed (leaks.h).
 */
#include <check.h>
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/leaks.h"
#include "aggregate/suppress.h"
#include "aggregate/suppress_parse.h"
#include "lib/suite.h"

#define ALL 0x1e

static struct mt_suppressions *parse_ok(const char *text)
{
	struct mt_suppressions *ss = mt_supp_new();
	char err[512] = "";
	int ret = mt_supp_parse(ss, "t.supp", text, strlen(text), err, sizeof(err));

	ck_assert_msg(!ret, "%d: %s", ret, err);
	return ss;
}

/* The sentence a malformed text gets; it must name the file and the line. */
static void parse_bad_len(const char *text, size_t len, const char *want)
{
	struct mt_suppressions *ss = mt_supp_new();
	char err[512] = "";
	int ret = mt_supp_parse(ss, "t.supp", text, len, err, sizeof(err));

	ck_assert_int_eq(ret, -EINVAL);
	ck_assert_msg(!strcmp(err, want), "'%s', not '%s'", err, want);
	ck_assert_uint_eq(ss->n, 0);
	ck_assert_uint_eq(ss->n_files, 0);
	mt_supp_free(ss);
}

static void parse_bad(const char *text, const char *want)
{
	parse_bad_len(text, strlen(text), want);
}

/* What `valgrind --gen-suppressions=all` printed for leak_shapes list, with a comment. */
static const char generated[] = "# leak_shapes list\n"
				"{\n"
				"   <insert_a_suppression_name_here>\n"
				"   Memcheck:Leak\n"
				"   match-leak-kinds: definite\n"
				"   fun:malloc\n"
				"   fun:make_list\n"
				"   fun:main\n"
				"}\n";

START_TEST(memcheck_generated_suppression_is_read)
{
	struct mt_suppressions *ss = parse_ok(generated);
	const struct mt_supp *sp = &ss->v[0];

	ck_assert_uint_eq(ss->n, 1);
	ck_assert_str_eq(sp->name, "<insert_a_suppression_name_here>");
	ck_assert_uint_eq(sp->line, 3);
	ck_assert_uint_eq(sp->kinds, 1u << MT_LEAK_DEFINITE);
	ck_assert_uint_eq(sp->n_frames, 3);
	ck_assert_int_eq(sp->frames[1].kind, MT_SUPP_FUN);
	ck_assert_str_eq(sp->frames[1].pattern, "make_list");
	ck_assert_str_eq(ss->files[sp->file], "t.supp");
	mt_supp_free(ss);
}
END_TEST

START_TEST(kinds_frames_and_other_tools)
{
	struct mt_suppressions *ss =
	    parse_ok("{\n a\n Memcheck:Leak\n fun:x\n}\n"
		     "{\n b\n Memcheck:Cond\n fun:y\n}\n"
		     "{\n c\n Helgrind:Race\n whatever here\n}\n"
		     "{\n d\n Memcheck:Param\n write(buf)\n fun:w\n}\n"
		     "{\n e\n Memcheck,Helgrind:Leak\n"
		     " match-leak-kinds: possible, reachable\n"
		     " obj:/usr/lib/*/libc.so.?\n ...\n src:a.c:12\n}\n"
		     "{\n f\n Memcheck:Leak\n match-leak-kinds: none\n ...\n}\n");

	ck_assert_uint_eq(ss->n, 3);
	ck_assert_uint_eq(ss->skipped, 3);
	ck_assert_uint_eq(ss->v[0].kinds, ALL);
	ck_assert_str_eq(ss->v[1].name, "e");
	ck_assert_uint_eq(ss->v[1].kinds, (1u << MT_LEAK_POSSIBLE) | (1u << MT_LEAK_REACHABLE));
	ck_assert_int_eq(ss->v[1].frames[0].kind, MT_SUPP_OBJ);
	ck_assert_int_eq(ss->v[1].frames[1].kind, MT_SUPP_DOTS);
	ck_assert_int_eq(ss->v[1].frames[2].kind, MT_SUPP_SRC);
	ck_assert_str_eq(ss->v[1].frames[2].pattern, "a.c");
	ck_assert_uint_eq(ss->v[1].frames[2].line, 12);
	ck_assert_uint_eq(ss->v[2].kinds, 0);
	mt_supp_free(ss);
}
END_TEST

START_TEST(malformed_files_get_one_sentence)
{
	parse_bad("fun:malloc\n", "t.supp:1: 'fun:malloc' is outside a suppression: each starts "
				  "with a '{' line");
	parse_bad("{\n}\n", "t.supp:2: the suppression opened at line 1 has no name (its first "
			    "line)");
	parse_bad("{\n n\n Memcheck:Leak\n fun:a\n", "t.supp:4: the suppression opened at line 1 "
						     "has no '}'");
	parse_bad("{\n n\n Leak\n}\n",
		  "t.supp:3: 'Leak' is not a TOOL:KIND line (Memcheck:Leak for a leak)");
	parse_bad("{\n n\n Memcheck:Lek\n fun:a\n}\n",
		  "t.supp:3: memcheck has no suppression kind 'Lek' (a leak's is Memcheck:Leak)");
	parse_bad("{\n n\n Memcheck:Leak\n match-leak-kinds: definite,lost\n fun:a\n}\n",
		  "t.supp:4: match-leak-kinds takes definite, indirect, possible and reachable, "
		  "separated by commas, or all or none, not 'lost'");
	parse_bad("{\n n\n Memcheck:Leak\n fn:a\n}\n",
		  "t.supp:4: 'fn:a' is not a frame line: fun:NAME, obj:PATH, src:FILE[:LINE] or "
		  "... (or '}' to end the suppression)");
	parse_bad("{\n n\n Memcheck:Leak\n}\n", "t.supp:4: the suppression opened at line 1 has no "
						"frame line (fun:, obj:, src: or ...)");
	parse_bad("{\n n\n Memcheck:Leak\n fun:\n}\n",
		  "t.supp:4: 'fun:' needs a pattern after its colon");
	parse_bad("{\n n\n Memcheck:Leak\n src:a.c:x\n}\n",
		  "t.supp:4: src: takes FILE or FILE:LINE (a line number from 1), not 'a.c:x'");
	parse_bad("{\n n\n Memcheck:Leak\n fun:a\n{\n", "t.supp:5: the suppression opened at line "
							"1 has no '}'");
	parse_bad_len("\n\n{\0\n", 5, "t.supp:3: a NUL byte: a suppressions file is text");
}
END_TEST

START_TEST(too_many_frames_refused)
{
	char text[1024] = "{\n n\n Memcheck:Leak\n";

	for (int i = 0; i < 25; i++)
		strcat(text, " fun:f\n");
	strcat(text, "}\n");
	parse_bad(text,
		  "t.supp:28: more than 24 frame lines in one suppression (memcheck's limit)");
}
END_TEST

/* A file that fails leaves the set as it was; one that cannot be opened says why. */
START_TEST(failed_file_leaves_the_set)
{
	struct mt_suppressions *ss = parse_ok(generated);
	char err[512] = "";

	ck_assert_int_eq(mt_supp_parse(ss, "u.supp", "{\n x\n", 5, err, sizeof(err)), -EINVAL);
	ck_assert_uint_eq(ss->n, 1);
	ck_assert_uint_eq(ss->n_files, 1);
	ck_assert_int_eq(mt_supp_read(ss, "/nonexistent/x.supp", err, sizeof(err)), -ENOENT);
	ck_assert_str_eq(err, "/nonexistent/x.supp: cannot read the suppressions: No such file or "
			      "directory");
	mt_supp_free(ss);
}
END_TEST

START_TEST(globs_as_memcheck)
{
	ck_assert(mt_supp_glob("*", ""));
	ck_assert(mt_supp_glob("*", "anything"));
	ck_assert(mt_supp_glob("mal?oc", "malloc"));
	ck_assert(!mt_supp_glob("mal?oc", "maloc"));
	ck_assert(mt_supp_glob("_Z*alloc*", "_Znwm_alloc_x"));
	ck_assert(mt_supp_glob("/usr/lib/*/libc.so.*", "/usr/lib/x86_64-linux-gnu/libc.so.6"));
	ck_assert(!mt_supp_glob("libc.so.*", "/usr/lib/libc.so.6"));
	ck_assert(mt_supp_glob("a*b*c", "aXbYbZc"));
	ck_assert(!mt_supp_glob("a*b*c", "aXbYbZ"));
	ck_assert(mt_supp_glob("x\\*y", "x*y"));
	ck_assert(!mt_supp_glob("x\\*y", "xzy"));
	ck_assert(!mt_supp_glob("main", "mainly"));
	ck_assert(!mt_supp_glob("a\\", "a\\"));
	ck_assert(mt_supp_glob("a\\\\", "a\\"));
}
END_TEST

static struct mt_frame_info fr(const char *fn, const char *path)
{
	return (struct mt_frame_info){.function = fn, .path = path};
}

START_TEST(stacks_match_from_the_allocator)
{
	struct mt_suppressions *ss =
	    parse_ok("{\n exact\n Memcheck:Leak\n match-leak-kinds: definite\n fun:malloc\n"
		     " fun:make_list\n fun:main\n}\n"
		     "{\n dots\n Memcheck:Leak\n fun:malloc\n ...\n fun:deep\n}\n"
		     "{\n obj\n Memcheck:Leak\n match-leak-kinds: reachable\n"
		     " obj:*/libfoo.so\n fun:???\n}\n");
	struct mt_frame_info list[] = {fr("malloc", "/lib/libc.so.6"), fr("make_list", "/a"),
				       fr("main", "/a"), fr("__libc_start_main", "/lib/libc.so.6")};
	struct mt_frame_info deep[] = {fr("malloc", "/l"), fr("a", "/a"), fr("b", "/a"),
				       fr("deep", "/a"), fr("main", "/a")};
	struct mt_frame_info foo[] = {fr(NULL, "/x/libfoo.so"), fr(NULL, NULL)};

	/* A prefix of the stack, in the kinds it names. */
	ck_assert_ptr_eq(mt_supp_match(ss, MT_LEAK_DEFINITE, list, 4), &ss->v[0]);
	ck_assert_ptr_null(mt_supp_match(ss, MT_LEAK_INDIRECT, list, 4));
	/* A stack shorter than the pattern does not match it. */
	ck_assert_ptr_null(mt_supp_match(ss, MT_LEAK_DEFINITE, list, 2));
	/* `...` takes any number of frames, none included. */
	ck_assert_ptr_eq(mt_supp_match(ss, MT_LEAK_POSSIBLE, deep, 5), &ss->v[1]);
	ck_assert_ptr_eq(mt_supp_match(ss, MT_LEAK_POSSIBLE, deep + 2, 3), NULL);
	deep[1] = fr("deep", "/a");
	ck_assert_ptr_eq(mt_supp_match(ss, MT_LEAK_POSSIBLE, deep, 2), &ss->v[1]);
	/* Unknown names are "???", as memcheck writes them. */
	ck_assert_ptr_eq(mt_supp_match(ss, MT_LEAK_REACHABLE, foo, 2), &ss->v[2]);
	ck_assert_ptr_null(mt_supp_match(ss, MT_LEAK_REACHABLE, foo, 1));
	mt_supp_free(ss);
}
END_TEST

/* memcheck writes a C++ function's mangled name; the demangled one matches too. */
START_TEST(mangled_or_demangled_names)
{
	struct mt_suppressions *ss =
	    parse_ok("{\n m\n Memcheck:Leak\n fun:_Znwm\n fun:main\n}\n"
		     "{\n d\n Memcheck:Leak\n fun:operator new*\n fun:f\n}\n");
	struct mt_frame_info st[] = {
	    {.function = "operator new(unsigned long)", .linkage = "_Znwm", .path = "/l"},
	    {.function = "main", .linkage = "main", .path = "/a"}};

	ck_assert_ptr_eq(mt_supp_match(ss, MT_LEAK_DEFINITE, st, 2), &ss->v[0]);
	st[1] = (struct mt_frame_info){.function = "f", .linkage = "f"};
	ck_assert_ptr_eq(mt_supp_match(ss, MT_LEAK_DEFINITE, st, 2), &ss->v[1]);
	mt_supp_free(ss);
}
END_TEST

/* No stack: only frame lines that all are `...` match it. */
START_TEST(stackless_record_matches_dots_only)
{
	struct mt_suppressions *ss = parse_ok("{\n f\n Memcheck:Leak\n fun:*\n}\n"
					      "{\n d\n Memcheck:Leak\n ...\n ...\n}\n");

	ck_assert_ptr_eq(mt_supp_match(ss, MT_LEAK_DEFINITE, NULL, 0), &ss->v[1]);
	mt_supp_free(ss);
}
END_TEST

/* Many `...` against a long stack that never matches: the table answers at once. */
START_TEST(dots_do_not_backtrack_exponentially)
{
	char text[2048] = "{\n n\n Memcheck:Leak\n";
	struct mt_frame_info st[128];
	struct mt_suppressions *ss;

	for (int i = 0; i < 11; i++)
		strcat(text, " ...\n fun:a\n");
	strcat(text, " fun:b\n}\n");
	ss = parse_ok(text);
	for (int i = 0; i < 128; i++)
		st[i] = fr("a", "/a");
	ck_assert_ptr_null(mt_supp_match(ss, MT_LEAK_DEFINITE, st, 128));
	st[127] = fr("b", "/a");
	ck_assert_ptr_eq(mt_supp_match(ss, MT_LEAK_DEFINITE, st, 128), &ss->v[0]);
	mt_supp_free(ss);
}
END_TEST

/* Loss records hidden and counted: per image, in the tree, per suppression. */
START_TEST(leaks_suppressed_are_counted)
{
	struct mt_artifact_leak_block b[] = {
	    {.cls = MT_LEAK_DEFINITE, .size = 96, .stack = 0},
	    {.cls = MT_LEAK_INDIRECT, .size = 800, .stack = 0},
	    {.cls = MT_LEAK_INDIRECT, .size = 64, .stack = 0},
	};
	struct mt_artifact_leaks l = {.pid = 1, .n = 3, .blocks = b};
	struct mt_leaks *lk = mt_leaks_new();
	struct mt_sites *sites = mt_sites_new();
	struct mt_suppressions *ss =
	    parse_ok("{\n ind\n Memcheck:Leak\n match-leak-kinds: indirect\n ...\n}\n");
	const struct mt_leak_counts *c, *t;
	const struct mt_loss_record *v;

	ck_assert_int_eq(mt_leaks_add(lk, 0, &l), 0);
	ck_assert_int_eq(mt_leaks_end(lk), 0);
	ck_assert_int_eq(mt_leaks_suppress(lk, sites, ss), 0);
	c = mt_leaks_of(lk, 0);
	t = mt_leaks_total(lk);
	ck_assert_uint_eq(c->bytes[MT_LEAK_INDIRECT], 0);
	ck_assert_uint_eq(c->blocks[MT_LEAK_INDIRECT], 0);
	ck_assert_uint_eq(c->bytes[MT_LEAK_DEFINITE], 96);
	ck_assert_uint_eq(c->suppressed_bytes, 864);
	ck_assert_uint_eq(c->suppressed_blocks, 2);
	ck_assert_uint_eq(t->suppressed_bytes, 864);
	ck_assert_uint_eq(t->blocks[MT_LEAK_INDIRECT], 0);
	ck_assert_uint_eq(mt_leaks_records(lk, &v), 1);
	ck_assert_uint_eq(v[0].cls, MT_LEAK_DEFINITE);
	ck_assert_uint_eq(ss->v[0].records, 1);
	ck_assert_uint_eq(ss->v[0].blocks, 2);
	ck_assert_uint_eq(ss->v[0].bytes, 864);
	ck_assert_ptr_eq(mt_leaks_suppressions(lk), ss);
	mt_leaks_free(lk);
	mt_sites_free(sites);
	mt_supp_free(ss);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("suppress");
	TCase *tc = tcase_create("suppress");

	tcase_add_test(tc, memcheck_generated_suppression_is_read);
	tcase_add_test(tc, kinds_frames_and_other_tools);
	tcase_add_test(tc, malformed_files_get_one_sentence);
	tcase_add_test(tc, too_many_frames_refused);
	tcase_add_test(tc, failed_file_leaves_the_set);
	tcase_add_test(tc, globs_as_memcheck);
	tcase_add_test(tc, stacks_match_from_the_allocator);
	tcase_add_test(tc, stackless_record_matches_dots_only);
	tcase_add_test(tc, mangled_or_demangled_names);
	tcase_add_test(tc, dots_do_not_backtrack_exponentially);
	tcase_add_test(tc, leaks_suppressed_are_counted);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
