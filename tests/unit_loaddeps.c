// SPDX-License-Identifier: GPL-2.0
/*
 * Unit tests of the loader's view (src/classify/loaddeps.c): the objects ld.so will map for the
 * fixtures and this machine's libraries, by the search order glibc documents (ld.so(8)): preloads,
 * DT_RUNPATH with $ORIGIN, LD_LIBRARY_PATH before the cache, files of another class skipped.
 */
#include <check.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "classify/loaddeps.h"
#include "lib/mtrun.h"
#include "lib/suite.h"

#define LIBDIR "/usr/lib/x86_64-linux-gnu/"
#define FIX    MT_BUILD_DIR "/fixtures/"
#define INTERP "/lib64/ld-linux-x86-64.so.2" /* mapped by execve with the program */

struct names {
	char text[8192];
	size_t n;
};

static int collect(const char *path, void *arg)
{
	struct names *l = arg;
	size_t used = strlen(l->text);

	snprintf(l->text + used, sizeof(l->text) - used, "%s\n", path);
	l->n++;
	return 0;
}

/* The objects named for program with mapped already mapped, under env (program set here). */
static void deps(struct mt_loader_env env, const char *program, const char *const *mapped,
		 struct names *out)
{
	size_t n = 0;

	while (mapped && mapped[n])
		n++;
	memset(out, 0, sizeof(*out));
	env.program = program;
	ck_assert_int_eq(mt_loader_deps(&env, mapped, n, collect, out), 0);
}

static const struct mt_loader_env sys = {.cache = "/etc/ld.so.cache"};
static const char *const at_exec[] = {INTERP, NULL};

/* A program that needs libc: libc (its real path), not the program. */
START_TEST(program_needs_libc)
{
	struct names l;

	deps(sys, FIX "dlopen_plugin", at_exec, &l);
	ck_assert_str_eq(l.text, LIBDIR "libc.so.6\n");
}
END_TEST

/* What the process maps already is not named: after a dlopen, the plugin's own needs. */
START_TEST(mapped_objects_are_not_named)
{
	const char *mapped[] = {INTERP, "/lib/x86_64-linux-gnu/libc.so.6", FIX "plugin_mimalloc.so",
				NULL};
	struct names l;

	deps(sys, FIX "dlopen_plugin", mapped, &l);
	ck_assert_str_eq(l.text, LIBDIR "libmimalloc.so.2.0\n");
}
END_TEST

/* Without the cache, the default directories; $ORIGIN in DT_RUNPATH finds a fixture's library. */
START_TEST(runpath_origin_and_default_dirs)
{
	struct mt_loader_env none = {0};
	struct names l;

	deps(none, FIX "unwind_deep", at_exec, &l);
	ck_assert_str_eq(l.text, FIX "libmtdeep.so\n" LIBDIR "libc.so.6\n");
}
END_TEST

/* LD_PRELOAD first (a name searched like a DT_NEEDED), with what it needs, breadth first. */
START_TEST(preload_first)
{
	struct mt_loader_env env = sys;
	struct names l;

	env.preload = "libjemalloc.so.2";
	deps(env, FIX "exit_code", at_exec, &l);
	ck_assert_msg(strncmp(l.text, LIBDIR "libjemalloc.so.2\n" LIBDIR "libc.so.6\n",
			      strlen(LIBDIR "libjemalloc.so.2\n" LIBDIR "libc.so.6\n")) == 0,
		      "%s", l.text);
	ck_assert_int_eq(mt_count_lines(l.text, "libc.so.6"), 1);
}
END_TEST

/*
 * LD_LIBRARY_PATH comes before the cache, and a file of another class in it is passed over as
 * ld.so passes it over; /etc/ld.so.preload's entries are preloads too.
 */
START_TEST(library_path_before_cache)
{
	char dir[64], libc[128], cmd[512], list[128];
	struct mt_loader_env env = sys;
	struct names l;
	FILE *f;

	mt_tmpdir(dir);
	snprintf(libc, sizeof(libc), "%s/libc.so.6", dir);
	snprintf(cmd, sizeof(cmd), "cp %s '%s'", FIX "plugin_plain.so", libc);
	ck_assert_int_eq(system(cmd), 0);
	env.library_path = dir;
	deps(env, FIX "dlopen_plugin", at_exec, &l);
	ck_assert_int_eq(strncmp(l.text, libc, strlen(libc)), 0);

	/* An ELF of class 32 (its fifth byte): not for this process. */
	snprintf(cmd, sizeof(cmd),
		 "printf '\\001' | dd of='%s' bs=1 seek=4 conv=notrunc 2>/dev/null", libc);
	ck_assert_int_eq(system(cmd), 0);
	deps(env, FIX "dlopen_plugin", at_exec, &l);
	ck_assert_str_eq(l.text, LIBDIR "libc.so.6\n");

	snprintf(list, sizeof(list), "%s/preload", dir);
	f = fopen(list, "w");
	ck_assert_ptr_nonnull(f);
	fprintf(f, "# not a comment for ld.so, a name it does not find\n%s\n",
		FIX "plugin_jemalloc.so");
	fclose(f);
	env.library_path = NULL;
	env.preload_file = list;
	deps(env, FIX "exit_code", at_exec, &l);
	ck_assert_msg(
	    strncmp(l.text, FIX "plugin_jemalloc.so\n", strlen(FIX "plugin_jemalloc.so\n")) == 0,
	    "%s", l.text);
	ck_assert_int_eq(mt_count_lines(l.text, "libjemalloc.so.2"), 1);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/* The objects named through cache c for program under env. */
static void deps_cached(struct mt_loader_cache *c, struct mt_loader_env env, const char *program,
			struct names *out)
{
	memset(out, 0, sizeof(*out));
	env.program = program;
	ck_assert_int_eq(mt_loader_deps_cached(c, &env, at_exec, 1, collect, out), 0);
}

/*
 * A remembered walk (loaddeps_cache.c): the same program file and variables name what the first
 * walk named, even once the file it found is gone; another variable, or the program's file
 * changed (its change time), walk again.
 */
START_TEST(walks_are_remembered_by_program_and_variables)
{
	char dir[64], prog[128], libc[128], cmd[512];
	struct mt_loader_cache *c = mt_loader_cache_new();
	struct mt_loader_env env = sys;
	struct names l;

	ck_assert_ptr_nonnull(c);
	mt_tmpdir(dir);
	snprintf(prog, sizeof(prog), "%s/prog", dir);
	snprintf(libc, sizeof(libc), "%s/libc.so.6", dir);
	snprintf(cmd, sizeof(cmd), "cp %s '%s' && cp %s '%s'", FIX "dlopen_plugin", prog,
		 FIX "plugin_plain.so", libc);
	ck_assert_int_eq(system(cmd), 0);
	env.library_path = dir;
	deps_cached(c, env, prog, &l);
	ck_assert_int_eq(strncmp(l.text, libc, strlen(libc)), 0);

	ck_assert_int_eq(unlink(libc), 0);
	deps_cached(c, env, prog, &l);
	ck_assert_msg(strncmp(l.text, libc, strlen(libc)) == 0, "not remembered: %s", l.text);

	env.library_path = NULL;
	deps_cached(c, env, prog, &l);
	ck_assert_str_eq(l.text, LIBDIR "libc.so.6\n");

	env.library_path = dir;
	ck_assert_int_eq(chmod(prog, 0700), 0);
	deps_cached(c, env, prog, &l);
	ck_assert_str_eq(l.text, LIBDIR "libc.so.6\n");

	mt_loader_cache_free(c);
	snprintf(cmd, sizeof(cmd), "rm -rf '%s'", dir);
	ck_assert_int_eq(system(cmd), 0);
}
END_TEST

/*
 * A FIFO at a library's name in LD_LIBRARY_PATH is passed over, not waited on: the walk runs at an
 * exec stop, where memtrack's own signals wait until it is done (a ^C could not end it).
 */
START_TEST(fifo_at_a_library_name_does_not_block)
{
	char dir[64], fifo[128];
	struct mt_loader_env env = sys;
	struct names l;

	mt_tmpdir(dir);
	snprintf(fifo, sizeof(fifo), "%s/libc.so.6", dir);
	ck_assert_int_eq(mkfifo(fifo, 0600), 0);
	env.library_path = dir;
	alarm(10);
	deps(env, FIX "dlopen_plugin", at_exec, &l);
	alarm(0);
	ck_assert_str_eq(l.text, LIBDIR "libc.so.6\n");
	unlink(fifo);
	rmdir(dir);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("loaddeps");
	TCase *tc = tcase_create("loader");

	tcase_add_test(tc, program_needs_libc);
	tcase_add_test(tc, mapped_objects_are_not_named);
	tcase_add_test(tc, runpath_origin_and_default_dirs);
	tcase_add_test(tc, preload_first);
	tcase_add_test(tc, library_path_before_cache);
	tcase_add_test(tc, walks_are_remembered_by_program_and_variables);
	tcase_add_test(tc, fifo_at_a_library_name_does_not_block);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
