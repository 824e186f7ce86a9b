// SPDX-License-Identifier: GPL-2.0
/*
 * Integration tests of `memtrack track` (codspeed-memtrack, docs/HARNESS.md "The tracker role"):
 * its command line as CodSpeed's runner checks and runs it; a run without --ipc-server, which
 * records from the start as CodSpeed's tracker does, read back through memtrack's own artifact
 * (the mapping records) and CodSpeed's; and the runner twin (tests/twin's twin_ipc, Rust with the
 * runner's serde types) driving the IPC side as root and, with file capabilities on a copy, as
 * nobody. The twin needs cargo and Debian's librust-*-dev crates: without them its tests are
 * reported skipped (tests/lib/suite.h), as tests that need root are without it.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <json-c/json.h>
#include <limits.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/xattr.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"
#include "lib/twin.h"
#include "reader/artifact_read.h"

#define TWIN_BIN    MT_TWIN_BIN("twin_ipc")
/* What the tracker needs as nobody on a kernel that runs the tracepoint watcher. */
#define TRACK_CAPS  "cap_bpf,cap_perfmon,cap_sys_ptrace,cap_checkpoint_restore,cap_dac_read_search"
/* And what the runner's `codspeed setup` checks for (src/executor/memory/setup.rs). */
#define RUNNER_CAPS "cap_dac_read_search,cap_sys_admin,cap_perfmon,cap_bpf,cap_sys_resource"
#define RUNNER_MASK (1ull << 2 | 1ull << 21 | 1ull << 24 | 1ull << 38 | 1ull << 39)

static char tmpdir[64];
static struct mt_out last;

static void setup(void)
{
	mt_tmpdir(tmpdir);
	chmod(tmpdir, 0777);
}

static void teardown(void)
{
	struct mt_out o = {0};

	mt_out_free(&last);
	mt_run((const char *[]){"rm", "-rf", tmpdir, NULL}, NULL, NULL, 60, &o);
	mt_out_free(&o);
}

static const struct mt_out *run(const char *const *argv)
{
	mt_out_free(&last);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 180, &last), 0);
	return &last;
}

/* tmpdir/codspeed-memtrack: the name make install links, to the built memtrack. */
static const char *tracker_link(void)
{
	static char path[128];

	snprintf(path, sizeof(path), "%s/codspeed-memtrack", tmpdir);
	unlink(path);
	ck_assert_int_eq(symlink(MEMTRACK, path), 0);
	return path;
}

/* ---- the command line ----------------------------------------------------------------------- */

/* The runner's install check (src/executor/memory/setup.rs): "NAME VERSION", at least 1.4.0. */
START_TEST(version_as_the_runner_reads_it)
{
	const char *link = tracker_link();
	const struct mt_out *r = run((const char *[]){link, "--version", NULL});

	ck_assert_int_eq(r->code, 0);
	ck_assert_str_eq(r->out, "memtrack 1.4.0\n");
	r = run((const char *[]){link, "frob", NULL});
	ck_assert_int_eq(r->code, 2);
	ck_assert_int_eq(mt_count_lines(r->err, "codspeed-memtrack: unknown subcommand"), 1);
}
END_TEST

START_TEST(bad_command_lines_are_one_sentence)
{
	const struct mt_out *r = run((const char *[]){MEMTRACK, "track", NULL});

	ck_assert_int_eq(r->code, 2);
	ck_assert_ptr_nonnull(strstr(r->err, "memtrack track: a COMMAND-STRING is needed"));
	r = run((const char *[]){MEMTRACK, "track", "true", "false", NULL});
	ck_assert_int_eq(r->code, 2);
	ck_assert_ptr_nonnull(strstr(r->err, "one COMMAND-STRING only: 'false'"));
	r = run((const char *[]){MEMTRACK, "track", "--output", "/nonexistent/dir", "true", NULL});
	ck_assert_int_eq(r->code, 2);
	ck_assert_str_eq(r->err, "memtrack track: cannot write to --output /nonexistent/dir: No "
				 "such file or directory\n");
	/* A runner that is not there: one sentence, before anything runs. */
	r = run((const char *[]){MEMTRACK, "track", "-o", tmpdir, "--ipc-server",
				 "/nonexistent/socket", "true", NULL});
	ck_assert_int_eq(r->code, 1);
	ck_assert_str_eq(r->err, "memtrack: cannot connect to the runner's IPC server "
				 "'/nonexistent/socket': No such file or directory\n");
}
END_TEST

/* CodSpeed's tracker exits with the command's code, and 1 for a command killed by a signal. */
START_TEST(exit_status_is_the_commands)
{
	const struct mt_out *r =
	    run((const char *[]){MEMTRACK, "track", "-q", "-o", tmpdir, "exit 7", NULL});

	ck_assert_int_eq(r->code, 7);
	r = run((const char *[]){MEMTRACK, "track", "-q", "-o", tmpdir, "kill -9 $$", NULL});
	ck_assert_int_eq(r->code, 1);
}
END_TEST

/* ---- without --ipc-server: everything, from the start --------------------------------------- */

#define LAST 8

/* What the fixture's image (after its exec) mapped, the last records of each kind. */
struct mapping_seen {
	uint32_t pid;
	bool exec_seen;
	uint64_t anon[LAST], unmapped[LAST], brk[LAST];
	size_t n_anon, n_unmapped, n_brk;
	int file_maps, mremaps;
};

static void keep_last(uint64_t *v, size_t *n, uint64_t x)
{
	if (*n == LAST) {
		memmove(v, v + 1, (LAST - 1) * sizeof(*v));
		(*n)--;
	}
	v[(*n)++] = x;
}

static void see_mapping(struct mapping_seen *s, const struct mt_artifact_mapping *m)
{
	if (m->pid != s->pid || !s->exec_seen)
		return;
	switch (m->what) {
	case MT_MAP_MMAP:
		if (m->flags & MAP_ANONYMOUS) {
			ck_assert_uint_eq(m->dev, 0);
			if (m->prot == (PROT_READ | PROT_WRITE))
				keep_last(s->anon, &s->n_anon, m->len);
		} else if (strcmp(m->name, "mapping") == 0 && m->len == 4096) {
			ck_assert_int_eq(m->prot, PROT_READ);
			ck_assert_int_eq(m->flags & MAP_PRIVATE, MAP_PRIVATE);
			ck_assert_uint_eq(m->offset, 0);
			ck_assert_uint_ne(m->ino, 0);
			s->file_maps++;
		}
		break;
	case MT_MAP_MUNMAP:
		ck_assert_int_eq(m->error, 0);
		keep_last(s->unmapped, &s->n_unmapped, m->len);
		break;
	case MT_MAP_MREMAP:
		s->mremaps += m->old_len == 65536 && m->len == 131072;
		break;
	case MT_MAP_BRK:
		ck_assert_int_eq(m->error, 0);
		ck_assert_uint_eq(m->len, m->addr - m->old_addr);
		keep_last(s->brk, &s->n_brk, m->addr);
		break;
	}
}

/* The n last values, as the fixture made them last. */
static void check_last(const uint64_t *v, size_t n, const uint64_t *want, size_t n_want)
{
	ck_assert_uint_ge(n, n_want);
	for (size_t i = 0; i < n_want; i++)
		ck_assert_uint_eq(v[n - n_want + i], want[i]);
}

/* fixtures/README.md, "mapping": its mapping records in memtrack's own artifact. */
static void check_mtk_mappings(const char *mtk, uint32_t pid)
{
	static const uint64_t anon[] = {8192, 196708, 65536, 12288},
			      unmapped[] = {8192, 196708, 131072, 4096, 12288};
	char err[MT_ARTIFACT_ERRLEN];
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	struct mapping_seen s = {.pid = pid};
	int ret;

	ck_assert_int_eq(mt_artifact_open(&r, mtk, err, sizeof(err)), 0);
	while ((ret = mt_artifact_next(r, &it)) > 0) {
		for (size_t i = 0; it.type == MT_ITEM_EVENTS && i < it.n_events; i++)
			s.exec_seen |= it.events[i].kind == MT_K_EXEC && it.events[i].pid == pid;
		if (it.type == MT_ITEM_MAPPING)
			see_mapping(&s, it.mapping);
	}
	ck_assert_int_eq(ret, 0);
	mt_artifact_close(r);
	check_last(s.anon, s.n_anon, anon, 4);
	check_last(s.unmapped, s.n_unmapped, unmapped, 5);
	ck_assert_int_eq(s.mremaps, 1);
	ck_assert_int_eq(s.file_maps, 1);
	/* the raw brk calls: up by 65536, then back */
	ck_assert_uint_ge(s.n_brk, 2);
	ck_assert_uint_eq(s.brk[s.n_brk - 2], s.brk[s.n_brk - 1] + 65536);
}

START_TEST(without_ipc_everything_is_recorded)
{
	char mtk[128], art[160];
	struct json_object *rep, *types, *img = NULL;
	const struct mt_out *r;

	snprintf(mtk, sizeof(mtk), "%s/run.mtk", tmpdir);
	r = run((const char *[]){MEMTRACK, "track", "-o", tmpdir, "--mtk", mtk, FIXTURE("mapping"),
				 NULL});
	ck_assert_msg(r->code == 0, "%s", r->err);
	r = run((const char *[]){MEMTRACK, "report", "--json", mtk, NULL});
	rep = json_tokener_parse(r->out);
	ck_assert_ptr_nonnull(rep);
	for (size_t i = 0; i < json_object_array_length(mt_json_get(rep, "images")); i++) {
		struct json_object *im = json_object_array_get_idx(mt_json_get(rep, "images"), i);

		if (strstr(json_object_get_string(mt_json_get(im, "exe")), "/fixtures/mapping"))
			img = im;
	}
	ck_assert_ptr_nonnull(img);
	ck_assert_int_eq(mt_json_i64(img, "allocations"), 22);
	ck_assert_int_eq(mt_json_i64(img, "frees"), 22);
	ck_assert_int_eq(mt_json_i64(img, "bytes_allocated"), 20045);
	check_mtk_mappings(mtk, (uint32_t)mt_json_i64(img, "pid"));
	snprintf(art, sizeof(art), "%s/%lld.MemtrackArtifact.msgpack", tmpdir,
		 (long long)mt_json_i64(img, "pid"));
	json_object_put(rep);
	/* CodSpeed's artifact of the same run, named by the root: bash -c execs a lone command. */
	r = run((const char *[]){MEMTRACK, "report", "--json", art, NULL});
	ck_assert_msg(r->code == 0, "%s", r->err);
	rep = json_tokener_parse(r->out);
	types = mt_json_get(rep, "by_type");
	ck_assert_int_ge(mt_json_i64(types, "Malloc"), 22);
	ck_assert_int_ge(mt_json_i64(types, "Mmap"), 5);
	ck_assert_int_ge(mt_json_i64(types, "Munmap"), 5);
	ck_assert_int_ge(mt_json_i64(types, "Brk"), 2);
	ck_assert_int_eq(mt_json_i64(rep, "processes"), 1);
	json_object_put(rep);
}
END_TEST

/*
 * fixtures/README.md, "thread_exec": CodSpeed's artifact carries each event's tid, so a thread
 * other than the leader that allocated and then exec'd (taking the leader's tid) has its next
 * allocations under the leader's tid, not the one it had before.
 */
START_TEST(an_exec_gives_the_thread_the_leaders_tid)
{
	char mtk[128], err[MT_ARTIFACT_ERRLEN];
	struct mt_artifact_reader *rd;
	struct mt_artifact_item it;
	const struct mt_event *before = NULL, *after = NULL;
	struct mt_event b = {0}, a = {0};
	const struct mt_out *r;
	int ret;

	snprintf(mtk, sizeof(mtk), "%s/run.mtk", tmpdir);
	r = run((const char *[]){MEMTRACK, "track", "-q", "-o", tmpdir, "--mtk", mtk,
				 FIXTURE("thread_exec"), NULL});
	ck_assert_msg(r->code == 0, "%s", r->err);
	ck_assert_int_eq(mt_artifact_open(&rd, mtk, err, sizeof(err)), 0);
	while ((ret = mt_artifact_next(rd, &it)) > 0) {
		for (size_t i = 0; it.type == MT_ITEM_EVENTS && i < it.n_events; i++) {
			const struct mt_event *e = &it.events[i];

			if (e->kind == MT_K_MALLOC && e->size == 1231 && !before)
				b = *e, before = &b;
			if (e->kind == MT_K_MALLOC && e->size == 4567 && !after)
				a = *e, after = &a;
		}
	}
	ck_assert_int_eq(ret, 0);
	mt_artifact_close(rd);
	ck_assert_ptr_nonnull(before);
	ck_assert_ptr_nonnull(after);
	ck_assert_uint_eq(before->pid, after->pid);
	ck_assert_uint_ne(before->tid, before->pid);
	ck_assert_uint_eq(after->tid, after->pid);
}
END_TEST

/* ---- the runner twin ------------------------------------------------------------------------ */

/* Runs the twin (as nobody when asked) and checks that it found everything right. */
static void run_twin(const char *mode, const char *tracker, bool as_nobody)
{
	char work[128], bin[128];
	const struct mt_out *r;

	snprintf(work, sizeof(work), "%s/work-%s", tmpdir, mode);
	ck_assert_int_eq(mkdir(work, 0777), 0);
	ck_assert_int_eq(chmod(work, 0777), 0);
	/* A copy nobody can run wherever the build tree is. */
	snprintf(bin, sizeof(bin), "%s/twin_ipc", tmpdir);
	r = run((const char *[]){"cp", TWIN_BIN, bin, NULL});
	ck_assert_int_eq(r->code, 0);
	if (as_nobody)
		r = run((const char *[]){"setpriv", "--reuid=nobody", "--regid=nogroup",
					 "--clear-groups", bin, mode, tracker,
					 MT_BUILD_DIR "/fixtures", work, NULL});
	else
		r = run((const char *[]){bin, mode, tracker, MT_BUILD_DIR "/fixtures", work, NULL});
	ck_assert_msg(r->code == 0, "twin_ipc %s%s: %s%s", mode, as_nobody ? " as nobody" : "",
		      r->out, r->err);
	ck_assert_int_eq(mt_count_lines(r->out, "twin_ipc: ok"), 1);
}

START_TEST(twin_window_as_root)
{
	run_twin("window", tracker_link(), false);
	ck_assert_int_eq(mt_count_lines(last.out, "twin_ipc: Enable -> Ack"), 1);
	ck_assert_int_eq(mt_count_lines(last.out, "twin_ipc: Mmap sizes: [4096, 65536, 196708]"),
			 1);
}
END_TEST

START_TEST(twin_no_enable_no_event)
{
	run_twin("off", tracker_link(), false);
	ck_assert_int_eq(mt_count_lines(last.out, "no Enable, no event"), 1);
}
END_TEST

/*
 * The runner's has_memtrack_capabilities(): the permitted words of the file's security.capability
 * (vfs_cap_data, revision 2 or 3: magic, then {permitted, inheritable} for the low and high
 * words) hold CAP_DAC_READ_SEARCH, CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF and CAP_SYS_RESOURCE.
 */
static bool has_runner_capabilities(const char *path)
{
	uint32_t v[6] = {0};
	ssize_t n = getxattr(path, "security.capability", v, sizeof(v));

	if (n < 20 || ((v[0] >> 24) != 2 && (v[0] >> 24) != 3))
		return false;
	return ((v[1] | (uint64_t)v[3] << 32) & RUNNER_MASK) == RUNNER_MASK;
}

/*
 * Whether this process's bounding set holds the runner's set: a file granting a capability
 * outside it cannot be executed (EPERM), and sandboxes drop some (CAP_SYS_RESOURCE).
 */
static bool runner_caps_grantable(void)
{
	char *status = mt_slurp("/proc/self/status"), *b;
	unsigned long long bnd = 0;

	b = status ? strstr(status, "CapBnd:") : NULL;
	if (b)
		sscanf(b + 7, "%llx", &bnd);
	free(status);
	return (bnd & RUNNER_MASK) == RUNNER_MASK;
}

/* As the runner's user: capabilities on the tracker alone (a copy, setcap), none inherited. */
START_TEST(twin_window_as_nobody_with_capabilities)
{
	char copy[128];
	const struct mt_out *r;

	snprintf(copy, sizeof(copy), "%s/bin", tmpdir);
	ck_assert_int_eq(mkdir(copy, 0755), 0);
	strcat(copy, "/codspeed-memtrack");
	r = run((const char *[]){"cp", MEMTRACK, copy, NULL});
	ck_assert_int_eq(r->code, 0);
	/* Both sets where they can be had, so that the runner keeps the file's capabilities. */
	r = run((const char *[]){
	    "setcap", runner_caps_grantable() ? TRACK_CAPS "," RUNNER_CAPS "+ep" : TRACK_CAPS "+ep",
	    copy, NULL});
	ck_assert_msg(r->code == 0, "setcap: %s", r->err);
	if (runner_caps_grantable())
		ck_assert(has_runner_capabilities(copy));
	else
		printf(
		    "it_track: the runner's capability set is not grantable here (bounding set): "
		    "memtrack's own only\n");
	run_twin("window", copy, true);
}
END_TEST

/* Without them, the tracker says which are missing, in one sentence. */
START_TEST(missing_capabilities_are_named)
{
	char copy[128];
	const struct mt_out *r;

	snprintf(copy, sizeof(copy), "%s/codspeed-memtrack", tmpdir);
	r = run((const char *[]){"cp", MEMTRACK, copy, NULL});
	ck_assert_int_eq(r->code, 0);
	r = run((const char *[]){"setpriv", "--reuid=nobody", "--regid=nogroup", "--clear-groups",
				 copy, "track", "-o", tmpdir, "true", NULL});
	ck_assert_int_eq(r->code, 1);
	ck_assert_ptr_nonnull(strstr(r->err, "memtrack: missing CAP_SYS_PTRACE, CAP_BPF, "
					     "CAP_PERFMON, CAP_CHECKPOINT_RESTORE"));
	ck_assert_int_eq(mt_count_lines(r->err, ""), 1);
}
END_TEST

static Suite *track_suite(const char *twin_why)
{
	const char *root_why = geteuid() ? "no root (setpriv, setcap)" : NULL;
	Suite *s = suite_create("track");
	TCase *cli = tcase_create("cli"), *alone = tcase_create("without_ipc"),
	      *twin = tcase_create("twin");

	tcase_add_checked_fixture(cli, setup, teardown);
	/* memtrack track loads its BPF programs first: seconds on a loaded machine. */
	tcase_set_timeout(cli, 60);
	tcase_add_test(cli, version_as_the_runner_reads_it);
	tcase_add_test(cli, bad_command_lines_are_one_sentence);
	tcase_add_test(cli, exit_status_is_the_commands);
	mt_add_test_unless(cli, missing_capabilities_are_named, root_why);
	suite_add_tcase(s, cli);
	tcase_add_checked_fixture(alone, setup, teardown);
	tcase_set_timeout(alone, 120);
	mt_add_test_unless(alone, without_ipc_everything_is_recorded, root_why);
	mt_add_test_unless(alone, an_exec_gives_the_thread_the_leaders_tid, root_why);
	suite_add_tcase(s, alone);
	tcase_add_checked_fixture(twin, setup, teardown);
	tcase_set_timeout(twin, 300);
	mt_add_test_unless(twin, twin_window_as_root, twin_why ?: root_why);
	mt_add_test_unless(twin, twin_no_enable_no_event, twin_why ?: root_why);
	mt_add_test_unless(twin, twin_window_as_nobody_with_capabilities, twin_why ?: root_why);
	suite_add_tcase(s, twin);
	return s;
}

int main(void)
{
	return mt_run_suite(track_suite(mt_build_twin()));
}
