// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/PID/maps walked (src/inspect/procmaps.c), on this test's own process: every mapping, the
 * special ones included ([stack], [vdso]), and the executable file mappings alone, the same ones
 * in both walks.
 */
#include <check.h>
#include <errno.h>
#include <string.h>
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

static Suite *procmaps_suite(void)
{
	Suite *s = suite_create("procmaps");
	TCase *tc = tcase_create("walk");

	tcase_add_test(tc, every_mapping_and_exec_files_alone);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(procmaps_suite());
}
