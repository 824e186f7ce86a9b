// SPDX-License-Identifier: GPL-2.0
/*
 * CodSpeed's memory artifact, written from memtrack's own through the reader's item iteration
 * (artifact_read.h): concatenated zstd frames of at most 65536 events each, level -5, each event
 * one MessagePack map, as CodSpeed's memtrack writes it
 * (crates/runner-shared/src/artifacts/memtrack/{mod,writer,pipeline}.rs):
 * {"pid", "tid", "timestamp" (CLOCK_MONOTONIC ns), "addr", "type", ["old_addr",] ["size"]}.
 * The types are those a 5.0.2 runner decodes (its decoder stops at the first it does not know):
 * Malloc, Calloc, AlignedAlloc, Realloc, Free, and from mapping records Mmap, Munmap and Brk.
 * A frame with no event is written when there is none.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "codspeed/codspeed_read.h"
#include "codspeed/codspeed_write.h"
#include "base/kind.h"
#include "base/outfile.h"

#define FRAME_EVENTS	  (64 * 1024) /* pipeline.rs: FRAME_EVENTS */
#define COMPRESSION_LEVEL (-5)	      /* writer.rs: COMPRESSION_LEVEL */
#define ARTIFACT_SUFFIX	  ".MemtrackArtifact.msgpack"

#define CS_SKIP MT_CS_TYPES

/*
 * The CodSpeed type of a successful call of memtrack's kind k. An allocation that handed out
 * zeroed memory (MT_EV_ZEROED: calloc, mi_zalloc, __rust_alloc_zeroed, rpcalloc, mallocx with
 * MALLOCX_ZERO) is a Calloc of the bytes asked for (n * size), as CodSpeed's memtrack records
 * calloc and mi_zalloc; a calloc-shaped call that does not zero (mi_mallocn) is not. A zeroing
 * realloc stays a Realloc: CodSpeed has no other type for it. Artifacts older than version 6
 * carry no zero flag (flags_known false): there a calloc is the Calloc it was.
 */
static enum mt_codspeed_type cs_kind(uint8_t k, uint32_t align, uint8_t flags, bool flags_known)
{
	switch (mt_kind_effect(k)) {
	case MT_KIND_REALLOC:
		return MT_CS_REALLOC;
	case MT_KIND_FREE:
		return MT_CS_FREE;
	case MT_KIND_ALLOC:
		break;
	default:
		return CS_SKIP;
	}
	if ((flags & MT_EV_ZEROED) || (!flags_known && k == MT_K_CALLOC))
		return MT_CS_CALLOC;
	switch (k) {
	case MT_K_CALLOC:
	case MT_K_MALLOC:
	case MT_K_MALLOCX:
	case MT_K_NEW:
		return align ? MT_CS_ALIGNED_ALLOC : MT_CS_MALLOC;
	default: /* aligned_alloc, memalign, posix_memalign, valloc, pvalloc, aligned new/malloc */
		return MT_CS_ALIGNED_ALLOC;
	}
}

/* ---- zstd frames of MessagePack maps -------------------------------------------------------- */

struct cs_writer {
	FILE *out;
	msgpack_sbuffer buf;
	msgpack_packer pk;
	size_t in_frame;
	uint64_t events;
	void *zbuf;
	size_t zcap;
	const struct mt_codspeed_job *job;
	bool flags_known;    /* the artifact's events carry MT_EV_ZEROED (version 6 on) */
	uint64_t event_unit; /* ns: its events' times are whole microseconds from version 7 on */
};

/* The fields of one event, whatever memtrack record it comes from. */
struct cs_event {
	enum mt_codspeed_type type;
	uint32_t pid, tid;
	uint64_t ts, addr, size;
	uint64_t unit; /* what ts stands for: [ts, ts + unit) ns */
	bool has_old;
	uint64_t old_addr;
};

void mt_codspeed_pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

static void pack_u64(msgpack_packer *pk, const char *key, uint64_t v)
{
	mt_codspeed_pack_str(pk, key);
	msgpack_pack_uint64(pk, v);
}

static int flush_frame(struct cs_writer *w)
{
	size_t bound = ZSTD_compressBound(w->buf.size), n;

	if (bound > w->zcap) {
		void *z = realloc(w->zbuf, bound);

		if (!z)
			return -ENOMEM;
		w->zbuf = z;
		w->zcap = bound;
	}
	n = ZSTD_compress(w->zbuf, w->zcap, w->buf.data, w->buf.size, COMPRESSION_LEVEL);
	if (ZSTD_isError(n))
		return -EIO;
	if (fwrite(w->zbuf, 1, n, w->out) != n)
		return -errno;
	msgpack_sbuffer_clear(&w->buf);
	w->in_frame = 0;
	return 0;
}

/*
 * Whether an event that happened in [ts, ts + unit) is in a window: an event of the microsecond
 * a window starts in may have come after its start, so it counts as inside.
 */
static bool in_window(const struct mt_codspeed_job *job, uint64_t ts, uint64_t unit)
{
	if (!job->gated)
		return true;
	for (size_t i = 0; i < job->n_windows; i++)
		if (ts + unit > job->windows[i].start_ns && ts < job->windows[i].end_ns)
			return true;
	return false;
}

/* One event in CodSpeed's field order: the MemtrackEvent fields, then the flattened kind. */
static int put_event(struct cs_writer *w, const struct cs_event *e)
{
	bool has_size = e->type != MT_CS_FREE;

	if (!in_window(w->job, e->ts, e->unit))
		return 0;
	msgpack_pack_map(&w->pk, 5 + e->has_old + has_size);
	mt_codspeed_pack_str(&w->pk, "pid");
	msgpack_pack_int32(&w->pk, (int32_t)e->pid);
	mt_codspeed_pack_str(&w->pk, "tid");
	msgpack_pack_int32(&w->pk, (int32_t)e->tid);
	pack_u64(&w->pk, "timestamp", e->ts);
	pack_u64(&w->pk, "addr", e->addr);
	mt_codspeed_pack_str(&w->pk, "type");
	mt_codspeed_pack_str(&w->pk, mt_codspeed_type_name(e->type));
	if (e->has_old)
		pack_u64(&w->pk, "old_addr", e->old_addr);
	if (has_size)
		pack_u64(&w->pk, "size", e->size);
	w->events++;
	return ++w->in_frame == FRAME_EVENTS ? flush_frame(w) : 0;
}

/*
 * CodSpeed records a call only when it returned a block (a free only of a non-NULL one). A
 * realloc(p, 0) that freed p and returned NULL is written as the Free of p it is.
 */
static int put_mt_event(struct cs_writer *w, const struct mt_event *e)
{
	struct cs_event c = {.type = cs_kind(e->kind, e->align, e->flags, w->flags_known),
			     .pid = e->pid,
			     .tid = e->tid,
			     .ts = e->ts_ns,
			     .unit = w->event_unit,
			     .addr = e->addr,
			     .size = e->size};

	if (c.type == CS_SKIP || !e->addr) {
		if (c.type == MT_CS_REALLOC && !e->addr && !e->size && e->old_addr) {
			c.type = MT_CS_FREE;
			c.addr = e->old_addr;
			return put_event(w, &c);
		}
		return 0;
	}
	if (c.type != MT_CS_FREE && (e->flags & MT_EV_FAILED))
		return 0;
	c.has_old = c.type == MT_CS_REALLOC;
	c.old_addr = e->old_addr;
	return put_event(w, &c);
}

/*
 * CodSpeed's mapping events (its allocator.h): a successful mmap with the length asked for, every
 * munmap of a non-empty range (recorded at its entry, failed or not), and a brk that moved the
 * break with the new break and size 0. mremap is not one of its events.
 */
static int put_mapping(struct cs_writer *w, const struct mt_artifact_mapping *m)
{
	struct cs_event c = {.pid = m->pid,
			     .tid = m->tid,
			     .ts = m->ts_ns,
			     .unit = 1,
			     .addr = m->addr,
			     .size = m->len};

	switch (m->what) {
	case MT_MAP_MMAP:
		if (m->error)
			return 0;
		c.type = MT_CS_MMAP;
		break;
	case MT_MAP_MUNMAP:
		if (!m->addr || !m->len)
			return 0;
		c.type = MT_CS_MUNMAP;
		break;
	case MT_MAP_BRK:
		c.type = MT_CS_BRK;
		c.size = 0;
		break;
	default:
		return 0;
	}
	return put_event(w, &c);
}

/* Every event of the .mtk, and the root's pid (0 when no process record names it). */
static int convert(struct mt_artifact_reader *r, struct cs_writer *w, uint32_t *root)
{
	struct mt_artifact_item it;
	int ret;

	while ((ret = mt_artifact_next(r, &it)) > 0) {
		int err = 0;

		if (it.type == MT_ITEM_PROCESS && !it.process->parent && !*root)
			*root = it.process->pid;
		if (it.type == MT_ITEM_MAPPING)
			err = put_mapping(w, it.mapping);
		for (size_t i = 0; it.type == MT_ITEM_EVENTS && !err && i < it.n_events; i++)
			err = put_mt_event(w, &it.events[i]);
		if (err)
			return err;
	}
	if (ret < 0)
		return ret;
	/* pipeline.rs: at least one frame, so that an empty artifact still decodes. */
	return w->in_frame || !w->events ? flush_frame(w) : 0;
}

/* A new file, as memtrack makes any (base/outfile.h): no link followed, nothing replaced. */
static int open_tmp(const char *dir, const struct mt_identity *owner, char *tmp, size_t len,
		    FILE **out, char *err, size_t errlen)
{
	static unsigned int serial;
	int fd, ret;

	/* A name without "MemtrackArtifact" until it is whole: the runner reads any such file. */
	snprintf(tmp, len, "%s/.memtrack-%d-%u.tmp", dir, (int)getpid(),
		 __atomic_fetch_add(&serial, 1, __ATOMIC_RELAXED));
	fd = mt_outfile_open(tmp, MT_OUTFILE_NEW, owner, err, errlen);
	if (fd < 0)
		return fd;
	*out = fdopen(fd, "w");
	if (*out)
		return 0;
	ret = -errno;
	close(fd);
	unlink(tmp);
	return ret;
}

int mt_codspeed_convert(struct mt_codspeed_job *job)
{
	struct mt_artifact_reader *r = NULL;
	struct cs_writer w = {.job = job};
	int ret;

	job->err[0] = '\0';
	job->tmp[0] = '\0';
	job->root = 0;
	ret = mt_artifact_open(&r, job->mtk, job->err, sizeof(job->err));
	if (ret)
		return ret;
	w.flags_known = mt_artifact_info(r)->version >= MT_ARTIFACT_VERSION_ZEROED;
	w.event_unit =
	    mt_artifact_info(r)->version >= MT_ARTIFACT_VERSION_MICRO ? MT_ARTIFACT_MICRO_NS : 1;
	ret = open_tmp(job->dir, job->owner, job->tmp, sizeof(job->tmp), &w.out, job->err,
		       sizeof(job->err));
	if (ret) {
		job->tmp[0] = '\0';
		goto out;
	}
	msgpack_sbuffer_init(&w.buf);
	msgpack_packer_init(&w.pk, &w.buf, msgpack_sbuffer_write);
	ret = convert(r, &w, &job->root);
	if (ret == -EBADMSG || ret == -EPROTONOSUPPORT)
		snprintf(job->err, sizeof(job->err), "%s", mt_artifact_error(r));
	if (fclose(w.out) && !ret)
		ret = -errno;
	msgpack_sbuffer_destroy(&w.buf);
	free(w.zbuf);
	if (!job->root)
		job->root = (uint32_t)getpid();
	job->events = w.events;
	snprintf(job->path, sizeof(job->path), "%s/%u" ARTIFACT_SUFFIX, job->dir, job->root);
	if (ret)
		mt_codspeed_discard(job);
out:
	mt_artifact_close(r);
	return ret;
}

int mt_codspeed_publish(struct mt_codspeed_job *job)
{
	int ret = rename(job->tmp, job->path) ? -errno : 0;

	if (ret)
		unlink(job->tmp);
	job->tmp[0] = '\0';
	return ret;
}

void mt_codspeed_discard(struct mt_codspeed_job *job)
{
	if (job->tmp[0])
		unlink(job->tmp);
	job->tmp[0] = '\0';
}

int mt_codspeed_write_artifact(struct mt_codspeed_job *job)
{
	int ret = mt_codspeed_convert(job);

	return ret ? ret : mt_codspeed_publish(job);
}
