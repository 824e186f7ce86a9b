// SPDX-License-Identifier: GPL-2.0
/*
 * What the BPF side sees in less usual places: memtrack in a pid namespace (a container), files
 * replaced under the same inode number, allocator calls that fail, C++ exceptions thrown through
 * a probed operator new. Every count is exact (fixtures/README.md).
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

/* memtrack in a new pid namespace with its own /proc, as a container runs it. */
#define IN_PIDNS "unshare", "--pid", "--fork", "--mount-proc"

struct run {
	struct json_object *report;
	char *out;
	char *err;
	int code;
};

/*
 * Run pre (NULL-terminated, may be empty: what memtrack runs under), then memtrack run on cmd,
 * then memtrack report --json on the artifact.
 */
static struct run track_opt(const char *const *pre, const char *opt, const char *const *env,
			    const char *const *cmd)
{
	const char *rep[] = {MEMTRACK, "report", "--json", NULL, NULL};
	const char *argv[48];
	char dir[64], art[128];
	struct mt_out o, r;
	struct run res;
	int n = 0;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	for (int i = 0; pre && pre[i]; i++)
		argv[n++] = pre[i];
	argv[n++] = MEMTRACK;
	argv[n++] = "run";
	argv[n++] = "-q";
	argv[n++] = "-o";
	argv[n++] = art;
	if (opt)
		argv[n++] = opt;
	argv[n++] = "--";
	for (int i = 0; cmd[i]; i++)
		argv[n++] = cmd[i];
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, env, NULL, 120, &o), 0);
	res.code = o.code;
	res.out = o.out;
	res.err = o.err;
	rep[3] = art;
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &r), 0);
	ck_assert_msg(r.code == 0, "report failed: %s (memtrack said: %s)", r.err, res.err);
	res.report = json_tokener_parse(r.out);
	ck_assert_ptr_nonnull(res.report);
	mt_out_free(&r);
	unlink(art);
	rmdir(dir);
	return res;
}

static struct run track(const char *const *pre, const char *const *env, const char *const *cmd)
{
	return track_opt(pre, NULL, env, cmd);
}

static void run_free(struct run *r)
{
	json_object_put(r->report);
	free(r->out);
	free(r->err);
}

static struct json_object *totals(struct run *r)
{
	struct json_object *t;

	ck_assert(json_object_object_get_ex(r->report, "totals", &t));
	ck_assert_int_eq(mt_json_i64(t, "dropped"), 0);
	return t;
}

/* The counts a test compares, in one line: "allocations frees reallocs failed bytes live". */
static void counts(struct json_object *o, char *buf, size_t size)
{
	snprintf(buf, size, "%lld %lld %lld %lld %lld %lld",
		 (long long)mt_json_i64(o, "allocations"), (long long)mt_json_i64(o, "frees"),
		 (long long)mt_json_i64(o, "reallocs"), (long long)mt_json_i64(o, "failed"),
		 (long long)mt_json_i64(o, "bytes_allocated"),
		 (long long)mt_json_i64(o, "live_blocks"));
}

static int cmp_str(const void *a, const void *b)
{
	return strcmp(*(char *const *)a, *(char *const *)b);
}

/* Every process's counts, sorted, one per line: what must not depend on where memtrack runs. */
static char *process_counts(struct run *r)
{
	struct json_object *procs;
	char *lines[64], *all;
	size_t n, len = 0;

	ck_assert(json_object_object_get_ex(r->report, "processes", &procs));
	n = json_object_array_length(procs);
	ck_assert(n > 0 && n <= 64);
	for (size_t i = 0; i < n; i++) {
		lines[i] = malloc(128);
		ck_assert_ptr_nonnull(lines[i]);
		counts(json_object_array_get_idx(procs, i), lines[i], 128);
	}
	qsort(lines, n, sizeof(*lines), cmp_str);
	all = calloc(n, 129);
	ck_assert_ptr_nonnull(all);
	for (size_t i = 0; i < n; i++) {
		len += sprintf(all + len, "%s\n", lines[i]);
		free(lines[i]);
	}
	return all;
}

/* ---- item: memtrack inside a pid namespace ----------------------------------------------- */

static const char *const pidns[] = {IN_PIDNS, NULL};

/* The fixture's processes and counts are the same inside a pid namespace as outside it. */
static void same_inside_pidns(const char *const *cmd, const char *want_totals)
{
	struct run out = track(NULL, NULL, cmd), in = track(pidns, NULL, cmd);
	char *pa = process_counts(&out), *pb = process_counts(&in);
	char tot[128];

	ck_assert_int_eq(out.code, 0);
	ck_assert_msg(in.code == 0, "in a pid namespace: exit %d: %s", in.code, in.err);
	counts(totals(&in), tot, sizeof(tot));
	ck_assert_str_eq(tot, want_totals);
	counts(totals(&out), tot, sizeof(tot));
	ck_assert_str_eq(tot, want_totals);
	ck_assert_str_eq(pb, pa);
	free(pa);
	free(pb);
	run_free(&out);
	run_free(&in);
}

START_TEST(pidns_single_process)
{
	const char *cmd[] = {FIXTURE("leaks"), NULL};

	same_inside_pidns(cmd, "100 60 0 0 40400 40");
}
END_TEST

/* A parent and 4 children, each with its own counts: the fork tracepoint's pids are right. */
START_TEST(pidns_fork_tree)
{
	const char *cmd[] = {FIXTURE("forks4"), NULL};

	same_inside_pidns(cmd, "101 95 0 0 10600 6");
}
END_TEST

/*
 * 8 threads, every event's tid in the namespace. How many of glibc's per-thread blocks are still
 * live at exit depends on timing (see it_alloc's threads8_exact): that one number is not compared.
 */
START_TEST(pidns_threads)
{
	const char *cmd[] = {FIXTURE("threads8"), NULL};
	struct run in = track(pidns, NULL, cmd);
	struct json_object *t = totals(&in);
	int64_t live = mt_json_i64(t, "live_blocks");

	ck_assert_msg(in.code == 0, "exit %d: %s", in.code, in.err);
	ck_assert_int_eq(mt_json_i64(t, "allocations"), 8008);
	ck_assert_int_eq(mt_json_i64(t, "bytes_allocated"), 2306176);
	ck_assert(live >= 0 && live <= 8);
	ck_assert_int_eq(mt_json_i64(t, "frees"), 8000 + 8 - live);
	ck_assert_int_eq(mt_json_i64(t, "unmatched_frees"), 16);
	run_free(&in);
}
END_TEST

/*
 * The command makes a pid namespace of its own, one level below memtrack's: its processes are
 * found by walking their pids, inside a namespace or not. The leaks process counts exactly.
 */
static void nested_pidns(const char *const *pre)
{
	const char *cmd[] = {"unshare", "--pid", "--fork", FIXTURE("leaks"), NULL};
	struct run r = track(pre, NULL, cmd);
	struct json_object *procs, *p, *exe;
	int found = 0;
	char c[128];

	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	ck_assert(json_object_object_get_ex(r.report, "processes", &procs));
	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		p = json_object_array_get_idx(procs, i);
		if (!json_object_object_get_ex(p, "exe", &exe) ||
		    !strstr(json_object_get_string(exe), "fixtures/leaks"))
			continue;
		counts(p, c, sizeof(c));
		ck_assert_str_eq(c, "100 60 0 0 40400 40");
		found++;
	}
	ck_assert_int_eq(found, 1);
	run_free(&r);
}

START_TEST(pidns_command_nests_deeper)
{
	nested_pidns(NULL);
	nested_pidns(pidns);
}
END_TEST

/* A /proc of another pid namespace would name other processes: one sentence, no run. */
START_TEST(pidns_foreign_proc_refused)
{
	const char *argv[] = {"unshare",   "--pid", "--fork",
			      MEMTRACK,	   "run",   "-o",
			      "/dev/null", "--",    FIXTURE("exit_code"),
			      "3",	   NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 1);
	ck_assert_int_eq(mt_count_lines(o.err, ""), 1);
	ck_assert_ptr_nonnull(strstr(o.err, "/proc belongs to another pid namespace"));
	mt_out_free(&o);
}
END_TEST

/* ---- item: a file replaced under the same inode number ---------------------------------- */

/* The process records whose exe is path, and the one file record of that path. */
static int procs_of(struct run *r, const char *path, struct json_object **out, int max)
{
	struct json_object *procs, *p, *exe;
	int n = 0;

	ck_assert(json_object_object_get_ex(r->report, "processes", &procs));
	for (size_t i = 0; i < json_object_array_length(procs); i++) {
		p = json_object_array_get_idx(procs, i);
		if (json_object_object_get_ex(p, "exe", &exe) &&
		    !strcmp(json_object_get_string(exe), path) && n < max)
			out[n++] = p;
	}
	return n;
}

static int files_named(struct run *r, const char *path, struct json_object **last)
{
	struct json_object *files, *f, *fp;
	int n = 0;

	ck_assert(json_object_object_get_ex(r->report, "files", &files));
	for (size_t i = 0; i < json_object_array_length(files); i++) {
		f = json_object_array_get_idx(files, i);
		if (json_object_object_get_ex(f, "path", &fp) &&
		    !strcmp(json_object_get_string(fp), path)) {
			*last = f;
			n++;
		}
	}
	return n;
}

/*
 * A dynamic program (nothing to probe in it) runs from DIR/p and is deleted; the static one
 * copied there next takes the same inode number (ext4 hands a freed number out again at once;
 * the script copies until it does, and prints both numbers), and is a new file to probe.
 */
START_TEST(reused_inode_is_a_new_file)
{
	const char *script =
	    "d=$1; rm -f $d/q*; cp \"$2\" $d/p; i=$(stat -c %i $d/p); $d/p || exit 2; rm $d/p; "
	    "n=0; "
	    "until cp \"$3\" $d/q$n && [ $(stat -c %i $d/q$n) = $i ]; do "
	    "n=$((n+1)); [ $n -lt 64 ] || exit 3; done; "
	    "mv $d/q$n $d/p; rm -f $d/q*; echo $i $(stat -c %i $d/p); LD_LIBRARY_PATH= $d/p";
	char dir[64], exe[96];
	const char *cmd[] = {
	    "sh", "-c", script, "sh", dir, FIXTURE("stripped"), FIXTURE("static_alloc"), NULL};
	struct json_object *f;
	unsigned long i1 = 0, i2 = 1;
	int64_t d;
	struct run r;

	mt_tmpdir(dir);
	snprintf(exe, sizeof(exe), "%s/p", dir);
	d = strlen(dir);
	/*
	 * Exit 3: another process on the machine took the freed inode number first, so the scenario
	 * was never set up; only that is tried again.
	 */
	for (int attempt = 0;; attempt++) {
		r = track(NULL, NULL, cmd);
		if (r.code != 3 || attempt == 9)
			break;
		run_free(&r);
	}
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	ck_assert_int_eq(sscanf(r.out, "%lu %lu", &i1, &i2), 2);
	ck_assert_msg(i1 == i2, "the inode number did not repeat: %lu, %lu", i1, i2);
	/* Two files at that path: the dynamic one with nothing to probe, the static one probed. */
	ck_assert_int_eq(files_named(&r, exe, &f), 2);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(f, "family")), "glibc");
	ck_assert_int_eq(mt_json_i64(f, "allocations"), 15);
	ck_assert_int_eq(mt_json_i64(f, "frees"), 10);
	ck_assert_int_eq(mt_json_i64(f, "bytes_allocated"), 1747 + d + 10045);
	unlink(exe);
	rmdir(dir);
	run_free(&r);
}
END_TEST

/*
 * A probed file whose ctime changes (touch) between two uses is the same file: probed once, so
 * each use counts once. Both ways a file is met: exec (static), and mmap (a library dlopen'd).
 */
START_TEST(touched_file_is_the_same_file)
{
	const char *script =
	    "d=$1; cp \"$2\" $d/p; cp -L \"$3\" $d/libmimalloc.so.2; $d/p || exit 2; "
	    "LD_LIBRARY_PATH=$d \"$4\" \"$5\" 100 || exit 3; touch $d/p $d/libmimalloc.so.2; "
	    "$d/p || exit 4; LD_LIBRARY_PATH=$d exec \"$4\" \"$5\" 100";
	char dir[64], exe[96], lib[96], want[128];
	const char *cmd[] = {"sh",
			     "-c",
			     script,
			     "sh",
			     dir,
			     FIXTURE("static_alloc"),
			     "/usr/lib/x86_64-linux-gnu/libmimalloc.so.2",
			     FIXTURE("dlopen_plugin"),
			     FIXTURE("plugin_mimalloc.so"),
			     NULL};
	struct json_object *p[4], *f;
	struct run r;
	char c[128];

	mt_tmpdir(dir);
	snprintf(exe, sizeof(exe), "%s/p", dir);
	snprintf(lib, sizeof(lib), "%s/libmimalloc.so.2", dir);
	r = track(NULL, NULL, cmd);
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	ck_assert_int_eq(procs_of(&r, exe, p, 4), 2);
	snprintf(want, sizeof(want), "15 10 0 0 %lld 5", (long long)(1747 + strlen(dir) + 10045));
	for (int i = 0; i < 2; i++) {
		counts(p[i], c, sizeof(c));
		ck_assert_str_eq(c, want);
	}
	ck_assert_int_eq(files_named(&r, exe, &f), 1);
	ck_assert_int_eq(files_named(&r, lib, &f), 1);
	ck_assert_str_eq(json_object_get_string(json_object_object_get(f, "family")), "mimalloc");
	/* dlopen_plugin plugin_mimalloc.so 100, twice: 100 mi_malloc/mi_free pairs each. */
	ck_assert_int_eq(mt_json_i64(f, "allocations"), 200);
	ck_assert_int_eq(mt_json_i64(f, "frees"), 200);
	ck_assert_int_eq(mt_json_i64(f, "bytes_allocated"), 666600);
	unlink(exe);
	unlink(lib);
	rmdir(dir);
	run_free(&r);
}
END_TEST

/* ---- item: calls that fail -------------------------------------------------------------- */

/*
 * calloc and reallocarray whose n * size overflows, and a realloc too large: each fails, and a
 * failed realloc keeps its block (the peak proves the block stayed live until its free).
 */
START_TEST(failed_calls_exact)
{
	const char *cmd[] = {FIXTURE("alloc_fail"), NULL};
	struct run r = track(NULL, NULL, cmd);
	struct json_object *t = totals(&r);
	char c[128];

	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	counts(t, c, sizeof(c));
	ck_assert_str_eq(c, "2 2 0 3 200 0");
	ck_assert_int_eq(mt_json_i64(t, "peak_bytes"), 200);
	run_free(&r);
}
END_TEST

/* ---- item: an exception through a probed operator new ---------------------------------- */

#define JEMALLOC "/usr/lib/x86_64-linux-gnu/libjemalloc.so.2"

static struct json_object *file_record(struct run *r, const char *path)
{
	struct json_object *f = NULL;

	ck_assert_int_eq(files_named(r, path, &f), 1);
	return f;
}

/*
 * jemalloc implements operator new, which throws std::bad_alloc: the program catches it and
 * runs on, exactly as without memtrack (a return probe's trampoline on operator new made the
 * unwinder fail: SIGABRT). Counts: 2N new[]/delete[] and libstdc++'s pool, the failed new as
 * failed. The exception object is malloc'd inside the failing operator new, so the depth guard
 * does not count it; its release after the handler is an unmatched free (a block not seen).
 * With mode "exit" the handler ends the process before anything else runs: the failed new is
 * known only at the thread's end (handle_exit_in_call), and the exception object is never freed.
 */
static void bad_alloc_under(const char *placement, const char *mode, const char *counts)
{
	const char *cmd[] = {
	    "/usr/bin/env", "LD_PRELOAD=" JEMALLOC, FIXTURE("bad_alloc"), "10", mode, NULL};
	struct mt_out plain;
	struct json_object *je;
	struct run r;
	char c[128];

	ck_assert_int_eq(mt_run(cmd, NULL, NULL, 60, &plain), 0);
	ck_assert_int_eq(plain.code, 0);
	ck_assert_str_eq(plain.out, "caught bad_alloc\n");
	r = track_opt(NULL, placement, NULL, cmd);
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	ck_assert_str_eq(r.out, plain.out);
	je = file_record(&r, JEMALLOC);
	snprintf(
	    c, sizeof(c), "%lld %lld %lld %lld %lld", (long long)mt_json_i64(je, "allocations"),
	    (long long)mt_json_i64(je, "frees"), (long long)mt_json_i64(je, "unmatched_frees"),
	    (long long)mt_json_i64(je, "failed"), (long long)mt_json_i64(je, "bytes_allocated"));
	ck_assert_str_eq(c, counts);
	mt_out_free(&plain);
	run_free(&r);
}

START_TEST(bad_alloc_caught_with_jemalloc)
{
	bad_alloc_under("--probe-placement=smart", NULL, "21 20 1 1 74704");
	bad_alloc_under("--probe-placement=entry", NULL, "21 20 1 1 74704");
}
END_TEST

/* The process ends inside the handler: the failed new is recorded at its thread's end. */
START_TEST(bad_alloc_then_exit_with_jemalloc)
{
	bad_alloc_under("--probe-placement=smart", "exit", "11 10 0 1 73704");
	bad_alloc_under("--probe-placement=entry", "exit", "11 10 0 1 73704");
}
END_TEST

#define TCMALLOC "/usr/lib/x86_64-linux-gnu/libtcmalloc.so.4"

/* tcmalloc's bad_alloc, a run of the program under it: exit status, output, tcmalloc's counts. */
static void tcmalloc_run(const char *n, long long got[4])
{
	const char *cmd[] = {"/usr/bin/env", "LD_PRELOAD=" TCMALLOC, FIXTURE("bad_alloc"), n, NULL};
	struct run r = track(NULL, NULL, cmd);
	struct json_object *files, *f, *path;
	int found = 0;

	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	ck_assert_str_eq(r.out, "caught bad_alloc\n");
	ck_assert(json_object_object_get_ex(r.report, "files", &files));
	for (size_t i = 0; i < json_object_array_length(files); i++) {
		f = json_object_array_get_idx(files, i);
		if (!json_object_object_get_ex(f, "path", &path) ||
		    !strstr(json_object_get_string(path), "libtcmalloc"))
			continue;
		got[0] = mt_json_i64(f, "allocations");
		got[1] = mt_json_i64(f, "frees");
		got[2] = mt_json_i64(f, "failed");
		got[3] = mt_json_i64(f, "bytes_allocated");
		found++;
	}
	ck_assert_int_eq(found, 1);
	run_free(&r);
}

/*
 * tcmalloc's operator new reaches its slow path through a PLT stub of its own: followed there.
 * Its start-up allocations are its own business; 10 more new/delete pairs are exactly 10 more.
 */
START_TEST(bad_alloc_caught_with_tcmalloc)
{
	long long a[4], b[4];

	tcmalloc_run("10", a);
	tcmalloc_run("20", b);
	ck_assert_int_eq(a[2], 1);
	ck_assert_int_eq(b[2], 1);
	ck_assert_int_eq(b[0] - a[0], 20);
	ck_assert_int_eq(b[1] - a[1], 20);
	ck_assert_int_eq(b[3] - a[3], 2000);
}
END_TEST

/* Without jemalloc, libstdc++'s operator new forwards to malloc: the failed malloc is counted. */
START_TEST(bad_alloc_caught_with_libstdcxx)
{
	const char *cmd[] = {FIXTURE("bad_alloc"), "10", NULL};
	struct run r = track(NULL, NULL, cmd);

	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	ck_assert_str_eq(r.out, "caught bad_alloc\n");
	ck_assert_int_eq(mt_json_i64(totals(&r), "failed"), 1);
	run_free(&r);
}
END_TEST

/* ---- item: the CO-RE target kept for the boot (src/tracker/tracker_btf_cache.c) ---------- */

static const char walked[] = "memtrack: CO-RE target: the kernel's BTF read and walked";
static const char from_kept[] = "memtrack: CO-RE target: this boot's, from ";

/*
 * bad_alloc under jemalloc, ending in its handler, with memtrack's runtime directory rt: the
 * failed new is settled at the thread's end by handle_exit_in_call, a tracing program loaded at
 * jemalloc's file with the attach target the walk found (or the kept file gave). Exact counts.
 */
static struct run run_kept(const char *rt)
{
	char var[128];
	const char *env[] = {var, NULL};
	const char *cmd[] = {
	    "/usr/bin/env", "LD_PRELOAD=" JEMALLOC, FIXTURE("bad_alloc"), "10", "exit", NULL};
	struct json_object *je;
	struct run r;
	char c[128];

	snprintf(var, sizeof(var), "MEMTRACK_RUNTIME_DIR=%s", rt);
	r = track_opt(NULL, "-v", env, cmd);
	ck_assert_msg(r.code == 0, "exit %d: %s", r.code, r.err);
	je = file_record(&r, JEMALLOC);
	snprintf(c, sizeof(c), "%lld %lld %lld %lld", (long long)mt_json_i64(je, "allocations"),
		 (long long)mt_json_i64(je, "frees"), (long long)mt_json_i64(je, "failed"),
		 (long long)mt_json_i64(je, "bytes_allocated"));
	ck_assert_str_eq(c, "11 10 1 73704");
	return r;
}

/* The one kept file in rt (core-BUILDID.btf), its path in path; 0 when there is none. */
static int kept_file(const char *rt, char *path, size_t size)
{
	char cmd[256];
	struct mt_out o;
	int n;

	snprintf(cmd, sizeof(cmd), "ls -A %s", rt);
	ck_assert_int_eq(
	    mt_run((const char *const[]){"/bin/sh", "-c", cmd, NULL}, NULL, NULL, 10, &o), 0);
	n = mt_count_lines(o.out, "");
	if (n == 1) {
		o.out[strcspn(o.out, "\n")] = '\0';
		ck_assert_msg(!strncmp(o.out, "core-", 5) && strstr(o.out, ".btf"), "%s", o.out);
		snprintf(path, size, "%s/%s", rt, o.out);
	}
	mt_out_free(&o);
	return n;
}

static void assert_walked_and_kept(const struct run *r, const char *rt)
{
	char want[160];

	snprintf(want, sizeof(want), "kept in %s/core-", rt);
	ck_assert_msg(strstr(r->err, walked) && strstr(r->err, want), "%s", r->err);
	ck_assert_ptr_null(strstr(r->err, from_kept));
}

/* The first run walks and keeps (root's, 0600); the next takes the kept file, with the same counts.
 */
START_TEST(kept_target_serves_the_next_run)
{
	char dir[64], rt[96], path[256], want[320];
	struct run a, b;
	struct stat st;

	mt_tmpdir(dir);
	snprintf(rt, sizeof(rt), "%s/rt", dir);
	a = run_kept(rt);
	assert_walked_and_kept(&a, rt);
	ck_assert_int_eq(kept_file(rt, path, sizeof(path)), 1);
	ck_assert_int_eq(stat(rt, &st), 0);
	ck_assert_int_eq(st.st_mode & 07777, 0700);
	ck_assert_int_eq(lstat(path, &st), 0);
	ck_assert(S_ISREG(st.st_mode) && st.st_uid == 0 && (st.st_mode & 07777) == 0600);
	b = run_kept(rt);
	snprintf(want, sizeof(want), "%s%s", from_kept, path);
	ck_assert_msg(strstr(b.err, want) && !strstr(b.err, walked), "%s", b.err);
	run_free(&a);
	run_free(&b);
	unlink(path);
	rmdir(rt);
	rmdir(dir);
}
END_TEST

/* A kept file that is torn, truncated or writable by others is walked past, then replaced. */
START_TEST(damaged_kept_target_is_walked_again)
{
	static const char *const damage[] = {
	    "printf X | dd of=%s bs=1 seek=2000 conv=notrunc status=none", /* a byte changed */
	    "truncate -s 1000 %s", "chmod 0620 %s", "chown 65534 %s"};
	char dir[64], rt[96], path[256], cmd[512];
	struct run r = {0};
	struct mt_out o;
	struct stat st;

	mt_tmpdir(dir);
	snprintf(rt, sizeof(rt), "%s/rt", dir);
	r = run_kept(rt);
	run_free(&r);
	ck_assert_int_eq(kept_file(rt, path, sizeof(path)), 1);
	for (size_t i = 0; i < sizeof(damage) / sizeof(*damage); i++) {
		snprintf(cmd, sizeof(cmd), damage[i], path);
		ck_assert_int_eq(
		    mt_run((const char *const[]){"/bin/sh", "-c", cmd, NULL}, NULL, NULL, 10, &o),
		    0);
		ck_assert_msg(o.code == 0, "%s: %s", cmd, o.err);
		mt_out_free(&o);
		r = run_kept(rt);
		assert_walked_and_kept(&r, rt);
		run_free(&r);
		ck_assert_int_eq(kept_file(rt, path, sizeof(path)), 1);
		ck_assert_int_eq(lstat(path, &st), 0);
		ck_assert(st.st_uid == 0 && (st.st_mode & 07777) == 0600);
	}
	unlink(path);
	rmdir(rt);
	rmdir(dir);
}
END_TEST

/* A directory others may write or own, or none asked for: the walk, and nothing kept. */
START_TEST(runtime_dir_not_roots_alone_is_not_used)
{
	static const char *const setup[] = {"chmod 0755 %s", "chown 65534 %s"};
	char dir[64], rt[96], path[256], cmd[256];
	struct mt_out o;
	struct run r;

	mt_tmpdir(dir);
	snprintf(rt, sizeof(rt), "%s/rt", dir);
	for (size_t i = 0; i < sizeof(setup) / sizeof(*setup); i++) {
		ck_assert_int_eq(mkdir(rt, 0700), 0);
		snprintf(cmd, sizeof(cmd), setup[i], rt);
		ck_assert_int_eq(
		    mt_run((const char *const[]){"/bin/sh", "-c", cmd, NULL}, NULL, NULL, 10, &o),
		    0);
		mt_out_free(&o);
		r = run_kept(rt);
		ck_assert_msg(strstr(r.err, walked) && strstr(r.err, "not kept for the boot"), "%s",
			      r.err);
		run_free(&r);
		ck_assert_int_eq(kept_file(rt, path, sizeof(path)), 0);
		ck_assert_int_eq(rmdir(rt), 0);
	}
	r = run_kept("");
	ck_assert_msg(strstr(r.err, walked) && strstr(r.err, "not kept for the boot"), "%s", r.err);
	run_free(&r);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("bpfside");
	TCase *ns = tcase_create("pidns");
	TCase *inode = tcase_create("inode");
	TCase *fail = tcase_create("fail");
	TCase *exc = tcase_create("exceptions");
	TCase *kept = tcase_create("kept");

	tcase_set_timeout(ns, 300);
	tcase_add_test(ns, pidns_single_process);
	tcase_add_test(ns, pidns_fork_tree);
	tcase_add_test(ns, pidns_threads);
	tcase_add_test(ns, pidns_command_nests_deeper);
	tcase_add_test(ns, pidns_foreign_proc_refused);
	suite_add_tcase(s, ns);
	tcase_set_timeout(inode, 300);
	tcase_add_test(inode, reused_inode_is_a_new_file);
	tcase_add_test(inode, touched_file_is_the_same_file);
	suite_add_tcase(s, inode);
	tcase_set_timeout(fail, 120);
	tcase_add_test(fail, failed_calls_exact);
	suite_add_tcase(s, fail);
	tcase_set_timeout(exc, 120);
	tcase_add_test(exc, bad_alloc_caught_with_jemalloc);
	tcase_add_test(exc, bad_alloc_then_exit_with_jemalloc);
	tcase_add_test(exc, bad_alloc_caught_with_tcmalloc);
	tcase_add_test(exc, bad_alloc_caught_with_libstdcxx);
	tcase_add_test(kept, kept_target_serves_the_next_run);
	tcase_add_test(kept, damaged_kept_target_is_walked_again);
	tcase_add_test(kept, runtime_dir_not_roots_alone_is_not_used);
	suite_add_tcase(s, exc);
	tcase_set_timeout(kept, 120);
	suite_add_tcase(s, kept);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
