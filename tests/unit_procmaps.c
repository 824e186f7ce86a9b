// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/PID/maps walked (src/inspect/procmaps.c), on this test's own process: every mapping, the
 * special ones included ([stack], [vdso]), and the executable file mappings alone, the same ones
 * in both walks.
 */
#include <check.h>
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "inspect/procmaps.h"
#include "lib/suite.h"

struct seen {
	int all, exec_files, stack;
};

static int count_any(const struct mt_map_entry *e, void *arg)
{
	struct seen *s = arg;

	s->all++;
	s->stack += !strcmp(e->path, "[stack]");
	s->exec_files += e->exec && e->key.ino && e->path[0] == '/';
	return 0;
}

static int count_exec(const struct mt_map_entry *e, void *arg)
{
	int *n = arg;

	ck_assert_msg(e->exec && e->key.ino && e->path[0] == '/', "not an exec file: %s", e->path);
	(*n)++;
	return 0;
}

static int stop_at_first(const struct mt_map_entry *e, void *arg)
{
	(void)e;
	(void)arg;
	return 7;
}

START_TEST(every_mapping_and_exec_files_alone)
{
	struct seen s = {0};
	int exec = 0;

	ck_assert_int_eq(mt_procmaps_for_each(getpid(), count_any, &s), 0);
	ck_assert_int_eq(mt_procmaps_for_each_exec(getpid(), count_exec, &exec), 0);
	ck_assert_int_eq(s.stack, 1);
	ck_assert_int_gt(exec, 0);
	ck_assert_int_eq(exec, s.exec_files);
	ck_assert_int_gt(s.all, exec);
	/* fn's non-zero value ends the walk and is returned */
	ck_assert_int_eq(mt_procmaps_for_each(getpid(), stop_at_first, NULL), 7);
	ck_assert_int_eq(mt_procmaps_for_each(-1, count_any, &s), -ENOENT);
}
END_TEST

/* The lines of /proc/self/maps, counted from the file itself. */
static int maps_lines(void)
{
	FILE *f = fopen("/proc/self/maps", "re");
	int n = 0, c;

	ck_assert_ptr_nonnull(f);
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

/* A maps far longer than the walk's buffer: every line still comes, each once, in order. */
START_TEST(a_maps_of_thousands_of_lines_walked_whole)
{
	enum { N = 1500 };
	long page = sysconf(_SC_PAGESIZE);
	char *area = mmap(NULL, 2 * N * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	struct seen s = {0};
	int lines;

	ck_assert_ptr_ne(area, MAP_FAILED);
	/* Every other page readable: N mappings the kernel cannot merge. */
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(mprotect(area + 2 * i * page, page, PROT_READ), 0);
	lines = maps_lines();
	ck_assert_int_eq(mt_procmaps_for_each(getpid(), count_any, &s), 0);
	ck_assert_int_ge(lines, 2 * N);
	ck_assert_int_eq(s.all, lines);
	ck_assert_int_eq(s.stack, 1);
	munmap(area, 2 * N * page);
}
END_TEST

static Suite *procmaps_suite(void)
{
	Suite *s = suite_create("procmaps");
	TCase *tc = tcase_create("walk");

	tcase_add_test(tc, every_mapping_and_exec_files_alone);
	tcase_add_test(tc, a_maps_of_thousands_of_lines_walked_whole);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(procmaps_suite());
}
