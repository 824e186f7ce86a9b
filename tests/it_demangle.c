// SPDX-License-Identifier: GPL-2.0
/*
 * Rust's function names in the reports of a run with --stacks (docs/STACKS.md, "Function
 * names"): fixtures/rust/rust_names.rs, built here by rustc (no crates, offline) with the legacy
 * mangling (stable rustc's default) and with v0, allocates from a trait method, an inherent
 * method of a generic struct and a closure (truth in fixtures/README.md). The folded stacks, the
 * JSON document and the text report must name those frames as the language writes them (no
 * "_R...", no "::h<hash>"), and no frame of the fixture's stacks may stay mangled.
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
#include "lib/twin.h"

#define SOURCE MT_SOURCE_DIR "/fixtures/rust/rust_names.rs"

/* What each mangling's build must show: the frames differ where the schemes do. */
static const struct scheme {
	const char *name;
	const char *flag; /* rustc's option for it, NULL for the default (legacy on stable) */
	const char *fill; /* the inherent method: legacy names the impl, v0 its instance */
	const char *closure;
} schemes[] = {
    {"legacy", NULL, "rust_names::Pool<T>::fill", "rust_names::boxed_in_closure::{{closure}}"},
    {"v0", "-Csymbol-mangling-version=v0", "<rust_names::Pool<u64>>::fill",
     "rust_names::boxed_in_closure::{closure#0}"},
};

#define GROW "<rust_names::Pool<u64> as rust_names::Grow>::grow"

/* The fixture built into dir with sc's mangling: its path (static). */
static const char *build(const char *dir, const struct scheme *sc)
{
	static char bin[128];
	const char *rustc = mt_find_rust_tool("rustc");
	const char *argv[] = {rustc, "-Copt-level=0", "-o", bin, SOURCE, sc->flag, NULL};
	struct mt_out o;

	ck_assert_ptr_nonnull(rustc);
	snprintf(bin, sizeof(bin), "%s/rust_names_%s", dir, sc->name);
	ck_assert_int_eq(mt_run(argv, NULL, dir, 120, &o), 0);
	ck_assert_msg(o.code == 0, "rustc failed (%d): %s", o.code, o.err);
	mt_out_free(&o);
	return bin;
}

/* memtrack report ARGS ART: stdout (to free); the report must succeed. */
static char *report(const char *opt, const char *art)
{
	const char *argv[] = {MEMTRACK, "report", opt, art, NULL};
	struct mt_out o;

	if (!opt) {
		argv[2] = art;
		argv[3] = NULL;
	}
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report failed: %s", o.err);
	free(o.err);
	return o.out;
}

/* The weight of the folded line through the frames path (";A;B;"), in the fixture's main; -1. */
static long long folded_weight(const char *folded, const char *path)
{
	for (const char *l = folded; l && *l;) {
		const char *nl = strchr(l, '\n'), *sp;
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		char *line = strndup(l, len);

		ck_assert_ptr_nonnull(line);
		sp = strrchr(line, ' ');
		if (strstr(line, ";rust_names::main;") && strstr(line, path) && sp) {
			long long w = atoll(sp + 1);

			free(line);
			return w;
		}
		free(line);
		l = nl ? nl + 1 : NULL;
	}
	return -1;
}

/* No frame of a folded line stays mangled: no "_R" or "_ZN" frame, no "::h<16 hex>" end. */
static void no_mangled_frame(const char *folded)
{
	const char *p = folded;

	while (p && *p) {
		size_t len = strcspn(p, ";\n");
		char *frame = strndup(p, len), *h;

		ck_assert_ptr_nonnull(frame);
		ck_assert_msg(strncmp(frame, "_R", 2) && strncmp(frame, "_ZN", 3),
			      "mangled frame %s", frame);
		h = strstr(frame, "::h");
		ck_assert_msg(!h || strspn(h + 3, "0123456789abcdef") != 16, "hash in %s", frame);
		free(frame);
		p += len + (p[len] != '\0');
	}
}

/* Whether a site of the JSON document has a frame whose function is name. */
static bool json_has_function(struct json_object *rep, const char *name)
{
	struct json_object *sites = mt_json_get(rep, "sites");

	for (size_t i = 0; sites && i < json_object_array_length(sites); i++) {
		struct json_object *frames =
		    mt_json_get(json_object_array_get_idx(sites, i), "frames");

		for (size_t k = 0; frames && k < json_object_array_length(frames); k++) {
			struct json_object *f = json_object_array_get_idx(frames, k), *fn;

			if (json_object_object_get_ex(f, "function", &fn) &&
			    json_object_is_type(fn, json_type_string) &&
			    !strcmp(json_object_get_string(fn), name))
				return true;
		}
	}
	return false;
}

/* A line of the text report that is name, after its indentation, alone or with " at FILE:N". */
static bool text_has_line(const char *text, const char *name)
{
	for (const char *l = strstr(text, name); l; l = strstr(l + 1, name)) {
		const char *end = l + strlen(name);

		if (l > text && l[-1] == ' ' && (*end == '\n' || !strncmp(end, " at ", 4)))
			return true;
	}
	return false;
}

START_TEST(rust_frames_are_demangled)
{
	const struct scheme *sc = &schemes[_i];
	char dir[64], path[256], *art, *folded, *bytes, *text, *json;
	struct json_object *rep;
	const char *bin;
	struct mt_out o;

	mt_tmpdir(dir);
	bin = build(dir, sc);
	art = mt_record(MEMTRACK, NULL, (const char *const[]){"--stacks", NULL},
			(const char *const[]){bin, NULL}, 120, &o);
	ck_assert_ptr_nonnull(art);
	ck_assert_msg(o.code == 0, "run failed (%d): %s", o.code, o.err);
	mt_out_free(&o);

	/* Allocations and bytes of each path, as fixtures/README.md has them. */
	folded = report("--folded", art);
	bytes = report("--folded=bytes", art);
	no_mangled_frame(folded);
	snprintf(path, sizeof(path), ";rust_names::main;%s;", GROW);
	ck_assert_int_eq(folded_weight(folded, path), 1);
	ck_assert_int_eq(folded_weight(bytes, path), 4096);
	snprintf(path, sizeof(path), ";rust_names::main;%s;", sc->fill);
	ck_assert_int_eq(folded_weight(folded, path), 1);
	ck_assert_int_eq(folded_weight(bytes, path), 256);
	snprintf(path, sizeof(path), ";rust_names::main;rust_names::boxed_in_closure;%s;",
		 sc->closure);
	ck_assert_int_eq(folded_weight(folded, path), 5);
	ck_assert_int_eq(folded_weight(bytes, path), 20);

	json = report("--json", art);
	rep = json_tokener_parse(json);
	ck_assert_ptr_nonnull(rep);
	ck_assert(json_has_function(rep, "rust_names::main"));
	ck_assert(json_has_function(rep, GROW));
	ck_assert(json_has_function(rep, sc->fill));
	ck_assert(json_has_function(rep, sc->closure));
	json_object_put(rep);

	text = report(NULL, art);
	ck_assert_msg(text_has_line(text, GROW), "%s", text);
	ck_assert(text_has_line(text, sc->fill));
	ck_assert(text_has_line(text, sc->closure));

	free(text);
	free(json);
	free(bytes);
	free(folded);
	unlink(art);
	*strrchr(art, '/') = '\0';
	rmdir(art);
	free(art);
	unlink(bin);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("demangle");
	TCase *tc = tcase_create("rust");

	tcase_set_timeout(tc, 300);
	if (mt_find_rust_tool("rustc"))
		tcase_add_loop_test(tc, rust_frames_are_demangled, 0,
				    sizeof(schemes) / sizeof(schemes[0]));
	else
		mt_add_skipped_test(tc, rust_frames_are_demangled, 0,
				    sizeof(schemes) / sizeof(schemes[0]),
				    "no rustc (tools/install-deps installs it)");
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
