// SPDX-License-Identifier: GPL-2.0
/*
 * Degrade, never die: files memtrack cannot classify or probe, and an artifact it cannot write,
 * leave the command running exactly as without memtrack (its output, its exit status), are
 * reported as not probed, and the rest of the run is still counted exactly (fixtures/README.md,
 * "Odd files").
 */
#include <check.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

/* odd_files' own allocations: 4 x malloc(1000 + i), 3 x calloc(1, 500), each freed. */
#define OWN_ALLOCS	   7
#define OWN_BYTES	   (4006 + 1500)
/* What dlopen of an odd_*.so allocates through glibc 2.36: 6 blocks, 1 freed, 3563 + 3 P bytes. */
#define DLOPEN_ALLOCS	   6
#define DLOPEN_FREES	   1
#define DLOPEN_BYTES(path) (3563 + 3 * strlen(path))

struct odd_run {
	struct mt_out o;
	struct json_object *report;
};

/* memtrack run [extra] -- odd_files MODE FILE, then report --json on the artifact. */
static struct odd_run run_odd(const char *extra, const char *mode, const char *file)
{
	char dir[64], art[128];
	const char *argv[12] = {MEMTRACK, "run", "-o", art};
	const char *rep[] = {MEMTRACK, "report", "--json", art, NULL};
	struct odd_run r;
	struct mt_out o;
	int n = 4;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	if (extra)
		argv[n++] = extra;
	argv[n++] = "--";
	argv[n++] = FIXTURE("odd_files");
	argv[n++] = mode;
	argv[n++] = file;
	argv[n] = NULL;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &r.o), 0);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report failed: %s", o.err);
	r.report = json_tokener_parse(o.out);
	ck_assert_ptr_nonnull(r.report);
	mt_out_free(&o);
	unlink(art);
	rmdir(dir);
	return r;
}

static void odd_free(struct odd_run *r)
{
	mt_out_free(&r->o);
	json_object_put(r->report);
}

/* The command ran as without memtrack, and glibc's calls were all counted. */
static void assert_command_and_counts(const struct odd_run *r, const char *out, bool dlopened,
				      const char *file)
{
	struct json_object *t = mt_json_get(r->report, "totals");

	ck_assert_msg(r->o.code == 7, "exit %d, stderr: %s", r->o.code, r->o.err);
	ck_assert_str_eq(r->o.out, out);
	ck_assert_int_eq(mt_json_i64(t, "allocations"),
			 OWN_ALLOCS + (dlopened ? DLOPEN_ALLOCS : 0));
	ck_assert_int_eq(mt_json_i64(t, "frees"), OWN_ALLOCS + (dlopened ? DLOPEN_FREES : 0));
	ck_assert_int_eq(mt_json_i64(t, "bytes_allocated"),
			 OWN_BYTES + (dlopened ? (int64_t)DLOPEN_BYTES(file) : 0));
	ck_assert_int_eq(mt_json_i64(t, "dropped"), 0);
}

/* Exactly one not-probed entry: file (and function, or NULL), reason containing why. */
static void assert_not_probed(const struct odd_run *r, const char *file, const char *function,
			      const char *why)
{
	struct json_object *np = mt_json_get(r->report, "not_probed"), *e, *inc;
	char line[512];

	ck_assert_int_eq(json_object_array_length(np), 1);
	e = json_object_array_get_idx(np, 0);
	ck_assert_str_eq(json_object_get_string(mt_json_get(e, "path")), file);
	if (function)
		ck_assert_str_eq(json_object_get_string(mt_json_get(e, "function")), function);
	else
		ck_assert(json_object_is_type(mt_json_get(e, "function"), json_type_null));
	ck_assert_msg(strstr(json_object_get_string(mt_json_get(e, "reason")), why), "reason: %s",
		      json_object_get_string(mt_json_get(e, "reason")));
	ck_assert(!json_object_get_boolean(mt_json_get(r->report, "complete")));
	inc = mt_json_get(r->report, "incomplete");
	ck_assert_int_eq(json_object_array_length(inc), 1);
	ck_assert_str_eq(json_object_get_string(json_object_array_get_idx(inc, 0)), "not_probed");
	/* The run's summary names it too. */
	snprintf(line, sizeof(line), "memtrack: not probed: %s: %s%s", file,
		 function ? function : "", function ? ": " : "");
	ck_assert_msg(strstr(r->o.err, line), "no '%s' in: %s", line, r->o.err);
}

/* The probe count the report gives a file. */
static int64_t probes_of(const struct odd_run *r, const char *file)
{
	struct json_object *files = mt_json_get(r->report, "files");

	for (size_t i = 0; i < json_object_array_length(files); i++) {
		struct json_object *f = json_object_array_get_idx(files, i);
		struct json_object *p = mt_json_get(f, "path");

		if (json_object_is_type(p, json_type_string) &&
		    !strcmp(json_object_get_string(p), file))
			return mt_json_i64(f, "probes");
	}
	ck_abort_msg("no file %s", file);
	return -1;
}

START_TEST(foreign_machine_elf)
{
	const char *file = FIXTURE("odd_foreign.so");
	struct odd_run r = run_odd(NULL, "map", file);

	assert_command_and_counts(&r, "mapped\n", false, file);
	assert_not_probed(&r, file, NULL, "another machine");
	odd_free(&r);
}
END_TEST

START_TEST(broken_dynsym)
{
	const char *file = FIXTURE("odd_baddynsym.so");
	struct odd_run r = run_odd(NULL, "dlopen", file);

	assert_command_and_counts(&r, "magic 0x11223344\n", true, file);
	assert_not_probed(&r, file, NULL, "malformed ELF");
	odd_free(&r);
}
END_TEST

START_TEST(lock_prefixed_malloc)
{
	const char *file = FIXTURE("odd_lock.so");
	struct odd_run r = run_odd(NULL, "dlopen", file);

	assert_command_and_counts(&r, "magic 0x11223344\n", true, file);
	assert_not_probed(&r, file, "malloc", "the kernel refuses");
	/* The file's other function, free, is probed all the same. */
	ck_assert_int_eq(probes_of(&r, file), 1);
	odd_free(&r);
}
END_TEST

/* A probe inside get_magic's mov would make it return 0x112233cc: refused, code intact. */
START_TEST(mid_instruction_malloc)
{
	const char *file = FIXTURE("odd_midinsn.so");

	for (int entry = 0; entry < 2; entry++) {
		struct odd_run r =
		    run_odd(entry ? "--probe-placement=entry" : NULL, "dlopen", file);

		assert_command_and_counts(&r, "magic 0x11223344\n", true, file);
		assert_not_probed(&r, file, "malloc", "not an instruction boundary");
		odd_free(&r);
	}
}
END_TEST

/* The healthy twin: complete, and --strict changes nothing. */
START_TEST(plain_library_is_complete)
{
	const char *file = FIXTURE("odd_plain.so");
	struct odd_run r = run_odd("--strict", "dlopen", file);

	assert_command_and_counts(&r, "magic 0x11223344\n", true, file);
	ck_assert_int_eq(json_object_array_length(mt_json_get(r.report, "not_probed")), 0);
	ck_assert(json_object_get_boolean(mt_json_get(r.report, "complete")));
	ck_assert_int_eq(json_object_array_length(mt_json_get(r.report, "incomplete")), 0);
	odd_free(&r);
}
END_TEST

START_TEST(strict_turns_a_loss_into_125)
{
	const char *file = FIXTURE("odd_foreign.so");
	struct odd_run r = run_odd("--strict", "map", file);

	ck_assert_int_eq(r.o.code, 125);
	ck_assert_str_eq(r.o.out, "mapped\n");
	ck_assert_ptr_nonnull(strstr(r.o.err, "--strict: the recording is incomplete: exit status "
					      "125 instead of 7"));
	odd_free(&r);
}
END_TEST

/* The one not_probed entry of a report that names path: its reason. */
static const char *unprobed_reason(struct json_object *rep, const char *path)
{
	struct json_object *np = mt_json_get(rep, "not_probed");

	for (size_t i = 0; i < json_object_array_length(np); i++) {
		struct json_object *u = json_object_array_get_idx(np, i);

		if (!strcmp(json_object_get_string(mt_json_get(u, "path")), path))
			return json_object_get_string(mt_json_get(u, "reason"));
	}
	return NULL;
}

/*
 * A static executable in which no allocator is found (stripped: nosyms, Debian's busybox)
 * allocates out of memtrack's sight (brk, mmap): not probed, incomplete, --strict fails. A
 * dynamic one without symbols (stripped) allocates through libc, which is probed: complete.
 */
START_TEST(static_binary_without_allocator_is_incomplete)
{
	static const char reason[] = "a static executable in which no allocator was found: its "
				     "allocations (its own allocator, brk, mmap) cannot be seen; "
				     "run --mappings records its brk and mmap calls";
	const char *opts[] = {"--strict", NULL};
	const char *nosyms[] = {FIXTURE("nosyms"), NULL};
	const char *busybox[] = {"/bin/busybox", "sh", "-c", "true", NULL};
	const char *stripped[] = {FIXTURE("stripped"), NULL};
	const char *const *cmds[] = {nosyms, busybox};
	struct json_object *rep;
	struct mt_out o;

	for (size_t i = 0; i < 2; i++) {
		char real[4096];

		ck_assert_ptr_nonnull(realpath(cmds[i][0], real));
		rep = mt_run_report(opts, cmds[i], 60, &o);
		ck_assert_ptr_nonnull(rep);
		ck_assert_int_eq(o.code, 125);
		ck_assert_msg(unprobed_reason(rep, real) &&
				  !strcmp(unprobed_reason(rep, real), reason),
			      "%s not listed as not probed", real);
		ck_assert(!json_object_get_boolean(mt_json_get(rep, "complete")));
		json_object_put(rep);
		mt_out_free(&o);
	}
	rep = mt_run_report(opts, stripped, 60, &o);
	ck_assert_ptr_nonnull(rep);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert(json_object_get_boolean(mt_json_get(rep, "complete")));
	json_object_put(rep);
	mt_out_free(&o);
}
END_TEST

/* The totals of one family in a report. */
static struct json_object *family(struct json_object *rep, const char *name)
{
	struct json_object *fams = mt_json_get(rep, "families");

	for (size_t i = 0; i < json_object_array_length(fams); i++) {
		struct json_object *f = json_object_array_get_idx(fams, i);

		if (!strcmp(json_object_get_string(mt_json_get(f, "family")), name))
			return f;
	}
	ck_abort_msg("no family %s", name);
	return NULL;
}

/*
 * More distinct executable files than the known-inodes map holds (a JIT's memfds): the run goes
 * on, and an allocator mapped after the map is full (mimalloc, dlopened after an exec) is still
 * probed and counted exactly.
 */
START_TEST(known_inodes_full)
{
	char dir[64], art[128];
	const char *argv[] = {MEMTRACK,
			      "run",
			      "-o",
			      art,
			      "--",
			      FIXTURE("jit_memfd"),
			      "17000",
			      FIXTURE("dlopen_plugin"),
			      FIXTURE("plugin_mimalloc.so"),
			      "10",
			      NULL};
	const char *rep[] = {MEMTRACK, "report", "--json", art, NULL};
	struct json_object *r;
	struct mt_out o, j;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 240, &o), 0);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_int_eq(mt_count_lines(o.err, "more than 16384 distinct executable files"), 1);
	ck_assert_int_eq(mt_count_lines(o.err, "does not map"), 0);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &j), 0);
	r = json_tokener_parse(j.out);
	ck_assert_ptr_nonnull(r);
	ck_assert(json_object_get_boolean(mt_json_get(r, "complete")));
	/* jit_memfd's 10, then dlopen of plugin_mimalloc.so (fixtures/README.md) */
	ck_assert_int_eq(mt_json_i64(family(r, "glibc"), "allocations"), 10 + 11);
	ck_assert_int_eq(mt_json_i64(family(r, "mimalloc"), "allocations"), 10);
	ck_assert_int_eq(mt_json_i64(family(r, "mimalloc"), "bytes_allocated"), 33330);
	json_object_put(r);
	mt_out_free(&o);
	mt_out_free(&j);
	unlink(art);
	rmdir(dir);
}
END_TEST

/* An artifact that cannot be read back for a summary: the file is named on stderr at once. */
START_TEST(not_probed_said_without_summary)
{
	const char *argv[] = {MEMTRACK, "run",
			      "-o",	"/dev/null",
			      "--",	FIXTURE("odd_files"),
			      "map",	FIXTURE("odd_foreign.so"),
			      NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 7);
	ck_assert_int_eq(mt_count_lines(o.err, "memtrack: not probed: " MT_BUILD_DIR
					       "/fixtures/odd_foreign.so: an ELF file for another "
					       "machine"),
			 1);
	mt_out_free(&o);
}
END_TEST

/*
 * The artifact on a pipe that closes after 1000 bytes: memtrack neither dies of SIGPIPE nor
 * fails the run; the command (whose own SIGPIPE disposition is the default again) finishes.
 */
START_TEST(closed_output_pipe)
{
	const char *argv[] = {"bash",
			      "-c",
			      "\"$0\" run -o /dev/stdout -- \"$1\" 200000 | head -c 1000 "
			      ">/dev/null; echo \"status ${PIPESTATUS[0]}\"",
			      MEMTRACK,
			      FIXTURE("churn"),
			      NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &o), 0);
	ck_assert_str_eq(o.out, "status 0\n");
	ck_assert_ptr_nonnull(strstr(o.err, "cannot write the artifact /dev/stdout: Broken pipe; "
					    "recording stopped there"));
	ck_assert_ptr_nonnull(strstr(o.err, "churn exited with 0"));
	mt_out_free(&o);
}
END_TEST

/*
 * A full disk: the command completes, the summary reads the truncated artifact. 16 KiB hold far
 * fewer than churn's 800,000 events at their compressed size (about 0.16 bytes each in format 7:
 * 130 KB).
 */
START_TEST(full_disk)
{
	char dir[64], cmd[512];
	const char *argv[] = {"unshare", "--mount", "sh", "-c", cmd, NULL};
	struct mt_out o;

	mt_tmpdir(dir);
	snprintf(cmd, sizeof(cmd),
		 "mount -t tmpfs -o size=16k none %s && %s run -o %s/a.mtk -- %s 400000; "
		 "echo status $?",
		 dir, MEMTRACK, dir, FIXTURE("churn"));
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &o), 0);
	ck_assert_str_eq(o.out, "status 0\n");
	ck_assert_ptr_nonnull(strstr(o.err, "No space left on device; recording stopped there"));
	ck_assert_ptr_nonnull(strstr(o.err, "the artifact is truncated"));
	mt_out_free(&o);
	rmdir(dir);
}
END_TEST

/* memtrack run -q --stacks -o DIR/a.mtk -- leaks, in a fresh DIR (64 bytes); the artifact in art.
 */
static void record_leaks(char *dir, char *art, size_t artlen)
{
	const char *argv[] = {MEMTRACK,		"run", "-q", "--stacks", "-o", art, "--",
			      FIXTURE("leaks"), NULL};
	struct mt_out o;

	mt_tmpdir(dir);
	snprintf(art, artlen, "%s/a.mtk", dir);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 0, "run failed (%d): %s", o.code, o.err);
	mt_out_free(&o);
}

/*
 * report's files on a device that is always full (/dev/full as the stdout the shell gives
 * memtrack, written through /dev/stdout): each output says why in one sentence, the disk's word
 * and not a generic I/O error, and the device, which memtrack did not create, is still there (a
 * failed output is removed only if a regular file). A node of /dev/full's numbers found at a
 * path is no output at all: a device is refused before anything is written (docs/SECURITY.md).
 */
START_TEST(report_files_on_a_full_device)
{
	static const char sh[] = "exec \"$0\" report \"$@\" >/dev/full";
	char dir[64], art[128], full[128], said[256];
	const char *html[] = {"sh", "-c", sh, MEMTRACK, "--html", "/dev/stdout", art, NULL};
	const char *svg[] = {"sh",	    "-c",	   sh,	MEMTRACK, "--svg",
			     "/dev/stdout", "--over-time", art, NULL};
	const char *pprof[] = {"sh", "-c", sh, MEMTRACK, "--pprof", "/dev/stdout", art, NULL};
	const char *node[] = {MEMTRACK, "report", "--html", full, art, NULL};
	const char *const *outputs[] = {html, svg, pprof};
	struct mt_out o;
	struct stat st;

	record_leaks(dir, art, sizeof(art));
	for (size_t i = 0; i < sizeof(outputs) / sizeof(outputs[0]); i++) {
		ck_assert_int_eq(mt_run(outputs[i], NULL, NULL, 60, &o), 0);
		ck_assert_msg(o.code == 1, "%s: exit %d: %s", outputs[i][4], o.code, o.err);
		ck_assert_str_eq(o.err,
				 "memtrack: cannot write /dev/stdout: No space left on device\n");
		mt_out_free(&o);
		ck_assert_int_eq(stat("/dev/full", &st), 0);
		ck_assert_msg(S_ISCHR(st.st_mode), "%s removed the device", outputs[i][4]);
	}
	snprintf(full, sizeof(full), "%s/full", dir);
	ck_assert_int_eq(mknod(full, S_IFCHR | 0666, makedev(1, 7)), 0);
	snprintf(said, sizeof(said),
		 "memtrack: cannot create %s: it is a character device, not a regular file", full);
	ck_assert_int_eq(mt_run(node, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 1);
	ck_assert_msg(!strncmp(o.err, said, strlen(said)), "%s", o.err);
	mt_out_free(&o);
	ck_assert_int_eq(stat(full, &st), 0);
	unlink(full);
	unlink(art);
	rmdir(dir);
}
END_TEST

/*
 * The --trace-stops log on a device that is always full (/dev/full as memtrack's stdout), the
 * log longer than stdio's buffer (200 children): the disk's word, not the stream's generic I/O
 * error.
 */
START_TEST(trace_on_a_full_device)
{
	const char *argv[] = {"sh",
			      "-c",
			      "exec \"$0\" run -q --no-track --trace-stops /dev/stdout -- \"$1\" "
			      "children 200 >/dev/full",
			      MEMTRACK,
			      FIXTURE("stress"),
			      NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &o), 0);
	ck_assert_int_eq(o.code, 1);
	ck_assert_str_eq(o.err, "memtrack: cannot write /dev/stdout: No space left on device\n");
	mt_out_free(&o);
}
END_TEST

/*
 * memtrack report into a pipe nobody reads any more (`| head`) ends as cat does: killed by
 * SIGPIPE, nothing on stderr. The pipe is a FIFO whose only reader is closed before memtrack
 * starts, so its first write fails, whatever the timing.
 */
START_TEST(report_into_a_closed_pipe)
{
	char dir[64], art[128];
	const char *argv[] = {"sh",
			      "-c",
			      "mkfifo \"$2/fifo\" && exec 3<>\"$2/fifo\" 4>\"$2/fifo\" 3<&- && "
			      "\"$0\" report \"$1\" >&4; echo \"status $?\"",
			      MEMTRACK,
			      art,
			      dir,
			      NULL};
	struct mt_out o;

	record_leaks(dir, art, sizeof(art));
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_str_eq(o.out, "status 141\n");
	ck_assert_str_eq(o.err, "");
	mt_out_free(&o);
	snprintf(art + strlen(dir), sizeof(art) - strlen(dir), "/fifo");
	unlink(art);
	snprintf(art + strlen(dir), sizeof(art) - strlen(dir), "/a.mtk");
	unlink(art);
	rmdir(dir);
}
END_TEST

/*
 * An artifact read from a pipe (memtrack report /dev/stdin, <(zstdcat run.mtk.zst)) is the
 * same artifact: its report is the file's, byte for byte. The look for CodSpeed's magic must
 * not eat the first bytes of a pipe. Both are streams the shell gave memtrack, which it reads,
 * unlike a FIFO found at a path (docs/SECURITY.md).
 */
START_TEST(report_reads_a_pipe)
{
	char dir[64], art[128];
	const char *file[] = {MEMTRACK, "report", "--json", art, NULL};
	const char *piped[] = {"sh",	 "-c", "cat \"$1\" | \"$0\" report --json /dev/stdin",
			       MEMTRACK, art,  NULL};
	const char *substituted[] = {"bash",   "-c", "\"$0\" report --json <(cat \"$1\")",
				     MEMTRACK, art,  NULL};
	struct mt_out f, p;

	record_leaks(dir, art, sizeof(art));
	ck_assert_int_eq(mt_run(file, NULL, NULL, 60, &f), 0);
	ck_assert_msg(f.code == 0, "report failed (%d): %s", f.code, f.err);
	ck_assert_int_eq(mt_run(piped, NULL, NULL, 60, &p), 0);
	ck_assert_msg(p.code == 0, "report of a pipe failed (%d): %s", p.code, p.err);
	ck_assert_str_eq(p.out, f.out);
	mt_out_free(&p);
	ck_assert_int_eq(mt_run(substituted, NULL, NULL, 60, &p), 0);
	ck_assert_msg(p.code == 0, "report of <(...) failed (%d): %s", p.code, p.err);
	ck_assert_str_eq(p.out, f.out);
	mt_out_free(&f);
	mt_out_free(&p);
	unlink(art);
	rmdir(dir);
}
END_TEST

/* Strictly valid JSON and UTF-8, or NULL. */
static struct json_object *parse_strict(const char *s)
{
	struct json_tokener *tok = json_tokener_new();
	struct json_object *o;

	json_tokener_set_flags(tok, JSON_TOKENER_STRICT | JSON_TOKENER_VALIDATE_UTF8);
	o = json_tokener_parse_ex(tok, s, (int)strlen(s) + 1);
	json_tokener_free(tok);
	return o;
}

static bool has_raw_bytes(const char *s)
{
	return strchr(s, 0x1b) || strchr(s, '\xff') || strchr(s, '\xfe');
}

static void copy_file(const char *from, const char *to)
{
	const char *argv[] = {"cp", from, to, NULL};
	struct mt_out o;

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 30, &o), 0);
	ck_assert_int_eq(o.code, 0);
	mt_out_free(&o);
}

/*
 * File names are the traced program's bytes: not UTF-8, with terminal escapes. The summary on
 * stderr and the text report show them without escapes; report --json stays valid UTF-8 JSON.
 */
START_TEST(hostile_file_names)
{
	char dir[64], prog[160], lib[160], art[160];
	const char *run[] = {MEMTRACK, "run", "-o", art, "--", prog, "map", lib, NULL};
	const char *json[] = {MEMTRACK, "report", "--json", art, NULL};
	const char *text[] = {MEMTRACK, "report", art, NULL};
	struct json_object *rep, *np, *cmd;
	struct mt_out o, j, t;

	mt_tmpdir(dir);
	snprintf(prog, sizeof(prog),
		 "%s/odd\xff\x1b]0;title\x07"
		 "files",
		 dir);
	snprintf(lib, sizeof(lib), "%s/foreign\xfe\x1b[2J.so", dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	copy_file(FIXTURE("odd_files"), prog);
	copy_file(FIXTURE("odd_foreign.so"), lib);
	ck_assert_int_eq(mt_run(run, NULL, NULL, 120, &o), 0);
	ck_assert_int_eq(o.code, 7);
	ck_assert_msg(!has_raw_bytes(o.err), "raw bytes on stderr: %s", o.err);
	ck_assert_ptr_nonnull(strstr(o.err, "memtrack: not probed: "));
	ck_assert_ptr_nonnull(strstr(o.err, "/foreign??[2J.so: an ELF file for another machine"));
	ck_assert_int_eq(mt_run(json, NULL, NULL, 60, &j), 0);
	ck_assert_int_eq(j.code, 0);
	rep = parse_strict(j.out);
	ck_assert_msg(rep != NULL, "not strict UTF-8 JSON: %s", j.out);
	cmd = json_object_array_get_idx(mt_json_get(rep, "command"), 0);
	ck_assert_ptr_nonnull(strstr(json_object_get_string(cmd), "/odd\xef\xbf\xbd\x1b]0;"));
	np = json_object_array_get_idx(mt_json_get(rep, "not_probed"), 0);
	ck_assert_ptr_nonnull(strstr(json_object_get_string(mt_json_get(np, "path")),
				     "/foreign\xef\xbf\xbd\x1b[2J.so"));
	ck_assert_int_eq(mt_run(text, NULL, NULL, 60, &t), 0);
	ck_assert_int_eq(t.code, 0);
	ck_assert(!has_raw_bytes(t.out));
	json_object_put(rep);
	mt_out_free(&o);
	mt_out_free(&j);
	mt_out_free(&t);
	unlink(prog);
	unlink(lib);
	unlink(art);
	rmdir(dir);
}
END_TEST

/*
 * Callers are a plain run's default, not something asked for: where their programs do not load
 * (the test build refuses them as a verifier might), the run goes on without them, says so, and
 * counts every call; with --stacks asked for, the refusal ends the run.
 */
START_TEST(callers_refused_run_goes_on)
{
	const char *refuse[] = {"MT_REFUSE_CALLERS=1", NULL};
	char dir[64], art[128];
	const char *plain[] = {MEMTRACK_FAULTS,	 "run", "-q", "-o", art, "--",
			       FIXTURE("churn"), "300", NULL};
	const char *asked[] = {MEMTRACK_FAULTS,	 "run", "-q", "--stacks", "-o", art, "--",
			       FIXTURE("churn"), "300", NULL};
	const char *rep[] = {MEMTRACK, "report", "--json", art, NULL};
	struct json_object *r;
	struct mt_out o;

	mt_tmpdir(dir);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	ck_assert_int_eq(mt_run(plain, NULL, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 0 && !strstr(o.err, "callers"), "%d: %s", o.code, o.err);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(plain, refuse, NULL, 120, &o), 0);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	ck_assert_msg(strstr(o.err, "this run records no callers"), "%s", o.err);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(rep, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "report: %s", o.err);
	r = json_tokener_parse(o.out);
	ck_assert_ptr_nonnull(r);
	ck_assert_int_eq(mt_json_i64(mt_json_get(r, "totals"), "allocations"), 300);
	ck_assert_int_eq(mt_json_i64(mt_json_get(r, "totals"), "frees"), 300);
	json_object_put(r);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(asked, refuse, NULL, 120, &o), 0);
	ck_assert_msg(o.code != 0 && strstr(o.err, "cannot load the BPF programs"), "%d: %s",
		      o.code, o.err);
	mt_out_free(&o);
	unlink(art);
	rmdir(dir);
}
END_TEST

/*
 * A user with the BPF capabilities but not root: tracefs is mounted, only unreadable (mode 700).
 * One sentence says that, and which capability is missing; with it the run works.
 */
START_TEST(unprivileged_tracefs_message)
{
	static const char caps[] = "+bpf,+perfmon,+sys_ptrace,+checkpoint_restore";
	static const char more[] = "+bpf,+perfmon,+sys_ptrace,+checkpoint_restore,+dac_read_search";
	char dir[64], art[128];
	const char *argv[] = {"setpriv",
			      "--reuid=nobody",
			      "--regid=nogroup",
			      "--clear-groups",
			      "--inh-caps",
			      caps,
			      "--ambient-caps",
			      caps,
			      MEMTRACK,
			      "run",
			      "--watcher=tracepoint",
			      "-q",
			      "-o",
			      art,
			      "--",
			      "/bin/true",
			      NULL};
	struct mt_out o;

	mt_tmpdir(dir);
	chmod(dir, 0777);
	snprintf(art, sizeof(art), "%s/a.mtk", dir);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_int_eq(o.code, 1);
	ck_assert_str_eq(o.err, "memtrack: tracefs is mounted at /sys/kernel/tracing but this user "
				"cannot read it (Permission denied): run as root, or grant "
				"CAP_DAC_READ_SEARCH as well\n");
	mt_out_free(&o);
	argv[5] = argv[7] = more;
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "exit %d: %s", o.code, o.err);
	mt_out_free(&o);
	unlink(art);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("it_degrade");
	TCase *tc = tcase_create("degrade");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, foreign_machine_elf);
	tcase_add_test(tc, broken_dynsym);
	tcase_add_test(tc, lock_prefixed_malloc);
	tcase_add_test(tc, mid_instruction_malloc);
	tcase_add_test(tc, plain_library_is_complete);
	tcase_add_test(tc, strict_turns_a_loss_into_125);
	mt_tcase_add_tool_test(tc, static_binary_without_allocator_is_incomplete, "busybox");
	tcase_add_test(tc, not_probed_said_without_summary);
	tcase_add_test(tc, closed_output_pipe);
	tcase_add_test(tc, full_disk);
	tcase_add_test(tc, report_files_on_a_full_device);
	tcase_add_test(tc, trace_on_a_full_device);
	tcase_add_test(tc, report_into_a_closed_pipe);
	tcase_add_test(tc, report_reads_a_pipe);
	tcase_add_test(tc, known_inodes_full);
	tcase_add_test(tc, hostile_file_names);
	tcase_add_test(tc, unprivileged_tracefs_message);
	tcase_add_test(tc, callers_refused_run_goes_on);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
