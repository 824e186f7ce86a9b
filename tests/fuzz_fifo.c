// SPDX-License-Identifier: GPL-2.0
/*
 * libFuzzer target: the runner's side of CodSpeed's FIFO (src/harness/bench_server.c) over
 * arbitrary bytes, as an integration (or anything with the FIFO open) could write them. The input
 * is fed whole, then again in pieces of the sizes its first byte picks: both must give the same
 * answers and marks, every answer must be a frame the codec reads back as Ack, Err or
 * IntegrationModeResponse, and no more answers come than frames. Built and run by tools/fuzz.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "harness/bench_server.h"
#include "harness/harness_fifo.h"

static void check(bool ok, const char *what)
{
	if (!ok) {
		fprintf(stderr, "fuzz_fifo: invariant broken: %s\n", what);
		abort();
	}
}

static int count_mark(void *arg, const struct mt_artifact_bench *b)
{
	check(b->what >= MT_BENCH_START && b->what <= MT_BENCH_MARKER, "a mark of a known kind");
	check(b->what != MT_BENCH_MARKER || b->marker <= MT_BENCH_ROUND_END, "a known marker");
	(*(size_t *)arg)++;
	return 0;
}

/* Answers of at most 8 bytes each; returns how many, after checking each. */
static size_t check_answers(const uint8_t *a, size_t len)
{
	size_t n = 0, at = 0;
	struct mt_fifo_msg m;

	while (at < len) {
		uint32_t l;

		check(len - at >= 8, "an answer is 8 bytes");
		memcpy(&l, a + at, 4);
		check(l == 4 || l == 8, "an answer's length");
		check(mt_fifo_decode_answer(a + at + 4, l, &m) == 0, "an answer decodes");
		at += 4 + l;
		n++;
	}
	return n;
}

static size_t feed(const uint8_t *data, size_t size, size_t piece, uint8_t *out, size_t cap,
		   size_t *marks)
{
	struct mt_bench_server *s = mt_bench_server_new_detached(count_mark, marks);
	size_t total = 0, len;

	if (!s)
		return SIZE_MAX;
	for (size_t at = 0; at < size; at += piece) {
		size_t k = size - at < piece ? size - at : piece;

		mt_bench_server_feed(s, data + at, k, out + total, cap - total, &len);
		total += len;
	}
	check(mt_bench_server_stats(s)->frames >= check_answers(out, total) ||
		  mt_bench_server_stats(s)->garbage,
	      "no more answers than frames");
	mt_bench_server_free(s);
	return total;
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	/* At most one answer of 8 bytes per 4 input bytes, and the garbage's one. */
	size_t cap = 2 * size + 16, marks1 = 0, marks2 = 0, n1, n2;
	uint8_t *a = malloc(cap), *b = malloc(cap);

	if (!a || !b)
		goto out;
	n1 = feed(data, size, size ? size : 1, a, cap, &marks1);
	n2 = feed(data, size, size ? 1 + data[0] % 7 : 1, b, cap, &marks2);
	if (n1 != SIZE_MAX && n2 != SIZE_MAX) {
		check(n1 == n2 && !memcmp(a, b, n1), "the same answers however the bytes come");
		check(marks1 == marks2, "the same marks however the bytes come");
	}
out:
	free(a);
	free(b);
	return 0;
}
