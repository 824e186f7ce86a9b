// SPDX-License-Identifier: GPL-2.0
/*
 * The event block codec: every event comes back bit for bit whatever its values (zero, the
 * largest, deltas that go backwards or jump across the whole address space), an entry cut at any
 * byte is "short" and never a wrong event, and bytes the format does not allow are refused.
 */
#include <check.h>
#include <stdint.h>
#include <string.h>

#include "writer/artifact_format.h"
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

/* ---- the streams of a compressed block (version 5) and of a columnar one (version 6) -------- */

/* The state at the start of a version-5 block, or with columns of a version-6 one. */
static void reset(struct mt_evblock_state *s, bool columns)
{
	if (columns)
		mt_evblock_reset_columns(s);
	else
		mt_evblock_reset(s);
}

/*
 * Encode n events into the streams of one compressed block (bufs: MT_EVB_STREAMS areas of n *
 * MT_EVBLOCK_EVENT_MAX bytes), with columns a columnar one, decode them back, compare. Each
 * stream's length into len.
 */
static void split_roundtrip(const struct mt_event *ev, size_t n, uint8_t *bufs,
			    size_t len[MT_EVB_STREAMS], bool columns)
{
	static const unsigned int most[MT_EVB_STREAMS] = MT_EVB_STREAM_MAX;
	struct mt_evblock_split at;
	struct mt_evblock_cursor c;
	struct mt_evblock_state s;
	size_t area = n * MT_EVBLOCK_EVENT_MAX, i;
	int k;

	reset(&s, columns);
	for (k = 0; k < MT_EVB_STREAMS; k++)
		at.p[k] = bufs + k * area;
	for (i = 0; i < n; i++) {
		uint8_t *before[MT_EVB_STREAMS];

		for (k = 0; k < MT_EVB_STREAMS; k++)
			before[k] = at.p[k];
		mt_evblock_put_split(&s, &at, &ev[i]);
		for (k = 0; k < MT_EVB_STREAMS; k++)
			ck_assert_uint_le((size_t)(at.p[k] - before[k]), most[k]);
	}
	for (k = 0; k < MT_EVB_STREAMS; k++) {
		len[k] = (size_t)(at.p[k] - (bufs + k * area));
		c.p[k] = bufs + k * area;
		c.left[k] = len[k];
	}
	reset(&s, columns);
	for (i = 0; i < n; i++) {
		struct mt_event back;

		ck_assert_int_eq(mt_evblock_get_split(&s, &c, &back), MT_EVB_EVENT);
		ck_assert_msg(!memcmp(&back, &ev[i], sizeof(back)), "event %zu differs", i);
	}
	for (k = 0; k < MT_EVB_STREAMS; k++)
		ck_assert_uint_eq(c.left[k], 0);
}

START_TEST(split_edge_values_roundtrip)
{
	static uint8_t bufs[MT_EVB_STREAMS * N_EDGE * MT_EVBLOCK_EVENT_MAX];
	size_t len[MT_EVB_STREAMS];

	split_roundtrip(edge, N_EDGE, bufs, len, false);
	/* One tag byte an event at least, and one byte of time and address each. */
	ck_assert_uint_ge(len[MT_EVB_S_TAG], N_EDGE);
	ck_assert_uint_ge(len[MT_EVB_S_TS], N_EDGE);
	ck_assert_uint_ge(len[MT_EVB_S_ADDR], N_EDGE);
	for (int k = MT_EVB_STREAMS_V5; k < MT_EVB_STREAMS; k++)
		ck_assert_uint_eq(len[k], 0);
}
END_TEST

/* The same extremes in a columnar block: a time is two bytes in their planes and a varint. */
START_TEST(columns_edge_values_roundtrip)
{
	static uint8_t bufs[MT_EVB_STREAMS * N_EDGE * MT_EVBLOCK_EVENT_MAX];
	size_t len[MT_EVB_STREAMS];

	split_roundtrip(edge, N_EDGE, bufs, len, true);
	ck_assert_uint_eq(len[MT_EVB_S_TS], N_EDGE);
	ck_assert_uint_eq(len[MT_EVB_S_T1], N_EDGE);
	ck_assert_uint_ge(len[MT_EVB_S_T2], N_EDGE);
}
END_TEST

/*
 * Frees of blocks allocated in the same block name their allocation, in the last MT_EVB_REFS of
 * them, and take no address: the freeing order does not matter. Blocks allocated further back
 * (past the window) and addresses the block never allocated take their address difference, and
 * all come back the same.
 */
START_TEST(columns_frees_by_reference)
{
	enum { N = MT_EVB_REFS + 1000, FOREIGN = 10 };
	static struct mt_event ev[2 * N + FOREIGN];
	static uint8_t bufs[MT_EVB_STREAMS * (2 * N + FOREIGN) * MT_EVBLOCK_EVENT_MAX];
	size_t len[MT_EVB_STREAMS], n = 0;
	uint64_t x = 88172645463325252ULL;

	for (size_t i = 0; i < N; i++)
		ev[n++] = (struct mt_event){.ts_ns = 100 + n,
					    .pid = 7,
					    .tid = 7,
					    .addr = 0x560000000000ULL + i * 48,
					    .size = 40,
					    .kind = MT_K_MALLOC};
	/* Then every block freed, the newest MT_EVB_REFS in a shuffled order, the older last. */
	for (size_t i = 0; i < N; i++) {
		size_t j = N - 1 - i;

		if (i < MT_EVB_REFS) {
			x ^= x << 13, x ^= x >> 7, x ^= x << 17;
			j = N - MT_EVB_REFS + (size_t)(x % MT_EVB_REFS);
		}
		ev[n++] = (struct mt_event){.ts_ns = 100 + n,
					    .pid = 7,
					    .tid = 7,
					    .addr = 0x560000000000ULL + j * 48,
					    .kind = MT_K_FREE};
	}
	for (size_t i = 0; i < FOREIGN; i++)
		ev[n++] = (struct mt_event){
		    .ts_ns = 100 + n, .pid = 7, .tid = 7, .addr = 0x10 + i, .kind = MT_K_FREE};
	split_roundtrip(ev, n, bufs, len, true);
	/*
	 * The allocations' addresses, a byte each; at most the frees past the window, the foreign
	 * ones and the slots a hash shares take one: most frees take none.
	 */
	ck_assert_uint_le(len[MT_EVB_S_ADDR], N + N / 2);
	ck_assert_uint_ge(len[MT_EVB_S_REF], N + FOREIGN);
}
END_TEST

/*
 * An allocator hands a block just freed back out: an allocation of a class with freed blocks
 * names one of them, the newest first, and takes no address; one of another class does not.
 */
START_TEST(columns_allocations_of_freed_blocks)
{
	enum { ROUNDS = 200 };
	static struct mt_event ev[ROUNDS * 4];
	static uint8_t bufs[MT_EVB_STREAMS * ROUNDS * 4 * MT_EVBLOCK_EVENT_MAX];
	size_t len[MT_EVB_STREAMS], n = 0;

	for (size_t i = 0; i < ROUNDS; i++) {
		/* Two blocks of 100 bytes freed, newest last; one of 24, the other class. */
		uint64_t a = 0x5600000000ULL + (i % 2) * 0x1000, b = a + 0x800;

		ev[n++] =
		    (struct mt_event){.ts_ns = n, .addr = a, .size = 100, .kind = MT_K_MALLOC};
		ev[n++] = (struct mt_event){.ts_ns = n, .addr = b, .size = 24, .kind = MT_K_MALLOC};
		ev[n++] = (struct mt_event){.ts_ns = n, .addr = a, .kind = MT_K_FREE};
		ev[n++] = (struct mt_event){.ts_ns = n, .addr = b, .kind = MT_K_FREE};
	}
	split_roundtrip(ev, n, bufs, len, true);
	/*
	 * The first round's two allocations take their addresses, and so does the second's (its
	 * blocks are not the first's); every later one names the block freed two rounds before.
	 */
	ck_assert_uint_le(len[MT_EVB_S_ADDR], 4 * 6);
	/* A byte for every event but the first round's allocations (no class had a freed block). */
	ck_assert_uint_eq(len[MT_EVB_S_REF], n - 2);
}
END_TEST

/* A reference to an allocation the block does not have is corrupt, never an address made up. */
START_TEST(columns_bad_reference_refused)
{
	/* One malloc, then two frees naming the first and the second allocation back. */
	const uint8_t tag[] = {MT_K_MALLOC | MT_EVB_SIZE, MT_K_FREE, MT_K_FREE};
	const uint8_t t0[] = {2, 2, 2}, t1[] = {0, 0, 0}, t2[] = {0, 0, 0};
	const uint8_t addr[] = {0x20}, size[] = {16}, ref[] = {1, 2};
	struct mt_evblock_cursor c = {
	    .p = {tag, t0, addr, size, NULL, t1, t2, ref},
	    .left = {3, 3, 1, 1, 0, 3, 3, 2},
	};
	struct mt_evblock_cursor was;
	struct mt_evblock_state s;
	struct mt_event e;

	mt_evblock_reset_columns(&s);
	ck_assert_int_eq(mt_evblock_get_split(&s, &c, &e), MT_EVB_EVENT);
	ck_assert_uint_eq(e.addr, 0x10);
	ck_assert_int_eq(mt_evblock_get_split(&s, &c, &e), MT_EVB_EVENT);
	ck_assert_uint_eq(e.addr, 0x10);
	was = c;
	ck_assert_int_eq(mt_evblock_get_split(&s, &c, &e), MT_EVB_CORRUPT);
	/* What the refused entry read is given back: the cursor is where it was. */
	ck_assert(!memcmp(&c, &was, sizeof(c)));
}
END_TEST

/*
 * A block of microseconds (version 7): each time reads back as the first nanosecond of its
 * microsecond, the largest included; a time past 2^64 ns is corrupt, not wrapped.
 */
START_TEST(micro_times_floor_and_bound)
{
	static uint8_t bufs[MT_EVB_STREAMS][N_EDGE * MT_EVBLOCK_EVENT_MAX];
	const uint64_t most = UINT64_MAX / MT_ARTIFACT_MICRO_NS;
	struct mt_event far[2] = {{.ts_ns = most, .addr = 0x10, .kind = MT_K_FREE},
				  {.ts_ns = most + 1, .addr = 0x10, .kind = MT_K_FREE}};
	struct mt_evblock_split at;
	struct mt_evblock_cursor c;
	struct mt_evblock_state s;
	struct mt_event e;
	size_t i;
	int k;

	mt_evblock_reset_columns_us(&s);
	for (k = 0; k < MT_EVB_STREAMS; k++)
		at.p[k] = bufs[k];
	for (i = 0; i < N_EDGE; i++)
		mt_evblock_put_split(&s, &at, &edge[i]);
	for (k = 0; k < MT_EVB_STREAMS; k++) {
		c.p[k] = bufs[k];
		c.left[k] = (size_t)(at.p[k] - bufs[k]);
	}
	mt_evblock_reset_columns_us(&s);
	for (i = 0; i < N_EDGE; i++) {
		struct mt_event want = edge[i];

		want.ts_ns -= want.ts_ns % MT_ARTIFACT_MICRO_NS;
		ck_assert_int_eq(mt_evblock_get_split(&s, &c, &e), MT_EVB_EVENT);
		ck_assert_msg(!memcmp(&e, &want, sizeof(e)), "event %zu differs", i);
	}
	/* The same layout in nanoseconds: times that, read as microseconds, pass 2^64 ns. */
	mt_evblock_reset_columns(&s);
	for (k = 0; k < MT_EVB_STREAMS; k++)
		at.p[k] = bufs[k];
	for (i = 0; i < 2; i++)
		mt_evblock_put_split(&s, &at, &far[i]);
	for (k = 0; k < MT_EVB_STREAMS; k++) {
		c.p[k] = bufs[k];
		c.left[k] = (size_t)(at.p[k] - bufs[k]);
	}
	mt_evblock_reset_columns_us(&s);
	ck_assert_int_eq(mt_evblock_get_split(&s, &c, &e), MT_EVB_EVENT);
	ck_assert_uint_eq(e.ts_ns, most * MT_ARTIFACT_MICRO_NS);
	ck_assert_int_eq(mt_evblock_get_split(&s, &c, &e), MT_EVB_CORRUPT);
}
END_TEST

/*
 * Two threads taking turns, each allocating in its own arena and freeing what it allocated: an
 * address differs from its thread's last, so each takes one byte, as one thread's would (from
 * the previous event, it would jump 2^36 bytes each time: 6 bytes).
 */
START_TEST(split_threads_taking_turns)
{
	enum { ROUNDS = 100 };
	static struct mt_event ev[4 * ROUNDS];
	static uint8_t bufs[MT_EVB_STREAMS * 4 * ROUNDS * MT_EVBLOCK_EVENT_MAX];
	size_t len[MT_EVB_STREAMS];

	for (size_t i = 0; i < ROUNDS; i++) {
		for (uint32_t t = 0; t < 2; t++) {
			uint64_t addr = 0x7f0000001000ULL + ((uint64_t)t << 36) + i * 32;

			ev[4 * i + t] = (struct mt_event){.ts_ns = 1000 + 8 * i + t,
							  .pid = 50,
							  .tid = 51 + t,
							  .addr = addr,
							  .size = 24,
							  .kind = MT_K_MALLOC};
			ev[4 * i + 2 + t] = (struct mt_event){.ts_ns = 1004 + 8 * i + t,
							      .pid = 50,
							      .tid = 51 + t,
							      .addr = addr,
							      .kind = MT_K_FREE};
		}
	}
	split_roundtrip(ev, 4 * ROUNDS, bufs, len, false);
	/* The first round finds the arenas: 6 bytes for each thread's first address. */
	ck_assert_uint_le(len[MT_EVB_S_ADDR], 4 * ROUNDS + 2 * 6);
}
END_TEST

/*
 * Stream k of the block in bufs (lengths len, areas of area bytes), one byte short: an entry that
 * needs it is short, and the cursor and state are left as they were.
 */
static void short_stream(const uint8_t *bufs, const size_t len[MT_EVB_STREAMS], size_t area, int k,
			 bool columns)
{
	static struct mt_evblock_state s, s_was;
	struct mt_evblock_cursor c, was;
	struct mt_event back;
	enum mt_evblock_result res = MT_EVB_EVENT;
	size_t events = 0;

	if (!len[k])
		return;
	for (int j = 0; j < MT_EVB_STREAMS; j++) {
		c.p[j] = bufs + j * area;
		c.left[j] = len[j] - (j == k);
	}
	reset(&s, columns);
	while (c.left[MT_EVB_S_TAG]) {
		was = c;
		s_was = s;
		res = mt_evblock_get_split(&s, &c, &back);
		if (res != MT_EVB_EVENT)
			break;
		events++;
	}
	ck_assert_int_eq(res, MT_EVB_SHORT);
	ck_assert_uint_lt(events, N_EDGE);
	ck_assert(!memcmp(&c, &was, sizeof(c)));
	ck_assert(!memcmp(&s, &s_was, sizeof(s)));
}

/* A stream that ends inside an entry, in either layout. */
START_TEST(split_short_streams)
{
	static uint8_t bufs[MT_EVB_STREAMS * N_EDGE * MT_EVBLOCK_EVENT_MAX];
	size_t len[MT_EVB_STREAMS];
	size_t area = N_EDGE * MT_EVBLOCK_EVENT_MAX;

	for (int columns = 0; columns < 2; columns++) {
		split_roundtrip(edge, N_EDGE, bufs, len, columns);
		for (int k = 1; k < MT_EVB_STREAMS; k++)
			short_stream(bufs, len, area, k, columns);
	}
}
END_TEST

/*
 * The events of the block in bufs (lengths len, stream k one byte short when k is a stream)
 * decoded in one run: the same events, state and cursor as entry by entry, though each stream
 * is followed by bytes that would decode (the next area's zeros).
 */
static void run_like_entries(const uint8_t *bufs, const size_t len[MT_EVB_STREAMS], size_t area,
			     int k, bool columns)
{
	static struct mt_evblock_state s1, s2;
	static struct mt_event one[N_EDGE], run[N_EDGE];
	struct mt_evblock_cursor c1, c2;
	size_t n1 = 0, n2;

	for (int j = 0; j < MT_EVB_STREAMS; j++) {
		c1.p[j] = bufs + j * area;
		c1.left[j] = len[j] - (j == k && len[j]);
	}
	c2 = c1;
	reset(&s1, columns);
	reset(&s2, columns);
	while (c1.left[MT_EVB_S_TAG] && mt_evblock_get_split(&s1, &c1, &one[n1]) == MT_EVB_EVENT)
		n1++;
	n2 = mt_evblock_get_split_events(&s2, &c2, run, N_EDGE);
	ck_assert_uint_eq(n2, n1);
	ck_assert(!memcmp(run, one, n1 * sizeof(*one)));
	ck_assert(!memcmp(&c2, &c1, sizeof(c1)));
	ck_assert(!memcmp(&s2, &s1, sizeof(s1)));
}

/* A run of events reads no byte past a stream's end as its own, in either layout. */
START_TEST(split_events_stop_at_stream_ends)
{
	static uint8_t bufs[MT_EVB_STREAMS * N_EDGE * MT_EVBLOCK_EVENT_MAX];
	size_t len[MT_EVB_STREAMS];
	size_t area = N_EDGE * MT_EVBLOCK_EVENT_MAX;

	for (int columns = 0; columns < 2; columns++) {
		split_roundtrip(edge, N_EDGE, bufs, len, columns);
		for (int k = -1; k < MT_EVB_STREAMS; k++)
			run_like_entries(bufs, len, area, k, columns);
	}
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
	tcase_add_test(tc, split_edge_values_roundtrip);
	tcase_add_test(tc, split_threads_taking_turns);
	tcase_add_test(tc, split_short_streams);
	tcase_add_test(tc, split_events_stop_at_stream_ends);
	tcase_add_test(tc, columns_edge_values_roundtrip);
	tcase_add_test(tc, columns_frees_by_reference);
	tcase_add_test(tc, columns_allocations_of_freed_blocks);
	tcase_add_test(tc, columns_bad_reference_refused);
	tcase_add_test(tc, micro_times_floor_and_bound);
	suite_add_tcase(s, tc);
	return s;
}

int main(void)
{
	return mt_run_suite(evblock_suite());
}
