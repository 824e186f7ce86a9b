// SPDX-License-Identifier: GPL-2.0
/*
 * The one hash table (src/base/hashtab.h): entries found after any mix of inserts and erases,
 * against a plain array that knows the truth, with keys chosen to collide and to wrap around the
 * end of the slots, where the shift-back of an erase is easiest to get wrong.
 */
#include <check.h>
#include <stdint.h>
#include <stdlib.h>

#include "lib/suite.h"
#include "base/hashtab.h"

struct entry {
	uint64_t key; /* 0: empty */
	uint64_t value;
};

/* A poor hash on purpose, when asked for: long runs of collisions. */
static bool poor;

/*
 * Homes in the last 5 slots of every 1024, so in the last of the table whatever its size (runs
 * that wrap around its end), and in either half after a doubling (by the bits above).
 */
static bool at_the_end;

static uint64_t key_hash(uint64_t key)
{
	if (at_the_end)
		return mt_hash_u64(key) << 10 | (1023 - key % 5);
	return poor ? key % 7 + (key & 1 ? 1020 : 0) : mt_hash_u64(key);
}

static bool entry_empty(const void *e)
{
	return !((const struct entry *)e)->key;
}

static uint64_t entry_hash(const void *ctx, const void *e)
{
	(void)ctx;
	return key_hash(((const struct entry *)e)->key);
}

static bool entry_is(const void *ctx, const void *e, const void *key)
{
	(void)ctx;
	return ((const struct entry *)e)->key == *(const uint64_t *)key;
}

static const struct mt_hashtab_ops ops = {
    .entry = sizeof(struct entry),
    .max_load_pct = 75,
    .min_slots = 1024,
    .hash = entry_hash,
    .empty = entry_empty,
};

static struct entry *slot(struct mt_hashtab *t, uint64_t key)
{
	return mt_hashtab_find(t, &ops, key_hash(key), entry_is, NULL, &key);
}

static void put(struct mt_hashtab *t, uint64_t key, uint64_t value)
{
	struct entry *e;

	if (mt_hashtab_reserve(t, &ops, NULL, t->used + 1))
		ck_abort_msg("no room for key %llu", (unsigned long long)key);
	e = slot(t, key);
	if (entry_empty(e))
		mt_hashtab_added(t);
	*e = (struct entry){key, value};
}

/* Random inserts and erases of keys 1..N; every key's presence and value checked each round. */
static void churn(uint64_t n, int rounds)
{
	struct mt_hashtab t = {0};
	uint64_t *truth = calloc(n + 1, sizeof(*truth)), live = 0;

	srand(7);
	ck_assert_int_eq(mt_hashtab_reserve(&t, &ops, NULL, 1), 0);
	for (int r = 0; r < rounds; r++) {
		uint64_t key = 1 + (uint64_t)rand() % n;
		struct entry *e = slot(&t, key);

		/*
		 * Checked with plain ifs: each ck_assert is a message to Check's parent, and
		 * 600,000 of them took seconds of a loaded machine, past the case's timeout.
		 */
		if (truth[key]) {
			if (entry_empty(e) || e->value != truth[key])
				ck_abort_msg("round %d: key %llu lost", r, (unsigned long long)key);
			mt_hashtab_erase(&t, &ops, NULL, e);
			truth[key] = 0;
			live--;
		} else {
			if (!entry_empty(e))
				ck_abort_msg("round %d: key %llu present", r,
					     (unsigned long long)key);
			put(&t, key, (uint64_t)r + 1);
			truth[key] = (uint64_t)r + 1;
			live++;
		}
		if (t.used != live)
			ck_abort_msg("round %d: %llu used, %llu live", r,
				     (unsigned long long)t.used, (unsigned long long)live);
	}
	for (uint64_t k = 1; k <= n; k++) {
		struct entry *e = slot(&t, k);

		if (truth[k] ? e->value != truth[k] : !entry_empty(e))
			ck_abort_msg("key %llu", (unsigned long long)k);
	}
	mt_hashtab_free(&t);
	free(truth);
}

START_TEST(inserts_and_erases_agree_with_the_truth)
{
	poor = false;
	churn(5000, 200000);
}
END_TEST

/* Every key in a few long runs, some of them wrapping past the last slot. */
START_TEST(long_runs_and_the_wrap_around)
{
	poor = true;
	churn(600, 50000);
}
END_TEST

/* Grown past its load, the table keeps every entry; at most max_load_pct of it is used. */
START_TEST(grows_within_its_load)
{
	struct mt_hashtab t = {0};

	poor = false;
	for (uint64_t k = 1; k <= 100000; k++) {
		put(&t, k, k * 3);
		if (t.used * 100 > (t.mask + 1) * ops.max_load_pct)
			ck_abort_msg("%llu used of %llu slots", (unsigned long long)t.used,
				     (unsigned long long)t.mask + 1);
	}
	for (uint64_t k = 1; k <= 100000; k++)
		if (slot(&t, k)->value != k * 3)
			ck_abort_msg("key %llu lost", (unsigned long long)k);
	ck_assert_uint_eq(t.used, 100000);
	mt_hashtab_free(&t);
	ck_assert_ptr_null(t.slot);
}
END_TEST

/*
 * Doubled in place while its runs wrap around the end: the entries of a run that wrapped move
 * back before the end or into the added half, and every one is found after each doubling.
 */
START_TEST(grows_in_place_with_runs_around_the_end)
{
	struct mt_hashtab t = {0};
	uint64_t wrong = 0, doublings = 0;

	poor = false;
	at_the_end = true;
	for (uint64_t k = 1; k <= 3000; k++) {
		size_t slots = t.slot ? t.mask + 1 : 0;

		put(&t, k, k * 5);
		if (t.mask + 1 == slots)
			continue;
		doublings++;
		for (uint64_t j = 1; j <= k; j++)
			wrong += slot(&t, j)->value != j * 5;
	}
	at_the_end = false;
	ck_assert_uint_eq(doublings, 3); /* 1024, 2048, 4096 slots */
	ck_assert_uint_eq(wrong, 0);
	mt_hashtab_free(&t);
}
END_TEST

/*
 * A table past the size that is a mapping of its own doubles by moving it, its entries kept.
 * Checked once at the end: an assertion is a message to the runner.
 */
START_TEST(a_large_table_grows_by_its_mapping)
{
	struct mt_hashtab t = {0};
	uint64_t n = 400000, wrong = 0;
	int err = 0;

	poor = false;
	for (uint64_t k = 1; k <= n && !err; k++) {
		err = mt_hashtab_reserve(&t, &ops, NULL, t.used + 1);
		if (!err) {
			*slot(&t, k) = (struct entry){k, k ^ 0x5a5a};
			mt_hashtab_added(&t);
		}
	}
	ck_assert_int_eq(err, 0);
	ck_assert_uint_gt(t.mapped, 0);
	ck_assert_uint_eq(t.mapped, (t.mask + 1) * sizeof(struct entry));
	for (uint64_t k = 1; k <= n; k++)
		wrong += slot(&t, k)->value != (k ^ 0x5a5a);
	ck_assert_uint_eq(wrong, 0);
	ck_assert(entry_empty(slot(&t, n + 1)));
	mt_hashtab_free(&t);
	ck_assert_ptr_null(t.slot);
	ck_assert_uint_eq(t.mapped, 0);
}
END_TEST

static Suite *suite(void)
{
	Suite *s = suite_create("hashtab");
	TCase *tc = tcase_create("hashtab");

	tcase_add_test(tc, inserts_and_erases_agree_with_the_truth);
	tcase_add_test(tc, long_runs_and_the_wrap_around);
	tcase_add_test(tc, grows_within_its_load);
	tcase_add_test(tc, grows_in_place_with_runs_around_the_end);
	tcase_add_test(tc, a_large_table_grows_by_its_mapping);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(suite());
}
