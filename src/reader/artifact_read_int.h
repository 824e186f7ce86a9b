/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The artifact reader's private parts, shared by its files only: the reader's state, the
 * cursor over a record's payload, and the reader's error and source functions.
 */
#ifndef MEMTRACK_ARTIFACT_READ_INT_H
#define MEMTRACK_ARTIFACT_READ_INT_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>
#include <sys/types.h>

#include "reader/artifact_read.h"
#include "writer/evblock.h"

#define READ_BUF_SIZE (64u << 10)
#define GROW_STEP     (64u << 10)
#define EV_CHUNK      1024u /* events handed out per item */

struct mt_artifact_reader {
	/* The source: a file descriptor with a read buffer, or a caller's memory buffer. */
	int fd;
	const uint8_t *src;
	size_t src_len;
	size_t src_pos;
	uint8_t *rbuf;
	uint64_t offset; /* of the next byte to be consumed: for messages */
	/* A regular file: its next record is looked for whole before it is begun (whole_record) */
	bool regular;
	uint64_t base;	     /* the file's offset where the artifact starts */
	uint64_t known_size; /* the file's size when last looked at */
	bool follow;	     /* mt_artifact_follow: a record not there whole yet is -EAGAIN */
	bool in_progress;    /* reading stopped before a record its live writer has not written */

	struct mt_artifact_info info;
	int err;
	char msg[MT_ARTIFACT_ERRLEN];
	bool done;
	bool truncated;
	uint64_t events_read;
	uint64_t ev_left; /* events of the current batch record not handed out yet */

	/* The event block being handed out (version 3), whole in payload. */
	bool in_block;
	bool block_cut;	   /* the file ends inside it: decode what is complete, then stop */
	uint64_t block_at; /* offset of its record, for messages */
	uint32_t block_count;
	uint32_t block_seen;
	size_t block_pos;
	size_t block_len;
	struct mt_evblock_state block_state;
	/* A compressed block (version 5): its streams, decompressed into zraw. */
	bool block_split;
	struct mt_evblock_cursor block_cursor;
	uint8_t *zraw;
	size_t zraw_cap;
	struct ZSTD_DCtx_s *zd;
	/* A record met inside the block (version 5), handed out after the events before it. */
	bool held;
	uint32_t held_type;
	uint64_t held_at;

	uint8_t *payload;
	size_t payload_cap;
	struct mt_event *evbuf;
	struct mt_artifact_process process;
	struct mt_artifact_file file;
	struct mt_artifact_footer footer;
	struct mt_artifact_unprobed unprobed;
	struct mt_artifact_stack stack;
	struct mt_artifact_handoff handoff;
	struct mt_artifact_mapping mapping;
	struct mt_artifact_leaks leaks;
	struct mt_artifact_rss rss;
	struct mt_artifact_bench bench;
	struct mt_artifact_leak_block *leak_blocks; /* MT_ARTIFACT_LEAKS_PER, made at the first */
};

/* ---- decoding from a payload ---------------------------------------------------------------- */

struct cursor {
	const uint8_t *p;
	size_t left;
};

static inline bool take(struct cursor *c, void *dst, size_t n)
{
	if (c->left < n)
		return false;
	memcpy(dst, c->p, n);
	c->p += n;
	c->left -= n;
	return true;
}

static inline bool get_u8(struct cursor *c, uint8_t *v)
{
	return take(c, v, 1);
}

static inline bool get_u16(struct cursor *c, uint16_t *v)
{
	if (!take(c, v, sizeof(*v)))
		return false;
	*v = le16toh(*v);
	return true;
}

static inline bool get_u32(struct cursor *c, uint32_t *v)
{
	if (!take(c, v, sizeof(*v)))
		return false;
	*v = le32toh(*v);
	return true;
}

static inline bool get_u64(struct cursor *c, uint64_t *v)
{
	if (!take(c, v, sizeof(*v)))
		return false;
	*v = le64toh(*v);
	return true;
}

/* artifact_read_source.c: the reader's errors and source. */
int __attribute__((format(printf, 3, 4)))
mt_artread_fail(struct mt_artifact_reader *r, int err, const char *fmt, ...);
int mt_artread_corrupt(struct mt_artifact_reader *r, uint64_t at, const char *what);
ssize_t mt_artread_src_read(struct mt_artifact_reader *r, void *dst, size_t n);
ssize_t mt_artread_payload(struct mt_artifact_reader *r, size_t len);

/* artifact_read_zblock.c: a compressed event block, decompressed and ready to decode. */
/* A compressed event block (type 13), or with columns a columnar one (types 14 and 15). */
int mt_artread_zblock(struct mt_artifact_reader *r, uint32_t len, uint64_t at, bool columns);
void mt_artread_zblock_free(struct mt_artifact_reader *r);

/* artifact_read_records.c: the header and the metadata records. */
bool mt_artread_len_ok(uint32_t type, uint32_t len);
int mt_artread_header(struct mt_artifact_reader *r);
int mt_artread_meta(struct mt_artifact_reader *r, uint32_t type, uint32_t len, uint64_t at,
		    struct mt_artifact_item *it);
/* The same for a payload already read (a record inside an event block): 2 for a type this
 * reader does not know, passed over. */
int mt_artread_parse(struct mt_artifact_reader *r, uint32_t type, const uint8_t *payload,
		     uint32_t len, uint64_t at, struct mt_artifact_item *it);

#endif /* MEMTRACK_ARTIFACT_READ_INT_H */
