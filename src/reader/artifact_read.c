// SPDX-License-Identifier: GPL-2.0
/*
 * The artifact reader (format in docs/FORMAT.md). Artifacts come from runs that may have been
 * killed, from disks that may have filled, and from anyone who can hand a file to `memtrack
 * report`, so every length is checked against the format's bounds before it sizes anything, buffers
 * grow only as bytes actually arrive, and event batches are streamed in fixed-size pieces.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/regfile.h"
#include "reader/artifact_read_int.h"

/* ---- records ------------------------------------------------------------------------------- */

/* Discard the payload of a record of a type this reader does not know. */
static int skip(struct mt_artifact_reader *r, uint32_t len)
{
	uint8_t scratch[4096];

	while (len) {
		size_t want = len < sizeof(scratch) ? len : sizeof(scratch);
		ssize_t k = mt_artread_src_read(r, scratch, want);

		if (k < 0)
			return (int)k;
		if ((size_t)k < want) {
			r->truncated = true;
			return 1;
		}
		len -= (uint32_t)want;
	}
	return 0;
}

/*
 * A record this reader does not read, passed over: 2 (go on), or 0 when the file ends in it or
 * cannot be read on (the reading ends there).
 */
static int pass_over(struct mt_artifact_reader *r, uint32_t len)
{
	if (skip(r, len)) {
		r->done = true;
		return 0;
	}
	return 2;
}

/* Hand out the next piece of the current event batch. */
static int next_events(struct mt_artifact_reader *r, struct mt_artifact_item *it)
{
	size_t n = r->ev_left < EV_CHUNK ? (size_t)r->ev_left : EV_CHUNK;
	uint8_t *raw = (uint8_t *)r->evbuf; /* 48-byte records, spread below */
	ssize_t k = mt_artread_src_read(r, raw, n * MT_ARTIFACT_EVENT_SIZE);
	size_t i;

	if (k < 0)
		return (int)k;
	if ((size_t)k < n * MT_ARTIFACT_EVENT_SIZE) {
		/* Cut inside the batch: its complete events are still good. */
		n = (size_t)k / MT_ARTIFACT_EVENT_SIZE;
		r->truncated = true;
		r->done = true;
		r->ev_left = 0;
		if (!n)
			return 0;
	} else {
		r->ev_left -= n;
	}
	/* From the last: an event's 48 bytes never lie after its slot's start. */
	for (i = n; i-- > 0;) {
		struct mt_event *e = &r->evbuf[i];

		memmove(e, raw + i * MT_ARTIFACT_EVENT_SIZE, MT_ARTIFACT_EVENT_SIZE);
		e->stack_id = 0;
		e->pad = 0;

		e->ts_ns = le64toh(e->ts_ns);
		e->pid = le32toh(e->pid);
		e->tid = le32toh(e->tid);
		e->addr = le64toh(e->addr);
		e->size = le64toh(e->size);
		e->old_addr = le64toh(e->old_addr);
		e->align = le32toh(e->align);
		e->file_id = le16toh(e->file_id);
	}
	r->events_read += n;
	it->type = MT_ITEM_EVENTS;
	it->events = r->evbuf;
	it->n_events = n;
	return 1;
}

/* Whether the current block has entries left to decode. */
static bool block_more(const struct mt_artifact_reader *r)
{
	return r->block_split ? r->block_cursor.left[MT_EVB_S_TAG] > 0
			      : r->block_pos < r->block_len;
}

/* Decode the next entry of the current block, and where it is for messages. */
static enum mt_evblock_result block_entry(struct mt_artifact_reader *r, struct mt_event *e,
					  uint64_t *at)
{
	enum mt_evblock_result res;
	size_t used = 0;

	if (r->block_split) {
		/* Its entries are in no one place of the file: messages name the record. */
		*at = r->block_at;
		return mt_evblock_get_split(&r->block_state, &r->block_cursor, e);
	}
	*at = r->block_at + 8 + r->block_pos;
	res = mt_evblock_get(&r->block_state, r->payload + r->block_pos,
			     r->block_len - r->block_pos, e, &used);
	if (res == MT_EVB_EVENT || res == MT_EVB_SKIPPED || res == MT_EVB_REQUIRED)
		r->block_pos += used;
	return res;
}

/* The end of the current block: its entries must hold exactly the events it counts. */
static int end_block(struct mt_artifact_reader *r)
{
	char msg[96];

	r->in_block = false;
	if (r->block_cut) {
		r->truncated = true;
		r->done = true;
		return 0;
	}
	for (int k = 0; r->block_split && k < MT_EVB_STREAMS; k++)
		if (r->block_cursor.left[k])
			return mt_artread_corrupt(r, r->block_at,
						  "compressed event block has bytes after its "
						  "last entry");
	if (r->block_seen != r->block_count) {
		snprintf(msg, sizeof(msg), "event block counts %u events but holds %u",
			 r->block_count, r->block_seen);
		return mt_artread_corrupt(r, r->block_at, msg);
	}
	return 0;
}

/*
 * Whether the escape just decoded is a record inside the block (version 5), now held to be handed
 * out after the events before it (or passed over then, when this reader does not know its type,
 * as a record of that type is). A footer or events inside a block, or a record whose length its
 * type does not allow, set the reader's error.
 */
static bool held_record(struct mt_artifact_reader *r, uint64_t at)
{
	uint32_t esc = r->block_state.escape_type, type = esc >> 1;

	if (r->info.version < 5 || !(esc & 1))
		return false;
	if (type == MT_REC_FOOTER || type == MT_REC_EVENTS || type == MT_REC_BLOCK ||
	    type == MT_REC_ZBLOCK || type == MT_REC_CBLOCK || type == MT_REC_UBLOCK)
		mt_artread_corrupt(r, at, "event block holds a record that cannot be inside one");
	else if (!mt_artread_len_ok(type, r->block_state.escape_len))
		mt_artread_corrupt(r, at, "record length out of bounds");
	r->held = true;
	r->held_type = type;
	r->held_at = at;
	return true;
}

/* The record held from the current block: its escape's bytes are still in the block's buffer. */
static int held_out(struct mt_artifact_reader *r, struct mt_artifact_item *it)
{
	r->held = false;
	return mt_artread_parse(r, r->held_type, r->block_state.escape_data,
				r->block_state.escape_len, r->held_at, it);
}

/*
 * The events of a compressed block decoded in one run into evbuf from n on, as many as fit and
 * its count allows; what stops the run (an escape, a bad entry, a stream's last bytes) is then
 * decoded entry by entry. Returns how many.
 */
static size_t block_run(struct mt_artifact_reader *r, size_t n)
{
	size_t got, max = r->block_count - r->block_seen;

	if (!r->block_split || !max)
		return 0;
	got = mt_evblock_get_split_events(&r->block_state, &r->block_cursor, r->evbuf + n,
					  max < EV_CHUNK - n ? max : EV_CHUNK - n);
	r->block_seen += (uint32_t)got;
	return got;
}

/* Decode the next piece of the current event block. Returns 1 (events), 2 (none), or -errno. */
static int next_block_events(struct mt_artifact_reader *r, struct mt_artifact_item *it)
{
	size_t n = 0;
	uint64_t at;
	int err;

	while (n < EV_CHUNK && block_more(r)) {
		enum mt_evblock_result res;

		n += block_run(r, n);
		if (n == EV_CHUNK || !block_more(r))
			break;
		res = block_entry(r, &r->evbuf[n], &at);

		if (res == MT_EVB_SHORT && r->block_cut) {
			/* The cut: the events before it are complete and good. */
			r->block_pos = r->block_len;
			break;
		}
		if (res == MT_EVB_REQUIRED && held_record(r, at)) {
			if (r->err)
				return r->err;
			break;
		}
		if (res == MT_EVB_REQUIRED)
			return mt_artread_fail(
			    r, -EPROTONOSUPPORT,
			    "the artifact holds records this memtrack does not know (event "
			    "block entry type %u at offset %llu): a newer memtrack reads it",
			    r->block_state.escape_type, (unsigned long long)at);
		if (res == MT_EVB_SHORT || res == MT_EVB_CORRUPT)
			return mt_artread_corrupt(r, at, "bad event block entry");
		if (res == MT_EVB_EVENT) {
			if (r->block_seen == r->block_count)
				return mt_artread_corrupt(
				    r, r->block_at, "event block holds more events than it counts");
			r->block_seen++;
			n++;
		}
	}
	if (!block_more(r)) {
		err = end_block(r);
		if (err)
			return err;
	}
	r->events_read += n;
	if (!n && r->held)
		return held_out(r, it);
	if (!n)
		return r->done ? 0 : 2;
	it->type = MT_ITEM_EVENTS;
	it->events = r->evbuf;
	it->n_events = n;
	return 1;
}

/* Read a whole event block (bounded by MT_ARTIFACT_BLOCK_MAX) and start handing it out. */
static int start_block(struct mt_artifact_reader *r, uint32_t len, uint64_t at,
		       struct mt_artifact_item *it)
{
	struct cursor c;
	ssize_t k = mt_artread_payload(r, len);

	if (k < 0)
		return (int)k;
	c = (struct cursor){r->payload, (size_t)k};
	r->block_cut = (size_t)k < len;
	if (!get_u32(&c, &r->block_count)) {
		r->truncated = true;
		r->done = true;
		return 0;
	}
	/* Every event takes at least its tag, timestamp and address. */
	if (!r->block_count ||
	    r->block_count > (len - MT_ARTIFACT_BLOCK_FIXED) / MT_ARTIFACT_BLOCK_ENTRY_MIN)
		return mt_artread_corrupt(r, at, "bad event count in event block");
	r->in_block = true;
	r->block_split = false;
	r->block_at = at;
	r->block_seen = 0;
	r->block_pos = MT_ARTIFACT_BLOCK_FIXED;
	r->block_len = (size_t)k;
	mt_evblock_reset(&r->block_state);
	return next_block_events(r, it);
}

/*
 * A compressed event block: decompressed whole (a cut one is lost whole), then handed out. Its
 * type says how: 13 in five streams, 14 in columns, 15 in columns with times in microseconds.
 */
static int start_zblock(struct mt_artifact_reader *r, uint32_t type, uint32_t len, uint64_t at,
			struct mt_artifact_item *it)
{
	bool columns = type != MT_REC_ZBLOCK;
	int ret = mt_artread_zblock(r, len, at, columns);

	if (ret <= 0)
		return ret;
	r->in_block = true;
	r->block_split = true;
	r->block_cut = false;
	r->block_at = at;
	r->block_seen = 0;
	if (type == MT_REC_UBLOCK)
		mt_evblock_reset_columns_us(&r->block_state);
	else if (columns)
		mt_evblock_reset_columns(&r->block_state);
	else
		mt_evblock_reset(&r->block_state);
	return next_block_events(r, it);
}

/*
 * Whether a regular file holds the next record whole, looked at before it is begun: the writer
 * of an artifact still being written appends whole records, but a reader may come between two of
 * its writes, or inside a large one. 1: whole, or no regular file, or no live writer (the reading
 * goes on as before, to a truncation if the file is cut); 0: not yet, and its writer holds the
 * file: the reading ends here, in progress; -EAGAIN: not yet, when following.
 */
static int whole_record(struct mt_artifact_reader *r)
{
	size_t buffered = r->src_len - r->src_pos;
	uint8_t hdr[8];
	uint32_t len;
	uint64_t need;
	struct stat st;

	if (!r->regular)
		return 1;
	if (buffered >= sizeof(hdr))
		memcpy(hdr, r->src + r->src_pos, sizeof(hdr));
	else if (pread(r->fd, hdr, sizeof(hdr), (off_t)(r->base + r->offset)) != sizeof(hdr))
		goto not_yet;
	memcpy(&len, hdr + 4, sizeof(len));
	need = r->offset + sizeof(hdr) + le32toh(len);
	if (buffered >= need - r->offset || r->base + need <= r->known_size)
		return 1;
	if (fstat(r->fd, &st))
		return 1;
	r->known_size = (uint64_t)st.st_size;
	if (r->base + need <= r->known_size)
		return 1;
not_yet:
	if (r->follow)
		return -EAGAIN;
	if (!mt_artifact_writer_alive(r))
		return 1;
	r->in_progress = true;
	r->done = true;
	return 0;
}

/* Read one record header and dispatch. Returns 1 (item), 0 (end), 2 (skipped), or -errno. */
static int next_record(struct mt_artifact_reader *r, struct mt_artifact_item *it)
{
	uint8_t hdr[8];
	struct cursor c = {hdr, sizeof(hdr)};
	uint64_t at = r->offset;
	uint32_t type, len;
	int whole = whole_record(r);
	ssize_t k;

	if (whole <= 0)
		return whole; /* in progress, or not yet when following */
	k = mt_artread_src_read(r, hdr, sizeof(hdr));
	if (k < 0)
		return (int)k;
	if ((size_t)k < sizeof(hdr)) {
		/* At a record boundary or inside a record header: either way, no footer. */
		r->truncated = true;
		r->done = true;
		return 0;
	}
	get_u32(&c, &type);
	get_u32(&c, &len);
	if (!mt_artread_len_ok(type, len))
		return mt_artread_corrupt(r, at, "record length out of bounds");
	switch (type) {
	case MT_REC_EVENTS:
		r->ev_left = len / MT_ARTIFACT_EVENT_SIZE;
		return next_events(r, it);
	case MT_REC_PROCESS:
	case MT_REC_FILE:
	case MT_REC_FOOTER:
	case MT_REC_MAPPING:
	case MT_REC_LEAKS:
	case MT_REC_RSS:
	case MT_REC_BENCH:
		return mt_artread_meta(r, type, len, at, it);
	case MT_REC_UNPROBED:
		/* Version 1 had no such record: there it is an unknown type, passed over. */
		if (r->info.version >= 2)
			return mt_artread_meta(r, type, len, at, it);
		return pass_over(r, len);
	case MT_REC_BLOCK:
	case MT_REC_HANDOFF:
		/* Likewise before version 3. */
		if (r->info.version >= 3)
			return type == MT_REC_BLOCK ? start_block(r, len, at, it)
						    : mt_artread_meta(r, type, len, at, it);
		return pass_over(r, len);
	case MT_REC_ZBLOCK:
	case MT_REC_CBLOCK:
	case MT_REC_UBLOCK:
		/* Likewise before versions 5, 6 and 7. */
		if (r->info.version >= 5 + type - MT_REC_ZBLOCK)
			return start_zblock(r, type, len, at, it);
		return pass_over(r, len);
	case MT_REC_STACK:
		/* Likewise before version 4. */
		if (r->info.version >= 4)
			return mt_artread_meta(r, type, len, at, it);
		return pass_over(r, len);
	default:
		return pass_over(r, len);
	}
}

int mt_artifact_next(struct mt_artifact_reader *r, struct mt_artifact_item *it)
{
	int ret;

	if (r->err)
		return r->err;
	do {
		if (r->held)
			ret = held_out(r, it);
		else if (r->done)
			return 0;
		else if (r->ev_left)
			ret = next_events(r, it);
		else if (r->in_block)
			ret = next_block_events(r, it);
		else
			ret = next_record(r, it);
	} while (ret == 2);
	/* Following, -EAGAIN is "not yet": the next call reads on from the same record. */
	if (ret < 0 && !r->err && ret != -EAGAIN)
		r->err = ret;
	return ret;
}

/* ---- opening -------------------------------------------------------------------------------- */

static void copy_err(const struct mt_artifact_reader *r, char *err, size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", r->msg);
}

static struct mt_artifact_reader *reader_new(void)
{
	struct mt_artifact_reader *r = calloc(1, sizeof(*r));

	if (!r)
		return NULL;
	r->fd = -1;
	r->evbuf = malloc(EV_CHUNK * sizeof(*r->evbuf));
	if (!r->evbuf) {
		free(r);
		return NULL;
	}
	return r;
}

/* Whether fd is a regular file, and where in it the artifact starts (a shell's stdin may not be at
 * its start). */
static bool is_regular(int fd, uint64_t *base)
{
	struct stat st;
	off_t at;

	if (fstat(fd, &st) || !S_ISREG(st.st_mode))
		return false;
	at = lseek(fd, 0, SEEK_CUR);
	if (at < 0)
		return false;
	*base = (uint64_t)at;
	return true;
}

static int finish_open(struct mt_artifact_reader **rp, struct mt_artifact_reader *r, char *err,
		       size_t errlen)
{
	int ret = mt_artread_header(r);

	/* A writer that holds the file has made it and not yet written all its header. */
	if (ret == -EBADMSG && mt_artifact_writer_alive(r))
		ret = mt_artread_fail(r, -EAGAIN,
				      "in progress: its writer has not written its header yet");
	if (ret) {
		copy_err(r, err, errlen);
		mt_artifact_close(r);
		return ret;
	}
	*rp = r;
	return 0;
}

int mt_artifact_open(struct mt_artifact_reader **rp, const char *path, char *err, size_t errlen)
{
	struct mt_artifact_reader *r;
	char why[256];
	int ret;

	*rp = NULL;
	r = reader_new();
	if (!r)
		goto nomem;
	r->rbuf = malloc(READ_BUF_SIZE);
	if (!r->rbuf) {
		mt_artifact_close(r);
		goto nomem;
	}
	/* A pipe the user's shell gave as stdin is read (run -o /dev/stdout | report /dev/stdin).
	 */
	r->fd = mt_regfile_open(path, MT_REGFILE_OWN_STREAM, why, sizeof(why));
	if (r->fd < 0) {
		ret = r->fd;
		mt_artread_fail(r, ret, "cannot open: %s", why);
		copy_err(r, err, errlen);
		mt_artifact_close(r);
		return ret;
	}
	if (is_regular(r->fd, &r->base))
		r->regular = true;
	return finish_open(rp, r, err, errlen);
nomem:
	if (err && errlen)
		snprintf(err, errlen, "out of memory");
	return -ENOMEM;
}

int mt_artifact_open_mem(struct mt_artifact_reader **rp, const void *buf, size_t len, char *err,
			 size_t errlen)
{
	struct mt_artifact_reader *r;

	*rp = NULL;
	r = reader_new();
	if (!r) {
		if (err && errlen)
			snprintf(err, errlen, "out of memory");
		return -ENOMEM;
	}
	r->src = buf;
	r->src_len = buf ? len : 0;
	return finish_open(rp, r, err, errlen);
}

void mt_artifact_close(struct mt_artifact_reader *r)
{
	int i;

	if (!r)
		return;
	if (r->fd >= 0)
		close(r->fd);
	if (r->info.argv) {
		for (i = 0; i < r->info.argc; i++)
			free(r->info.argv[i]);
		free(r->info.argv);
	}
	free(r->rbuf);
	free(r->payload);
	free(r->evbuf);
	free(r->leak_blocks);
	mt_artread_zblock_free(r);
	free(r);
}

const struct mt_artifact_info *mt_artifact_info(const struct mt_artifact_reader *r)
{
	return &r->info;
}

const char *mt_artifact_error(const struct mt_artifact_reader *r)
{
	return r->err ? r->msg : "";
}

bool mt_artifact_truncated(const struct mt_artifact_reader *r)
{
	return r->truncated;
}

bool mt_artifact_writer_alive(const struct mt_artifact_reader *r)
{
	struct flock l = {
	    .l_type = F_RDLCK,
	    .l_whence = SEEK_SET,
	    .l_start = MT_ARTIFACT_LOCK_START,
	    .l_len = MT_ARTIFACT_LOCK_LEN,
	};

	/* The writer's lock conflicts with a read lock: F_OFD_GETLK says who would be in the way.
	 */
	if (!r->regular || fcntl(r->fd, F_OFD_GETLK, &l))
		return false;
	return l.l_type != F_UNLCK;
}

bool mt_artifact_in_progress(const struct mt_artifact_reader *r)
{
	return r->in_progress;
}

int mt_artifact_follow(struct mt_artifact_reader *r, bool on)
{
	if (on && !r->regular)
		return -ENOTSUP;
	r->follow = on;
	return 0;
}

uint64_t mt_artifact_events_read(const struct mt_artifact_reader *r)
{
	return r->events_read;
}
