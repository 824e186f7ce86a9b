// SPDX-License-Identifier: GPL-2.0
/*
 * The event block codec: every event comes back bit for bit whatever its values (zero, the
 * largest, deltas that go backwards or jump across the whole address space), an entry cut at any
 * byte is "short" and never a wrong event, and bytes the format does not allow are refused.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "writer/evblock.h"
#include "lib/suite.h"

/* Encode n events as one block, decode them back, compare. Returns the encoded length. */
static size_t roundtrip(const struct mt_event *ev, size_t n, uint8_t *buf)
{
	struct mt_evblock_state s;
	size_t len = 0, pos = 0, i;

	mt_evblock_reset(&s);
	for (i = 0; i < n; i++) {
		size_t k = mt_evblock_put(&s, buf + len, &ev[i]);

		ck_assert_uint_le(k, MT_EVBLOCK_EVENT_MAX);
		len += k;
	}
	mt_evblock_reset(&s);
	for (i = 0; i < n; i++) {
		struct mt_event back;
		size_t used = 0;

		ck_assert_int_eq(mt_evblock_get(&s, buf + pos, len - pos, &back, &used),
				 MT_EVB_EVENT);
		ck_assert_msg(!memcmp(&back, &ev[i], sizeof(back)), "event %zu differs", i);
		pos += used;
	}
	ck_assert_uint_eq(pos, len);
	return len;
}

static const struct mt_event edge[] = {
    /* All zero: kind 0 has no tag of its own (it is the escape) and takes the kind byte. */
    {0},
    /* Every field at its largest. */
    {.ts_ns = UINT64_MAX,
     .pid = UINT32_MAX,
     .tid = UINT32_MAX,
     .addr = UINT64_MAX,
     .size = UINT64_MAX,
     .old_addr = UINT64_MAX,
     .align = UINT32_MAX,
     .file_id = UINT16_MAX,
     .kind = UINT8_MAX,
     .flags = UINT8_MAX,
     .stack_id = UINT32_MAX},
    /* Back to zero: every delta as negative as it gets. */
    {.kind = MT_K_FREE},
    /* Huge gaps both ways, a tid far below its pid, an old address far from the new one. */
    {.ts_ns = 1ULL << 63,
     .pid = 1,
     .tid = UINT32_MAX,
     .addr = 0x7fffffffffffULL,
     .size = 1,
     .old_addr = 1,
     .kind = MT_K_REALLOC},
    {.ts_ns = 5,
     .pid = UINT32_MAX,
     .tid = 0,
     .addr = 0x10,
     .old_addr = 0xffff800000000000ULL,
     .kind = MT_K_REALLOC,
     .flags = MT_EV_FAILED},
    /* The same again: nothing changes but the kind. */
    {.ts_ns = 5, .pid = UINT32_MAX, .tid = 0, .addr = 0x10, .kind = MT_K_DELETE},
    /* The last inline kind, the first kind that needs its byte, flags beyond failed. */
    {.ts_ns = 4, .pid = 7, .tid = 7, .addr = 0x20, .size = 8, .kind = 30, .flags = 0x80},
    {.ts_ns = 4, .pid = 7, .tid = 8, .addr = 0x20, .size = 8, .kind = 31, .flags = 0x3},
    {.ts_ns = 4, .pid = 7, .tid = 6, .addr = 0x20, .align = 64, .kind = MT_K_MEMALIGN},
    /* A stack id (version 4), and none again. */
    {.ts_ns = 9, .pid = 7, .tid = 6, .addr = 0x30, .size = 16, .kind = MT_K_MALLOC, .stack_id = 1},
    {.ts_ns = 9, .pid = 7, .tid = 6, .addr = 0x30, .kind = MT_K_FREE},
};

#define N_EDGE (sizeof(edge) / sizeof(edge[0]))

START_TEST(edge_values_roundtrip)
{
	uint8_t buf[N_EDGE * MT_EVBLOCK_EVENT_MAX];

	roundtrip(edge, N_EDGE, buf);
}
END_TEST

/* The case it is made for: a malloc/free pair of one thread takes a handful of bytes. */
START_TEST(common_events_are_small)
{
	struct mt_event ev[2000];
	uint8_t buf[sizeof(ev) / sizeof(ev[0]) * MT_EVBLOCK_EVENT_MAX];
	size_t i, len;

	for (i = 0; i < 2000; i += 2) {
		uint64_t addr = 0x555555559000ULL + (i % 64) * 4096;

		ev[i] = (struct mt_event){.ts_ns = 1000000000ULL + i * 700,
					  .pid = 4242,
					  .tid = 4242,
					  .addr = addr,
					  .size = 16 * (1 + i % 256),
					  .file_id = 1,
					  .kind = MT_K_MALLOC};
		ev[i + 1] = (struct mt_event){.ts_ns = ev[i].ts_ns + 300,
					      .pid = 4242,
					      .tid = 4242,
					      .addr = addr,
					      .file_id = 1,
					      .kind = MT_K_FREE};
	}
	len = roundtrip(ev, 2000, buf);
	/* Past the first event: malloc 1 + 2 + 3 + 2 bytes, free 1 + 2 + 1. */
	ck_assert_uint_le(len, 2000 * 6);
}
END_TEST

/* An entry cut at any byte is short, and leaves the state as it was. */
START_TEST(cut_entries_are_short)
{
	uint8_t buf[N_EDGE * MT_EVBLOCK_EVENT_MAX];
	struct mt_evblock_state s, before;
	size_t len = 0, pos = 0, i;

	mt_evblock_reset(&s);
	for (i = 0; i < N_EDGE; i++)
		len += mt_evblock_put(&s, buf + len, &edge[i]);
	mt_evblock_reset(&s);
	for (i = 0; i < N_EDGE; i++) {
		struct mt_event back;
		size_t used = 0, whole, cut;

		before = s;
		ck_assert_int_eq(mt_evblock_get(&s, buf + pos, len - pos, &back, &whole),
				 MT_EVB_EVENT);
		for (cut = 0; cut < whole; cut++) {
			struct mt_evblock_state t = before;

			ck_assert_int_eq(mt_evblock_get(&t, buf + pos, cut, &back, &used),
					 MT_EVB_SHORT);
			ck_assert(!memcmp(&t, &before, sizeof(t)));
		}
		pos += whole;
	}
}
END_TEST

static enum mt_evblock_result get(const uint8_t *b, size_t n, size_t *used)
{
	struct mt_evblock_state s;
	struct mt_event e;

	mt_evblock_reset(&s);
	return mt_evblock_get(&s, b, n, &e, used);
}

START_TEST(bad_entries_are_refused)
{
	/* A varint of eleven bytes, and a tenth byte with bits past 64. */
	static const uint8_t long_ts[] = {0x01, 0x80, 0x80, 0x80, 0x80, 0x80, 0x80,
					  0x80, 0x80, 0x80, 0x80, 0x00, 0x00};
	static const uint8_t wide_ts[] = {0x01, 0x80, 0x80, 0x80, 0x80, 0x80,
					  0x80, 0x80, 0x80, 0x80, 0x02, 0x00};
	/* Extension bits the format does not define. */
	static const uint8_t ext_80[] = {0x81, 0x80, 0x00, 0x00};
	/* A pid beyond 32 bits, a file id beyond 16. */
	static const uint8_t big_pid[] = {0x81, 0x01, 0x00, 0x80, 0x80, 0x80, 0x80, 0x10, 0x00};
	static const uint8_t big_file[] = {0x81, 0x04, 0x00, 0x80, 0x80, 0x04, 0x00};
	/* Flags beyond a byte. */
	static const uint8_t big_flags[] = {0x81, 0x20, 0x00, 0x00, 0x80, 0x01};
	/* An escape tag with other bits set. */
	static const uint8_t bad_escape[] = {0x20, 0x01, 0x00};
	size_t used;

	ck_assert_int_eq(get(long_ts, sizeof(long_ts), &used), MT_EVB_CORRUPT);
	ck_assert_int_eq(get(wide_ts, sizeof(wide_ts), &used), MT_EVB_CORRUPT);
	ck_assert_int_eq(get(ext_80, sizeof(ext_80), &used), MT_EVB_CORRUPT);
	ck_assert_int_eq(get(big_pid, sizeof(big_pid), &used), MT_EVB_CORRUPT);
	ck_assert_int_eq(get(big_file, sizeof(big_file), &used), MT_EVB_CORRUPT);
	ck_assert_int_eq(get(big_flags, sizeof(big_flags), &used), MT_EVB_CORRUPT);
	ck_assert_int_eq(get(bad_escape, sizeof(bad_escape), &used), MT_EVB_CORRUPT);
	/* The same bytes cut before the tenth: only short, as the reader of a cut file sees them.
	 */
	ck_assert_int_eq(get(wide_ts, 10, &used), MT_EVB_SHORT);
}
END_TEST

/* An escape entry of any type is passed over by its length, without touching the state. */
START_TEST(escape_entries_are_skipped)
{
	/* Escape, type 300, length 3, 3 bytes; then a malloc of 16 at 0x10, time 1. */
	static const uint8_t b[] = {0x00, 0xac, 0x02, 0x03, 0xff, 0xff,
				    0xff, 0x41, 0x02, 0x20, 0x10};
	struct mt_evblock_state s;
	struct mt_event e;
	size_t used;

	mt_evblock_reset(&s);
	ck_assert_int_eq(mt_evblock_get(&s, b, sizeof(b), &e, &used), MT_EVB_SKIPPED);
	ck_assert_uint_eq(used, 7);
	ck_assert_int_eq(mt_evblock_get(&s, b + 7, sizeof(b) - 7, &e, &used), MT_EVB_EVENT);
	ck_assert_uint_eq(used, 4);
	ck_assert_uint_eq(e.kind, MT_K_MALLOC);
	ck_assert_uint_eq(e.ts_ns, 1);
	ck_assert_uint_eq(e.addr, 0x10);
	ck_assert_uint_eq(e.size, 16);
	/* Its length running past the bytes: short, as any cut entry. */
	ck_assert_int_eq(get(b, 6, &used), MT_EVB_SHORT);
}
END_TEST

/* An escape whose type has bit 0 set must be understood: this reader knows none, it says so. */
START_TEST(required_escapes_are_refused)
{
	static const uint8_t b[] = {0x00, 0xad, 0x02, 0x01, 0xff};
	struct mt_evblock_state s;
	struct mt_event e;
	size_t used;

	mt_evblock_reset(&s);
	ck_assert_int_eq(mt_evblock_get(&s, b, sizeof(b), &e, &used), MT_EVB_REQUIRED);
	ck_assert_uint_eq(s.escape_type, 301);
	/* Cut, it is only short: the reader of a cut file keeps what came before. */
	ck_assert_int_eq(get(b, 4, &used), MT_EVB_SHORT);
}
END_TEST

static Suite *evblock_suite(void)
{
	Suite *s = suite_create("evblock");
	TCase *tc = tcase_create("core");

	tcase_add_test(tc, edge_values_roundtrip);
	tcase_add_test(tc, common_events_are_small);
	tcase_add_test(tc, cut_entries_are_short);
	tcase_add_test(tc, bad_entries_are_refused);
	tcase_add_test(tc, escape_entries_are_skipped);
	tcase_add_test(tc, required_escapes_are_refused);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(evblock_suite());
}
