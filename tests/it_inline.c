// SPDX-License-Identifier: GPL-2.0
/*
 * Functions the compiler inlined, named as frames of their own (docs/STACKS.md, "Inlined
 * functions"): a plain `memtrack run` (stacks are on by default) and `memtrack run --stacks` of
 * the inline fixtures (fixtures/README.md), then
 * `memtrack report` and its other outputs name the inlined allocating function at its own source
 * line and each caller at the line that calls the one inside it, the C++ user's line of
 * stk_inline_cxx.cc beside libstdc++'s header line.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define C_SOURCE   "fixtures/stacks/stk_inline.c"
#define CXX_SOURCE "fixtures/stacks/stk_inline_cxx.cc"

/* The line of the fixture's source that holds needle (the first one): the truth of its line. */
static unsigned int line_of(const char *source, const char *needle)
{
	char path[4096], *text;
	unsigned int line = 1;
	const char *at;

	snprintf(path, sizeof(path), "%s/%s", MT_SOURCE_DIR, source);
	text = mt_slurp(path);
	ck_assert_ptr_nonnull(text);
	at = strstr(text, needle);
	ck_assert_msg(at, "no '%s' in %s", needle, source);
	for (const char *p = text; p < at; p++)
		line += *p == '\n';
	free(text);
	return line;
}

/* What a failure shows of a text report: its sites, at its end. */
static const char *sites_part(const char *text)
{
	const char *at = strstr(text, "\nTop allocation sites");

	return at ? at + 1 : text;
}

/* memtrack run -q [opts] -o DIR/a.mtk -- fixture, which must exit 0: the artifact (to free). */
static char *record_with(const char *const *opts, const char *fixture, struct mt_out *o)
{
	const char *cmd[] = {fixture, NULL};
	char *art = mt_record(MEMTRACK, NULL, opts, cmd, 120, o);

	ck_assert_ptr_nonnull(art);
	ck_assert_msg(o->code == 0, "run failed (%d): %s", o->code, o->err);
	return art;
}

/* memtrack run -q --stacks -o DIR/a.mtk -- fixture, which must exit 0: the artifact (to free). */
static char *record(const char *fixture, struct mt_out *o)
{
	return record_with((const char *const[]){"--stacks", NULL}, fixture, o);
}

/* memtrack report [opt] [arg] ART: its stdout (to free); it must exit 0. */
static char *report(const char *art, const char *opt, const char *arg)
{
	const char *argv[6] = {MEMTRACK, "report"};
	struct mt_out o;
	int n = 2;

	if (opt)
		argv[n++] = opt;
	if (arg)
		argv[n++] = arg;
	argv[n++] = art;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report %s failed: %s", opt ? opt : "", o.err);
	free(o.err);
	return o.out;
}

/*
 * The text report has lines, one after another, each starting (after its indent) with a
 * function and ending with a source file's last components and a line: first[i] ... last[i].
 */
static void expect_frames(const char *text, const char *const *first, const char *const *last,
			  size_t n)
{
	const char *at = text;

	for (size_t i = 0; i < n; i++) {
		char want[512];
		const char *nl;

		snprintf(want, sizeof(want), "      %s", first[i]);
		at = i ? at : strstr(at, want);
		ck_assert_msg(at && !strncmp(at, want, strlen(want)),
			      "no frame '%s' (#%zu) in\n%.3000s", first[i], i, sites_part(text));
		nl = strchr(at, '\n');
		ck_assert_msg(nl && (size_t)(nl - at) >= strlen(last[i]) &&
				  !strncmp(nl - strlen(last[i]), last[i], strlen(last[i])),
			      "frame '%s' does not end with '%s' in\n%.3000s", first[i], last[i],
			      sites_part(text));
		at = nl + 1;
	}
}

/* The JSON sites' one site whose frame 1 is function (the allocator's caller). */
static struct json_object *site_at(struct json_object *rep, const char *function)
{
	struct json_object *sites = mt_json_get(rep, "sites"), *found = NULL;

	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *s = json_object_array_get_idx(sites, i);
		struct json_object *f = json_object_array_get_idx(mt_json_get(s, "frames"), 1);
		struct json_object *fn = f ? mt_json_get(f, "function") : NULL;

		if (fn && !strcmp(json_object_get_string(fn), function)) {
			ck_assert_msg(!found, "two sites at %s", function);
			found = s;
		}
	}
	ck_assert_msg(found, "no site at %s", function);
	return found;
}

/* A JSON frame: its function, line, whether it is marked inlined, its offset. */
static void expect_json_frame(struct json_object *f, const char *function, unsigned int line,
			      bool inlined)
{
	struct json_object *in = NULL;

	/* Only an inlined frame has the key. */
	json_object_object_get_ex(f, "inlined", &in);
	ck_assert_str_eq(json_object_get_string(mt_json_get(f, "function")), function);
	ck_assert_int_eq(mt_json_i64(f, "line"), line);
	ck_assert_int_eq(in ? json_object_get_boolean(in) : 0, inlined);
}

/*
 * stk_inline: inl_fill's loop calls inl_make_row, which calls inl_make_buffer, which calls
 * malloc; both inlined (their code is inl_fill's), 10 allocations of 40 bytes, 5 never freed.
 */
START_TEST(inlined_c_functions_are_frames)
{
	unsigned int l_malloc = line_of(C_SOURCE, "malloc(n);");
	unsigned int l_buffer = line_of(C_SOURCE, "inl_make_buffer(n + 8);");
	unsigned int l_row = line_of(C_SOURCE, "inl_make_row(32);");
	char end_malloc[64], end_buffer[64], end_row[64], *text, *art;
	struct json_object *rep, *site, *frames;
	struct mt_out o;

	art = record(FIXTURE("stk_inline"), &o);
	snprintf(end_malloc, sizeof(end_malloc), "stk_inline.c:%u", l_malloc);
	snprintf(end_buffer, sizeof(end_buffer), "stk_inline.c:%u", l_buffer);
	snprintf(end_row, sizeof(end_row), "stk_inline.c:%u", l_row);

	/* The text: heaptrack's "(inlined)", each frame at its own line. */
	text = report(art, NULL, NULL);
	expect_frames(text,
		      (const char *const[]){"inl_make_buffer (inlined) at ",
					    "inl_make_row (inlined) at ", "inl_fill at ",
					    "main at "},
		      (const char *const[]){end_malloc, end_buffer, end_row, ""}, 4);
	ck_assert_msg(strstr(text, "  #1  10 allocations, 400 B; live at exit: 5 blocks, 200 B"),
		      "%.3000s", sites_part(text));
	free(text);

	/* Folded stacks: the inlined functions between their caller and malloc. */
	text = report(art, "--folded=allocations", NULL);
	ck_assert_msg(strstr(text, ";main;inl_fill;inl_make_row;inl_make_buffer 10\n"), "%.3000s",
		      text);
	free(text);

	/* Callers: who calls the inlined allocating function is the function it was inlined in. */
	text = report(art, "--callers", "inl_make_buffer");
	ck_assert_msg(strstr(text, "10 allocations, 400 B; live at exit 200 B; 0 temporary; 1 site"
				   "  inl_make_row\n"),
		      "%.3000s", sites_part(text));
	free(text);

	/* The JSON: the same return address three times, the first two marked inlined. */
	text = report(art, "--json", NULL);
	rep = json_tokener_parse(text);
	ck_assert_ptr_nonnull(rep);
	site = site_at(rep, "inl_make_buffer");
	frames = mt_json_get(site, "frames");
	ck_assert_int_eq(mt_json_i64(site, "allocations"), 10);
	expect_json_frame(json_object_array_get_idx(frames, 1), "inl_make_buffer", l_malloc, true);
	expect_json_frame(json_object_array_get_idx(frames, 2), "inl_make_row", l_buffer, true);
	expect_json_frame(json_object_array_get_idx(frames, 3), "inl_fill", l_row, false);
	ck_assert_int_eq(mt_json_i64(json_object_array_get_idx(frames, 1), "offset"),
			 mt_json_i64(json_object_array_get_idx(frames, 3), "offset"));
	json_object_put(rep);
	free(text);
	free(art);
	mt_out_free(&o);
}
END_TEST

/*
 * A line of text that contains inner and inner_at, followed by one that starts (after its
 * indent) with outer and ends with outer_end: an inlined function at its header's line, then
 * the user's function it was inlined into at the user's line.
 */
static void expect_inlined_into(const char *text, const char *inner, const char *inner_at,
				const char *outer, const char *outer_end)
{
	for (const char *l = text; l && *l;) {
		const char *nl = strchr(l, '\n'), *next = nl ? nl + 1 : NULL, *next_nl;
		char line[4096];

		snprintf(line, sizeof(line), "%.*s", nl ? (int)(nl - l) : (int)strlen(l), l);
		l = next;
		if (!strstr(line, inner) || !strstr(line, inner_at) || !next)
			continue;
		next_nl = strchr(next, '\n');
		ck_assert_msg(
		    !strncmp(next, "      ", 6) && !strncmp(next + 6, outer, strlen(outer)) &&
			next_nl && (size_t)(next_nl - next) >= strlen(outer_end) &&
			!strncmp(next_nl - strlen(outer_end), outer_end, strlen(outer_end)),
		    "after '%s' no '%s ... %s' in\n%.3000s", line, outer, outer_end,
		    sites_part(text));
		return;
	}
	ck_abort_msg("no line with '%s' and '%s' in\n%.3000s", inner, inner_at, sites_part(text));
}

/* The JSON frame named function in any site, and the frame after it (its caller). */
static struct json_object *json_frame(struct json_object *rep, const char *function,
				      struct json_object **caller)
{
	struct json_object *sites = mt_json_get(rep, "sites");

	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *fr = mt_json_get(json_object_array_get_idx(sites, i), "frames");

		for (size_t k = 0; k + 1 < json_object_array_length(fr); k++) {
			struct json_object *f = json_object_array_get_idx(fr, k);
			struct json_object *fn = mt_json_get(f, "function");

			if (fn && !strcmp(json_object_get_string(fn), function)) {
				*caller = json_object_array_get_idx(fr, k + 1);
				return f;
			}
		}
	}
	ck_abort_msg("no frame %s", function);
	return NULL;
}

/*
 * stk_inline_cxx: app::build's push_back and app::label's operator+= are inlined; the report
 * names libstdc++'s inlined member at its header's line, then the user's function at its own
 * line of stk_inline_cxx.cc. 8 allocations (capacity 1 ... 128 ints, 1,020 bytes) and 3
 * (capacity 30, 60, 120 chars and their NULs, 213 bytes).
 */
START_TEST(cxx_user_line_beside_the_header)
{
	unsigned int l_push = line_of(CXX_SOURCE, "v.push_back(i);");
	unsigned int l_append = line_of(CXX_SOURCE, "s += ");
	char end_push[64], end_append[64], *text, *art;
	struct json_object *rep, *f, *caller;
	struct mt_out o;

	art = record(FIXTURE("stk_inline_cxx"), &o);
	snprintf(end_push, sizeof(end_push), "stk_inline_cxx.cc:%u", l_push);
	snprintf(end_append, sizeof(end_append), "stk_inline_cxx.cc:%u", l_append);
	text = report(art, NULL, NULL);
	expect_inlined_into(text, "::push_back(int const&) (inlined) at ",
			    "/stl_vector.h:", "app::build(int) at ", end_push);
	expect_inlined_into(text, "::operator+=(char) (inlined) at ",
			    "/basic_string.h:", "app::label[abi:cxx11](int) at ", end_append);
	/* Template arguments shortened in the text (unwind_shorten.h). */
	ck_assert_msg(strstr(text, "      std::vector<...>::push_back(int const&) (inlined) at "),
		      "%.3000s", sites_part(text));
	ck_assert_msg(strstr(text, "  8 allocations, 1020 B;"), "%.3000s", sites_part(text));
	ck_assert_msg(strstr(text, "  3 allocations, 213 B;"), "%.3000s", sites_part(text));
	free(text);

	/* The JSON: whole names, the inlined one marked, the user's function at the user's line. */
	text = report(art, "--json", NULL);
	rep = json_tokener_parse(text);
	ck_assert_ptr_nonnull(rep);
	f = json_frame(rep, "std::vector<int, std::allocator<int> >::push_back(int const&)",
		       &caller);
	ck_assert(json_object_get_boolean(mt_json_get(f, "inlined")));
	expect_json_frame(caller, "app::build(int)", l_push, false);
	json_object_put(rep);
	free(text);
	free(art);
	mt_out_free(&o);
}
END_TEST

/*
 * A plain `memtrack run` (no option) records each allocation's caller (through operator new):
 * its report names the inlined allocating function at its line and the user's function at the
 * line that calls it, in C and in C++.
 */
START_TEST(plain_run_names_the_inlined_allocating_function)
{
	unsigned int l_malloc = line_of(C_SOURCE, "malloc(n);");
	unsigned int l_row = line_of(C_SOURCE, "inl_make_row(32);");
	unsigned int l_append = line_of(CXX_SOURCE, "s += ");
	char end_malloc[64], end_row[64], end_append[64], *text, *art;
	struct mt_out o;

	snprintf(end_malloc, sizeof(end_malloc), "stk_inline.c:%u", l_malloc);
	snprintf(end_row, sizeof(end_row), "stk_inline.c:%u", l_row);
	snprintf(end_append, sizeof(end_append), "stk_inline_cxx.cc:%u", l_append);

	art = record_with(NULL, FIXTURE("stk_inline"), &o);
	text = report(art, NULL, NULL);
	expect_frames(text, (const char *const[]){"inl_make_buffer (inlined) at "},
		      (const char *const[]){end_malloc}, 1);
	expect_frames(text, (const char *const[]){"inl_fill at "}, (const char *const[]){end_row},
		      1);
	free(text);
	free(art);
	mt_out_free(&o);

	/* Through libstdc++'s operator new and _M_mutate (a table each) to the user's code. */
	art = record_with(NULL, FIXTURE("stk_inline_cxx"), &o);
	text = report(art, NULL, NULL);
	expect_inlined_into(text, "::operator+=(char) (inlined) at ",
			    "/basic_string.h:", "app::label[abi:cxx11](int) at ", end_append);
	free(text);
	free(art);
	mt_out_free(&o);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("inline");
	TCase *tc = tcase_create("inline");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, inlined_c_functions_are_frames);
	tcase_add_test(tc, cxx_user_line_beside_the_header);
	tcase_add_test(tc, plain_run_names_the_inlined_allocating_function);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
