// SPDX-License-Identifier: GPL-2.0
/*
 * A compressed event block (version 5, docs/FORMAT.md): a count, the lengths of the block's five
 * entry streams, and one zstd frame holding them; or a columnar one (version 6), the same with
 * eight streams. Nothing in it is believed before it is checked:
 * the lengths against the format's one-block bound (so the buffer they size is bounded whatever
 * the file says), the frame against the lengths, its content against its checksum. A block cut by
 * the end of the file gives no event: a zstd frame is read whole or not at all.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <zstd.h>

#include "reader/artifact_read_int.h"
#include "writer/artifact_format.h"

/* The n streams' lengths: each at most the bound, and so is their sum. Returns the sum, or 0. */
static size_t streams_len(struct cursor *c, uint32_t len[MT_EVB_STREAMS], int n)
{
	uint64_t total = 0;

	for (int k = 0; k < n; k++) {
		get_u32(c, &len[k]);
		total += len[k];
	}
	return total <= MT_ARTIFACT_BLOCK_MAX ? (size_t)total : 0;
}

/*
 * Room for n decompressed bytes (n at most MT_ARTIFACT_BLOCK_MAX) and the bytes after them that
 * the decoder may read past its streams, and the decompressor.
 */
static int zblock_room(struct mt_artifact_reader *r, size_t n)
{
	n += MT_EVB_READ_PAST;
	if (!r->zd) {
		r->zd = ZSTD_createDCtx();
		if (!r->zd)
			return mt_artread_fail(r, -ENOMEM, "out of memory");
	}
	if (r->zraw_cap < n) {
		uint8_t *p = realloc(r->zraw, n);

		if (!p)
			return mt_artread_fail(r, -ENOMEM, "out of memory");
		r->zraw = p;
		r->zraw_cap = n;
	}
	return 0;
}

/* Decompress the frame of src into zraw: exactly total bytes, from exactly one frame. */
static int zblock_inflate(struct mt_artifact_reader *r, const uint8_t *src, size_t n, size_t total,
			  uint64_t at)
{
	char msg[160];
	size_t z;
	int err;

	if (ZSTD_findFrameCompressedSize(src, n) != n ||
	    ZSTD_getFrameContentSize(src, n) != (unsigned long long)total)
		return mt_artread_corrupt(r, at,
					  "compressed event block is not one zstd frame of "
					  "its streams' length");
	err = zblock_room(r, total);
	if (err)
		return err;
	z = ZSTD_decompressDCtx(r->zd, r->zraw, total, src, n);
	if (ZSTD_isError(z) || z != total) {
		snprintf(msg, sizeof(msg), "compressed event block does not decompress (%s)",
			 ZSTD_isError(z) ? ZSTD_getErrorName(z) : "short content");
		return mt_artread_corrupt(r, at, msg);
	}
	/* Read past the streams and not used, but known bytes all the same. */
	memset(r->zraw + total, 0, MT_EVB_READ_PAST);
	return 0;
}

int mt_artread_zblock(struct mt_artifact_reader *r, uint32_t len, uint64_t at, bool columns)
{
	int streams = columns ? MT_EVB_STREAMS : MT_EVB_STREAMS_V5;
	ssize_t k = mt_artread_payload(r, len);
	uint32_t count = 0, slen[MT_EVB_STREAMS] = {0};
	const uint8_t *from;
	struct cursor c;
	size_t total;
	int err;

	if (k < 0)
		return (int)k;
	if ((size_t)k < len) {
		r->truncated = true;
		r->done = true;
		return 0;
	}
	c = (struct cursor){r->payload, (size_t)k};
	get_u32(&c, &count);
	total = streams_len(&c, slen, streams);
	/* Every event has its tag, and takes at least a tag, a time and an address. */
	if (!total || !count || count > slen[MT_EVB_S_TAG] ||
	    count > total / MT_ARTIFACT_BLOCK_ENTRY_MIN)
		return mt_artread_corrupt(r, at,
					  "bad event count or stream lengths in compressed "
					  "event block");
	err = zblock_inflate(r, c.p, c.left, total, at);
	if (err)
		return err;
	r->block_count = count;
	from = r->zraw;
	for (int i = 0; i < MT_EVB_STREAMS; i++) {
		r->block_cursor.p[i] = from;
		r->block_cursor.left[i] = slen[i];
		from += slen[i];
	}
	return 1;
}

void mt_artread_zblock_free(struct mt_artifact_reader *r)
{
	free(r->zraw);
	ZSTD_freeDCtx(r->zd);
}
