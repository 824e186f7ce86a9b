// SPDX-License-Identifier: GPL-2.0
/*
 * /proc/PID/maps walked (src/inspect/procmaps.c), on this test's own process: every mapping, the
 * special ones included ([stack], [vdso]), and the executable file mappings alone, the same ones
 * in both walks.
 */
#include <check.h>
#include <errno.h>
#include <stdint.h>
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

/* The mappings of [lo, hi) that the walk saw, by readable or not. */
struct area_seen {
	uint64_t lo, hi;
	int readable, inaccessible, outside;
};

static int count_area(const struct mt_map_entry *e, void *arg)
{
	struct area_seen *a = arg;

	if (e->start < a->lo || e->end > a->hi) {
		a->outside++;
		return 0;
	}
	if (e->read)
		a->readable++;
	else
		a->inaccessible++;
	return 0;
}

/*
 * A maps far longer than the walk's buffer: every line still comes, each once. The area's own
 * mappings are counted, not the whole file's, which the test's own allocations may change
 * between two reads.
 */
START_TEST(a_maps_of_thousands_of_lines_walked_whole)
{
	enum { N = 1500 };
	long page = sysconf(_SC_PAGESIZE);
	char *all = mmap(NULL, (2 * N + 2) * page, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	char *area = all + page;
	struct area_seen a = {0};

	ck_assert_ptr_ne(all, MAP_FAILED);
	/* Holes on both sides: nothing outside merges with the area's first or last mapping. */
	ck_assert_int_eq(munmap(all, page), 0);
	ck_assert_int_eq(munmap(area + 2 * N * page, page), 0);
	/* Every other page readable: 2 N mappings the kernel cannot merge. */
	for (int i = 0; i < N; i++)
		ck_assert_int_eq(mprotect(area + 2 * i * page, page, PROT_READ), 0);
	a.lo = (uintptr_t)area;
	a.hi = (uintptr_t)area + 2 * N * page;
	ck_assert_int_eq(mt_procmaps_for_each(getpid(), count_area, &a), 0);
	ck_assert_int_eq(a.readable, N);
	ck_assert_int_eq(a.inaccessible, N);
	ck_assert_int_gt(a.outside, 0);
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
