// SPDX-License-Identifier: GPL-2.0
/*
 * evblock_cost ARTIFACT [RAW_OUT ENCODED_OUT]: the event block codec's size and CPU per event on
 * the events of a real artifact (any version). Events are encoded in blocks of 4096, as the
 * events thread hands them to the writer, then decoded back and compared. With the two paths,
 * the 48-byte events and the encoded blocks are also written out, for a general-purpose
 * compressor to be measured on the same events (docs/PERFORMANCE.md, "Artifact size").
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "reader/artifact_read.h"
#include "writer/evblock.h"

#define BLOCK 4096u

static double now(void)
{
	struct timespec t;

	clock_gettime(CLOCK_MONOTONIC, &t);
	return (double)t.tv_sec + (double)t.tv_nsec * 1e-9;
}

static struct mt_event *load(const char *path, size_t *n)
{
	struct mt_artifact_reader *r;
	struct mt_artifact_item it;
	struct mt_event *ev = NULL;
	size_t cap = 0;
	char err[MT_ARTIFACT_ERRLEN];

	*n = 0;
	if (mt_artifact_open(&r, path, err, sizeof(err))) {
		fprintf(stderr, "evblock_cost: %s: %s\n", path, err);
		exit(1);
	}
	while (mt_artifact_next(r, &it) > 0) {
		if (it.type != MT_ITEM_EVENTS)
			continue;
		if (*n + it.n_events > cap) {
			cap = (*n + it.n_events) * 2;
			ev = realloc(ev, cap * sizeof(*ev));
			if (!ev)
				exit(1);
		}
		memcpy(ev + *n, it.events, it.n_events * sizeof(*ev));
		*n += it.n_events;
	}
	mt_artifact_close(r);
	return ev;
}

int main(int argc, char **argv)
{
	size_t n, i, len = 0, pos = 0;
	struct mt_event *ev, back;
	struct mt_evblock_state s;
	uint8_t *out;
	double t0, t_enc, t_dec;

	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: evblock_cost ARTIFACT [RAW_OUT ENCODED_OUT]\n");
		return 2;
	}
	ev = load(argv[1], &n);
	out = malloc(n * MT_EVBLOCK_EVENT_MAX + 1);
	if (!out || !n)
		return 1;
	/* Touched before the clock starts: the writer's buffer is reused, never faulted in. */
	memset(out, 0xff, n * MT_EVBLOCK_EVENT_MAX + 1);
	/* The best of three passes: the machine is shared, and the first pass warms the caches. */
	t_enc = 1e9;
	for (int pass = 0; pass < 3; pass++) {
		len = 0;
		t0 = now();
		for (i = 0; i < n; i++) {
			if (i % BLOCK == 0)
				mt_evblock_reset(&s);
			len += mt_evblock_put(&s, out + len, &ev[i]);
		}
		if (now() - t0 < t_enc)
			t_enc = now() - t0;
	}
	t0 = now();
	for (i = 0; i < n; i++) {
		size_t used;

		if (i % BLOCK == 0)
			mt_evblock_reset(&s);
		if (mt_evblock_get(&s, out + pos, len - pos, &back, &used) != MT_EVB_EVENT ||
		    memcmp(&back, &ev[i], sizeof(back))) {
			fprintf(stderr, "evblock_cost: event %zu does not round-trip\n", i);
			return 1;
		}
		pos += used;
	}
	t_dec = now() - t0;
	printf("%zu events: %.2f bytes/event (+ %.4f block header), encode %.1f ns/event, "
	       "decode %.1f ns/event\n",
	       n, (double)len / (double)n, 16.0 / BLOCK, t_enc * 1e9 / (double)n,
	       t_dec * 1e9 / (double)n);
	if (argc == 4) {
		FILE *raw = fopen(argv[2], "wb"), *enc = fopen(argv[3], "wb");

		if (!raw || !enc || fwrite(ev, sizeof(*ev), n, raw) != n ||
		    fwrite(out, 1, len, enc) != len || fclose(raw) || fclose(enc))
			return 1;
	}
	free(out);
	free(ev);
	return 0;
}
