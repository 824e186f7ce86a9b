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
#include <unistd.h>

#include "artifact_read.h"
#include "evblock.h"

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

	uint8_t *payload;
	size_t payload_cap;
	struct mt_event *evbuf;
	struct mt_artifact_process process;
	struct mt_artifact_file file;
	struct mt_artifact_footer footer;
	struct mt_artifact_unprobed unprobed;
};

/* ---- errors --------------------------------------------------------------------------------- */

static int __attribute__((format(printf, 3, 4)))
fail(struct mt_artifact_reader *r, int err, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(r->msg, sizeof(r->msg), fmt, ap);
	va_end(ap);
	r->err = err;
	return err;
}

static int corrupt(struct mt_artifact_reader *r, uint64_t at, const char *what)
{
	return fail(r, -EBADMSG, "corrupt artifact at offset %llu: %s", (unsigned long long)at,
		    what);
}

static void copy_err(const struct mt_artifact_reader *r, char *err, size_t errlen)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", r->msg);
}

/* ---- the source ----------------------------------------------------------------------------- */

static ssize_t fd_refill(struct mt_artifact_reader *r)
{
	for (;;) {
		ssize_t k = read(r->fd, r->rbuf, READ_BUF_SIZE);

		if (k >= 0 || errno != EINTR)
			return k < 0 ? -errno : k;
	}
}

/*
 * Copy up to n bytes to dst. Returns how many were copied, fewer than n only at the end of the
 * file, or a negative errno (with the message set).
 */
static ssize_t src_read(struct mt_artifact_reader *r, void *dst, size_t n)
{
	uint8_t *d = dst;
	size_t got = 0;

	while (got < n) {
		size_t k;

		if (r->src_pos == r->src_len) {
			ssize_t f;

			if (r->fd < 0)
				break;
			f = fd_refill(r);
			if (f < 0)
				return fail(r, (int)f, "read error: %s", strerror((int)-f));
			if (f == 0)
				break;
			r->src = r->rbuf;
			r->src_len = (size_t)f;
			r->src_pos = 0;
		}
		k = r->src_len - r->src_pos;
		if (k > n - got)
			k = n - got;
		memcpy(d + got, r->src + r->src_pos, k);
		r->src_pos += k;
		got += k;
	}
	r->offset += got;
	return (ssize_t)got;
}

/*
 * Read len bytes into r->payload, growing it as bytes arrive so that a length lying about a short
 * file allocates no more than the file holds. Returns how many were read, or a negative errno.
 */
static ssize_t read_payload(struct mt_artifact_reader *r, size_t len)
{
	size_t got = 0;

	while (got < len) {
		size_t want = len - got < GROW_STEP ? len - got : GROW_STEP;
		ssize_t k;

		if (r->payload_cap < got + want) {
			uint8_t *p = realloc(r->payload, got + want);

			if (!p)
				return fail(r, -ENOMEM, "out of memory");
			r->payload = p;
			r->payload_cap = got + want;
		}
		k = src_read(r, r->payload + got, want);
		if (k < 0)
			return k;
		got += (size_t)k;
		if ((size_t)k < want)
			break;
	}
	return (ssize_t)got;
}

/* ---- decoding from a payload ---------------------------------------------------------------- */

struct cursor {
	const uint8_t *p;
	size_t left;
};

static bool take(struct cursor *c, void *dst, size_t n)
{
	if (c->left < n)
		return false;
	memcpy(dst, c->p, n);
	c->p += n;
	c->left -= n;
	return true;
}

static bool get_u8(struct cursor *c, uint8_t *v)
{
	return take(c, v, 1);
}

static bool get_u16(struct cursor *c, uint16_t *v)
{
	if (!take(c, v, sizeof(*v)))
		return false;
	*v = le16toh(*v);
	return true;
}

static bool get_u32(struct cursor *c, uint32_t *v)
{
	if (!take(c, v, sizeof(*v)))
		return false;
	*v = le32toh(*v);
	return true;
}

static bool get_u64(struct cursor *c, uint64_t *v)
{
	if (!take(c, v, sizeof(*v)))
		return false;
	*v = le64toh(*v);
	return true;
}

/* A string of at most max bytes into dst, which has room for max + 1. */
static bool get_str(struct cursor *c, char *dst, size_t max)
{
	uint32_t len;

	if (!get_u32(c, &len) || len > max || !take(c, dst, len))
		return false;
	dst[len] = '\0';
	return true;
}

/* A string of at most max bytes, allocated. NULL on a bad string or no memory (*nomem set). */
static char *get_str_alloc(struct cursor *c, size_t max, bool *nomem)
{
	uint32_t len;
	char *s;

	if (!get_u32(c, &len) || len > max || len > c->left)
		return NULL;
	s = malloc((size_t)len + 1);
	if (!s) {
		*nomem = true;
		return NULL;
	}
	take(c, s, len);
	s[len] = '\0';
	return s;
}

/* ---- the header ----------------------------------------------------------------------------- */

static int read_magic(struct mt_artifact_reader *r)
{
	uint8_t magic[MT_ARTIFACT_MAGIC_LEN];
	ssize_t k = src_read(r, magic, sizeof(magic));

	if (k < 0)
		return (int)k;
	if (k == 0)
		return fail(r, -EBADMSG, "not a memtrack artifact (empty file)");
	if (memcmp(magic, MT_ARTIFACT_MAGIC, (size_t)k))
		return fail(r, -EBADMSG, "not a memtrack artifact (bad magic)");
	if ((size_t)k < sizeof(magic))
		return fail(r, -EBADMSG, "truncated artifact: the file ends inside its header");
	return 0;
}

static int parse_argv(struct mt_artifact_reader *r, struct cursor *c)
{
	struct mt_artifact_info *in = &r->info;
	bool nomem = false;
	uint32_t argc;

	/* Every argument takes at least its 4-byte length: bounds argc before allocating. */
	if (!get_u32(c, &argc) || argc > c->left / 4)
		return corrupt(r, 16, "bad argument count in header");
	in->argv = calloc((size_t)argc + 1, sizeof(*in->argv));
	if (!in->argv)
		return fail(r, -ENOMEM, "out of memory");
	for (in->argc = 0; (uint32_t)in->argc < argc; in->argc++) {
		in->argv[in->argc] = get_str_alloc(c, MT_ARTIFACT_ARG_MAX, &nomem);
		if (nomem)
			return fail(r, -ENOMEM, "out of memory");
		if (!in->argv[in->argc])
			return corrupt(r, 16, "bad command-line argument in header");
	}
	return 0;
}

static int read_header(struct mt_artifact_reader *r)
{
	struct mt_artifact_info *in = &r->info;
	uint8_t fixed[8];
	struct cursor c = {fixed, sizeof(fixed)};
	uint32_t hlen;
	ssize_t k;
	int err;

	err = read_magic(r);
	if (err)
		return err;
	k = src_read(r, fixed, sizeof(fixed));
	if (k < 0)
		return (int)k;
	if ((size_t)k < sizeof(fixed))
		return fail(r, -EBADMSG, "truncated artifact: the file ends inside its header");
	get_u32(&c, &in->version);
	get_u32(&c, &hlen);
	if (in->version < MT_ARTIFACT_VERSION_MIN || in->version > MT_ARTIFACT_VERSION)
		return fail(r, -EPROTONOSUPPORT,
			    "unsupported artifact format version %u (this memtrack reads versions "
			    "%u to %u)",
			    in->version, MT_ARTIFACT_VERSION_MIN, MT_ARTIFACT_VERSION);
	if (hlen > MT_ARTIFACT_HEADER_MAX)
		return corrupt(r, 12, "header length out of bounds");
	k = read_payload(r, hlen);
	if (k < 0)
		return (int)k;
	if ((size_t)k < hlen)
		return fail(r, -EBADMSG, "truncated artifact: the file ends inside its header");
	c = (struct cursor){r->payload, hlen};
	if (!get_u64(&c, &in->start_time_ns) || !get_u64(&c, &in->start_mono_ns) ||
	    !get_str(&c, in->watcher, MT_ARTIFACT_WATCHER_MAX))
		return corrupt(r, 16, "bad header");
	/* Bytes after the last argument are fields of a later minor revision: ignored. */
	return parse_argv(r, &c);
}

/* ---- records -------------------------------------------------------------------------------- */

static int parse_process(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_process *p = &r->process;
	uint32_t status;
	uint8_t exited, pad[3];

	if (!get_u32(c, &p->pid) || !get_u32(c, &p->parent) || !get_u32(c, &status) ||
	    !get_u8(c, &exited) || !take(c, pad, sizeof(pad)) ||
	    !get_str(c, p->exe, sizeof(p->exe) - 1))
		return corrupt(r, at, "bad process record");
	p->exit_status = (int32_t)status;
	p->exited = exited != 0;
	return 0;
}

static int parse_file(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_file *f = &r->file;
	uint16_t probes16;
	uint8_t pad[3];

	if (!get_u16(c, &f->file_id) || !get_u16(c, &probes16) || !get_u8(c, &f->family) ||
	    !take(c, pad, sizeof(pad)) || !get_str(c, f->build_id, sizeof(f->build_id) - 1) ||
	    !get_str(c, f->path, sizeof(f->path) - 1))
		return corrupt(r, at, "bad file record");
	/* Version 2 adds the exact count after the path; version 1 has only the 16 bits. */
	if (!get_u32(c, &f->probes))
		f->probes = probes16;
	return 0;
}

static int parse_unprobed(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_unprobed *u = &r->unprobed;
	uint32_t error, zero;

	if (!get_u32(c, &error) || !get_u32(c, &zero) ||
	    !get_str(c, u->path, sizeof(u->path) - 1) ||
	    !get_str(c, u->function, sizeof(u->function) - 1) ||
	    !get_str(c, u->reason, sizeof(u->reason) - 1))
		return corrupt(r, at, "bad not-probed record");
	u->error = (int32_t)error;
	return 0;
}

/* After the footer the file must end: anything more is not something this writer produced. */
static int check_end(struct mt_artifact_reader *r)
{
	uint8_t extra;
	uint64_t at = r->offset;
	ssize_t k = src_read(r, &extra, 1);

	if (k < 0)
		return (int)k;
	if (k)
		return corrupt(r, at, "data after the footer");
	return 0;
}

static int parse_footer(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_footer *f = &r->footer;
	char msg[96];

	if (!get_u64(c, &f->events) || !get_u64(c, &f->requests_dropped) ||
	    !get_u64(c, &f->events_dropped) || !get_u64(c, &f->args_lost) ||
	    !get_u64(c, &f->end_mono_ns))
		return corrupt(r, at, "bad footer");
	if (f->events != r->events_read) {
		snprintf(msg, sizeof(msg), "footer counts %llu events but %llu were read",
			 (unsigned long long)f->events, (unsigned long long)r->events_read);
		return corrupt(r, at, msg);
	}
	return check_end(r);
}

/* Discard the payload of a record of a type this reader does not know. */
static int skip(struct mt_artifact_reader *r, uint32_t len)
{
	uint8_t scratch[4096];

	while (len) {
		size_t want = len < sizeof(scratch) ? len : sizeof(scratch);
		ssize_t k = src_read(r, scratch, want);

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

/* Hand out the next piece of the current event batch. */
static int next_events(struct mt_artifact_reader *r, struct mt_artifact_item *it)
{
	size_t n = r->ev_left < EV_CHUNK ? (size_t)r->ev_left : EV_CHUNK;
	ssize_t k = src_read(r, r->evbuf, n * MT_ARTIFACT_EVENT_SIZE);
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
	for (i = 0; i < n; i++) {
		struct mt_event *e = &r->evbuf[i];

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
	if (r->block_seen != r->block_count) {
		snprintf(msg, sizeof(msg), "event block counts %u events but holds %u",
			 r->block_count, r->block_seen);
		return corrupt(r, r->block_at, msg);
	}
	return 0;
}

/* Decode the next piece of the current event block. Returns 1 (events), 2 (none), or -errno. */
static int next_block_events(struct mt_artifact_reader *r, struct mt_artifact_item *it)
{
	size_t n = 0, used;
	int err;

	while (n < EV_CHUNK && r->block_pos < r->block_len) {
		enum mt_evblock_result res =
		    mt_evblock_get(&r->block_state, r->payload + r->block_pos,
				   r->block_len - r->block_pos, &r->evbuf[n], &used);

		if (res == MT_EVB_SHORT && r->block_cut) {
			/* The cut: the events before it are complete and good. */
			r->block_pos = r->block_len;
			break;
		}
		if (res == MT_EVB_REQUIRED)
			return fail(
			    r, -EPROTONOSUPPORT,
			    "the artifact holds records this memtrack does not know (event "
			    "block entry type %u at offset %llu): a newer memtrack reads it",
			    r->block_state.escape_type,
			    (unsigned long long)(r->block_at + 8 + r->block_pos));
		if (res == MT_EVB_SHORT || res == MT_EVB_CORRUPT)
			return corrupt(r, r->block_at + 8 + r->block_pos, "bad event block entry");
		if (res == MT_EVB_EVENT) {
			if (r->block_seen == r->block_count)
				return corrupt(r, r->block_at,
					       "event block holds more events than it counts");
			r->block_seen++;
			n++;
		}
		r->block_pos += used;
	}
	if (r->block_pos == r->block_len) {
		err = end_block(r);
		if (err)
			return err;
	}
	r->events_read += n;
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
	ssize_t k = read_payload(r, len);

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
		return corrupt(r, at, "bad event count in event block");
	r->in_block = true;
	r->block_at = at;
	r->block_seen = 0;
	r->block_pos = MT_ARTIFACT_BLOCK_FIXED;
	r->block_len = (size_t)k;
	mt_evblock_reset(&r->block_state);
	return next_block_events(r, it);
}

/* Bounds of a record's payload length by type; unknown types are bounded by the largest. */
static bool len_ok(uint32_t type, uint32_t len)
{
	switch (type) {
	case MT_REC_PROCESS:
		return len >= MT_ARTIFACT_PROCESS_FIXED + 4 && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_FILE:
		return len >= MT_ARTIFACT_FILE_FIXED + 8 && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_EVENTS:
		return len && len % MT_ARTIFACT_EVENT_SIZE == 0 && len <= MT_ARTIFACT_RECORD_MAX;
	case MT_REC_FOOTER:
		return len >= MT_ARTIFACT_FOOTER_SIZE && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_UNPROBED:
		return len >= MT_ARTIFACT_UNPROBED_FIXED + 12 && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_BLOCK:
		return len >= MT_ARTIFACT_BLOCK_FIXED + MT_ARTIFACT_BLOCK_ENTRY_MIN &&
		       len <= MT_ARTIFACT_BLOCK_MAX;
	default:
		return len <= MT_ARTIFACT_RECORD_MAX;
	}
}

static int parse_meta(struct mt_artifact_reader *r, uint32_t type, uint32_t len, uint64_t at,
		      struct mt_artifact_item *it)
{
	struct cursor c;
	ssize_t k = read_payload(r, len);
	int err;

	if (k < 0)
		return (int)k;
	if ((size_t)k < len) {
		r->truncated = true;
		r->done = true;
		return 0;
	}
	c = (struct cursor){r->payload, len};
	switch (type) {
	case MT_REC_PROCESS:
		err = parse_process(r, &c, at);
		it->type = MT_ITEM_PROCESS;
		it->process = &r->process;
		break;
	case MT_REC_FILE:
		err = parse_file(r, &c, at);
		it->type = MT_ITEM_FILE;
		it->file = &r->file;
		break;
	case MT_REC_UNPROBED:
		err = parse_unprobed(r, &c, at);
		it->type = MT_ITEM_UNPROBED;
		it->unprobed = &r->unprobed;
		break;
	default:
		err = parse_footer(r, &c, at);
		it->type = MT_ITEM_FOOTER;
		it->footer = &r->footer;
		r->done = true;
		break;
	}
	return err ? err : 1;
}

/* Read one record header and dispatch. Returns 1 (item), 0 (end), 2 (skipped), or -errno. */
static int next_record(struct mt_artifact_reader *r, struct mt_artifact_item *it)
{
	uint8_t hdr[8];
	struct cursor c = {hdr, sizeof(hdr)};
	uint64_t at = r->offset;
	uint32_t type, len;
	ssize_t k = src_read(r, hdr, sizeof(hdr));

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
	if (!len_ok(type, len))
		return corrupt(r, at, "record length out of bounds");
	switch (type) {
	case MT_REC_EVENTS:
		r->ev_left = len / MT_ARTIFACT_EVENT_SIZE;
		return next_events(r, it);
	case MT_REC_PROCESS:
	case MT_REC_FILE:
	case MT_REC_FOOTER:
		return parse_meta(r, type, len, at, it);
	case MT_REC_UNPROBED:
		/* Version 1 had no such record: there it is an unknown type, passed over. */
		if (r->info.version >= 2)
			return parse_meta(r, type, len, at, it);
		if (skip(r, len)) {
			r->done = true;
			return 0;
		}
		return 2;
	case MT_REC_BLOCK:
		/* Likewise before version 3. */
		if (r->info.version >= 3)
			return start_block(r, len, at, it);
		if (skip(r, len)) {
			r->done = true;
			return 0;
		}
		return 2;
	default:
		if (skip(r, len)) {
			r->done = true;
			return 0;
		}
		return 2;
	}
}

int mt_artifact_next(struct mt_artifact_reader *r, struct mt_artifact_item *it)
{
	int ret;

	if (r->err)
		return r->err;
	do {
		if (r->done)
			return 0;
		if (r->ev_left)
			ret = next_events(r, it);
		else if (r->in_block)
			ret = next_block_events(r, it);
		else
			ret = next_record(r, it);
	} while (ret == 2);
	if (ret < 0 && !r->err)
		r->err = ret;
	return ret;
}

/* ---- opening -------------------------------------------------------------------------------- */

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

static int finish_open(struct mt_artifact_reader **rp, struct mt_artifact_reader *r, char *err,
		       size_t errlen)
{
	int ret = read_header(r);

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
	r->fd = open(path, O_RDONLY | O_CLOEXEC);
	if (r->fd < 0) {
		ret = -errno;
		fail(r, ret, "cannot open: %s", strerror(errno));
		copy_err(r, err, errlen);
		mt_artifact_close(r);
		return ret;
	}
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

uint64_t mt_artifact_events_read(const struct mt_artifact_reader *r)
{
	return r->events_read;
}
