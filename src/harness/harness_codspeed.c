// SPDX-License-Identifier: GPL-2.0
/*
 * Memory mode's output (harness.h): what CodSpeed's runner and backend read after a memory run,
 * built from memtrack's own artifact through the reader's event iteration (artifact_read.h).
 *
 * - DIR/results/PID.MemtrackArtifact.msgpack, PID being the tracked command's: concatenated zstd
 *   frames of at most 65536 events each, level -5, each event one MessagePack map, as CodSpeed's
 *   memtrack writes it (crates/runner-shared/src/artifacts/memtrack/{mod,writer,pipeline}.rs):
 *   {"pid", "tid", "timestamp" (CLOCK_MONOTONIC ns), "addr", "type", ["old_addr",] ["size"]}
 *   with type Malloc, Calloc, AlignedAlloc, Realloc or Free (Mmap, Munmap and Brk are system
 *   calls memtrack does not record). A frame with no event is written when there is none.
 * - DIR/results/PID.ExecutionTimestamps.msgpack, PID being memtrack's own: the MessagePack map
 *   {"uri_by_ts": [[ts, uri], ...], "markers": [{"SampleStart": ts}, {"SampleEnd": ts}, ...]}
 *   that the runner builds from an integration's FIFO messages
 *   (crates/runner-shared/src/artifacts/execution_timestamps.rs, src/executor/shared/fifo.rs),
 *   whose non-empty uri_by_ts the runner's memory executor looks for. The PID in its name keeps
 *   it apart from the runner's own ExecutionTimestamps.msgpack.
 */
#include <errno.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <zstd.h>

#include "reader/artifact_read.h"
#include "harness/harness.h"
#include "base/kind.h"

#define FRAME_EVENTS	  (64 * 1024) /* pipeline.rs: FRAME_EVENTS */
#define COMPRESSION_LEVEL (-5)	      /* writer.rs: COMPRESSION_LEVEL */
#define ARTIFACT_SUFFIX	  ".MemtrackArtifact.msgpack"
#define TIMESTAMPS_SUFFIX ".ExecutionTimestamps.msgpack"

/* ---- CodSpeed's event vocabulary ------------------------------------------------------------ */

enum cs_type { CS_SKIP, CS_MALLOC, CS_CALLOC, CS_ALIGNED, CS_REALLOC, CS_FREE };

static const char *const cs_names[] = {
    [CS_MALLOC] = "Malloc",   [CS_CALLOC] = "Calloc", [CS_ALIGNED] = "AlignedAlloc",
    [CS_REALLOC] = "Realloc", [CS_FREE] = "Free",
};

/* The CodSpeed kind of a successful call of memtrack's kind k. */
static enum cs_type cs_kind(uint8_t k, uint32_t align)
{
	switch (mt_kind_effect(k)) {
	case MT_KIND_REALLOC:
		return CS_REALLOC;
	case MT_KIND_FREE:
		return CS_FREE;
	case MT_KIND_ALLOC:
		break;
	default:
		return CS_SKIP;
	}
	switch (k) {
	case MT_K_CALLOC:
	case MT_K_CALLOC_ALIGNED:
		return CS_CALLOC;
	case MT_K_MALLOC:
	case MT_K_MALLOCX:
	case MT_K_NEW:
		return align ? CS_ALIGNED : CS_MALLOC;
	default: /* aligned_alloc, memalign, posix_memalign, valloc, pvalloc, aligned new/malloc */
		return CS_ALIGNED;
	}
}

/* ---- The artifact: zstd frames of MessagePack maps ------------------------------------------ */

struct cs_writer {
	FILE *out;
	msgpack_sbuffer buf;
	msgpack_packer pk;
	size_t in_frame;
	uint64_t events;
	void *zbuf;
	size_t zcap;
};

static void pack_str(msgpack_packer *pk, const char *s)
{
	size_t n = strlen(s);

	msgpack_pack_str(pk, n);
	msgpack_pack_str_body(pk, s, n);
}

static void pack_u64(msgpack_packer *pk, const char *key, uint64_t v)
{
	pack_str(pk, key);
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

/* One event in CodSpeed's field order: the MemtrackEvent fields, then the flattened kind. */
static int put_event(struct cs_writer *w, const struct mt_event *e, enum cs_type t, uint64_t addr,
		     bool has_old, uint64_t old_addr)
{
	bool has_size = t != CS_FREE;

	msgpack_pack_map(&w->pk, 5 + has_old + has_size);
	pack_str(&w->pk, "pid");
	msgpack_pack_int32(&w->pk, (int32_t)e->pid);
	pack_str(&w->pk, "tid");
	msgpack_pack_int32(&w->pk, (int32_t)e->tid);
	pack_u64(&w->pk, "timestamp", e->ts_ns);
	pack_u64(&w->pk, "addr", addr);
	pack_str(&w->pk, "type");
	pack_str(&w->pk, cs_names[t]);
	if (has_old)
		pack_u64(&w->pk, "old_addr", old_addr);
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
	enum cs_type t = cs_kind(e->kind, e->align);

	if (t == CS_SKIP || !e->addr) {
		if (t == CS_REALLOC && !e->addr && !e->size && e->old_addr)
			return put_event(w, e, CS_FREE, e->old_addr, false, 0);
		return 0;
	}
	if (t != CS_FREE && (e->flags & MT_EV_FAILED))
		return 0;
	if (t == CS_REALLOC)
		return put_event(w, e, t, e->addr, true, e->old_addr);
	return put_event(w, e, t, e->addr, false, 0);
}

/* Every event of the .mtk, and the root's pid (0 when no process record names it). */
static int convert(struct mt_artifact_reader *r, struct cs_writer *w, uint32_t *root)
{
	struct mt_artifact_item it;
	size_t i;
	int ret;

	while ((ret = mt_artifact_next(r, &it)) > 0) {
		if (it.type == MT_ITEM_PROCESS && !it.process->parent && !*root)
			*root = it.process->pid;
		if (it.type != MT_ITEM_EVENTS)
			continue;
		for (i = 0; i < it.n_events; i++) {
			ret = put_mt_event(w, &it.events[i]);
			if (ret)
				return ret;
		}
	}
	if (ret < 0)
		return ret;
	/* pipeline.rs: at least one frame, so that an empty artifact still decodes. */
	return w->in_frame || !w->events ? flush_frame(w) : 0;
}

static int write_artifact(const struct mt_harness *h, const struct mt_bench_result *b, size_t idx)
{
	char tmp[PATH_MAX + 64], path[PATH_MAX + 64], err[MT_ARTIFACT_ERRLEN] = "";
	struct mt_artifact_reader *r = NULL;
	struct cs_writer w = {0};
	uint32_t root = 0;
	int ret;

	/* A name without "MemtrackArtifact" until it is whole: the runner reads any such file. */
	snprintf(tmp, sizeof(tmp), "%s/.memtrack-%d-%zu.tmp", h->results_dir, (int)getpid(), idx);
	ret = mt_artifact_open(&r, b->artifact, err, sizeof(err));
	if (ret)
		goto out;
	w.out = fopen(tmp, "w");
	if (!w.out) {
		ret = -errno;
		goto out;
	}
	msgpack_sbuffer_init(&w.buf);
	msgpack_packer_init(&w.pk, &w.buf, msgpack_sbuffer_write);
	ret = convert(r, &w, &root);
	if (ret == -EBADMSG || ret == -EPROTONOSUPPORT)
		snprintf(err, sizeof(err), "%s", mt_artifact_error(r));
	if (fclose(w.out) && !ret)
		ret = -errno;
	msgpack_sbuffer_destroy(&w.buf);
	free(w.zbuf);
	snprintf(path, sizeof(path), "%s/%u" ARTIFACT_SUFFIX, h->results_dir,
		 root ? root : (unsigned int)getpid());
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
	else if (!h->quiet)
		fprintf(stderr, "memtrack: '%s': %llu events written to %s\n", b->name,
			(unsigned long long)w.events, path);
out:
	if (ret)
		fprintf(stderr,
			MT_HARNESS_PROG ": cannot write CodSpeed's memory artifact of '%s': %s\n",
			b->name, err[0] ? err : strerror(-ret));
	mt_artifact_close(r);
	return ret;
}

/* ---- The execution timestamps --------------------------------------------------------------- */

static void pack_marker(msgpack_packer *pk, const char *name, uint64_t ts)
{
	msgpack_pack_map(pk, 1);
	pack_str(pk, name);
	msgpack_pack_uint64(pk, ts);
}

/*
 * Per benchmark, what exec-harness's hooks make the runner record: SampleStart when the
 * benchmark starts, SampleEnd when it stops, then its URI with the time it was named.
 */
static void pack_timestamps(msgpack_packer *pk, const struct mt_bench_result *res, size_t n)
{
	size_t i;

	msgpack_pack_map(pk, 2);
	pack_str(pk, "uri_by_ts");
	msgpack_pack_array(pk, n);
	for (i = 0; i < n; i++) {
		msgpack_pack_array(pk, 2);
		msgpack_pack_uint64(pk, res[i].tracked_end_ns);
		pack_str(pk, res[i].uri);
	}
	pack_str(pk, "markers");
	msgpack_pack_array(pk, 2 * n);
	for (i = 0; i < n; i++) {
		pack_marker(pk, "SampleStart", res[i].tracked_start_ns);
		pack_marker(pk, "SampleEnd", res[i].tracked_end_ns);
	}
}

static int write_timestamps(const struct mt_harness *h, const struct mt_bench_result *res, size_t n)
{
	char path[PATH_MAX + 64], tmp[PATH_MAX + 80];
	msgpack_sbuffer buf;
	msgpack_packer pk;
	FILE *f;
	int ret = 0;

	snprintf(path, sizeof(path), "%s/%d" TIMESTAMPS_SUFFIX, h->results_dir, (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s/.memtrack-%d-timestamps.tmp", h->results_dir, (int)getpid());
	msgpack_sbuffer_init(&buf);
	msgpack_packer_init(&pk, &buf, msgpack_sbuffer_write);
	pack_timestamps(&pk, res, n);
	f = fopen(tmp, "w");
	if (!f)
		ret = -errno;
	else if (fwrite(buf.data, 1, buf.size, f) != buf.size)
		ret = -EIO;
	if (f && fclose(f) && !ret)
		ret = -errno;
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret) {
		unlink(tmp);
		fprintf(stderr, MT_HARNESS_PROG ": cannot write '%s': %s\n", path, strerror(-ret));
	}
	msgpack_sbuffer_destroy(&buf);
	return ret;
}

int mt_harness_write_codspeed(const struct mt_harness *h, const struct mt_bench_result *res,
			      size_t n)
{
	size_t i;
	int ret;

	for (i = 0; i < n; i++) {
		ret = write_artifact(h, &res[i], i);
		if (ret)
			return ret;
	}
	return write_timestamps(h, res, n);
}
