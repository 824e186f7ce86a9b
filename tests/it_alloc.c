// SPDX-License-Identifier: GPL-2.0
/*
 * Exactness: memtrack run on fixtures with known truth (fixtures/README.md), every count and
 * byte total asserted per process, per file and in total; on-demand attach of allocators that
 * are dlopen'd, preloaded, static or exec'd; the stop sequences of those runs. Every test runs
 * twice: with smart probe placement (the default) and with --probe-placement=entry.
 */
#include <check.h>
#include <json-c/json.h>
#include <libgen.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define JE_TLS "GLIBC_TUNABLES=glibc.rtld.optional_static_tls=65536"

static const char *const placements[] = {"smart", "entry"};

struct run {
	struct json_object *report;
	char *stops;
	char *err;
	int code;
};

/* memtrack run the command, then memtrack report --json on its artifact. */
static struct run track(int placement, const char *const *env, const char *const *cmd)
{
	char dir[64], art[128], stops[128], opt[64];
	const char *argv[40] = {MEMTRACK,	 "run", "-q", "-o", art,
				"--trace-stops", stops, opt,  "--"};
	const char *rep[] = {MEMTRACK, "report", "--json", art, NULL};
	struct mt_out o, r;
	struct run res;
	int n = 9;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	snprintf(stops, sizeof(stops), "%s/stops.json", dir);
	snprintf(opt, sizeof(opt), "--probe-placement=%s", placements[placement]);
	for (int i = 0; cmd[i]; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, env, NULL, 120, &o), 0);
	res.code = o.code;
	res.err = o.err;
	free(o.out);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &r), 0);
	ck_assert_msg(r.code == 0, "report failed: %s", r.err);
	res.report = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(res.report);
	mt_out_free(&r);
	res.stops = mt_slurp_trace(stops);
	ck_assert_ptr_nonnull(res.stops);
	unlink(art);
	unlink(stops);
	rmdir(dir);
	return res;
}

static void run_free(struct run *r)
{
	json_object_put(r->report);
	free(r->stops);
	free(r->err);
}

struct truth {
	int64_t allocations, frees, reallocs, bytes, live_blocks, live_bytes;
};

static void assert_totals(struct json_object *t, const char *what, struct truth want)
{
	ck_assert_msg(mt_json_i64(t, "allocations") == want.allocations,
		      "%s: allocations %lld != %lld", what,
		      (long long)mt_json_i64(t, "allocations"), (long long)want.allocations);
	ck_assert_msg(mt_json_i64(t, "frees") == want.frees, "%s: frees %lld != %lld", what,
		      (long long)mt_json_i64(t, "frees"), (long long)want.frees);
	ck_assert_msg(mt_json_i64(t, "reallocs") == want.reallocs, "%s: reallocs %lld != %lld",
		      what, (long long)mt_json_i64(t, "reallocs"), (long long)want.reallocs);
	ck_assert_msg(mt_json_i64(t, "bytes_allocated") == want.bytes, "%s: bytes %lld != %lld",
		      what, (long long)mt_json_i64(t, "bytes_allocated"), (long long)want.bytes);
	if (want.live_blocks >= 0) {
		ck_assert_msg(
		    mt_json_i64(t, "live_blocks") == want.live_blocks, "%s: live %lld != %lld",
		    what, (long long)mt_json_i64(t, "live_blocks"), (long long)want.live_blocks);
		ck_assert_msg(mt_json_i64(t, "live_bytes") == want.live_bytes,
			      "%s: live bytes %lld != %lld", what,
			      (long long)mt_json_i64(t, "live_bytes"), (long long)want.live_bytes);
	}
}

static struct json_object *totals(struct run *r)
{
	struct json_object *t;

	ck_assert(json_object_object_get_ex(r->report, "totals", &t));
	ck_assert_int_eq(mt_json_i64(t, "dropped"), 0);
	return t;
}

/* The file record whose path contains needle, or NULL. */
static struct json_object *file_named(struct run *r, const char *needle)
{
	struct json_object *files, *f, *path;

	ck_assert(json_object_object_get_ex(r->report, "files", &files));
	for (size_t i = 0; i < json_object_array_length(files); i++) {
		f = json_object_array_get_idx(files, i);
		if (json_object_object_get_ex(f, "path", &path) &&
		    strstr(json_object_get_string(path), needle))
			return f;
	}
	return NULL;
}

static int files_with_probes(struct run *r)
{
	struct json_object *files;
	int n = 0;

	ck_assert(json_object_object_get_ex(r->report, "files", &files));
	for (size_t i = 0; i < json_object_array_length(files); i++)
		n += mt_json_i64(json_object_array_get_idx(files, i), "probes") > 0;
	return n;
}

START_TEST(leaks_exact)
{
	const char *cmd[] = {FIXTURE("leaks"), NULL};
	struct run r = track(_i, NULL, cmd);

	ck_assert_int_eq(r.code, 0);
	assert_totals(totals(&r), "leaks", (struct truth){100, 60, 0, 40400, 40, 16640});
	ck_assert_int_eq(mt_json_i64(totals(&r), "peak_bytes"), 40400);
	run_free(&r);
}
END_TEST

START_TEST(churn_exact)
{
	const char *cmd[] = {FIXTURE("churn"), "1000", NULL};
	struct run r = track(_i, NULL, cmd);

	assert_totals(totals(&r), "churn", (struct truth){1000, 1000, 0, 2011456, 0, 0});
	run_free(&r);
}
END_TEST

/* The reallocs of NULL and to 0 bytes of o, and Valgrind's allocs and frees from them. */
static void assert_realloc_shapes(struct json_object *o, int64_t null, int64_t zero,
				  int64_t vg_allocs, int64_t vg_frees)
{
	int64_t n = mt_json_i64(o, "realloc_null"), z = mt_json_i64(o, "realloc_zero");

	ck_assert_int_eq(n, null);
	ck_assert_int_eq(z, zero);
	/* docs/VALGRIND.md's relation, from the report alone. */
	ck_assert_int_eq(mt_json_i64(o, "allocations") + mt_json_i64(o, "reallocs") - z, vg_allocs);
	ck_assert_int_eq(mt_json_i64(o, "frees") + mt_json_i64(o, "reallocs") - n, vg_frees);
}

/*
 * Growth chain, realloc(NULL, n) (a tail call into malloc), realloc(p, 0), reallocarray; of the
 * reallocs, 2 of NULL and 1 to 0 bytes, counted apart in the totals, the process and the image.
 */
START_TEST(calloc_realloc_exact)
{
	const char *cmd[] = {FIXTURE("calloc_realloc"), NULL};
	struct run r = track(_i, NULL, cmd);
	struct json_object *procs, *images;

	assert_totals(totals(&r), "calloc_realloc", (struct truth){1, 2, 7, 4714, 0, 0});
	assert_realloc_shapes(totals(&r), 2, 1, 7, 7);
	ck_assert(json_object_object_get_ex(r.report, "processes", &procs));
	ck_assert(json_object_object_get_ex(r.report, "images", &images));
	ck_assert_int_eq(json_object_array_length(procs), 1);
	ck_assert_int_eq(json_object_array_length(images), 1);
	assert_realloc_shapes(json_object_array_get_idx(procs, 0), 2, 1, 7, 7);
	assert_realloc_shapes(json_object_array_get_idx(images, 0), 2, 1, 7, 7);
	run_free(&r);
}
END_TEST

/*
 * Temporary allocations (heaptrack's: freed right after their allocation) of a fixture whose
 * count is known; with --stacks, --folded=temporary charges them to main, its one caller.
 * heaptrack counts one more in this fixture: libstdc++, which its preloaded library brings
 * into the process, makes a temporary allocation of its own (fixtures/README.md).
 */
START_TEST(temporary_exact)
{
	const char *cmd[] = {FIXTURE("temporary"), NULL};
	const char *opts[] = {"--stacks", NULL};
	struct run r = track(_i, NULL, cmd);
	struct mt_out o, rep;
	char *art;

	assert_totals(totals(&r), "temporary", (struct truth){15, 15, 1, 1168, 0, 0});
	ck_assert_int_eq(mt_json_i64(totals(&r), "temporary"), 13);
	run_free(&r);

	art = mt_record(MEMTRACK, NULL, opts, cmd, 60, &o);
	ck_assert_ptr_nonnull(art);
	ck_assert_msg(o.code == 0, "%s", o.err);
	{
		const char *argv[] = {MEMTRACK, "report", "--folded=temporary", art, NULL};

		ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &rep), 0);
		ck_assert_msg(rep.code == 0, "%s", rep.err);
		ck_assert_msg(strstr(rep.out, ";main 13\n"), "%s", rep.out);
		mt_out_free(&rep);
	}
	mt_out_free(&o);
	unlink(art);
	free(art);
}
END_TEST

START_TEST(aligned_exact)
{
	const char *cmd[] = {FIXTURE("aligned"), NULL};
	struct run r = track(_i, NULL, cmd);

	/* One posix_memalign fails on purpose: counted as failed, nowhere else. */
	assert_totals(totals(&r), "aligned", (struct truth){5, 5, 0, 1968, 0, 0});
	ck_assert_int_eq(mt_json_i64(totals(&r), "failed"), 1);
	run_free(&r);
}
END_TEST

START_TEST(forks4_per_process)
{
	const char *cmd[] = {FIXTURE("forks4"), NULL};
	struct run r = track(_i, NULL, cmd);
	struct json_object *procs, *p;
	int seen = 0;

	assert_totals(totals(&r), "forks4", (struct truth){101, 95, 0, 10600, 6, 640});
	ck_assert(json_object_object_get_ex(r.report, "processes", &procs));
	ck_assert_int_eq(json_object_array_length(procs), 5);
	for (size_t i = 0; i < 5; i++) {
		int64_t k;

		p = json_object_array_get_idx(procs, i);
		if (mt_json_i64(p, "parent") == 0) {
			assert_totals(p, "parent", (struct truth){1, 1, 0, 1000, 0, 0});
			continue;
		}
		/* Child k makes 10 (k + 1) allocations of 32 (k + 1) bytes and leaks k. */
		k = mt_json_i64(p, "allocations") / 10 - 1;
		ck_assert(k >= 0 && k < 4);
		seen |= 1 << k;
		assert_totals(p, "child",
			      (struct truth){10 * (k + 1), 10 * (k + 1) - k, 0,
					     320 * (k + 1) * (k + 1), k, 32 * k * (k + 1)});
	}
	ck_assert_int_eq(seen, 0xf);
	run_free(&r);
}
END_TEST

/*
 * 8 threads x 1000 malloc/free pairs, plus glibc's per-thread blocks: one 272-byte DTV calloc'd
 * per thread, which glibc frees or keeps with the thread's cached stack depending on timing, and
 * at each thread's exit the release of its tcache (a block glibc allocated internally) and of the
 * chunk cached in it (freed by the thread already): 16 unmatched frees, not frees. So every block
 * seen is freed or live, exactly.
 */
START_TEST(threads8_exact)
{
	const char *cmd[] = {FIXTURE("threads8"), NULL};
	struct run r = track(_i, NULL, cmd);
	struct json_object *t = totals(&r);
	int64_t live = mt_json_i64(t, "live_blocks");

	assert_totals(t, "threads8", (struct truth){8008, 8000 + 8 - live, 0, 2306176, -1, -1});
	ck_assert_int_eq(mt_json_i64(t, "unmatched_frees"), 16);
	ck_assert(live >= 0 && live <= 8);
	ck_assert_int_eq(mt_json_i64(t, "live_bytes"), 272 * live);
	run_free(&r);
}
END_TEST

static int64_t dir_len(const char *path)
{
	char *copy = strdup(path);
	int64_t n = strlen(dirname(copy));

	free(copy);
	return n;
}

/* glibc static: its own malloc is found at exec; 5 start-up blocks, one holds the dir name. */
START_TEST(static_glibc_exact)
{
	const char *cmd[] = {FIXTURE("static_alloc"), NULL};
	const char *env[] = {"LD_LIBRARY_PATH=", NULL};
	struct run r = track(_i, env, cmd);
	int64_t d = dir_len(FIXTURE("static_alloc"));
	struct json_object *f = file_named(&r, "fixtures/static_alloc");

	assert_totals(totals(&r), "static",
		      (struct truth){15, 10, 0, 1747 + d + 10045, 5, 1747 + d});
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(f, "family")), "glibc");
	run_free(&r);
}
END_TEST

START_TEST(static_musl_exact)
{
	const char *cmd[] = {FIXTURE("musl_static"), NULL};
	struct run r = track(_i, NULL, cmd);
	struct json_object *f = file_named(&r, "fixtures/musl_static");

	assert_totals(totals(&r), "musl", (struct truth){10, 10, 0, 10045, 0, 0});
	ck_assert_ptr_nonnull(f);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(f, "family")), "musl");
	run_free(&r);
}
END_TEST

START_TEST(stripped_binary_exact)
{
	const char *cmd[] = {FIXTURE("stripped"), NULL};
	struct run r = track(_i, NULL, cmd);

	assert_totals(totals(&r), "stripped", (struct truth){10, 10, 0, 10045, 0, 0});
	run_free(&r);
}
END_TEST

/* A file with no symbols at all is reported, not silently skipped. */
START_TEST(no_symbols_is_reported)
{
	const char *cmd[] = {FIXTURE("nosyms"), NULL};
	struct run r = track(_i, NULL, cmd);

	ck_assert_int_eq(r.code, 0);
	ck_assert_ptr_nonnull(strstr(r.err, "nosyms has no symbol table"));
	ck_assert_ptr_nonnull(strstr(
	    r.stops, "\"path\":\"" FIXTURE(
			 "nosyms") "\",\"family\":\"none\",\"probes\":0,\"no_symbols\":true"));
	run_free(&r);
}
END_TEST

/* jemalloc dlopen'd in a plugin: every mallocx/sdallocx and malloc/free of the plugin counts. */
START_TEST(dlopen_jemalloc_exact)
{
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_jemalloc.so"), "100", NULL};
	const char *env[] = {JE_TLS, NULL};
	struct run r = track(_i, env, cmd);
	int64_t p = strlen(FIXTURE("plugin_jemalloc.so"));
	struct json_object *je = file_named(&r, "libjemalloc.so.2");

	ck_assert_int_eq(r.code, 0);
	ck_assert_ptr_nonnull(je);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(je, "family")), "jemalloc");
	assert_totals(je, "jemalloc", (struct truth){200, 200, 0, 333300, -1, -1});
	assert_totals(totals(&r), "total",
		      (struct truth){233, 204, 0, 92275 + 3 * p + 333300, -1, -1});
	/* Installed, never loaded: never attached. */
	ck_assert_ptr_null(file_named(&r, "tcmalloc"));
	ck_assert_ptr_null(file_named(&r, "mimalloc"));
	run_free(&r);
}
END_TEST

START_TEST(dlopen_mimalloc_exact)
{
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_mimalloc.so"), "100", NULL};
	struct run r = track(_i, NULL, cmd);
	int64_t p = strlen(FIXTURE("plugin_mimalloc.so"));
	struct json_object *mi = file_named(&r, "libmimalloc.so");

	ck_assert_ptr_nonnull(mi);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(mi, "family")), "mimalloc");
	assert_totals(mi, "mimalloc", (struct truth){100, 100, 0, 333300, -1, -1});
	assert_totals(totals(&r), "total",
		      (struct truth){111, 101, 0, 5194 + 3 * p + 333300, -1, -1});
	ck_assert_ptr_null(file_named(&r, "jemalloc"));
	run_free(&r);
}
END_TEST

/*
 * The stop sequence of a dlopen: one logged map stop per new file with probes (plugin_mimalloc.so
 * has none: its stop is not logged), then one record per file, identical across runs.
 */
START_TEST(dlopen_stop_sequence)
{
	const char *cmd[] = {FIXTURE("dlopen_plugin"), FIXTURE("plugin_mimalloc.so"), "10", NULL};
	struct run a = track(_i, NULL, cmd), b = track(_i, NULL, cmd);
	const char *kinds[] = {"exec", "map", "map", "exit", "gone"};
	const char *paths[] = {FIXTURE("dlopen_plugin"), "libc.so.6", "libmimalloc.so"};
	const char *line = a.stops;

	ck_assert_str_eq(a.stops, b.stops);
	for (size_t i = 0; i < 5; i++) {
		char want[64];

		ck_assert_msg(line && *line, "stop %zu missing", i);
		snprintf(want, sizeof(want), "\"seq\":%zu,\"kind\":\"%s\"", i, kinds[i]);
		ck_assert_msg(strncmp(strstr(line, "\"seq\""), want, strlen(want)) == 0,
			      "stop %zu: %.120s", i, line);
		if (i < 3)
			ck_assert_msg(strstr(line, paths[i]) &&
					  strstr(line, paths[i]) < strchr(line, '\n'),
				      "stop %zu: %.200s", i, line);
		line = strchr(line, '\n');
		line = line ? line + 1 : NULL;
	}
	ck_assert_int_eq(mt_count_lines(line, "{\"kind\":\"file\",\"path\":"), 5);
	ck_assert_int_eq(mt_count_lines(line, ""), 5);
	ck_assert_ptr_nonnull(strstr(a.stops, "\"family\":\"mimalloc\",\"probes\":"));
	run_free(&a);
	run_free(&b);
}
END_TEST

/*
 * The common way jemalloc is used: LD_PRELOAD. Its allocations are the ones counted. The variable
 * is set by env(1) inside the traced tree, so memtrack itself never runs with it.
 */
START_TEST(preload_jemalloc_exact)
{
	const char *cmd[] = {"/usr/bin/env", "LD_PRELOAD=libjemalloc.so.2",
			     FIXTURE("preload_target"), NULL};
	struct run r = track(_i, NULL, cmd);
	struct json_object *je = file_named(&r, "libjemalloc.so.2");

	ck_assert_ptr_nonnull(je);
	assert_totals(je, "jemalloc", (struct truth){18, 17, 1, 87204, -1, -1});
	run_free(&r);
}
END_TEST

/* jemalloc implements operator new/delete itself; delete forwards to free: counted once. */
START_TEST(preload_jemalloc_cxx_exact)
{
	const char *cmd[] = {"/usr/bin/env", "LD_PRELOAD=libjemalloc.so.2", FIXTURE("cxx_new"),
			     "1000", NULL};
	struct run r = track(_i, NULL, cmd);

	assert_totals(file_named(&r, "libjemalloc.so.2"), "jemalloc",
		      (struct truth){1001, 1000, 0, 2084160, -1, -1});
	run_free(&r);
}
END_TEST

START_TEST(cxx_through_libstdcxx_exact)
{
	const char *cmd[] = {FIXTURE("cxx_new"), "1000", NULL};
	struct run r = track(_i, NULL, cmd);
	struct json_object *cxx = file_named(&r, "libstdc++");

	/* libstdc++'s operator new forwards to malloc: probed in libc, not in libstdc++. */
	assert_totals(totals(&r), "cxx", (struct truth){1001, 1000, 0, 2084160, 1, 72704});
	ck_assert_ptr_nonnull(cxx);
	ck_assert_int_eq(mt_json_i64(cxx, "probes"), 0);
	run_free(&r);
}
END_TEST

/* A child execs a program whose allocator (jemalloc) the parent never loaded. */
START_TEST(exec_child_new_allocator)
{
	const char *cmd[] = {FIXTURE("exec_alloc_child"), FIXTURE("jemalloc_child"), "10", NULL};
	struct run r = track(_i, NULL, cmd);

	assert_totals(totals(&r), "total", (struct truth){24, 23, 0, 187694, 1, 72704});
	assert_totals(file_named(&r, "libjemalloc.so.2"), "jemalloc",
		      (struct truth){21, 20, 0, 172694, -1, -1});
	run_free(&r);
}
END_TEST

/* 8 threads dlopen 8 new plugins at once: each waits for its attach, each file once. */
START_TEST(dlopen_race_each_file_once)
{
	const char *cmd[] = {FIXTURE("dlopen_race"), MT_BUILD_DIR "/fixtures", "10", NULL};
	struct run r = track(_i, NULL, cmd);

	ck_assert_int_eq(r.code, 0);
	for (int k = 0; k < 8; k++) {
		char name[4200];

		snprintf(name, sizeof(name), "\"path\":\"%s/plugin_race_%d.so\",\"family\"",
			 MT_BUILD_DIR "/fixtures", k);
		ck_assert_msg(mt_count_lines(r.stops, name) == 1, "plugin %d: %d", k,
			      mt_count_lines(r.stops, name));
	}
	/* 58 blocks of dlopen's own, and 10 of each plugin (sizes 3000 + k). */
	ck_assert_int_eq(mt_json_i64(totals(&r), "allocations"), 58 + 80);
	run_free(&r);
}
END_TEST

/* 2 processes map one new library at the same moment: attached once, both counted. */
START_TEST(map_race_attached_once)
{
	const char *cmd[] = {FIXTURE("map_race"), FIXTURE("plugin_mimalloc.so"), "10", NULL};
	struct run r = track(_i, NULL, cmd);
	struct json_object *mi = file_named(&r, "libmimalloc.so");

	ck_assert_int_eq(r.code, 0);
	ck_assert_int_eq(mt_count_lines(r.stops, "\"family\":\"mimalloc\""), 1);
	ck_assert_ptr_nonnull(mi);
	assert_totals(mi, "mimalloc", (struct truth){20, 20, 0, 66660, -1, -1});
	ck_assert_int_eq(mt_json_i64(totals(&r), "allocations"), 42);
	run_free(&r);
}
END_TEST

/* python3 loading ssl and sqlite3: libc is the only allocator; one stop per new file. */
START_TEST(python_attaches_libc_only)
{
	const char *cmd[] = {"python3", "-c", "import ssl, sqlite3", NULL};
	struct run r = track(_i, NULL, cmd);
	struct json_object *libc = file_named(&r, "libc.so.6");

	ck_assert_int_eq(r.code, 0);
	ck_assert_ptr_nonnull(libc);
	ck_assert_int_gt(mt_json_i64(libc, "probes"), 0);
	ck_assert_int_eq(files_with_probes(&r), 1);
	ck_assert_ptr_nonnull(file_named(&r, "libssl"));
	ck_assert_int_eq(mt_count_lines(r.stops, "\"kind\":\"map\""),
			 mt_count_lines(r.stops, "\"kind\":\"map\",\"path\":"));
	ck_assert_int_gt(mt_json_i64(totals(&r), "allocations"), 1000);
	run_free(&r);
}
END_TEST

/*
 * The default ring is enough for the fastest producer here: a churn whose events (56 MB with the
 * ring's headers) are 27 times the ring's 2 MiB loses none of them (the consumer keeps up, or
 * back-pressure holds churn).
 */
START_TEST(default_ring_keeps_up)
{
	const char *cmd[] = {FIXTURE("churn"), "500000", NULL};
	struct run r = track(0, NULL, cmd);
	struct json_object *t = totals(&r);

	assert_totals(t, "churn", (struct truth){500000, 500000, 0, 1027942656, 0, 0});
	ck_assert_int_eq(mt_json_i64(t, "dropped"), 0);
	run_free(&r);
}
END_TEST

/* memtrack killed: its tree dies with it, and the artifact is a readable, truncated prefix. */
START_TEST(killed_run_leaves_truncated_artifact)
{
	char dir[64], art[128], line[16] = "";
	const char *argv[] = {MEMTRACK, "run", "-q", "-o", art, "--", FIXTURE("ignore_term"),
			      "20",	NULL};
	const char *rep[] = {MEMTRACK, "report", "--json", art, NULL};
	struct json_object *doc;
	struct mt_out r;
	int fd, status, tries = 0;
	pid_t pid;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	pid = mt_spawn_piped(argv, &fd);
	ck_assert_int_gt(pid, 0);
	ck_assert_int_eq(read(fd, line, 6), 6);
	ck_assert_str_eq(line, "ready\n");
	kill(pid, SIGKILL);
	ck_assert_int_eq(waitpid(pid, &status, 0), pid);
	/* PTRACE_O_EXITKILL: the command is killed with its tracer (its pipe end closes). */
	while (read(fd, line, 1) > 0 && tries++ < 100)
		;
	close(fd);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &r), 0);
	ck_assert_int_eq(r.code, 0);
	doc = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(doc);
	ck_assert(json_object_get_boolean(json_object_object_get(doc, "truncated")));
	json_object_put(doc);
	mt_out_free(&r);
	unlink(art);
	rmdir(dir);
}
END_TEST

static long long valgrind_field(const char *text, const char *after)
{
	const char *p = strstr(text, after);

	ck_assert_msg(p != NULL, "valgrind printed no '%s': %s", after, text);
	p += strlen(after);
	return strtoll(p, NULL, 10);
}

/* Valgrind's count with commas removed: "1,234" -> 1234. */
static long long valgrind_num(const char *text, const char *before_field)
{
	char *copy = strdup(text), *w = copy;
	long long v;

	for (const char *r = text; *r; r++)
		if (*r != ',')
			*w++ = *r;
	*w = '\0';
	v = valgrind_field(copy, before_field);
	free(copy);
	return v;
}

/*
 * The oracle on a real program: valgrind counts a realloc as an allocation, so its "allocs" is
 * memtrack's allocations + reallocs; bytes and what is live at exit agree exactly (glibc's
 * exit-time freeing, which valgrind adds, is turned off).
 */
START_TEST(matches_valgrind_on_ls)
{
	const char *cmd[] = {"ls", "-la", "/usr/lib", NULL};
	const char *vg[] = {"valgrind", "--run-libc-freeres=no", "ls", "-la", "/usr/lib", NULL};
	struct run r = track(0, NULL, cmd);
	struct json_object *t = totals(&r);
	struct mt_out v;

	ck_assert_int_eq(mt_run(vg, NULL, NULL, 120, &v), 0);
	ck_assert_int_eq(mt_json_i64(t, "allocations") + mt_json_i64(t, "reallocs"),
			 valgrind_num(v.err, "total heap usage: "));
	ck_assert_int_eq(mt_json_i64(t, "bytes_allocated"), valgrind_num(v.err, "frees "));
	ck_assert_int_eq(mt_json_i64(t, "live_bytes"), valgrind_num(v.err, "in use at exit: "));
	ck_assert_int_eq(mt_json_i64(t, "live_blocks"), valgrind_num(v.err, "bytes in "));
	mt_out_free(&v);
	run_free(&r);
}
END_TEST

/* fentry is refused on the test machines: one clear sentence; where it works, it is named. */
START_TEST(watcher_choice)
{
	const char *fentry[] = {
	    MEMTRACK, "run", "-o", "/dev/null", "--watcher=fentry", "--", FIXTURE("exit_code"),
	    "0",      NULL};
	const char *autow[] = {
	    MEMTRACK, "run", "-o", "/dev/null", "--watcher=auto", "--", FIXTURE("exit_code"),
	    "0",      NULL};
	struct mt_out o;
	bool has_fentry;

	ck_assert_int_eq(mt_run(fentry, NULL, NULL, 60, &o), 0);
	has_fentry = o.code == 0;
	if (has_fentry) {
		ck_assert_ptr_nonnull(strstr(o.err, "watcher: fentry"));
	} else {
		ck_assert_int_eq(o.code, 1);
		ck_assert_int_eq(mt_count_lines(o.err, ""), 1);
		ck_assert_ptr_nonnull(strstr(o.err, "the fentry watcher is not available"));
	}
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(autow, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 0);
	ck_assert_ptr_nonnull(
	    strstr(o.err, has_fentry ? "watcher: fentry" : "watcher: tracepoint"));
	mt_out_free(&o);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("alloc");
	TCase *tc = tcase_create("exact");
	TCase *once = tcase_create("once");
	TCase *tools = tcase_create("tools");

	tcase_set_timeout(tc, 300);
	tcase_add_loop_test(tc, leaks_exact, 0, 2);
	tcase_add_loop_test(tc, churn_exact, 0, 2);
	tcase_add_loop_test(tc, calloc_realloc_exact, 0, 2);
	tcase_add_loop_test(tc, temporary_exact, 0, 2);
	tcase_add_loop_test(tc, aligned_exact, 0, 2);
	tcase_add_loop_test(tc, forks4_per_process, 0, 2);
	tcase_add_loop_test(tc, threads8_exact, 0, 2);
	tcase_add_loop_test(tc, static_glibc_exact, 0, 2);
	tcase_add_loop_test(tc, static_musl_exact, 0, 2);
	tcase_add_loop_test(tc, stripped_binary_exact, 0, 2);
	tcase_add_loop_test(tc, no_symbols_is_reported, 0, 2);
	tcase_add_loop_test(tc, dlopen_jemalloc_exact, 0, 2);
	tcase_add_loop_test(tc, dlopen_mimalloc_exact, 0, 2);
	tcase_add_loop_test(tc, dlopen_stop_sequence, 0, 2);
	tcase_add_loop_test(tc, preload_jemalloc_exact, 0, 2);
	tcase_add_loop_test(tc, preload_jemalloc_cxx_exact, 0, 2);
	tcase_add_loop_test(tc, cxx_through_libstdcxx_exact, 0, 2);
	tcase_add_loop_test(tc, exec_child_new_allocator, 0, 2);
	tcase_add_loop_test(tc, dlopen_race_each_file_once, 0, 2);
	tcase_add_loop_test(tc, map_race_attached_once, 0, 2);
	suite_add_tcase(s, tc);
	tcase_set_timeout(once, 120);
	tcase_add_test(once, watcher_choice);
	tcase_add_test(once, killed_run_leaves_truncated_artifact);
	tcase_add_test(once, default_ring_keeps_up);
	suite_add_tcase(s, once);
	/* The tests that need gdb, valgrind or python3, which the kernel matrix's guest lacks. */
	tcase_set_tags(tools, "tools");
	tcase_set_timeout(tools, 120);
	mt_add_tool_test(tools, python_attaches_libc_only, 0, 1, "python3");
	mt_tcase_add_tool_test(tools, matches_valgrind_on_ls, "valgrind");
	suite_add_tcase(s, tools);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
