// SPDX-License-Identifier: GPL-2.0
/*
 * The artifact writer (format in docs/FORMAT.md). Records are assembled in one large buffer and
 * reach the file in big write(2) calls: the event consumer writes hundreds of thousands of events
 * a second and must not pay a system call per batch. A mutex serialises the event thread and the
 * supervisor thread, which writes process and file records. A record is never split across two
 * flushes, so a run killed mid-way leaves a file whose last record is at worst cut short, which
 * the reader reports as truncated.
 */
#include <endian.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "writer/artifact.h"
#include "writer/artifact_format.h"
#include "writer/artifact_int.h"
#include "writer/evblock.h"
#include "base/outfile.h"
#include "base/printable.h"

#define WRITER_BUF_SIZE (1u << 20)
#define REC_HDR_SIZE	8u
/*
 * Events, and the records written between them, are gathered into one block until the events
 * thread flushes (every 100 ms), a record that cannot go inside comes (the footer, a leak record
 * over 16 KiB) or a stream is full, then compressed as one zstd frame (docs/FORMAT.md,
 * "Columnar event block"). Each of the block's eight streams has STREAM_CAP bytes, so a block's
 * entries are at most 8 * STREAM_CAP (800 KiB) once decompressed: inside the reader's one-block
 * bound, and its compressed record, at zstd's worst, inside the buffer.
 */
#define STREAM_CAP	(100u << 10)
#define BLOCK_RAW_MAX	(MT_EVB_STREAMS * STREAM_CAP)
/*
 * zstd's level, by measurement (docs/PERFORMANCE.md, section 10): the writer runs on the events
 * thread, whose CPU per event is on the hot path when the ring is busy.
 */
#define ZSTD_LEVEL	1
/*
 * Each stream ends a zstd block of its own (so that each gets its own literal code: a stream of
 * time's low bytes and one of tags have little in common), which can cost a block header (3
 * bytes) more per stream than zstd's bound of one frame; the margin holds them.
 */
/* The largest block whose plain form is counted, to be written when it is the shorter. */
#define PLAIN_TRY	1024u
#define FRAME_MAX(raw)	(ZSTD_COMPRESSBOUND(raw) + 8u * MT_EVB_STREAMS)
_Static_assert(BLOCK_RAW_MAX <= MT_ARTIFACT_BLOCK_MAX, "a block's entries fit the format's limit");
_Static_assert(MT_ARTIFACT_CBLOCK_FIXED + FRAME_MAX(BLOCK_RAW_MAX) <= MT_ARTIFACT_CBLOCK_MAX,
	       "a compressed block fits the format's limit");
_Static_assert(REC_HDR_SIZE + MT_ARTIFACT_CBLOCK_FIXED + FRAME_MAX(BLOCK_RAW_MAX) <=
		   WRITER_BUF_SIZE,
	       "a compressed block at its largest fits the buffer");

/* The block being gathered: its streams, each at its own STREAM_CAP bytes of raw. */
struct pending_block {
	uint8_t *raw;
	struct mt_evblock_split at; /* where each stream's next byte goes */
	struct mt_evblock_state state;
	uint32_t count;
	/* Its entries decoded and encoded anew when written plain (large: not on a stack). */
	struct mt_evblock_state plain_in, plain_out;
};

struct mt_artifact_writer {
	pthread_mutex_t lock;
	int fd;
	int err;      /* first write error: every later call returns it */
	char *path;   /* for the message that says where the truncated artifact is */
	bool regular; /* a regular file, which can be read back */
	uint64_t events;
	size_t len;
	off_t offset; /* bytes written to the file so far */
	off_t synced; /* where writeback was last started up to */
	uint8_t *buf;
	struct pending_block block;
	ZSTD_CCtx *zc;
	bool embedded; /* the record being written goes into the block, not the buffer */
};

static int write_all(int fd, const uint8_t *p, size_t n)
{
	while (n) {
		ssize_t k = write(fd, p, n);

		if (k < 0) {
			if (errno == EINTR)
				continue;
			return -errno;
		}
		if (k == 0)
			return -EIO;
		p += k;
		n -= (size_t)k;
	}
	return 0;
}

/*
 * The lock that tells readers the artifact is still being written (MT_ARTIFACT_LOCK_START): taken
 * (F_WRLCK) once the header is written, released (F_UNLCK) when recording stops on a write error.
 * An open file description's lock goes with its last descriptor, so a writer killed by SIGKILL
 * leaves none, and its artifact reads as truncated. Best effort: a file system without such locks
 * only loses the "in progress" of a report read meanwhile.
 */
static void set_writing_lock(struct mt_artifact_writer *w, short type)
{
	struct flock l = {
	    .l_type = type,
	    .l_whence = SEEK_SET,
	    .l_start = MT_ARTIFACT_LOCK_START,
	    .l_len = MT_ARTIFACT_LOCK_LEN,
	};

	if (w->regular)
		(void)fcntl(w->fd, F_OFD_SETLK, &l);
}

/*
 * A write error ends the recording, not the run: the command goes on untouched, and what reached
 * the file before the failed write is a readable artifact that the reader reports as truncated.
 * Said once, here, because only the writer knows where the file ends.
 */
static void stop_recording(struct mt_artifact_writer *w, int err)
{
	char p[MT_PRINTABLE_MAX];

	w->err = err;
	set_writing_lock(w, F_UNLCK);
	fprintf(stderr,
		"memtrack: cannot write the artifact %s: %s; recording stopped there, the command "
		"is not affected; the artifact keeps what was written before (readable, "
		"truncated)\n",
		mt_printable(p, sizeof(p), w->path), strerror(-err));
}

static int flush_locked(struct mt_artifact_writer *w)
{
	int err;

	if (w->err)
		return w->err;
	err = write_all(w->fd, w->buf, w->len);
	/*
	 * Start writeback of what was just written from this thread, while it is fresh: left to
	 * the flusher threads, hundreds of MB of dirty pages are written back later on whatever
	 * CPU, often the one running the traced program. Files that cannot (pipes) just do not.
	 * Once half a buffer has been written since the last start, not for less: a short run's
	 * whole artifact, one small flush, would pay 0.1 ms of ext4's block allocation on
	 * memtrack's path, once per benchmark in exec-harness.
	 */
	if (!err)
		w->offset += w->len;
	if (!err && w->offset - w->synced >= WRITER_BUF_SIZE / 2) {
		sync_file_range(w->fd, w->synced, w->offset - w->synced, SYNC_FILE_RANGE_WRITE);
		w->synced = w->offset;
	}
	if (err)
		stop_recording(w, err);
	w->len = 0;
	return err;
}

/* Room for need bytes at the end of the buffer, flushing first when they do not fit. */
static uint8_t *reserve_locked(struct mt_artifact_writer *w, size_t need)
{
	if (w->err)
		return NULL;
	if (WRITER_BUF_SIZE - w->len < need && flush_locked(w))
		return NULL;
	return w->buf + w->len;
}

static void begin_record(uint8_t **p, uint32_t type, size_t payload)
{
	put_u32(p, type);
	put_u32(p, (uint32_t)payload);
}

static uint8_t *stream_base(const struct pending_block *b, int k)
{
	return b->raw + (size_t)k * STREAM_CAP;
}

static void block_reset(struct pending_block *b)
{
	for (int k = 0; k < MT_EVB_STREAMS; k++)
		b->at.p[k] = stream_base(b, k);
	mt_evblock_reset_columns_us(&b->state);
	b->count = 0;
}

/* How many more events the block takes for sure: each stream's room over its most per event. */
static size_t block_room(const struct pending_block *b)
{
	static const unsigned int most[MT_EVB_STREAMS] = MT_EVB_STREAM_MAX;
	size_t room = SIZE_MAX;

	for (int k = 0; k < MT_EVB_STREAMS; k++) {
		size_t used = (size_t)(b->at.p[k] - stream_base(b, k));
		size_t fit = (STREAM_CAP - used) / most[k];

		room = fit < room ? fit : room;
	}
	return room;
}

/*
 * The block's streams, made one run of bytes at the start of raw (in their order), their lengths
 * in len. Returns the total.
 */
static size_t block_join(struct pending_block *b, uint32_t len[MT_EVB_STREAMS])
{
	size_t total = 0;

	for (int k = 0; k < MT_EVB_STREAMS; k++) {
		len[k] = (uint32_t)(b->at.p[k] - stream_base(b, k));
		memmove(b->raw + total, stream_base(b, k), len[k]);
		total += len[k];
	}
	return total;
}

/*
 * The entries of a block too small for zstd to pay for its frame, as a version-3 block's: the same
 * events and records with their fields one after the other (their differences taken anew, and no
 * references), at p. Returns their length; with p NULL, only counts it.
 */
static size_t plain_entries(uint8_t *p, struct pending_block *b, const uint32_t len[MT_EVB_STREAMS])
{
	struct mt_evblock_state *in = &b->plain_in, *out = &b->plain_out;
	struct mt_evblock_cursor c;
	uint8_t scratch[MT_EVBLOCK_EVENT_MAX];
	const uint8_t *from = b->raw;
	struct mt_event e;
	size_t n = 0;

	for (int k = 0; k < MT_EVB_STREAMS; k++) {
		c.p[k] = from;
		c.left[k] = len[k];
		from += len[k];
	}
	mt_evblock_reset_columns_us(in);
	mt_evblock_reset(out);
	/* The writer's own entries: they decode, events and records alike. */
	while (c.left[MT_EVB_S_TAG]) {
		uint8_t *at = p ? p + n : scratch, *end;

		if (mt_evblock_get_split(in, &c, &e) == MT_EVB_EVENT) {
			n += mt_evblock_put(out, at, &e);
			continue;
		}
		end = mt_evblock_put_escape(at, in->escape_type, in->escape_len);
		if (p)
			memcpy(end, in->escape_data, in->escape_len);
		n += (size_t)(end - at) + in->escape_len;
	}
	return n;
}

/* The block as a version-3 block at start, its plain entries n bytes. Returns its length. */
static size_t put_plain_block(uint8_t *start, struct pending_block *b,
			      const uint32_t len[MT_EVB_STREAMS], size_t n)
{
	uint8_t *p = start;

	begin_record(&p, MT_REC_BLOCK, MT_ARTIFACT_BLOCK_FIXED + n);
	put_u32(&p, b->count);
	plain_entries(p, b, len);
	return REC_HDR_SIZE + MT_ARTIFACT_BLOCK_FIXED + n;
}

/*
 * End the block being gathered: one compressed event block record in the buffer (or a plain one
 * when that is shorter). 0, or the error that stopped the recording (the block is lost then).
 */
static int seal_block_locked(struct mt_artifact_writer *w)
{
	struct pending_block *b = &w->block;
	uint32_t len[MT_EVB_STREAMS];
	size_t raw, bound, z, plain;
	uint8_t *start, *p;

	if (!b->count)
		return w->err;
	raw = block_join(b, len);
	bound = FRAME_MAX(raw);
	start = reserve_locked(w, REC_HDR_SIZE + MT_ARTIFACT_CBLOCK_FIXED + bound);
	if (!start) {
		block_reset(b);
		return w->err;
	}
	p = start + REC_HDR_SIZE + MT_ARTIFACT_CBLOCK_FIXED;
	z = mt_evblock_compress(w->zc, p, bound, b->raw, len, raw);
	if (!z) {
		/* Only its allocations can fail with room for the worst case. */
		block_reset(b);
		stop_recording(w, -ENOMEM);
		return w->err;
	}
	/*
	 * A plain block's entries are not the streams' bytes (no references, the times whole), so
	 * they are counted, for the blocks small enough for a frame not to pay: they then also fit
	 * where the frame would have gone.
	 */
	plain = raw <= PLAIN_TRY ? plain_entries(NULL, b, len) : SIZE_MAX;
	if (plain != SIZE_MAX && MT_ARTIFACT_BLOCK_FIXED + plain <= MT_ARTIFACT_CBLOCK_FIXED + z) {
		w->len += put_plain_block(start, b, len, plain);
	} else {
		p = start;
		begin_record(&p, MT_REC_UBLOCK, MT_ARTIFACT_CBLOCK_FIXED + z);
		put_u32(&p, b->count);
		for (int k = 0; k < MT_EVB_STREAMS; k++)
			put_u32(&p, len[k]);
		w->len += REC_HDR_SIZE + MT_ARTIFACT_CBLOCK_FIXED + z;
	}
	w->events += b->count;
	block_reset(b);
	return 0;
}

/*
 * Room for a record of payload bytes inside the block being gathered, an escape entry among its
 * events (docs/FORMAT.md): the block goes on after it, as large as it would have been without the
 * record, where sealing it would cut it at every process record and every RSS sample (50 a
 * second). NULL when the block has no event yet (a block holds at least one) or no room for it.
 */
static uint8_t *embed_locked(struct mt_artifact_writer *w, uint32_t type, size_t payload)
{
	struct pending_block *b = &w->block;
	size_t tags = (size_t)(b->at.p[MT_EVB_S_TAG] - stream_base(b, MT_EVB_S_TAG));
	size_t rest = (size_t)(b->at.p[MT_EVB_S_REST] - stream_base(b, MT_EVB_S_REST));

	if (w->err || !b->count || payload > MT_ARTIFACT_META_MAX || tags + 1 > STREAM_CAP ||
	    rest + MT_EVB_ESCAPE_HEAD + payload > STREAM_CAP)
		return NULL;
	w->embedded = true;
	return mt_evblock_put_escape_split(&b->at, MT_ARTIFACT_ESC_RECORD(type), (uint32_t)payload);
}

/*
 * Open a metadata record of payload bytes under the writer's lock, in the block being gathered
 * or after it: NULL (lock released, *err set) when the recording has stopped. artifact_record_end()
 * commits what was written and unlocks.
 */
uint8_t *artifact_record_begin(struct mt_artifact_writer *w, uint32_t type, size_t payload,
			       int *err)
{
	uint8_t *p;

	pthread_mutex_lock(&w->lock);
	p = embed_locked(w, type, payload);
	if (p)
		return p;
	/* The events gathered so far come before this record in the stream. */
	p = seal_block_locked(w) ? NULL : reserve_locked(w, REC_HDR_SIZE + payload);
	if (!p) {
		*err = w->err;
		pthread_mutex_unlock(&w->lock);
		return NULL;
	}
	begin_record(&p, type, payload);
	return p;
}

int artifact_record_end(struct mt_artifact_writer *w, const uint8_t *p)
{
	if (w->embedded)
		w->embedded = false;
	else
		w->len = (size_t)(p - w->buf);
	pthread_mutex_unlock(&w->lock);
	return 0;
}

/* Bytes of header body for argv[0..argc), dropping arguments that would overflow the limit. */
static size_t header_body_len(const struct mt_artifact_header *h, size_t wlen, int *argc)
{
	size_t len = 8 + 8 + 4 + wlen + 4 + (h->flags ? 4 : 0);
	int i;

	for (i = 0; i < h->argc && h->argv && h->argv[i]; i++) {
		size_t a = 4 + field_len(h->argv[i], MT_ARTIFACT_ARG_MAX);

		if (len + a > MT_ARTIFACT_HEADER_MAX)
			break;
		len += a;
	}
	*argc = i;
	return len;
}

static int write_header(struct mt_artifact_writer *w, const struct mt_artifact_header *h)
{
	size_t wlen = field_len(h->watcher, MT_ARTIFACT_WATCHER_MAX);
	int argc, i;
	size_t body = header_body_len(h, wlen, &argc);
	uint8_t *hdr, *p;
	int err;

	/* The header can exceed the buffer (a huge command line): give it its own allocation. */
	hdr = malloc(16 + body);
	if (!hdr)
		return -ENOMEM;
	p = hdr;
	put_bytes(&p, MT_ARTIFACT_MAGIC, MT_ARTIFACT_MAGIC_LEN);
	put_u32(&p, MT_ARTIFACT_VERSION);
	put_u32(&p, (uint32_t)body);
	put_u64(&p, h->start_time_ns);
	put_u64(&p, h->start_mono_ns);
	put_str(&p, h->watcher ? h->watcher : "", wlen);
	put_u32(&p, (uint32_t)argc);
	for (i = 0; i < argc; i++)
		put_str(&p, h->argv[i], field_len(h->argv[i], MT_ARTIFACT_ARG_MAX));
	if (h->flags)
		put_u32(&p, h->flags);
	/* Straight to the file: a run killed at once still leaves a readable header. */
	err = write_all(w->fd, hdr, (size_t)(p - hdr));
	w->offset = p - hdr;
	free(hdr);
	return err;
}

int mt_artifact_create(struct mt_artifact_writer **wp, const char *path,
		       const struct mt_artifact_header *h)
{
	int fd = mt_outfile_open(path, MT_OUTFILE_REPLACE, NULL, NULL, 0);

	*wp = NULL;
	return fd < 0 ? fd : mt_artifact_create_fd(wp, fd, path, h);
}

int mt_artifact_create_fd(struct mt_artifact_writer **wp, int fd, const char *path,
			  const struct mt_artifact_header *h)
{
	struct mt_artifact_writer *w;
	struct stat st;
	int err;

	*wp = NULL;
	w = calloc(1, sizeof(*w));
	if (!w) {
		close(fd);
		return -ENOMEM;
	}
	w->fd = fd;
	w->buf = malloc(WRITER_BUF_SIZE);
	if (!w->buf) {
		err = -ENOMEM;
		goto err_free;
	}
	w->path = strdup(path);
	w->block.raw = malloc(BLOCK_RAW_MAX);
	w->zc = ZSTD_createCCtx();
	if (!w->path || !w->block.raw || !w->zc) {
		err = -ENOMEM;
		goto err_free;
	}
	block_reset(&w->block);
	/* A checksum per frame: a corrupt block is refused, not believed. */
	if (ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_compressionLevel, ZSTD_LEVEL)) ||
	    ZSTD_isError(ZSTD_CCtx_setParameter(w->zc, ZSTD_c_checksumFlag, 1))) {
		err = -EINVAL;
		goto err_free;
	}
	w->regular = fstat(w->fd, &st) == 0 && S_ISREG(st.st_mode);
	/* Before the header: a reader that finds the header finds the lock held. */
	set_writing_lock(w, F_WRLCK);
	err = write_header(w, h);
	if (err)
		goto err_free;
	err = pthread_mutex_init(&w->lock, NULL);
	if (err) {
		err = -err;
		goto err_free;
	}
	*wp = w;
	return 0;

err_free:
	/* Not unlinked: the path may name something that existed before (a device, a FIFO). */
	close(w->fd);
	free(w->path);
	free(w->buf);
	free(w->block.raw);
	ZSTD_freeCCtx(w->zc);
	free(w);
	return err;
}

int mt_artifact_flush(struct mt_artifact_writer *w)
{
	int err;

	pthread_mutex_lock(&w->lock);
	err = seal_block_locked(w);
	if (!err)
		err = w->len ? flush_locked(w) : w->err;
	pthread_mutex_unlock(&w->lock);
	return err;
}

int mt_artifact_write_events(struct mt_artifact_writer *w, const struct mt_event *ev, size_t n)
{
	struct pending_block *b = &w->block;
	int err = 0;

	pthread_mutex_lock(&w->lock);
	while (n && !w->err) {
		size_t k = block_room(b);

		if (!k) {
			seal_block_locked(w);
			continue;
		}
		k = n < k ? n : k;
		for (size_t i = 0; i < k; i++)
			mt_evblock_put_split(&b->state, &b->at, &ev[i]);
		b->count += (uint32_t)k;
		ev += k;
		n -= k;
	}
	err = w->err;
	pthread_mutex_unlock(&w->lock);
	return err;
}

bool mt_artifact_readable_later(struct mt_artifact_writer *w)
{
	bool ok;

	pthread_mutex_lock(&w->lock);
	ok = w->regular && !w->err;
	pthread_mutex_unlock(&w->lock);
	return ok;
}

static int write_footer_locked(struct mt_artifact_writer *w, const struct mt_artifact_footer *f)
{
	uint8_t *p =
	    seal_block_locked(w) ? NULL : reserve_locked(w, REC_HDR_SIZE + MT_ARTIFACT_FOOTER_SIZE);

	if (!p)
		return w->err;
	begin_record(&p, MT_REC_FOOTER, MT_ARTIFACT_FOOTER_SIZE);
	/*
	 * The count of events actually written, not the caller's: the reader checks it against the
	 * batches, and only the writer knows what reached the file.
	 */
	put_u64(&p, w->events);
	put_u64(&p, f->requests_dropped);
	put_u64(&p, f->events_dropped);
	put_u64(&p, f->args_lost);
	put_u64(&p, f->end_mono_ns);
	put_u64(&p, f->stacks_lost);
	w->len = (size_t)(p - w->buf);
	return flush_locked(w);
}

int mt_artifact_finish(struct mt_artifact_writer *w, const struct mt_artifact_footer *f)
{
	int err;

	if (!w)
		return -EINVAL;
	pthread_mutex_lock(&w->lock);
	err = write_footer_locked(w, f);
	/* A descriptor the caller keeps (exec-harness's) would keep the lock after the close. */
	set_writing_lock(w, F_UNLCK);
	pthread_mutex_unlock(&w->lock);
	/* close(2) can report a delayed write error (NFS, quota): it must not be lost. */
	if (close(w->fd) && !err) {
		err = -errno;
		stop_recording(w, err);
	}
	pthread_mutex_destroy(&w->lock);
	free(w->path);
	free(w->buf);
	free(w->block.raw);
	ZSTD_freeCCtx(w->zc);
	free(w);
	return err;
}
