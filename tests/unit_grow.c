// SPDX-License-Identifier: GPL-2.0
/* Growing an array (src/base/grow.c): the capacities it picks, what it keeps, how it fails. */
#include <check.h>
#include <errno.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/suite.h"
#include "base/grow.h"

/* From nothing to the first capacity, then doubled, the elements kept across each move. */
START_TEST(doubles_from_first_and_keeps_elements)
{
	uint32_t *v = NULL;
	size_t cap = 0, n = 0;

	for (uint32_t i = 0; i < 100; i++) {
		ck_assert_int_eq(MT_GROW(v, cap, n + 1, 16), 0);
		v[n++] = i * 7;
		if (n <= 16)
			ck_assert_uint_eq(cap, 16);
	}
	ck_assert_uint_eq(cap, 128); /* 16, 32, 64, 128 */
	for (uint32_t i = 0; i < 100; i++)
		ck_assert_uint_eq(v[i], i * 7);
	free(v);
}
END_TEST

/* Room asked for many at once: the first doubling that holds them; none asked: nothing done. */
START_TEST(room_for_many_at_once)
{
	char *v = NULL;
	size_t cap = 0;

	ck_assert_int_eq(MT_GROW(v, cap, 0, 64), 0);
	ck_assert_ptr_null(v);
	ck_assert_int_eq(MT_GROW(v, cap, 1000, 64), 0);
	ck_assert_uint_eq(cap, 1024);
	ck_assert_int_eq(MT_GROW(v, cap, 1024, 64), 0);
	ck_assert_uint_eq(cap, 1024);
	ck_assert_int_eq(MT_GROW(v, cap, 1025, 64), 0);
	ck_assert_uint_eq(cap, 2048);
	free(v);
}
END_TEST

/* A size that would overflow is -ENOMEM, with the array and its capacity as they were. */
START_TEST(overflow_fails_and_keeps_the_array)
{
	uint64_t *v = NULL, *before;
	size_t cap = 0;

	ck_assert_int_eq(MT_GROW(v, cap, 4, 4), 0);
	v[3] = 42;
	before = v;
	ck_assert_int_eq(MT_GROW(v, cap, SIZE_MAX / 4, 4), -ENOMEM);
	ck_assert_int_eq(MT_GROW(v, cap, SIZE_MAX, 4), -ENOMEM);
	ck_assert_ptr_eq(v, before);
	ck_assert_uint_eq(cap, 4);
	ck_assert_uint_eq(v[3], 42);
	free(v);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("grow");
	TCase *tc = tcase_create("grow");

	tcase_add_test(tc, doubles_from_first_and_keeps_elements);
	tcase_add_test(tc, room_for_many_at_once);
	tcase_add_test(tc, overflow_fails_and_keeps_the_array);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
