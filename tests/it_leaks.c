// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack run --leaks on the shapes of fixtures/leak_shapes.c (fixtures/README.md has their
 * truth): each block's class as memcheck gives it, exactly, per process of a fork/exec tree; the
 * report's text (memcheck's loss records), its JSON and --strict-leaks.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/fuse.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <check.h>
#include <json-c/json.h>

#include "base/clock.h"
#include "lib/mtjson.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define SHAPES	    FIXTURE("leak_shapes")
#define PLUGIN	    FIXTURE("plugin_leakslot.so")
#define MERGED	    FIXTURE("leak_merged_arena")
#define ALONE	    FIXTURE("thread_alone")
#define UFFD	    FIXTURE("uffd_root")
#define FUSE_MAPPED FIXTURE("fuse_mapped")
#define COMPARE	    MT_SOURCE_DIR "/tools/leaks-compare"
/* valgrind's own suppression of leak_shapes list's head (fixtures/README.md). */
#define LIST_SUPP   MT_SOURCE_DIR "/fixtures/leak_shapes_list.supp"
#define TREE_SUPP   MT_SOURCE_DIR "/fixtures/leak_shapes_tree.supp"

/* Bytes and blocks in each of the four classes. */
struct classes {
	int64_t def_bytes, def_blocks;
	int64_t ind_bytes, ind_blocks;
	int64_t pos_bytes, pos_blocks;
	int64_t rea_bytes, rea_blocks;
};

static void assert_class(struct json_object *leaks, const char *cls, int64_t bytes, int64_t blocks)
{
	struct json_object *c = mt_json_get(leaks, cls);

	ck_assert_msg(c, "no %s in %s", cls, json_object_to_json_string(leaks));
	ck_assert_msg(mt_json_i64(c, "bytes") == bytes && mt_json_i64(c, "blocks") == blocks,
		      "%s: %lld bytes in %lld blocks, not %lld in %lld", cls,
		      (long long)mt_json_i64(c, "bytes"), (long long)mt_json_i64(c, "blocks"),
		      (long long)bytes, (long long)blocks);
}

static void assert_classes(struct json_object *leaks, struct classes want)
{
	ck_assert_ptr_nonnull(leaks);
	assert_class(leaks, "definitely_lost", want.def_bytes, want.def_blocks);
	assert_class(leaks, "indirectly_lost", want.ind_bytes, want.ind_blocks);
	assert_class(leaks, "possibly_lost", want.pos_bytes, want.pos_blocks);
	assert_class(leaks, "still_reachable", want.rea_bytes, want.rea_blocks);
	ck_assert_int_eq(mt_json_i64(leaks, "unreadable_bytes"), 0);
	ck_assert(json_object_get_boolean(mt_json_get(leaks, "exact")));
}

/* The report of `leak_shapes MODE [ARG]` run with --leaks (and extra, if not NULL). */
static struct json_object *shape(const char *mode, const char *arg, const char *extra)
{
	const char *opts[] = {"--leaks", extra, NULL};
	const char *cmd[] = {SHAPES, mode, arg, NULL};
	struct mt_out o;
	struct json_object *rep = mt_run_report(opts, cmd, 120, &o);

	ck_assert_msg(rep && o.code == 0, "leak_shapes %s: exit %d: %s", mode, o.code, o.err);
	mt_out_free(&o);
	return rep;
}

/* The one image of rep that was scanned (the fixture's, after its exec). */
static struct json_object *scanned_image(struct json_object *rep, const char *position)
{
	struct json_object *images = mt_json_get(rep, "images"), *found = NULL;

	for (size_t i = 0; i < json_object_array_length(images); i++) {
		struct json_object *g = json_object_array_get_idx(images, i);
		struct json_object *pos = mt_json_get(g, "position");

		if (!mt_json_get(g, "leaks") ||
		    (pos && strcmp(json_object_get_string(pos), position)))
			continue;
		ck_assert_msg(!found, "two images at %s were scanned", position);
		found = g;
	}
	ck_assert_msg(found, "no image at %s was scanned", position);
	return mt_json_get(found, "leaks");
}

static void check_shape(const char *mode, struct classes want)
{
	struct json_object *rep = shape(mode, NULL, NULL);

	assert_classes(scanned_image(rep, "0"), want);
	assert_classes(mt_json_get(rep, "leaks"), want);
	json_object_put(rep);
}

START_TEST(overwritten_pointer_is_definitely_lost)
{
	check_shape("overwrite", (struct classes){.def_bytes = 1000, .def_blocks = 1});
}
END_TEST

START_TEST(list_with_lost_head_is_one_definite_nine_indirect)
{
	check_shape(
	    "list",
	    (struct classes){.def_bytes = 96, .def_blocks = 1, .ind_bytes = 864, .ind_blocks = 9});
}
END_TEST

START_TEST(interior_pointer_only_is_possibly_lost)
{
	check_shape("interior", (struct classes){.pos_bytes = 200, .pos_blocks = 1});
}
END_TEST

START_TEST(global_cache_is_still_reachable)
{
	check_shape("cache", (struct classes){.rea_bytes = 240, .rea_blocks = 5});
}
END_TEST

/*
 * A second thread: glibc's 272-byte DTV, whose only pointer (in the thread's control block, at
 * its stack's top) is 16 bytes into it, is possibly lost, as memcheck says of every live thread.
 */
START_TEST(register_of_blocked_thread_is_a_root)
{
	check_shape(
	    "register",
	    (struct classes){.pos_bytes = 272, .pos_blocks = 1, .rea_bytes = 333, .rea_blocks = 1});
	/* The control: the same thread with the register cleared. */
	check_shape(
	    "register-dropped",
	    (struct classes){.def_bytes = 333, .def_blocks = 1, .pos_bytes = 272, .pos_blocks = 1});
}
END_TEST

START_TEST(other_thread_stack_is_a_root)
{
	check_shape(
	    "stack",
	    (struct classes){.pos_bytes = 272, .pos_blocks = 1, .rea_bytes = 444, .rea_blocks = 1});
}
END_TEST

/* The plugin's block, from a site of its own (--stacks): still reachable, nothing lost. */
START_TEST(dlopen_library_data_is_a_root)
{
	struct json_object *rep = shape("dlopen", PLUGIN, "--stacks"), *recs, *leaks;
	int found = 0;

	/*
	 * dlopen's own blocks included, as memcheck counts them (fixtures/README.md): 2,054 bytes
	 * reachable with the plugin at a path of 48 bytes, three of them holding the path.
	 */
	leaks = scanned_image(rep, "0");
	assert_classes(leaks, (struct classes){.pos_bytes = 2304,
					       .pos_blocks = 1,
					       .rea_bytes = 1910 + 3 * (int64_t)strlen(PLUGIN),
					       .rea_blocks = 6});
	recs = mt_json_get(rep, "loss_records");
	ck_assert_ptr_nonnull(recs);
	for (size_t i = 0; i < json_object_array_length(recs); i++) {
		struct json_object *r = json_object_array_get_idx(recs, i);

		if (mt_json_i64(r, "bytes") != 555)
			continue;
		found++;
		ck_assert_str_eq(json_object_get_string(mt_json_get(r, "class")),
				 "still_reachable");
		ck_assert_int_eq(mt_json_i64(r, "blocks"), 1);
	}
	ck_assert_int_eq(found, 1);
	json_object_put(rep);
}
END_TEST

/* The parent makes the list; its child execs leak_shapes overwrite: each scanned on its own. */
START_TEST(fork_exec_tree_per_process)
{
	struct json_object *rep = shape("tree", SHAPES, NULL);

	assert_classes(
	    scanned_image(rep, "0"),
	    (struct classes){.def_bytes = 96, .def_blocks = 1, .ind_bytes = 864, .ind_blocks = 9});
	assert_classes(scanned_image(rep, "0.0"),
		       (struct classes){.def_bytes = 1000, .def_blocks = 1});
	assert_classes(mt_json_get(rep, "leaks"),
		       (struct classes){
			   .def_bytes = 1096, .def_blocks = 2, .ind_bytes = 864, .ind_blocks = 9});
	json_object_put(rep);
}
END_TEST

/* Every allocation of rep was made through family's functions. */
static void assert_one_family(struct json_object *rep, const char *family)
{
	struct json_object *fams = mt_json_get(rep, "families");
	int64_t mine = -1, all = 0;

	for (size_t i = 0; i < json_object_array_length(fams); i++) {
		struct json_object *f = json_object_array_get_idx(fams, i);

		all += mt_json_i64(f, "allocations");
		if (!strcmp(json_object_get_string(mt_json_get(f, "family")), family))
			mine = mt_json_i64(f, "allocations");
	}
	ck_assert_msg(mine > 0 && mine == all, "%s: %lld of %lld allocations", family,
		      (long long)mine, (long long)all);
}

/*
 * The single-thread shapes on musl (static), jemalloc and mimalloc: the same classes; jemalloc's
 * program has one more block still reachable, libstdc++'s emergency exception pool (72,704 bytes:
 * jemalloc links libstdc++), which glibc's and mimalloc's programs do not load. Every block is
 * the allocator's own: mimalloc's program makes no allocation through glibc's.
 */
START_TEST(other_allocators_same_shapes)
{
	static const char *const progs[] = {FIXTURE("leak_shapes_musl"),
					    FIXTURE("leak_shapes_jemalloc"),
					    FIXTURE("leak_shapes_mimalloc")};
	const int64_t extra_bytes = _i == 1 ? 72704 : 0, extra_blocks = _i == 1 ? 1 : 0;
	static const char *const modes[] = {"overwrite", "list", "interior", "cache"};
	const struct classes want[] = {
	    {.def_bytes = 1000, .def_blocks = 1},
	    {.def_bytes = 96, .def_blocks = 1, .ind_bytes = 864, .ind_blocks = 9},
	    {.pos_bytes = 200, .pos_blocks = 1},
	    {.rea_bytes = 240, .rea_blocks = 5},
	};

	for (size_t m = 0; m < 4; m++) {
		const char *opts[] = {"--leaks", NULL};
		const char *cmd[] = {progs[_i], modes[m], NULL};
		struct classes w = want[m];
		struct json_object *rep;
		struct mt_out o;

		rep = mt_run_report(opts, cmd, 120, &o);
		ck_assert_msg(rep && o.code == 0, "%s %s: %s", progs[_i], modes[m], o.err);
		mt_out_free(&o);
		w.rea_bytes += extra_bytes;
		w.rea_blocks += extra_blocks;
		assert_classes(scanned_image(rep, "0"), w);
		if (_i == 2)
			assert_one_family(rep, "mimalloc");
		json_object_put(rep);
	}
}
END_TEST

/* Record `leak_shapes mode` (with --leaks unless plain); the artifact's path, to free. */
static char *record(const char *mode, bool plain)
{
	const char *opts[] = {plain ? NULL : "--leaks", NULL};
	const char *cmd[] = {SHAPES, mode, NULL};
	struct mt_out o;
	char *art = mt_record(MEMTRACK, NULL, opts, cmd, 120, &o);

	ck_assert_msg(art && o.code == 0, "leak_shapes %s: %s", mode, o.err);
	mt_out_free(&o);
	return art;
}

static void report(const char *art, const char *opt, struct mt_out *o)
{
	const char *argv[] = {MEMTRACK, "report", art, opt, NULL};

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, o), 0);
}

static void remove_artifact(char *art)
{
	unlink(art);
	*strrchr(art, '/') = '\0';
	rmdir(art);
	free(art);
}

START_TEST(text_loss_records_and_strict_leaks)
{
	char *lost = record("list", false), *kept = record("cache", false);
	char *plain = record("list", true);
	struct mt_out o;

	report(lost, NULL, &o);
	ck_assert_int_eq(o.code, 0);
	ck_assert_msg(strstr(o.out, "864 bytes in 9 blocks are indirectly lost in loss record 1 of "
				    "2\n") &&
			  strstr(o.out, "96 bytes in 1 blocks are definitely lost in loss record 2 "
					"of 2\n"),
		      "%s", o.out);
	mt_out_free(&o);
	report(lost, "--strict-leaks", &o);
	ck_assert_int_eq(o.code, 4);
	ck_assert_msg(strstr(o.err, "96 bytes in 1 blocks are definitely lost"), "%s", o.err);
	mt_out_free(&o);
	report(kept, "--strict-leaks", &o);
	ck_assert_msg(o.code == 0 && !strstr(o.out, "loss record"), "%d %s", o.code, o.out);
	mt_out_free(&o);
	report(plain, "--strict-leaks", &o);
	ck_assert_int_eq(o.code, 1);
	ck_assert_msg(strstr(o.err, "made no leak scan (memtrack run --leaks)"), "%s", o.err);
	mt_out_free(&o);
	remove_artifact(lost);
	remove_artifact(kept);
	remove_artifact(plain);
}
END_TEST

/* Record `leak_shapes list` with --leaks --stacks; the artifact's path, to free. */
static char *record_list_stacks(void)
{
	const char *opts[] = {"--leaks", "--stacks", NULL};
	const char *cmd[] = {SHAPES, "list", NULL};
	struct mt_out o;
	char *art = mt_record(MEMTRACK, NULL, opts, cmd, 120, &o);

	ck_assert_msg(art && o.code == 0, "leak_shapes list: %s", o.err);
	mt_out_free(&o);
	return art;
}

static void report_supp(const char *art, const char *supp, const char *opt, struct mt_out *o)
{
	const char *argv[] = {MEMTRACK, "report", "--suppressions", supp, art, opt, NULL};

	ck_assert_int_eq(mt_run(argv, NULL, NULL, 60, o), 0);
}

/*
 * valgrind's suppression of the list's head hides that loss record alone: the rest of the list
 * is still indirectly lost, the head counted as suppressed, and --strict-leaks passes.
 */
START_TEST(suppressed_loss_record_hidden_and_counted)
{
	char *art = record_list_stacks();
	struct json_object *rep, *leaks, *sup;
	struct mt_out o;

	report_supp(art, LIST_SUPP, NULL, &o);
	ck_assert_msg(
	    o.code == 0 &&
		strstr(o.out, "864 bytes in 9 blocks are indirectly lost in loss record "
			      "1 of 1\n") &&
		!strstr(o.out, "are definitely lost") &&
		strstr(o.out, "\n  suppressed: 96 bytes in 1 blocks") &&
		strstr(o.out, "used_suppression:      1 <insert_a_suppression_name_here> " LIST_SUPP
			      ":5 suppressed: 96 bytes in 1 blocks\n"),
	    "%d %s %s", o.code, o.out, o.err);
	mt_out_free(&o);
	report_supp(art, LIST_SUPP, "--strict-leaks", &o);
	ck_assert_msg(o.code == 0, "%d %s", o.code, o.err);
	mt_out_free(&o);
	report_supp(art, LIST_SUPP, "--json", &o);
	ck_assert_int_eq(o.code, 0);
	rep = json_tokener_parse(o.out);
	ck_assert_ptr_nonnull(rep);
	leaks = mt_json_get(rep, "leaks");
	assert_classes(leaks, (struct classes){.ind_bytes = 864, .ind_blocks = 9});
	sup = mt_json_get(leaks, "suppressed");
	ck_assert_int_eq(mt_json_i64(sup, "bytes"), 96);
	ck_assert_int_eq(mt_json_i64(sup, "blocks"), 1);
	ck_assert_int_eq(json_object_array_length(mt_json_get(rep, "loss_records")), 1);
	sup = json_object_array_get_idx(mt_json_get(rep, "suppressions"), 0);
	ck_assert_int_eq(mt_json_i64(sup, "loss_records"), 1);
	ck_assert_int_eq(mt_json_i64(sup, "bytes"), 96);
	json_object_put(rep);
	mt_out_free(&o);
	remove_artifact(art);
}
END_TEST

/* A malformed file: one sentence with its file and line, exit 1, no report. */
START_TEST(malformed_suppressions_refused)
{
	char *art = record_list_stacks(), *bad = mt_tmpfile(), want[512];
	static const char text[] = "{\n  n\n  Memcheck:Leak\n  match-leak-kinds: definit\n}\n";
	FILE *f = fopen(bad, "w");
	struct mt_out o;

	ck_assert_ptr_nonnull(f);
	ck_assert_int_eq(fputs(text, f) >= 0 && !fclose(f), 1);
	report_supp(art, bad, NULL, &o);
	snprintf(want, sizeof(want),
		 "memtrack: %s:4: match-leak-kinds takes definite, indirect, possible and "
		 "reachable, separated by commas, or all or none, not 'definit'\n",
		 bad);
	ck_assert_msg(o.code == 1 && !strcmp(o.err, want) && !*o.out, "%d '%s' '%s'", o.code, o.err,
		      o.out);
	mt_out_free(&o);
	unlink(bad);
	report_supp(art, bad, NULL, &o);
	ck_assert_msg(o.code == 1 && strstr(o.err, "cannot read the suppressions"), "%s", o.err);
	mt_out_free(&o);
	free(bad);
	remove_artifact(art);
}
END_TEST

/*
 * What memcheck prints with --gen-suppressions=all for the list, fed back as it is: it matches
 * both of memtrack's loss records (the head and the rest), the same ones.
 */
START_TEST(memcheck_generated_suppressions_match)
{
	const char *vg[] = {"valgrind",
			    "--leak-check=full",
			    "--show-leak-kinds=all",
			    "--gen-suppressions=all",
			    "--run-libc-freeres=no",
			    SHAPES,
			    "list",
			    NULL};
	char *art = record_list_stacks(), *supp = mt_tmpfile();
	struct json_object *rep, *leaks, *sup;
	const char *p, *q;
	struct mt_out o;
	FILE *f;
	int n = 0;

	ck_assert_int_eq(mt_run(vg, NULL, NULL, 120, &o), 0);
	f = fopen(supp, "w");
	ck_assert_ptr_nonnull(f);
	/* The suppressions are the lines of stderr between a "{" line and a "}" line. */
	for (p = o.err; (p = strstr(p, "\n{\n")); p = q, n++) {
		q = strstr(p, "\n}\n");
		ck_assert_ptr_nonnull(q);
		q += 3;
		fwrite(p + 1, 1, (size_t)(q - p - 1), f);
	}
	ck_assert_int_eq(fclose(f), 0);
	ck_assert_msg(n == 2, "%d suppressions in %s", n, o.err);
	mt_out_free(&o);
	report_supp(art, supp, "--json", &o);
	ck_assert_msg(o.code == 0, "%s", o.err);
	rep = json_tokener_parse(o.out);
	leaks = mt_json_get(rep, "leaks");
	assert_classes(leaks, (struct classes){0});
	sup = mt_json_get(leaks, "suppressed");
	ck_assert_int_eq(mt_json_i64(sup, "bytes"), 960);
	ck_assert_int_eq(mt_json_i64(sup, "blocks"), 10);
	ck_assert_int_eq(json_object_array_length(mt_json_get(rep, "loss_records")), 0);
	json_object_put(rep);
	mt_out_free(&o);
	unlink(supp);
	free(supp);
	remove_artifact(art);
}
END_TEST

/* Record `leak_shapes tree leak_shapes` with --leaks --stacks; the artifact's path, to free. */
static char *record_tree_stacks(void)
{
	const char *opts[] = {"--leaks", "--stacks", NULL};
	const char *cmd[] = {SHAPES, "tree", SHAPES, NULL};
	struct mt_out o;
	char *art = mt_record(MEMTRACK, NULL, opts, cmd, 120, &o);

	ck_assert_msg(art && o.code == 0, "leak_shapes tree: %s", o.err);
	mt_out_free(&o);
	return art;
}

/* The weight of the folded line that goes through function fn; the sum of all in *sum. */
static long long folded_weight(const char *out, const char *fn, long long *sum)
{
	long long found = -1;

	*sum = 0;
	for (const char *l = out; *l;) {
		const char *nl = strchr(l, '\n'), *sp;
		size_t len = nl ? (size_t)(nl - l) : strlen(l);
		char line[4096];

		snprintf(line, sizeof(line), "%.*s", (int)len, l);
		sp = strrchr(line, ' ');
		ck_assert_msg(sp, "not a folded line: %s", line);
		*sum += atoll(sp + 1);
		if (strstr(line, fn)) {
			ck_assert_msg(found < 0, "two lines through %s: %s", fn, out);
			found = atoll(sp + 1);
		}
		l += len + (nl != NULL);
	}
	return found;
}

/* The bytes of rep's loss records in the two lost classes. */
static long long lost_in_records(struct json_object *rep)
{
	struct json_object *recs = mt_json_get(rep, "loss_records");
	long long sum = 0;

	for (size_t i = 0; i < json_object_array_length(recs); i++) {
		struct json_object *r = json_object_array_get_idx(recs, i);
		const char *cls = json_object_get_string(mt_json_get(r, "class"));

		if (!strcmp(cls, "definitely_lost") || !strcmp(cls, "indirectly_lost"))
			sum += mt_json_i64(r, "bytes");
	}
	return sum;
}

/*
 * --folded=leaked: each stack weighs its bytes definitely and indirectly lost, the list's 960
 * (96 + 864) in the parent, overwrite's 1,000 in the child; in all the loss records' bytes.
 * A suppressed record weighs nothing: the tree's own suppression, whose stack has tree, inlined
 * into main, as memcheck prints it (list's, without it, suppresses nothing here, as in memcheck).
 */
START_TEST(folded_leaked_weighs_the_loss_records)
{
	char *art = record_tree_stacks();
	const char *json[] = {MEMTRACK, "report", "--json", art, NULL};
	const char *folded[] = {MEMTRACK, "report", "--folded=leaked", art, NULL};
	const char *supp[] = {MEMTRACK, "report", "--folded=leaked", "--suppressions", TREE_SUPP,
			      art,	NULL};
	struct json_object *rep;
	struct mt_out o;
	long long sum;

	ck_assert_int_eq(mt_run(json, NULL, NULL, 60, &o), 0);
	rep = json_tokener_parse(o.out);
	ck_assert_ptr_nonnull(rep);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(folded, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "%s", o.err);
	ck_assert_int_eq(folded_weight(o.out, ";make_list ", &sum), 960);
	ck_assert_int_eq(folded_weight(o.out, ";make_overwritten ", &sum), 1000);
	ck_assert_int_eq(sum, 1960);
	ck_assert_int_eq(sum, lost_in_records(rep));
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(supp, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 0, "%s", o.err);
	ck_assert_int_eq(folded_weight(o.out, ";make_list ", &sum), 864);
	ck_assert_int_eq(sum, 1864);
	mt_out_free(&o);
	json_object_put(rep);
	remove_artifact(art);
}
END_TEST

/* leaked needs a scan, and weighs folded stacks only. */
START_TEST(folded_leaked_refused_without_scan)
{
	const char *opts[] = {"--stacks", NULL};
	const char *cmd[] = {SHAPES, "list", NULL};
	struct mt_out o;
	char *plain = mt_record(MEMTRACK, NULL, opts, cmd, 120, &o);
	const char *folded[] = {MEMTRACK, "report", "--folded=leaked", plain, NULL};
	const char *sites[] = {MEMTRACK, "report", "--sites-by", "leaked", plain, NULL};

	ck_assert_msg(plain && o.code == 0, "%s", o.err);
	mt_out_free(&o);

	ck_assert_int_eq(mt_run(folded, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 1 && strstr(o.err, "--folded=leaked needs a leak scan (memtrack "
						   "run --leaks)\n"),
		      "%d %s", o.code, o.err);
	mt_out_free(&o);
	ck_assert_int_eq(mt_run(sites, NULL, NULL, 60, &o), 0);
	ck_assert_msg(o.code == 2 && strstr(o.err, "--sites-by takes allocations, bytes, live, "
						   "peak or temporary, not 'leaked'"),
		      "%d %s", o.code, o.err);
	mt_out_free(&o);
	remove_artifact(plain);
}
END_TEST

/* The end-of-run summary says what the scans found. */
START_TEST(summary_line)
{
	char *art = mt_tmpfile();
	const char *argv[] = {MEMTRACK, "run",	"--leaks", "-o",   art,
			      "--",	SHAPES, "tree",	   SHAPES, NULL};
	struct mt_out o;

	unlink(art);
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 120, &o), 0);
	ck_assert_int_eq(o.code, 0);
	ck_assert_msg(strstr(o.err, "memtrack: leaks at exit: 1,096 bytes definitely lost, 864 "
				    "indirectly, 0 possibly, 0 still reachable"),
		      "%s", o.err);
	mt_out_free(&o);
	unlink(art);
	free(art);
}
END_TEST

/*
 * A runtime's arena merged by the kernel with a large malloc's own mapping (fixtures/README.md):
 * the arena holds the only pointer to a block, which is still reachable, as memcheck says; the
 * scan reads the merged mapping less its blocks, not nothing of it.
 */
START_TEST(arena_merged_with_malloc_chunk_is_a_root)
{
	const char *opts[] = {"--leaks", NULL};
	const char *cmd[] = {MERGED, NULL};
	struct mt_out o;
	char *art = mt_record(MEMTRACK, NULL, opts, cmd, 120, &o);

	ck_assert_msg(art && o.code == 0, "leak_merged_arena: exit %d: %s", o.code, o.err);
	mt_out_free(&o);
	report(art, "--json", &o);
	ck_assert_int_eq(o.code, 0);
	{
		struct json_object *rep = json_tokener_parse(o.out);

		ck_assert_ptr_nonnull(rep);
		assert_classes(scanned_image(rep, "0"),
			       (struct classes){.rea_bytes = (256 << 10) + 100, .rea_blocks = 2});
		json_object_put(rep);
	}
	mt_out_free(&o);
	report(art, "--strict-leaks", &o);
	ck_assert_msg(o.code == 0, "--strict-leaks: exit %d: %s", o.code, o.err);
	mt_out_free(&o);
	remove_artifact(art);
}
END_TEST

/*
 * A thread that ends alone while its process runs on, which the hold at the exit stops took for
 * a group exit (fixtures/README.md): the run ends (the join returns), and the process is scanned
 * at its own end, each class exact. seccomp's lone kill is let go at the hold's bound.
 */
static void check_alone(const char *mode)
{
	const char *opts[] = {"--leaks", NULL};
	const char *cmd[] = {ALONE, mode, NULL};
	struct mt_out o;
	struct json_object *rep = mt_run_report(opts, cmd, 60, &o);

	ck_assert_msg(rep && o.code == 0, "thread_alone %s: exit %d: %s", mode, o.code, o.err);
	mt_out_free(&o);
	assert_classes(scanned_image(rep, "0"), (struct classes){.def_bytes = 700,
								 .def_blocks = 1,
								 .pos_bytes = 272,
								 .pos_blocks = 1,
								 .rea_bytes = 500,
								 .rea_blocks = 1});
	json_object_put(rep);
}

START_TEST(thread_killed_alone_by_seccomp)
{
	check_alone("seccomp");
}
END_TEST

START_TEST(thread_ending_alone_with_i386_exit)
{
	check_alone("int80");
}
END_TEST

/* Add test, run on thread_alone mode, unless the fixture's plain run proves the host cannot. */
static void add_alone_test(TCase *tc, const TTest *test, const char *mode, char *why, size_t len)
{
	const char *argv[] = {ALONE, mode, NULL};
	struct mt_out o;
	int code = mt_run(argv, NULL, NULL, 60, &o) ? -1 : o.code;

	mt_out_free(&o);
	if (code == 0) {
		tcase_add_test(tc, test);
		return;
	}
	if (code == 3)
		snprintf(why, len, "this kernel refused thread_alone's seccomp filter");
	else if (code == 128 + SIGSEGV)
		snprintf(why, len,
			 "this kernel has no i386 system calls (int $0x80 killed thread_alone)");
	else
		snprintf(why, len, "thread_alone %s exited %d by itself", mode, code);
	mt_add_host_skipped_test(tc, test, why);
}

/*
 * Memory registered with a userfaultfd that no thread serves (fixtures/README.md): its pages never
 * made would wait for ever to be read. The run ends with that memory counted unreadable, not
 * read: a root mapping (the block whose only pointer is in it definitely lost), a block (still
 * reachable from a global, its bytes unreadable).
 */
START_TEST(userfaultfd_memory_not_read)
{
	const long page = sysconf(_SC_PAGESIZE);
	const char *opts[] = {"--leaks", NULL};
	const char *cmd[] = {UFFD, _i ? "block" : NULL, NULL};
	struct mt_out o;
	struct json_object *rep = mt_run_report(opts, cmd, 60, &o), *leaks;

	ck_assert_msg(rep && o.code == 0, "uffd_root %s: exit %d: %s", _i ? "block" : "", o.code,
		      o.err);
	mt_out_free(&o);
	leaks = scanned_image(rep, "0");
	assert_class(leaks, "definitely_lost", _i ? 0 : 123, _i ? 0 : 1);
	assert_class(leaks, "possibly_lost", 0, 0);
	assert_class(leaks, "still_reachable", _i ? 256 << 10 : 0, _i ? 1 : 0);
	ck_assert_int_eq(mt_json_i64(leaks, "unreadable_regions"), _i ? 0 : 1);
	ck_assert_int_eq(mt_json_i64(leaks, "unreadable_bytes"), _i ? 256 << 10 : 4 * page);
	json_object_put(rep);
}
END_TEST

/* Why uffd_root cannot run here: the kernel refused it a userfaultfd. */
static const char *uffd_unavailable(void)
{
	const char *argv[] = {UFFD, NULL};
	struct mt_out o;
	int code = mt_run(argv, NULL, NULL, 60, &o) ? -1 : o.code;

	mt_out_free(&o);
	return code ? "this kernel refused uffd_root a userfaultfd" : NULL;
}

/* Why the merge cannot be shown here (the fixture exits 3 when the kernel kept them apart). */
static const char *merge_unavailable(void)
{
	const char *argv[] = {MERGED, NULL};
	struct mt_out o;
	int code = mt_run(argv, NULL, NULL, 60, &o) ? -1 : o.code;

	mt_out_free(&o);
	return code == 3 ? "this kernel kept the arena and the malloc chunk apart" : NULL;
}

/* ---- a FUSE file whose server answers only the reads of its first pages ------------------- */

#define FUSE_FILE_SIZE (1u << 20)
#define FUSE_FILE_NODE 2
#define FUSE_ANSWERED  8192 /* the reads answered: of the first two pages */

static void fuse_attr_of(uint64_t node, struct fuse_attr *a)
{
	*a = (struct fuse_attr){.ino = node, .nlink = 1, .blksize = 4096};
	a->mode = node == FUSE_ROOT_ID ? S_IFDIR | 0755 : S_IFREG | 0444;
	a->size = node == FUSE_ROOT_ID ? 0 : FUSE_FILE_SIZE;
	a->blocks = a->size / 512;
}

/* The answer to one request of the kernel's, or nothing (a FORGET; a READ past the first page). */
static void fuse_answer(int fd, const struct fuse_in_header *in, const void *arg)
{
	static char zeros[FUSE_FILE_SIZE];
	union {
		struct fuse_init_out init;
		struct fuse_entry_out entry;
		struct fuse_attr_out attr;
		struct fuse_open_out open;
	} u = {0};
	struct fuse_out_header out = {.unique = in->unique};
	struct iovec iov[2] = {{&out, sizeof(out)}, {&u, 0}};

	switch (in->opcode) {
	case FUSE_INIT:
		u.init = (struct fuse_init_out){.major = FUSE_KERNEL_VERSION,
						.minor = FUSE_KERNEL_MINOR_VERSION,
						.max_write = 4096};
		iov[1].iov_len = sizeof(u.init);
		break;
	case FUSE_LOOKUP:
		if (in->nodeid != FUSE_ROOT_ID || strcmp(arg, "f")) {
			out.error = -ENOENT;
			break;
		}
		u.entry.nodeid = FUSE_FILE_NODE;
		u.entry.entry_valid = u.entry.attr_valid = 3600;
		fuse_attr_of(FUSE_FILE_NODE, &u.entry.attr);
		iov[1].iov_len = sizeof(u.entry);
		break;
	case FUSE_GETATTR:
		u.attr.attr_valid = 3600;
		fuse_attr_of(in->nodeid, &u.attr.attr);
		iov[1].iov_len = sizeof(u.attr);
		break;
	case FUSE_OPEN:
		u.open.fh = 1;
		iov[1].iov_len = sizeof(u.open);
		break;
	case FUSE_READ: {
		const struct fuse_read_in *r = arg;

		if (r->offset >= FUSE_ANSWERED)
			return; /* never answered: a reader waits for ever */
		/* Whole: a short read would tell the kernel that the file ends there. */
		iov[1] = (struct iovec){zeros, r->size < FUSE_FILE_SIZE - r->offset
						   ? r->size
						   : FUSE_FILE_SIZE - r->offset};
		break;
	}
	case FUSE_FORGET:
	case FUSE_BATCH_FORGET:
	case FUSE_INTERRUPT:
		return;
	case FUSE_FLUSH:
	case FUSE_RELEASE:
		break;
	default:
		out.error = -ENOSYS;
	}
	out.len = sizeof(out) + iov[1].iov_len;
	if (writev(fd, iov, 2) < 0)
		_exit(1);
}

/*
 * The server's own bound: a reader waiting for an answer the server read is not even ended by
 * SIGKILL (FUSE waits for the answer once the request was taken), so a memtrack that read the
 * file would hang the test too. The server's end at this bound aborts its connection: the reader
 * gets an error, and a memtrack killed at the run's bound (below it) ends. The server unmounts
 * its filesystem then: a failed test leaves no mount behind.
 */
#define FUSE_SERVER_BOUND_S 90

/* The server: mounts its filesystem at dir, answers until the connection or its bound ends. */
static void fuse_serve(const char *dir)
{
	static char buf[FUSE_MIN_READ_BUFFER + FUSE_FILE_SIZE];
	const uint64_t deadline = mt_clock_now_ns() + FUSE_SERVER_BOUND_S * 1000000000ull;
	int fd = open("/dev/fuse", O_RDWR | O_CLOEXEC);
	struct pollfd p = {.fd = fd, .events = POLLIN};
	char opts[128];
	ssize_t n;

	prctl(PR_SET_PDEATHSIG, SIGKILL);
	snprintf(opts, sizeof(opts), "fd=%d,rootmode=40000,user_id=0,group_id=0,allow_other", fd);
	if (fd < 0 || mount("memtrack-test", dir, "fuse.memtrack-test", MS_NOSUID | MS_NODEV, opts))
		_exit(3);
	for (uint64_t now; (now = mt_clock_now_ns()) < deadline;) {
		if (poll(&p, 1, (int)((deadline - now) / 1000000) + 1) <= 0)
			continue;
		n = read(fd, buf, sizeof(buf));
		if (n < 0 && (errno == EINTR || errno == ENOENT))
			continue;
		if (n < (ssize_t)sizeof(struct fuse_in_header))
			_exit(0);
		fuse_answer(fd, (const struct fuse_in_header *)buf,
			    buf + sizeof(struct fuse_in_header));
	}
	umount2(dir, MNT_DETACH);
	_exit(0);
}

/* Start the server on dir (made readable by all); its pid once dir/f is there, or -1. */
static pid_t fuse_start(const char *dir, char *file, size_t size)
{
	const struct timespec tick = {0, 10 * 1000 * 1000};
	struct stat st;
	pid_t pid;

	chmod(dir, 0755);
	snprintf(file, size, "%s/f", dir);
	pid = fork();
	if (pid == 0)
		fuse_serve(dir);
	for (int i = 0; pid > 0 && i < 1000; i++) {
		if (!stat(file, &st) && st.st_size == FUSE_FILE_SIZE)
			return pid;
		if (waitpid(pid, NULL, WNOHANG) == pid)
			return -1;
		nanosleep(&tick, NULL);
	}
	return -1;
}

/* The server gone (its connection with it: whatever waited on it fails), dir unmounted. */
static void fuse_stop(pid_t pid, const char *dir)
{
	if (pid > 0) {
		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
	}
	umount2(dir, MNT_DETACH);
	rmdir(dir);
}

/* Why no FUSE filesystem can be mounted here, or NULL. */
static const char *fuse_unavailable(void)
{
	char dir[64], file[128];
	pid_t pid;

	if (access("/dev/fuse", R_OK | W_OK))
		return "this host has no /dev/fuse";
	mt_tmpdir(dir);
	pid = fuse_start(dir, file, sizeof(file));
	fuse_stop(pid, dir);
	return pid < 0 ? "this host refused a FUSE mount (mount -t fuse)" : NULL;
}

/*
 * A root mapping of a FUSE file whose server answers only the reads of its first two pages (a
 * server stopped, or the traced process itself): the scan reads only the process's own page of
 * it (the second, written: the pointer there keeps its 55-byte block reachable), not the file's
 * (the first, in memory) nor those never read in, which would wait for ever; those are counted
 * unreadable (1 region, 1 MiB less a page), and the run ends. The block whose only pointer was
 * dropped is definitely lost.
 */
START_TEST(fuse_mapping_not_read)
{
	char dir[64], file[128];
	const char *opts[] = {"--leaks", NULL};
	const char *cmd[] = {FUSE_MAPPED, file, NULL};
	struct json_object *rep, *leaks;
	struct mt_out o;
	pid_t server;

	mt_tmpdir(dir);
	server = fuse_start(dir, file, sizeof(file));
	ck_assert_int_gt(server, 0);
	rep = mt_run_report(opts, cmd, 60, &o);
	fuse_stop(server, dir);
	ck_assert_msg(rep && o.code == 0, "fuse_mapped: exit %d (137: memtrack hung): %s", o.code,
		      o.err);
	mt_out_free(&o);
	leaks = scanned_image(rep, "0");
	assert_class(leaks, "definitely_lost", 77, 1);
	assert_class(leaks, "still_reachable", 55, 1);
	ck_assert_int_eq(mt_json_i64(leaks, "unreadable_regions"), 1);
	ck_assert_int_eq(mt_json_i64(leaks, "unreadable_bytes"), FUSE_FILE_SIZE - 4096);
	json_object_put(rep);
}
END_TEST

/*
 * tools/leaks-compare: memcheck's classes and memtrack's on real programs, equal. Python's
 * pymalloc arenas are anonymous mappings that the kernel merges with glibc's mmap chunks.
 */
START_TEST(memchecks_classes_on_real_programs)
{
	const char *const cases[][5] = {{"python3", "-c", "import json", NULL}, {MERGED, NULL}};
	const char *argv[16] = {COMPARE, "--memtrack", MEMTRACK, "--"};
	struct mt_out o;
	int n = 4;

	for (int i = 0; cases[_i][i]; i++)
		argv[n++] = cases[_i][i];
	argv[n] = NULL;
	/* Below the case's 300 s: a run that hangs fails here, with what it printed. */
	ck_assert_int_eq(mt_run(argv, NULL, NULL, 280, &o), 0);
	ck_assert_msg(o.code == 0, "%s (exit %d) %s", o.out, o.code, o.err);
	mt_out_free(&o);
}
END_TEST

/*
 * A static glibc program that frees what it allocates: its start-up's own blocks, held from its
 * RELRO (made read-only after them), are still reachable, not lost; --strict-leaks passes.
 */
START_TEST(static_glibc_start_up_is_reachable)
{
	const char *opts[] = {"--leaks", NULL};
	const char *cmd[] = {FIXTURE("static_alloc"), "10", NULL};
	struct mt_out o;
	struct json_object *rep = mt_run_report(opts, cmd, 120, &o), *leaks;

	ck_assert_msg(rep && o.code == 0, "static_alloc: exit %d: %s", o.code, o.err);
	mt_out_free(&o);
	leaks = mt_json_get(rep, "leaks");
	assert_class(leaks, "definitely_lost", 0, 0);
	assert_class(leaks, "indirectly_lost", 0, 0);
	assert_class(leaks, "possibly_lost", 0, 0);
	ck_assert_int_ge(mt_json_i64(mt_json_get(leaks, "still_reachable"), "blocks"), 2);
	json_object_put(rep);
}
END_TEST

static Suite *suite(void)
{
	static char no_seccomp[160], no_i386[160];
	const char *no_uffd;
	Suite *s = suite_create("leaks");
	TCase *tc = tcase_create("shapes");

	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, overwritten_pointer_is_definitely_lost);
	tcase_add_test(tc, list_with_lost_head_is_one_definite_nine_indirect);
	tcase_add_test(tc, interior_pointer_only_is_possibly_lost);
	tcase_add_test(tc, global_cache_is_still_reachable);
	tcase_add_test(tc, register_of_blocked_thread_is_a_root);
	tcase_add_test(tc, other_thread_stack_is_a_root);
	tcase_add_test(tc, dlopen_library_data_is_a_root);
	tcase_add_test(tc, fork_exec_tree_per_process);
	tcase_add_test(tc, text_loss_records_and_strict_leaks);
	tcase_add_test(tc, static_glibc_start_up_is_reachable);
	tcase_add_test(tc, summary_line);

	tcase_add_loop_test(tc, other_allocators_same_shapes, 0, 3);
	mt_add_test_unless(tc, arena_merged_with_malloc_chunk_is_a_root, merge_unavailable());
	mt_add_tool_test(tc, memchecks_classes_on_real_programs, 0, 2, "valgrind python3 jq");
	no_uffd = uffd_unavailable();
	if (no_uffd)
		mt_add_host_skipped_test(tc, userfaultfd_memory_not_read, no_uffd);
	else
		tcase_add_loop_test(tc, userfaultfd_memory_not_read, 0, 2);
	mt_add_test_unless(tc, fuse_mapping_not_read, fuse_unavailable());
	add_alone_test(tc, thread_killed_alone_by_seccomp, "seccomp", no_seccomp,
		       sizeof(no_seccomp));
	add_alone_test(tc, thread_ending_alone_with_i386_exit, "int80", no_i386, sizeof(no_i386));
	suite_add_tcase(s, tc);
	tc = tcase_create("suppressions");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, suppressed_loss_record_hidden_and_counted);
	tcase_add_test(tc, malformed_suppressions_refused);
	mt_tcase_add_tool_test(tc, memcheck_generated_suppressions_match, "valgrind");
	suite_add_tcase(s, tc);
	tc = tcase_create("weights");
	tcase_set_timeout(tc, 300);
	tcase_add_test(tc, folded_leaked_weighs_the_loss_records);
	tcase_add_test(tc, folded_leaked_refused_without_scan);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
