// SPDX-License-Identifier: GPL-2.0
/*
 * The pictures of a run: `memtrack report --svg OUT.svg --over-time` and
 * `memtrack report --html OUT.html`, made from real runs of deterministic fixtures
 * (fixtures/README.md) and opened as people open them: the SVG parsed as XML, the page in a
 * browser (Debian's chromium, headless), whose script must draw the heap over time and the
 * flamegraph with the fixture's exact totals under each weight, without one network request
 * (the browser's network log says which requests a page made).
 * The page's view is exact too: a time range chosen by the URL's fragment (as a drag on the heap
 * over time sets it) sums the allocations of that window, and the process selector the sites of
 * one process image, both against `memtrack report --json`.
 * The browser's screenshot is kept as build/tests/html-report.png.
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "lib/browser.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define SCREENSHOT MT_BUILD_DIR "/tests/html-report.png"

/* memtrack run -q [opt] -o DIR/a.mtk -- cmd..., which must exit 0: the artifact (to free). */
static char *record(const char *opt, const char *const *cmd)
{
	struct mt_out o;
	char *art = mt_record(MEMTRACK, NULL, (const char *const[]){opt, NULL}, cmd, 120, &o);

	ck_assert_ptr_nonnull(art);
	ck_assert_msg(o.code == 0, "run failed (%d): %s", o.code, o.err);
	mt_out_free(&o);
	return art;
}

/* memtrack report --json art, parsed (to put). */
static struct json_object *json_report(const char *art)
{
	const char *argv[] = {MEMTRACK, "report", "--json", art, NULL};
	struct json_object *doc;
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 0);
	doc = json_tokener_parse(o.out);
	ck_assert_ptr_nonnull(doc);
	mt_out_free(&o);
	return doc;
}

static long long jint(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no %s", key);
	return json_object_get_int64(v);
}

static struct json_object *jget(struct json_object *o, const char *key)
{
	struct json_object *v;

	ck_assert_msg(json_object_object_get_ex(o, key, &v), "no %s", key);
	return v;
}

/* The sum of key over the JSON report's sites whose stack passes through function. */
static long long sites_through(struct json_object *doc, const char *function, const char *key)
{
	struct json_object *sites = jget(doc, "sites");
	long long sum = 0;

	for (size_t i = 0; i < json_object_array_length(sites); i++) {
		struct json_object *s = json_object_array_get_idx(sites, i);
		struct json_object *frames = jget(s, "frames");

		for (size_t k = 0; k < json_object_array_length(frames); k++) {
			struct json_object *f = json_object_array_get_idx(frames, k), *fn;

			if (json_object_object_get_ex(f, "function", &fn) && fn &&
			    !strcmp(json_object_get_string(fn), function)) {
				sum += jint(s, key);
				break;
			}
		}
	}
	return sum;
}

/* memtrack report with argv[2..] (NULL-terminated, from a[0]); exits 0 and prints nothing. */
static void report(const char *const *a)
{
	const char *argv[8] = {MEMTRACK, "report"};
	struct mt_out o;

	for (int i = 0; a[i]; i++)
		argv[i + 2] = a[i];
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report failed (%d): %s", o.code, o.err);
	ck_assert_str_eq(o.out, "");
	mt_out_free(&o);
}

static void expect_attr(const char *text, const char *tag, const char *name, const char *want)
{
	char *v = mt_html_attr(text, tag, name);

	ck_assert_msg(!strcmp(v, want), "%s %s=\"%s\", not \"%s\"", tag, name, v, want);
	free(v);
}

/* The JSON report's tree peak of art. */
static long long json_peak(const char *art)
{
	const char *argv[] = {MEMTRACK, "report", "--json", art, NULL};
	struct mt_out o;
	long long v;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 0);
	v = mt_json_int(strstr(o.out, "\"totals\""), "peak_bytes");
	mt_out_free(&o);
	return v;
}

/*
 * forks4: the parent's 1000 bytes and its 4 children's, each one image with its own line; their
 * peaks are exact (child k: 10 (k + 1) blocks of 32 (k + 1) bytes, all live together). The
 * tree's peak depends on how the children overlap, but it is the report's, to the byte.
 */
START_TEST(svg_lines_of_forks4)
{
	const char *cmd[] = {FIXTURE("forks4"), NULL};
	static const char *const peaks[] = {"1000", "320", "1280", "2880", "5120"};
	char *art = record(NULL, cmd), svg[192], want[64];
	const char *xml[] = {"python3", "-c",
			     "import sys, xml.dom.minidom as m; "
			     "d = m.parse(sys.argv[1]); "
			     "print(len(d.getElementsByTagName('polyline')))",
			     svg, NULL};
	struct mt_out o;
	char *text, *peak;

	snprintf(svg, sizeof(svg), "%s.svg", art);
	/* The order of the example: the artifact, then --over-time. */
	report((const char *const[]){"--svg", svg, art, "--over-time", NULL});
	text = mt_slurp(svg);
	ck_assert_ptr_nonnull(text);
	ck_assert_int_eq(mt_count_lines(text, "<polyline "), 6);
	ck_assert_int_eq(mt_count_lines(text, "<polyline class=\"image\""), 5);
	for (int k = 0; k < 5; k++) {
		snprintf(want, sizeof(want),
			 "<polyline class=\"image\" data-image=\"%d\" data-peak=\"%s\"", k,
			 peaks[k]);
		ck_assert_msg(strstr(text, want), "no %s in %.3000s", want, text);
	}
	peak = mt_html_attr(text, "<svg ", "data-peak-bytes");
	ck_assert_int_eq(atoll(peak), json_peak(art));
	ck_assert_int_ge(atoll(peak), 1000 + 5120);
	ck_assert_int_le(atoll(peak), 1000 + 320 + 1280 + 2880 + 5120);
	expect_attr(text, "<polyline class=\"tree\"", "data-peak", peak);
	/* Well-formed: an XML parser reads it, and finds the same lines. */
	ck_assert_int_eq(mt_run(xml, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "not well-formed: %s", o.err);
	ck_assert_str_eq(o.out, "6\n");
	mt_out_free(&o);
	free(peak);
	free(text);
	unlink(svg);
	unlink(art);
	free(art);
}
END_TEST

/* ---- the page in a browser ------------------------------------------------------------------ */

/*
 * The requests a page made, from the browser's network log: each names its initiator, the page's
 * origin ("null" for a file), where the browser's own (its clock, its updater, which it makes
 * whatever page it shows) say "not an origin". The number of requests of the page.
 */
static int page_requests(const char *url)
{
	char dir[64], log[128];
	char *text;
	int n;

	mt_tmpdir(dir);
	snprintf(log, sizeof(log), "%s/net.json", dir);
	free(mt_browser_run(url, "--dump-dom", log));
	text = mt_slurp(log);
	ck_assert_msg(text && strstr(text, "\"initiator\""), "no network log in %s", log);
	n = mt_count_lines(text, "\"initiator\":\"null\"") +
	    mt_count_lines(text, "\"initiator\":\"file");
	free(text);
	unlink(log);
	return n;
}

/* The network log tells a page's request apart: one that loads an image and fetches JSON. */
static void expect_requests_seen(void)
{
	char dir[64], page[96], url[128];
	FILE *f;

	mt_tmpdir(dir);
	snprintf(page, sizeof(page), "%s/fetches.html", dir);
	snprintf(url, sizeof(url), "file://%s", page);
	f = fopen(page, "w");
	ck_assert_ptr_nonnull(f);
	fputs("<!DOCTYPE html><img src=\"http://example.invalid/x.png\"><script>"
	      "fetch('http://example.invalid/y.json').catch(() => 0);</script>\n",
	      f);
	fclose(f);
	ck_assert_int_ge(page_requests(url), 1);
	unlink(page);
	rmdir(dir);
}

/* The flamegraph drawn under one weight: its total, and main's frame (all of leaks' calls). */
static void expect_flame(const char *url_base, const char *weight, const char *total)
{
	char url[512], tag[64];
	char *dom;

	snprintf(url, sizeof(url), "%s#weight=%s", url_base, weight);
	dom = mt_browser_run(url, "--dump-dom", NULL);
	expect_attr(dom, "<div id=\"flame\"", "data-rendered", "1");
	expect_attr(dom, "<div id=\"flame\"", "data-weight", weight);
	expect_attr(dom, "<div id=\"flame\"", "data-total", total);
	snprintf(tag, sizeof(tag), "<g class=\"frame\" data-name=\"main\"");
	expect_attr(dom, tag, "data-value", total);
	free(dom);
}

/*
 * Zoomed on main and searching for it (the URL's fragment sets both, as a click and typing do):
 * main's ancestors and main drawn, the search matching all of it.
 */
static void expect_zoom_and_search(const char *url_base)
{
	char url[512];
	char *dom;

	snprintf(url, sizeof(url), "%s#weight=bytes&focus=main&search=MAIN", url_base);
	dom = mt_browser_run(url, "--dump-dom", NULL);
	expect_attr(dom, "<div id=\"flame\"", "data-focus", "main");
	expect_attr(dom, "<div id=\"flame\"", "data-total", "40400");
	expect_attr(dom, "<div id=\"flame\"", "data-matched", "40400");
	/* all, _start, __libc_start_main, __libc_start_call_main, main: the allocator is no frame.
	 */
	expect_attr(dom, "<div id=\"flame\"", "data-drawn", "5");
	ck_assert_ptr_nonnull(strstr(dom, "matched: 40,400 of 40,400 (100.00%)"));
	free(dom);

	/* A malformed escape in the fragment (typed, or a link cut short) is searched as typed. */
	snprintf(url, sizeof(url), "%s#search=100%%", url_base);
	dom = mt_browser_run(url, "--dump-dom", NULL);
	expect_attr(dom, "<div id=\"flame\"", "data-rendered", "1");
	expect_attr(dom, "<div id=\"flame\"", "data-total", "100");
	expect_attr(dom, "<div id=\"flame\"", "data-matched", "0");
	free(dom);
}

/*
 * leaks (fixtures/README.md): 100 mallocs from main, 40,400 bytes, all live together before the
 * first free (the peak), 40 blocks of 16,640 bytes never freed. The page's script draws the
 * plot's lines and the flamegraph from the data memtrack wrote, and says what it drew.
 */
START_TEST(html_drawn_by_chromium)
{
	const char *cmd[] = {FIXTURE("leaks"), NULL};
	char *art = record("--stacks", cmd), html[192], url[256], *text, *dom, *png;

	snprintf(html, sizeof(html), "%s.html", art);
	report((const char *const[]){"--html", html, art, NULL});
	text = mt_slurp(html);
	ck_assert_ptr_nonnull(text);
	/* Nothing to fetch: no URL but the SVG namespace's name, no src, href or url(). */
	for (const char *p = text; (p = strstr(p, "://")); p++)
		ck_assert_msg(!strncmp(p - 4, "http://www.w3.org/2000/svg", 26), "%.60s", p - 20);
	ck_assert_ptr_null(strstr(text, " src="));
	ck_assert_ptr_null(strstr(text, " href="));
	ck_assert_ptr_null(strstr(text, "url("));
	free(text);

	snprintf(url, sizeof(url), "file://%s", html);
	dom = mt_browser_run(url, "--dump-dom", NULL);
	expect_attr(dom, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"over-time\"",
		    "data-rendered", "1");
	/* One process image and the tree. */
	expect_attr(dom, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"over-time\"",
		    "data-drawn-lines", "2");
	expect_attr(dom, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"over-time\"",
		    "data-drawn-peak", "40400");
	/* Its RSS, sampled: the tree's dashed path and the one process's. */
	expect_attr(dom, "<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"over-time\"",
		    "data-drawn-rss", "2");
	/* The headline figures: counts grouped, bytes in units, the exact value kept. */
	ck_assert_ptr_nonnull(
	    strstr(dom, "data-key=\"allocations\" data-value=\"100\" title=\"100\">100</div>"));
	ck_assert_ptr_nonnull(strstr(dom, "data-key=\"live_bytes\" data-value=\"16640\" "
					  "title=\"16,640 bytes\">16.2 KiB</div>"));
	expect_attr(dom, "<div id=\"flame\"", "data-weight", "allocations");
	expect_attr(dom, "<div id=\"flame\"", "data-total", "100");
	expect_attr(dom, "<g class=\"frame\" data-name=\"main\"", "data-value", "100");
	/* The largest block never freed: leaks' block 99, 800 bytes, from main. */
	expect_attr(dom, "<tr data-bytes=", "data-bytes", "800");
	free(dom);

	expect_flame(url, "bytes", "40400");
	expect_flame(url, "live", "16640");
	expect_flame(url, "peak", "40400");

	expect_zoom_and_search(url);

	/* No request: the network log, which sees the requests of a page that makes some. */
	ck_assert_int_eq(page_requests(url), 0);
	expect_requests_seen();

	unlink(SCREENSHOT);
	free(mt_browser_run(url, "--screenshot=" SCREENSHOT, NULL));
	png = mt_slurp(SCREENSHOT);
	ck_assert_msg(png && !memcmp(png, "\x89PNG", 4), "no screenshot at " SCREENSHOT);
	free(png);
	unlink(html);
	unlink(art);
	free(art);
}
END_TEST

/* The page of html in the view of fragment frag, as the browser drew it (to free). */
static char *view_dom(const char *html, const char *frag)
{
	char url[512];
	char *dom;

	snprintf(url, sizeof(url), "file://%s#%s", html, frag);
	dom = mt_browser_run(url, "--dump-dom", NULL);
	expect_attr(dom, "<div id=\"flame\"", "data-rendered", "1");
	return dom;
}

static long long flame_total(const char *dom)
{
	char *v = mt_html_attr(dom, "<div id=\"flame\"", "data-total");
	long long n = atoll(v);

	free(v);
	return n;
}

/*
 * phases (fixtures/README.md): phase_a's 10 mallocs of 1000 bytes, then a gap whose middle the
 * fixture prints, then phase_b's 5 of 3000. A time range from the start to the gap's middle has
 * exactly phase_a's allocations, from there to the end phase_b's: the sums of the JSON report's
 * sites through each function, and the range's ends are whole buckets around the asked ones.
 */
START_TEST(html_time_range)
{
	const char *cmd[] = {FIXTURE("phases"), NULL};
	struct mt_out o;
	char *art =
	    mt_record(MEMTRACK, NULL, (const char *const[]){"--stacks", NULL}, cmd, 120, &o);
	char html[192], frag[128], *dom, *from, *to;
	struct json_object *doc;
	long long gap, start, end, a_bytes, b_allocs;
	const char *g;

	ck_assert_ptr_nonnull(art);
	ck_assert_msg(o.code == 0, "run failed (%d): %s", o.code, o.err);
	g = strstr(o.out, "gap ");
	ck_assert_msg(g, "no gap line in %s", o.out);
	gap = atoll(g + 4);
	mt_out_free(&o);
	doc = json_report(art);
	start = jint(doc, "start_mono_ns");
	end = jint(doc, "duration_ns");
	a_bytes = sites_through(doc, "phase_a", "bytes");
	b_allocs = sites_through(doc, "phase_b", "allocations");
	ck_assert_int_eq(a_bytes, 10 * 1000);
	ck_assert_int_eq(b_allocs, 5);
	ck_assert_int_eq(jint(jget(doc, "totals"), "bytes_allocated"), 10 * 1000 + 5 * 3000);
	ck_assert_int_gt(gap, start);
	snprintf(html, sizeof(html), "%s.html", art);
	report((const char *const[]){"--html", html, art, NULL});

	snprintf(frag, sizeof(frag), "weight=bytes&range=0-%.6f", (double)(gap - start) / 1e6);
	dom = view_dom(html, frag);
	ck_assert_int_eq(flame_total(dom), a_bytes);
	from = mt_html_attr(dom, "<div id=\"flame\"", "data-range-from");
	to = mt_html_attr(dom, "<div id=\"flame\"", "data-range-to");
	ck_assert_int_eq(atoll(from), 0);
	ck_assert_int_ge(atoll(to), gap - start - 1000);
	ck_assert_int_lt(atoll(to), gap - start + 100 * 1000 * 1000);
	ck_assert_ptr_nonnull(strstr(dom, "(whole buckets of "));
	free(from);
	free(to);
	free(dom);

	snprintf(frag, sizeof(frag), "weight=allocations&range=%.6f-%.6f",
		 (double)(gap - start) / 1e6, (double)end / 1e6);
	dom = view_dom(html, frag);
	ck_assert_int_eq(flame_total(dom), b_allocs);
	free(dom);

	/* The gap's middle alone: nothing was allocated there. */
	snprintf(frag, sizeof(frag), "weight=bytes&range=%.6f-%.6f", (double)(gap - start) / 1e6,
		 (double)(gap - start) / 1e6 + 1);
	dom = view_dom(html, frag);
	ck_assert_int_eq(flame_total(dom), 0);
	free(dom);

	json_object_put(doc);
	unlink(html);
	unlink(art);
	free(art);
}
END_TEST

/* The root's five weights as the page drew them: allocations, bytes, live, peak, temporary. */
static void flame_totals(const char *dom, long long w[5])
{
	char *v = mt_html_attr(dom, "<div id=\"flame\"", "data-totals");

	ck_assert_int_eq(sscanf(v, "%lld,%lld,%lld,%lld,%lld", &w[0], &w[1], &w[2], &w[3], &w[4]),
			 5);
	free(v);
}

/*
 * exec_alloc_child forks4: the parent's image (3 x 5000 bytes), its child's image before its exec
 * (nothing), forks4's after it (1000) and forks4's 4 children's. The process selector shows one
 * image: its allocations, bytes, bytes never freed and temporary allocations are the JSON
 * report's for that image; the images' bytes at the peak add up to the tree's.
 */
START_TEST(html_process_selector)
{
	const char *cmd[] = {FIXTURE("exec_alloc_child"), FIXTURE("forks4"), NULL};
	char *art = record("--stacks", cmd), html[192], frag[64], *dom;
	struct json_object *doc = json_report(art), *images = jget(doc, "images");
	size_t n = json_object_array_length(images);
	long long w[5], peaks = 0;
	int options = 0;

	ck_assert_int_eq(n, 7);
	snprintf(html, sizeof(html), "%s.html", art);
	report((const char *const[]){"--html", html, art, NULL});
	dom = view_dom(html, "weight=peak");
	for (const char *p = dom; (p = strstr(p, "<option value=")); p++)
		options++;
	ck_assert_int_eq(options, (int)n + 1);
	ck_assert_int_eq(flame_total(dom), jint(jget(doc, "totals"), "peak_bytes"));
	free(dom);
	for (size_t k = 0; k < n; k++) {
		struct json_object *g = json_object_array_get_idx(images, k), *exit;
		long long live = jint(g, "live_bytes");
		char want[16];

		if (json_object_object_get_ex(g, "live_at_exit", &exit) && exit)
			live += jint(exit, "bytes");
		snprintf(frag, sizeof(frag), "weight=bytes&image=%zu", k);
		dom = view_dom(html, frag);
		snprintf(want, sizeof(want), "%zu", k);
		expect_attr(dom, "<div id=\"flame\"", "data-image", want);
		flame_totals(dom, w);
		ck_assert_int_eq(w[0], jint(g, "allocations") + jint(g, "reallocs"));
		ck_assert_int_eq(w[1], jint(g, "bytes_allocated"));
		ck_assert_int_eq(w[2], live);
		ck_assert_int_eq(w[4], jint(g, "temporary"));
		peaks += w[3];
		free(dom);
	}
	/* forks4's child 3: 40 blocks, 5,120 bytes, 3 of them (384 bytes) never freed. */
	ck_assert_int_eq(w[1], 5120);
	ck_assert_int_eq(w[2], 384);
	ck_assert_int_eq(peaks, jint(jget(doc, "totals"), "peak_bytes"));
	json_object_put(doc);
	unlink(html);
	unlink(art);
	free(art);
}
END_TEST

/*
 * The bottom-up tables of leaks: main is the one function that allocates (all 100 mallocs,
 * 40,400 bytes, 16,640 never freed), and its callers and callees are --callers' and --callees'.
 */
START_TEST(html_bottom_up)
{
	const char *cmd[] = {FIXTURE("leaks"), NULL};
	char *art = record("--stacks", cmd), html[192], *dom;
	const char *row =
	    "<button type=\"button\" class=\"fn\" data-function=\"main\">main</button>";
	const char *p;

	snprintf(html, sizeof(html), "%s.html", art);
	report((const char *const[]){"--html", html, art, NULL});
	dom = view_dom(html, "weight=bytes");
	p = strstr(dom, "<table class=\"calls\" id=\"bottom-up\">");
	ck_assert_ptr_nonnull(p);
	p = strstr(p, row);
	ck_assert_msg(p, "no main in the bottom-up table: %.3000s", dom);
	ck_assert_ptr_nonnull(strstr(p, "data-v=\"100\""));
	ck_assert_ptr_nonnull(strstr(p, "data-v=\"40400\""));
	ck_assert_ptr_nonnull(strstr(p, "data-v=\"16640\""));
	/* Formatted by the script: bytes in units, the exact value in the title. */
	ck_assert_ptr_nonnull(strstr(p, "title=\"40,400 bytes\">39.5 KiB</td>"));
	p = strstr(dom, "<div class=\"calls-of\" data-function=\"main\" hidden=\"\">");
	ck_assert_msg(p, "no callers of main: %.3000s", dom);
	ck_assert_ptr_nonnull(strstr(p, "data-function=\"__libc_start_call_main\""));
	ck_assert_ptr_nonnull(strstr(p, "data-function=\"malloc\""));
	free(dom);
	/* The largest blocks' stacks name each frame's source line: the fixture's, and libc's. */
	dom = mt_slurp(html);
	ck_assert_ptr_nonnull(dom);
	p = strstr(dom, "<section id=\"largest\">");
	ck_assert_ptr_nonnull(p);
	ck_assert_msg(strstr(p, "main <span class=\"src\">at fixtures/leaks.c:"), "%.3000s", p);
	ck_assert_msg(strstr(p, "malloc <span class=\"src\">at malloc/malloc.c:"), "%.3000s", p);
	free(dom);
	unlink(html);
	unlink(art);
	free(art);
}
END_TEST

/*
 * A run with --leaks: the weights "definitely lost" and "indirectly lost" are the loss records'
 * bytes, in the tree (leak_shapes tree: the parent's list, 96 + 864, the child's 1,000) and in
 * each process image; the seven totals are in the buttons' order.
 */
START_TEST(html_leak_weights)
{
	const char *cmd[] = {FIXTURE("leak_shapes"), "tree", FIXTURE("leak_shapes"), NULL};
	const char *opts[] = {"--leaks", "--stacks", NULL};
	struct mt_out o;
	char *art = mt_record(MEMTRACK, NULL, opts, cmd, 120, &o), html[192], frag[64], *dom;
	struct json_object *doc, *images, *leaks;
	long long w[7], seen[2] = {0};

	ck_assert_msg(art && o.code == 0, "%s", o.err);
	mt_out_free(&o);
	doc = json_report(art);
	images = jget(doc, "images");
	snprintf(html, sizeof(html), "%s.html", art);
	report((const char *const[]){"--html", html, art, NULL});
	dom = view_dom(html, "weight=definite");
	expect_attr(dom, "<div id=\"flame\"", "data-weight", "definite");
	ck_assert_int_eq(flame_total(dom), 1096);
	free(dom);
	dom = view_dom(html, "weight=indirect");
	ck_assert_int_eq(flame_total(dom), 864);
	free(dom);
	for (size_t k = 0; k < json_object_array_length(images); k++) {
		struct json_object *g = json_object_array_get_idx(images, k), *c;
		char *v;

		if (!json_object_object_get_ex(g, "leaks", &leaks) || !leaks)
			continue;
		snprintf(frag, sizeof(frag), "weight=definite&image=%zu", k);
		dom = view_dom(html, frag);
		v = mt_html_attr(dom, "<div id=\"flame\"", "data-totals");
		ck_assert_int_eq(sscanf(v, "%lld,%lld,%lld,%lld,%lld,%lld,%lld", &w[0], &w[1],
					&w[2], &w[3], &w[4], &w[5], &w[6]),
				 7);
		c = jget(leaks, "definitely_lost");
		ck_assert_int_eq(w[5], jint(c, "bytes"));
		c = jget(leaks, "indirectly_lost");
		ck_assert_int_eq(w[6], jint(c, "bytes"));
		seen[0] += w[5];
		seen[1] += w[6];
		free(v);
		free(dom);
	}
	ck_assert_int_eq(seen[0], 1096);
	ck_assert_int_eq(seen[1], 864);
	json_object_put(doc);
	unlink(html);
	unlink(art);
	free(art);
}
END_TEST

/* valgrind's own suppression of leak_shapes tree's head, tree inlined in main (fixtures/). */
#define TREE_SUPP MT_SOURCE_DIR "/fixtures/leak_shapes_tree.supp"

/* memtrack report (text) with args, which must exit 0: its stdout (to free). */
static char *text_report(const char *const *args)
{
	const char *argv[8] = {MEMTRACK, "report"};
	struct mt_out o;
	char *text;

	for (int i = 0; args[i]; i++)
		argv[i + 2] = args[i];
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report failed (%d): %s", o.code, o.err);
	text = o.out;
	free(o.err);
	return text;
}

/* The figure of a cell of row (up to its </tr>): its data-v and its text, which must agree. */
static long long leak_cell(const char *row, const char *cls, const char *unit)
{
	const char *end = strstr(row, "</tr>"), *p, *q;
	char want[96], shown[32];
	long long v;
	size_t k = 0;

	snprintf(want, sizeof(want), "data-class=\"%s\" data-unit=\"%s\" data-v=\"", cls, unit);
	p = strstr(row, want);
	ck_assert_msg(p && p < end, "no %s %s in %.600s", cls, unit, row);
	v = atoll(p + strlen(want));
	q = strchr(p, '>') + 1;
	for (; *q != '<' && k + 1 < sizeof(shown); q++)
		if (*q != ',')
			shown[k++] = *q;
	shown[k] = '\0';
	ck_assert_msg(atoll(shown) == v, "%s %s drawn as %s, not %lld", cls, unit, shown, v);
	return v;
}

static const char *const leak_classes[] = {"definitely_lost", "indirectly_lost", "possibly_lost",
					   "still_reachable", "suppressed"};

/*
 * The page's table of classes against the text report's: every line of its "Leaks at exit"
 * table (an image's, by pid, and the tree's) has the same bytes and blocks in each class in the
 * DOM, and so do the suppressed ones. Returns how many lines were compared.
 */
static int expect_leak_table(const char *text, const char *dom)
{
	const char *t = strstr(text, "Leaks at exit"), *view = strstr(dom, "<section id=\"leaks\"");
	int rows = 0;

	ck_assert_msg(t && view, "no leaks table: %.3000s", text);
	for (t = strchr(t, '\n') + 1, t = strchr(t, '\n') + 1;
	     !strncmp(t, "  ", 2) && strncmp(t, "  suppressed", 12) && strncmp(t, "  pid ", 6) &&
	     strncmp(t, "  used_", 7);
	     t = strchr(t, '\n') + 1) {
		char pos[64], tag[64];
		unsigned int pid;
		long long f[8];
		const char *row;

		ck_assert_int_eq(sscanf(t, "%63s %u %lld %lld %lld %lld %lld %lld %lld %lld", pos,
					&pid, &f[0], &f[1], &f[2], &f[3], &f[4], &f[5], &f[6],
					&f[7]),
				 10);
		if (!strcmp(pos, "tree"))
			snprintf(tag, sizeof(tag), "<tr class=\"tree\" data-tree=\"1\">");
		else
			snprintf(tag, sizeof(tag), "data-pid=\"%u\">", pid);
		row = strstr(view, tag);
		ck_assert_msg(row, "no row %s in the leaks view", tag);
		for (int k = 0; k < 4; k++) {
			ck_assert_int_eq(leak_cell(row, leak_classes[k], "bytes"), f[2 * k]);
			ck_assert_int_eq(leak_cell(row, leak_classes[k], "blocks"), f[2 * k + 1]);
		}
		rows++;
	}
	return rows;
}

/*
 * The leaks view of a tree with every class: leak_shapes tree (the parent's list, the child's
 * overwritten block), cache (still reachable) and interior (possibly lost), under sh, with
 * valgrind's suppression of the list's head in tree. The browser draws the table of classes with
 * the text report's figures, the suppressed ones too, one row per loss record the text prints (and
 * the still reachable ones, shown when asked for), and the largest blocks their class.
 */
START_TEST(html_leaks_view)
{
	const char *cmd[] = {"/bin/sh",
			     "-c",
			     "\"$1\" tree \"$1\"; \"$1\" cache; \"$1\" interior",
			     "sh",
			     FIXTURE("leak_shapes"),
			     NULL};
	const char *opts[] = {"--leaks", "--stacks", NULL};
	struct mt_out o;
	char *art = mt_record(MEMTRACK, NULL, opts, cmd, 120, &o), html[192], *text, *dom;
	const char *p, *tree;
	int records = 0, lost_rows = 0;

	ck_assert_msg(art && o.code == 0, "%s", o.err);
	mt_out_free(&o);
	snprintf(html, sizeof(html), "%s.html", art);
	report((const char *const[]){"--suppressions", TREE_SUPP, "--html", html, art, NULL});
	text = text_report(
	    (const char *const[]){"--suppressions", TREE_SUPP, "--top", "0", art, NULL});
	dom = view_dom(html, "weight=definite");
	expect_attr(dom, "<section id=\"leaks\"", "data-rendered", "1");
	expect_attr(dom, "<section id=\"leaks\"", "data-classes",
		    "definitely_lost,indirectly_lost,possibly_lost");
	/* sh's image and four leak_shapes ones are scanned; and the tree. */
	ck_assert_int_ge(expect_leak_table(text, dom), 5);
	/* The tree's line: the child's 1,000 bytes definitely lost, the head suppressed. */
	tree = strstr(dom, "<tr class=\"tree\" data-tree=\"1\">");
	ck_assert_int_eq(leak_cell(tree, "definitely_lost", "bytes") >= 1000, 1);
	ck_assert_int_eq(leak_cell(tree, "indirectly_lost", "bytes"), 864);
	ck_assert_int_ge(leak_cell(tree, "possibly_lost", "bytes"), 200);
	ck_assert_int_ge(leak_cell(tree, "still_reachable", "bytes"), 240);
	ck_assert_int_eq(leak_cell(tree, "suppressed", "bytes"), 96);
	ck_assert_int_eq(leak_cell(tree, "suppressed", "blocks"), 1);
	ck_assert_ptr_nonnull(strstr(text, "suppressed: 96 bytes in 1 blocks"));
	/* Each record the text prints is a row of the page, with its figures and stack. */
	for (p = text; (p = strstr(p, " in loss record ")); p++)
		records++;
	for (p = dom; (p = strstr(p, "<tr class=\"loss\" ")); p++)
		lost_rows += !!strncmp(strstr(p, "data-class=\"") + 12, "still_reachable", 15);
	ck_assert_int_eq(lost_rows, records);
	ck_assert_ptr_nonnull(strstr(text, "864 bytes in 9 blocks are indirectly lost"));
	p = strstr(dom, "data-class=\"indirectly_lost\"><td>pid ");
	ck_assert_msg(p, "no indirectly lost record: %.3000s", strstr(dom, "Loss records"));
	ck_assert_int_eq(leak_cell(p, "indirectly_lost", "bytes"), 864);
	ck_assert_int_eq(leak_cell(p, "indirectly_lost", "blocks"), 9);
	ck_assert_msg(strstr(p, "make_list"), "no stack: %.1500s", p);
	/* Still reachable records are there, hidden until their class is chosen. */
	p = strstr(dom, "<tr class=\"loss off-class\" ");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(strstr(p, "data-class=\"still_reachable\"><td>pid "));
	/* The largest blocks never freed, with their class: the overwritten 1,000 bytes. */
	p = strstr(dom, "<tr data-bytes=\"1000\"");
	ck_assert_msg(p, "no block of 1000 bytes: %.3000s", strstr(dom, "<section id=\"largest\""));
	ck_assert_ptr_nonnull(
	    strstr(p, "<td class=\"leak-class\" data-class=\"1\">definitely lost"));
	free(dom);
	/* The process selector shows sh's image alone (image 0): the other images' rows hidden. */
	dom = view_dom(html, "image=0");
	p = strstr(dom, "<section id=\"leaks\"");
	ck_assert_ptr_nonnull(p);
	ck_assert_ptr_nonnull(strstr(p, "<tr data-image=\"0\" data-pid="));
	for (const char *end = strstr(p, "</section>");
	     (p = strstr(p, " data-image=\"")) && p < end; p++) {
		const char *close = strchr(p, '>');
		bool hidden = memmem(p, (size_t)(close - p), " hidden", 7) != NULL;

		ck_assert_msg(hidden == (atoi(p + 13) != 0), "%.80s", p);
	}
	free(dom);
	/* The URL's fragment chooses the classes shown: the reachable ones alone. */
	dom = view_dom(html, "leaks=still_reachable");
	expect_attr(dom, "<section id=\"leaks\"", "data-classes", "still_reachable");
	ck_assert_ptr_nonnull(strstr(dom, "class=\"loss off-class\" data-image="));
	free(dom);
	free(text);
	unlink(html);
	unlink(art);
	free(art);
}
END_TEST

/* The <g> of frame name in a flamegraph box's DOM, as far as its '>' (to free). */
static char *diff_frame(const char *dom, const char *name)
{
	char tag[96];
	const char *p, *end;

	snprintf(tag, sizeof(tag), "<g class=\"frame\" data-name=\"%s\"", name);
	p = strstr(dom, tag);
	ck_assert_msg(p, "no frame %s in %.3000s", name, strstr(dom, "diff-flame-box"));
	end = strchr(p, '>');
	return strndup(p, (size_t)(end - p + 1));
}

/* Frame name has the new and base weights given, and the hue of its change (0 red, 220 blue). */
static void expect_diff_frame(const char *dom, const char *name, const char *new, const char *base,
			      const char *hue)
{
	char *g = diff_frame(dom, name), want[32];

	expect_attr(g, "<g ", "data-new", new);
	expect_attr(g, "<g ", "data-base", base);
	snprintf(want, sizeof(want), "data-fill=\"hsl(%s,", hue);
	ck_assert_msg(strstr(g, want), "%s is not colored %s", g, want);
	free(g);
}

/*
 * The comparison's page draws the new run's flamegraph colored by change (diff_sites a, then b:
 * fixtures/README.md): in bytes, kept doubled (1,000 -> 2,000) and added new (192) are red; with
 * the base run's widths dropped (5,000 -> 0) is drawn, blue; the other way round (b, then a)
 * kept shrank and is blue, dropped (5,000) red; the totals are the trees' bytes of the sites.
 */
START_TEST(html_diff_flamegraph)
{
	const char *a[] = {FIXTURE("diff_sites"), "a", NULL};
	const char *b[] = {FIXTURE("diff_sites"), "b", NULL};
	char *art[2] = {record("--stacks", a), record("--stacks", b)}, html[192], url[256], *dom;

	snprintf(html, sizeof(html), "%s.diff.html", art[0]);
	snprintf(url, sizeof(url), "file://%s#weight=bytes", html);
	report((const char *const[]){"--diff", "--html", html, art[0], art[1], NULL});
	dom = mt_browser_run(url, "--dump-dom", NULL);
	expect_attr(dom, "<div id=\"diff-flame-box\"", "data-rendered", "1");
	expect_attr(dom, "<div id=\"diff-flame-box\"", "data-weight", "bytes");
	expect_attr(dom, "<div id=\"diff-flame-box\"", "data-total-new", "6288");
	expect_attr(dom, "<div id=\"diff-flame-box\"", "data-total-base", "6000");
	expect_diff_frame(dom, "kept", "2000", "1000", "0");
	expect_diff_frame(dom, "added", "192", "0", "0");
	/* Gone from the new run: no width, not drawn. */
	ck_assert_ptr_null(strstr(dom, "data-name=\"dropped\""));
	expect_attr(dom, "<div id=\"diff-flame-box\"", "data-widths", "new");
	free(dom);
	/* The base run's widths, the same colors: dropped (5,000 -> 0) is there, blue. */
	snprintf(url, sizeof(url), "file://%s#weight=bytes&widths=base", html);
	dom = mt_browser_run(url, "--dump-dom", NULL);
	expect_attr(dom, "<div id=\"diff-flame-box\"", "data-widths", "base");
	expect_diff_frame(dom, "dropped", "0", "5000", "220");
	expect_diff_frame(dom, "kept", "2000", "1000", "0");
	ck_assert_ptr_null(strstr(dom, "data-name=\"added\""));
	free(dom);
	unlink(html);
	snprintf(url, sizeof(url), "file://%s#weight=bytes", html);

	report((const char *const[]){"--diff", "--html", html, art[1], art[0], NULL});
	dom = mt_browser_run(url, "--dump-dom", NULL);
	expect_attr(dom, "<div id=\"diff-flame-box\"", "data-total-new", "6000");
	expect_diff_frame(dom, "kept", "1000", "2000", "220");
	expect_diff_frame(dom, "dropped", "5000", "0", "0");
	free(dom);
	unlink(html);
	for (int i = 0; i < 2; i++) {
		unlink(art[i]);
		free(art[i]);
	}
}
END_TEST

/*
 * C++'s template arguments shortened on the page (docs/STACKS.md, "Short names"): a frame's
 * label and the tables' cells, the whole name kept in the frame's data-name (its tip) and the
 * cell's title. stk_inline_cxx's vector growth is 8 of its 12 allocations: a wide frame.
 */
START_TEST(html_short_names)
{
	const char *cmd[] = {FIXTURE("stk_inline_cxx"), NULL};
	struct mt_out o;
	char *art =
	    mt_record(MEMTRACK, NULL, (const char *const[]){"--stacks", NULL}, cmd, 120, &o);
	char html[192], *dom;

	ck_assert_msg(art && o.code == 0, "%s", o.err);
	mt_out_free(&o);
	snprintf(html, sizeof(html), "%s.html", art);
	report((const char *const[]){"--html", html, art, NULL});
	dom = view_dom(html, "weight=allocations");
	ck_assert_msg(strstr(dom, "<g class=\"frame\" data-name=\"std::vector&lt;int, "
				  "std::allocator&lt;int&gt; &gt;::push_back(int const&amp;)\""),
		      "%.3000s", dom);
	ck_assert_msg(strstr(dom, ">std::vector&lt;...&gt;::push_back(int const&amp;)</text>"),
		      "%.3000s", strstr(dom, "<svg") ? strstr(dom, "<svg") : dom);
	/* The table of the functions that call the allocator: std::string's growth. */
	ck_assert_msg(
	    strstr(dom, "<span title=\"std::__cxx11::basic_string&lt;char, "
			"std::char_traits&lt;char&gt;, std::allocator&lt;char&gt; "
			"&gt;::_M_mutate(unsigned long, unsigned long, char const*, unsigned "
			"long)\">std::__cxx11::basic_string&lt;...&gt;::_M_mutate(...)</span>"),
	    "%.3000s", strstr(dom, "_M_mutate") ? strstr(dom, "_M_mutate") : dom);
	free(dom);
	unlink(html);
	unlink(art);
	free(art);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("html");
	TCase *tc = tcase_create("exact");
	TCase *tools = tcase_create("tools");

	tcase_set_timeout(tc, 120);
	tcase_add_test(tc, svg_lines_of_forks4);
	suite_add_tcase(s, tc);
	/* The browser, which the kernel matrix's guest lacks. */
	tcase_set_tags(tools, "tools");
	tcase_set_timeout(tools, 600);
	mt_tcase_add_tool_test(tools, html_drawn_by_chromium, "chromium");
	mt_tcase_add_tool_test(tools, html_time_range, "chromium");
	mt_tcase_add_tool_test(tools, html_process_selector, "chromium");
	mt_tcase_add_tool_test(tools, html_bottom_up, "chromium");
	mt_tcase_add_tool_test(tools, html_short_names, "chromium");
	suite_add_tcase(s, tools);
	tools = tcase_create("leaks");
	tcase_set_tags(tools, "tools");
	tcase_set_timeout(tools, 600);
	mt_tcase_add_tool_test(tools, html_leak_weights, "chromium");
	mt_tcase_add_tool_test(tools, html_leaks_view, "chromium");
	suite_add_tcase(s, tools);
	tools = tcase_create("diff");
	tcase_set_tags(tools, "tools");
	tcase_set_timeout(tools, 600);
	mt_tcase_add_tool_test(tools, html_diff_flamegraph, "chromium");
	suite_add_tcase(s, tools);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
