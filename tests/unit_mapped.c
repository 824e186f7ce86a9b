// SPDX-License-Identifier: GPL-2.0
/*
 * The counting of mapped memory (src/aggregate/mapped.h) on records made by hand: pages, holes,
 * fixed mappings over the allocator's, mremap of a range never seen, the break after a fork, an
 * image's end, and the tree's peak as the sum at one moment.
 */
#include <check.h>
#include <sys/mman.h>

#include "aggregate/mapped.h"
#include "lib/suite.h"

#define ANON (MAP_PRIVATE | MAP_ANONYMOUS)

static struct mt_artifact_mapping rec(uint8_t what, uint64_t addr, uint64_t len, uint32_t flags)
{
	return (struct mt_artifact_mapping){.what = what, .addr = addr, .len = len, .flags = flags};
}

static void add(struct mt_mapped *mp, uint32_t image, struct mt_artifact_mapping m)
{
	ck_assert_int_eq(mt_mapped_record(mp, image, &m), 0);
}

static uint64_t now(struct mt_mapped *mp, uint32_t image, int cls)
{
	return mt_mapped_image(mp, image)->now[cls];
}

START_TEST(pages_holes_and_unmapping_over_them)
{
	struct mt_mapped *mp = mt_mapped_new(0);

	add(mp, 0, rec(MT_MAP_MMAP, 0x10000, 5000, ANON)); /* two pages */
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ANON_PRIVATE), 8192);
	add(mp, 0, rec(MT_MAP_MMAP, 0x20000, 3 * 4096, MAP_SHARED | MAP_ANONYMOUS));
	add(mp, 0, rec(MT_MAP_MUNMAP, 0x21000, 4096, 0)); /* a hole in the middle */
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ANON_SHARED), 8192);
	add(mp, 0, rec(MT_MAP_MUNMAP, 0x1f000, 0x10000, 0)); /* over the hole and past the ends */
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ANON_SHARED), 0);
	/* A failed munmap unmaps nothing; one of a range never mapped changes nothing. */
	{
		struct mt_artifact_mapping m = rec(MT_MAP_MUNMAP, 0x10000, 8192, 0);

		m.error = -22;
		add(mp, 0, m);
	}
	add(mp, 0, rec(MT_MAP_MUNMAP, 0x90000, 4096, 0));
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ANON_PRIVATE), 8192);
	ck_assert_uint_eq(mt_mapped_image(mp, 0)->peak_mapped, 8192 + 3 * 4096);
	/* A fixed file mapping over an anonymous page replaces it. */
	add(mp, 0, rec(MT_MAP_MMAP, 0x11000, 4096, MAP_PRIVATE | MAP_FIXED));
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ANON_PRIVATE), 4096);
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_FILE_PRIVATE), 4096);
	ck_assert_uint_eq(mt_mapped_image(mp, 0)->calls[MT_MAP_MUNMAP], 4);
	mt_mapped_free(mp);
}
END_TEST

START_TEST(the_allocators_own_stay_its_own)
{
	struct mt_mapped *mp = mt_mapped_new(0);
	struct mt_artifact_mapping m = rec(MT_MAP_MMAP, 0x100000, 0x40000, ANON);

	m.origin = MT_MAP_IN_ALLOCATOR;
	add(mp, 0, m);
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ALLOC_MMAP), 0x40000);
	ck_assert_uint_eq(mt_mapped_image(mp, 0)->mapped, 0);
	/* shrink_heap from free: a fixed PROT_NONE mapping over it, no mark, still the allocator's
	 */
	add(mp, 0, rec(MT_MAP_MMAP, 0x120000, 0x20000, ANON | MAP_FIXED));
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ALLOC_MMAP), 0x40000);
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ANON_PRIVATE), 0);
	/* mremap keeps the class; munmap from free needs no mark */
	m = rec(MT_MAP_MREMAP, 0x200000, 0x80000, MREMAP_MAYMOVE);
	m.old_addr = 0x100000;
	m.old_len = 0x40000;
	add(mp, 0, m);
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ALLOC_MMAP), 0x80000);
	add(mp, 0, rec(MT_MAP_MUNMAP, 0x200000, 0x80000, 0));
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ALLOC_MMAP), 0);
	ck_assert_uint_eq(mt_mapped_image(mp, 0)->peak_all, 0x80000);
	/* mremap of a range never seen: anonymous private, the new length */
	m = rec(MT_MAP_MREMAP, 0x300000, 0x3000, MREMAP_MAYMOVE);
	m.old_addr = 0x500000;
	m.old_len = 0x1000;
	add(mp, 0, m);
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ANON_PRIVATE), 0x3000);
	mt_mapped_free(mp);
}
END_TEST

static struct mt_artifact_mapping brk_to(uint64_t start, uint64_t brk, bool allocator)
{
	struct mt_artifact_mapping m = rec(MT_MAP_BRK, brk, brk - start, 0);

	m.old_addr = start;
	m.origin = allocator ? MT_MAP_IN_ALLOCATOR : 0;
	return m;
}

START_TEST(the_break_by_whom_it_moved)
{
	struct mt_mapped *mp = mt_mapped_new(0);
	const uint64_t s = 0x600000;

	add(mp, 0, brk_to(s, s + 0x21000, true)); /* glibc's first sbrk */
	add(mp, 0, brk_to(s, s + 0x31000, false));
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ALLOC_BRK), 0x21000);
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_BRK), 0x10000);
	ck_assert_uint_eq(mt_mapped_image(mp, 0)->beyond, 0x10000);
	/* a trim by free (no mark) takes the top pages: the program's first */
	add(mp, 0, brk_to(s, s + 0x11000, false));
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_BRK), 0);
	ck_assert_uint_eq(now(mp, 0, MT_MAPPED_ALLOC_BRK), 0x11000);
	/* a child forked now starts from its parent's break: its growth only is its own */
	ck_assert_int_eq(mt_mapped_fork(mp, 0, 1), 0);
	add(mp, 1, brk_to(s, s + 0x13000, false));
	ck_assert_uint_eq(now(mp, 1, MT_MAPPED_BRK), 0x2000);
	ck_assert_uint_eq(now(mp, 1, MT_MAPPED_ALLOC_BRK), 0);
	/* an image never seen before counts from the heap's start (after an exec) */
	add(mp, 2, brk_to(s, s + 0x5000, false));
	ck_assert_uint_eq(now(mp, 2, MT_MAPPED_BRK), 0x5000);
	mt_mapped_free(mp);
}
END_TEST

START_TEST(an_end_and_the_trees_peak)
{
	struct mt_mapped *mp = mt_mapped_new(0);

	add(mp, 0, rec(MT_MAP_MMAP, 0x10000, 0x4000, ANON));
	add(mp, 1, rec(MT_MAP_MMAP, 0x10000, 0x2000, ANON)); /* another address space */
	ck_assert_uint_eq(mt_mapped_tree(mp)->mapped, 0x6000);
	ck_assert_int_eq(mt_mapped_end(mp, 1), 0);
	ck_assert(mt_mapped_image(mp, 1)->ended);
	ck_assert_uint_eq(mt_mapped_image(mp, 1)->mapped, 0x2000); /* at its end */
	ck_assert_uint_eq(mt_mapped_tree(mp)->mapped, 0x4000);
	add(mp, 0, rec(MT_MAP_MMAP, 0x40000, 0x1000, ANON));
	/* 0x5000 now, but 0x6000 was held at once before: the tree's peak */
	ck_assert_uint_eq(mt_mapped_tree(mp)->peak_mapped, 0x6000);
	ck_assert_uint_eq(mt_mapped_image(mp, 0)->peak_mapped, 0x5000);
	/* a record after an image's end changes nothing of it */
	add(mp, 1, rec(MT_MAP_MMAP, 0x80000, 0x1000, ANON));
	ck_assert_uint_eq(mt_mapped_image(mp, 1)->mapped, 0x2000);
	ck_assert_int_eq(mt_mapped_finish(mp), 0);
	ck_assert_uint_eq(mt_mapped_timeline(mp)->peak_bytes, 0x6000);
	mt_mapped_free(mp);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("mapped");
	TCase *tc = tcase_create("counting");

	tcase_add_test(tc, pages_holes_and_unmapping_over_them);
	tcase_add_test(tc, the_allocators_own_stay_its_own);
	tcase_add_test(tc, the_break_by_whom_it_moved);
	tcase_add_test(tc, an_end_and_the_trees_peak);
	suite_add_tcase(s, tc);
	return mt_run_suite(s);
}
