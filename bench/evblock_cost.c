// SPDX-License-Identifier: GPL-2.0
/*
 * evblock_cost --columns ARTIFACT: where the artifact's bytes are, as it was written: its header,
 * its records other than event blocks, and in its columnar blocks each stream's zstd block (the
 * writer ends one at each stream), its frames' headers and the blocks' own (docs/PERFORMANCE.md,
 * section 10).
 *
 * evblock_cost ARTIFACT [RAW_OUT ENCODED_OUT]: the event block codec's size and CPU per event on
 * the events of a real artifact (any version). Events are encoded in blocks of 4096, as the
 * events thread hands them to the writer, then decoded back and compared. With the two paths,
 * the 48-byte events and the encoded blocks are also written out, for a general-purpose
 * compressor to be measured on the same events (docs/PERFORMANCE.md, "Artifact size"). Then the
 * events in version 5's compressed blocks, version 6's columnar ones and version 7's (times in
 * microseconds), at a few zstd levels: bytes and CPU per event; where version 7's bytes go, by
 * stream and by field.
 */
#include <endian.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <zstd.h>

#include "reader/artifact_read.h"
#include "writer/artifact_format.h"
#include "writer/evblock.h"

#define BLOCK	   4096u
/* The writer's compressed blocks: streams of 100 KiB each (src/writer/artifact.c). */
#define STREAM_CAP (100u << 10)

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

/*
 * Events in the writer's compressed blocks (each stream filled until the next event might not
 * fit), compressed at level: the bytes of the frames and their streams' headers. Into out. The
 * blocks of version: 5's, 6's columnar ones, or 7's, whose times are in microseconds (the
 * writer's). With alone, each stream of each block is also compressed on its own, its bytes
 * added to alone[k]: where the bytes go.
 */
static size_t zstd_blocks(const struct mt_event *ev, size_t n, int level, int version, uint8_t *raw,
			  uint8_t *out, size_t cap, ZSTD_CCtx *zc, size_t *alone)
{
	bool columns = version >= 6;
	static const unsigned int most[MT_EVB_STREAMS] = MT_EVB_STREAM_MAX;
	static struct mt_evblock_state s;
	size_t i = 0, total = 0;

	ZSTD_CCtx_setParameter(zc, ZSTD_c_compressionLevel, level);
	ZSTD_CCtx_setParameter(zc, ZSTD_c_checksumFlag, 1);
	while (i < n) {
		struct mt_evblock_split at;
		uint32_t lens[MT_EVB_STREAMS];
		size_t len = 0, z;
		int k, room = 1;

		if (version >= 7)
			mt_evblock_reset_columns_us(&s);
		else if (columns)
			mt_evblock_reset_columns(&s);
		else
			mt_evblock_reset(&s);
		for (k = 0; k < MT_EVB_STREAMS; k++)
			at.p[k] = raw + (size_t)k * STREAM_CAP;
		while (i < n && room) {
			mt_evblock_put_split(&s, &at, &ev[i++]);
			for (k = 0; k < MT_EVB_STREAMS; k++)
				room &= at.p[k] + most[k] <= raw + (size_t)(k + 1) * STREAM_CAP;
		}
		for (k = 0; k < MT_EVB_STREAMS; k++) {
			lens[k] = (uint32_t)(at.p[k] - (raw + (size_t)k * STREAM_CAP));
			if (alone)
				alone[k] += ZSTD_compress2(zc, out, cap,
							   raw + (size_t)k * STREAM_CAP, lens[k]);
			memmove(raw + len, raw + (size_t)k * STREAM_CAP, lens[k]);
			len += lens[k];
		}
		if (columns) {
			z = mt_evblock_compress(zc, out, cap, raw, lens, len);
			total += 8 + MT_ARTIFACT_CBLOCK_FIXED + z;
		} else {
			z = ZSTD_compress2(zc, out, cap, raw, len);
			total += 8 + MT_ARTIFACT_ZBLOCK_FIXED + z;
		}
		if (!z || ZSTD_isError(z))
			exit(1);
	}
	return total;
}

/* Bytes and CPU per event of the writer's compressed blocks at a few zstd levels. */
static void zstd_table(const struct mt_event *ev, size_t n, int version, uint8_t *raw, uint8_t *out,
		       size_t cap, ZSTD_CCtx *zc)
{
	static const int levels[] = {-5, -1, 1, 2, 3, 6};

	for (size_t l = 0; l < sizeof(levels) / sizeof(levels[0]); l++) {
		double best = 1e9;
		size_t bytes = 0;

		for (int pass = 0; pass < 3; pass++) {
			double t0 = now();

			bytes = zstd_blocks(ev, n, levels[l], version, raw, out, cap, zc, NULL);
			if (now() - t0 < best)
				best = now() - t0;
		}
		printf("version %d, zstd %2d: %.3f bytes/event, encode + compress %.1f ns/event\n",
		       version, levels[l], (double)bytes / (double)n, best * 1e9 / (double)n);
	}
}

/* Where a columnar block's bytes go: each stream compressed alone, at level 1. */
static void stream_table(const struct mt_event *ev, size_t n, uint8_t *raw, uint8_t *out,
			 size_t cap, ZSTD_CCtx *zc)
{
	static const char *const names[MT_EVB_STREAMS] = {"tags",      "time byte 0", "addresses",
							  "sizes",     "the rest",    "time byte 1",
							  "time rest", "references"};
	size_t alone[MT_EVB_STREAMS] = {0};

	zstd_blocks(ev, n, 1, 7, raw, out, cap, zc, alone);
	printf("version 7, zstd 1, each stream alone, bytes/event:");
	for (int k = 0; k < MT_EVB_STREAMS; k++)
		printf(" %s %.3f%s", names[k], (double)alone[k] / (double)n,
		       k + 1 < MT_EVB_STREAMS ? "," : "\n");
}

/* The events with one field zeroed in every one of them. */
static void zero_field(struct mt_event *ev, size_t n, int field)
{
	for (size_t i = 0; i < n; i++) {
		struct mt_event *e = &ev[i];

		switch (field) {
		case 0:
			e->ts_ns = 0;
			break;
		case 1:
			e->addr = 0, e->old_addr = 0;
			break;
		case 2:
			e->size = 0;
			break;
		case 3:
			e->stack_id = 0;
			break;
		case 4:
			e->pid = 0, e->tid = 0;
			break;
		default:
			e->kind = MT_K_MALLOC, e->flags = 0;
			break;
		}
	}
}

/*
 * What each field costs after compression: the columnar blocks' bytes with that field zeroed in
 * every event, against all fields (version 7, level 1).
 */
static void field_table(const struct mt_event *ev, size_t n, uint8_t *raw, uint8_t *out, size_t cap,
			ZSTD_CCtx *zc)
{
	static const char *const names[] = {"times",	 "addresses",	  "sizes",
					    "stack ids", "pids and tids", "kinds and flags"};
	struct mt_event *copy = malloc(n * sizeof(*copy));
	size_t all = zstd_blocks(ev, n, 1, 7, raw, out, cap, zc, NULL);

	if (!copy)
		exit(1);
	printf("version 7, zstd 1, a field zeroed in every event: all fields %.3f bytes/event;",
	       (double)all / (double)n);
	for (int f = 0; f < (int)(sizeof(names) / sizeof(names[0])); f++) {
		size_t without;

		memcpy(copy, ev, n * sizeof(*copy));
		zero_field(copy, n, f);
		without = zstd_blocks(copy, n, 1, 7, raw, out, cap, zc, NULL);
		printf(" %s %.3f%s", names[f], ((double)all - (double)without) / (double)n,
		       f + 1 < (int)(sizeof(names) / sizeof(names[0])) ? "," : "\n");
	}
	free(copy);
}

static void zstd_tables(const struct mt_event *ev, size_t n)
{
	size_t cap = ZSTD_compressBound(MT_EVB_STREAMS * STREAM_CAP) + 8 * MT_EVB_STREAMS;
	uint8_t *raw = malloc(MT_EVB_STREAMS * STREAM_CAP), *out = malloc(cap);
	ZSTD_CCtx *zc = ZSTD_createCCtx();

	if (!raw || !out || !zc)
		exit(1);
	for (int version = 5; version <= 7; version++)
		zstd_table(ev, n, version, raw, out, cap, zc);
	stream_table(ev, n, raw, out, cap, zc);
	field_table(ev, n, raw, out, cap, zc);
	ZSTD_freeCCtx(zc);
	free(out);
	free(raw);
}

/* ---- an artifact's bytes as written (--columns) ------------------------------------------- */

static const char *const stream_names[MT_EVB_STREAMS] = {"tags",      "time byte 0", "addresses",
							 "sizes",     "the rest",    "time byte 1",
							 "time rest", "references"};

/* What the bytes of an artifact went to. */
struct columns {
	size_t header, records, record_heads, plain, plain_blocks, block_fixed, frame_heads;
	size_t stream[MT_EVB_STREAMS], blocks, events;
};

static uint32_t le32_at(const uint8_t *p)
{
	uint32_t v;

	memcpy(&v, p, sizeof(v));
	return le32toh(v);
}

/* The bytes of a zstd frame's header at p (RFC 8878, 3.1.1.1), or 0 when it is not one. */
static size_t frame_head_len(const uint8_t *p, size_t n)
{
	static const size_t dict_len[4] = {0, 1, 2, 4};
	static const size_t fcs_len[4] = {0, 2, 4, 8};
	uint8_t d;
	size_t len;

	if (n < 5 || le32_at(p) != 0xfd2fb528u)
		return 0;
	d = p[4];
	len = 5 + !(d & 0x20) + dict_len[d & 3] + fcs_len[d >> 6];
	if (!(d >> 6) && (d & 0x20))
		len += 1;
	return len <= n ? len : 0;
}

/*
 * A columnar block's frame, zstd block by zstd block: each block's bytes (its 3-byte header
 * included) to the stream its decompressed bytes begin in. 0, or -1 when it does not decode.
 */
static int frame_columns(struct columns *c, ZSTD_DCtx *zd, uint8_t *raw, const uint8_t *f, size_t n,
			 const uint32_t len[MT_EVB_STREAMS])
{
	size_t at = frame_head_len(f, n), total = 0, end[MT_EVB_STREAMS];
	ZSTD_outBuffer out = {raw, MT_ARTIFACT_BLOCK_MAX, 0};
	ZSTD_inBuffer in = {f, at, 0};
	int last = 0;

	for (int k = 0; k < MT_EVB_STREAMS; k++)
		end[k] = total += len[k];
	if (!at || ZSTD_isError(ZSTD_DCtx_reset(zd, ZSTD_reset_session_only)) ||
	    ZSTD_isError(ZSTD_decompressStream(zd, &out, &in)))
		return -1;
	c->frame_heads += at;
	while (!last && at + 3 <= n) {
		uint32_t h = f[at] | (uint32_t)f[at + 1] << 8 | (uint32_t)f[at + 2] << 16;
		size_t body = ((h >> 1) & 3) == 1 ? 1 : h >> 3, from = out.pos;
		int k = 0;

		last = h & 1;
		in = (ZSTD_inBuffer){f + at, 3 + body, 0};
		if (at + 3 + body > n)
			return -1;
		while (in.pos < in.size)
			if (ZSTD_isError(ZSTD_decompressStream(zd, &out, &in)))
				return -1;
		while (k + 1 < MT_EVB_STREAMS && from >= end[k])
			k++;
		c->stream[k] += 3 + body;
		at += 3 + body;
	}
	/* The rest: the checksum. */
	c->frame_heads += n - at;
	return last && out.pos == total ? 0 : -1;
}

/* Read the file at path whole into *buf. Its length, or 0. */
static size_t slurp(const char *path, uint8_t **buf)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 1 << 20, n = 0, k;

	*buf = NULL;
	if (!f)
		return 0;
	do {
		uint8_t *p = realloc(*buf, cap *= 2);

		if (!p)
			exit(1);
		*buf = p;
		n += k = fread(*buf + n, 1, cap - n, f);
	} while (k && n == cap);
	fclose(f);
	return n;
}

static void print_columns(const struct columns *c, size_t size)
{
	double ev = c->events ? (double)c->events : 1;

	printf(
	    "%zu bytes, %zu events in %zu columnar blocks and %zu plain ones: %.3f bytes/event\n",
	    size, c->events, c->blocks, c->plain_blocks, (double)size / ev);
	printf(
	    "  header %.3f, other records %.3f, record heads of the blocks %.3f, their counts and"
	    " lengths %.3f, zstd frames' heads and checksums %.3f, plain blocks %.3f\n",
	    (double)c->header / ev, (double)c->records / ev, (double)c->record_heads / ev,
	    (double)c->block_fixed / ev, (double)c->frame_heads / ev, (double)c->plain / ev);
	printf("  streams:");
	for (int k = 0; k < MT_EVB_STREAMS; k++)
		printf(" %s %.3f%s", stream_names[k], (double)c->stream[k] / ev,
		       k + 1 < MT_EVB_STREAMS ? "," : "\n");
}

/* A columnar block's payload p (n bytes) into c. 0, or -1 when it is not one. */
static int block_columns(struct columns *c, ZSTD_DCtx *zd, uint8_t *raw, const uint8_t *p, size_t n)
{
	uint32_t len[MT_EVB_STREAMS];

	if (n < MT_ARTIFACT_CBLOCK_FIXED)
		return -1;
	for (int k = 0; k < MT_EVB_STREAMS; k++)
		len[k] = le32_at(p + 4 + 4 * k);
	c->events += le32_at(p);
	c->blocks++;
	c->block_fixed += MT_ARTIFACT_CBLOCK_FIXED;
	return frame_columns(c, zd, raw, p + MT_ARTIFACT_CBLOCK_FIXED, n - MT_ARTIFACT_CBLOCK_FIXED,
			     len);
}

static int columns_main(const char *path)
{
	struct columns c = {0};
	uint8_t *buf, *raw = malloc(MT_ARTIFACT_BLOCK_MAX);
	size_t n = slurp(path, &buf), at;
	ZSTD_DCtx *zd = ZSTD_createDCtx();

	if (!raw || !zd)
		return 1;
	if (n < 16 || memcmp(buf, MT_ARTIFACT_MAGIC, MT_ARTIFACT_MAGIC_LEN)) {
		fprintf(stderr, "evblock_cost: %s: not an artifact\n", path);
		return 1;
	}
	c.header = at = 16 + (size_t)le32_at(buf + 12);
	while (at + 8 <= n) {
		uint32_t type = le32_at(buf + at), len = le32_at(buf + at + 4);
		const uint8_t *p = buf + at + 8;

		if (at + 8 + len > n)
			break;
		if (type == MT_REC_CBLOCK || type == MT_REC_UBLOCK) {
			c.record_heads += 8;
			if (block_columns(&c, zd, raw, p, len)) {
				fprintf(stderr,
					"evblock_cost: %s: a block at %zu does not decode\n", path,
					at);
				return 1;
			}
		} else if (type == MT_REC_BLOCK && len >= 4) {
			c.plain += 8 + len;
			c.plain_blocks++;
			c.events += le32_at(p);
		} else {
			c.records += 8 + len;
		}
		at += 8 + len;
	}
	print_columns(&c, n);
	ZSTD_freeDCtx(zd);
	free(raw);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	size_t n, i, len = 0, pos = 0;
	struct mt_event *ev, back;
	struct mt_evblock_state s;
	uint8_t *out;
	double t0, t_enc, t_dec;

	if (argc == 3 && !strcmp(argv[1], "--columns"))
		return columns_main(argv[2]);

	if (argc != 2 && argc != 4) {
		fprintf(stderr, "usage: evblock_cost ARTIFACT [RAW_OUT ENCODED_OUT]\n"
				"       evblock_cost --columns ARTIFACT\n");
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
	zstd_tables(ev, n);
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
