// SPDX-License-Identifier: GPL-2.0
/* Reading CodSpeed's memory artifact (see codspeed_read.h). */
#include <errno.h>
#include <fcntl.h>
#include <msgpack.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zstd.h>

#include "base/grow.h"
#include "base/hashtab.h"
#include "codspeed/codspeed_read.h"
#include "base/errbuf.h"
#include "base/regfile.h"

static const char *const type_names[MT_CS_TYPES] = {
    "Malloc", "Free", "Realloc", "Calloc", "AlignedAlloc", "Mmap", "Munmap", "Brk",
};

const char *mt_codspeed_type_name(enum mt_codspeed_type t)
{
	return t < MT_CS_TYPES ? type_names[t] : "unknown";
}

bool mt_codspeed_is_artifact(const char *path)
{
	static const unsigned char magic[4] = {0x28, 0xb5, 0x2f, 0xfd};
	unsigned char head[4];
	bool is;
	int fd;

	/* Reading a pipe's first bytes would take them from memtrack's own reader. */
	fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);
	if (fd < 0)
		return false;
	is = read(fd, head, sizeof(head)) == (ssize_t)sizeof(head) && !memcmp(head, magic, 4);
	close(fd);
	return is;
}

/* ---- Live blocks: (pid, addr) -> size, in a hash table ------------------------------------ */

struct block {
	uint64_t addr; /* 0: empty slot (no block lives at 0) */
	int64_t pid;
	uint64_t size;
};

static uint64_t block_key_hash(int64_t pid, uint64_t addr)
{
	return mt_hash_u64(addr ^ ((uint64_t)pid << 48));
}

static bool block_empty(const void *e)
{
	return !((const struct block *)e)->addr;
}

static uint64_t block_hash(const void *ctx, const void *e)
{
	const struct block *b = e;

	(void)ctx;
	return block_key_hash(b->pid, b->addr);
}

static bool block_is(const void *ctx, const void *e, const void *key)
{
	const struct block *b = e, *k = key;

	(void)ctx;
	return b->addr == k->addr && b->pid == k->pid;
}

static const struct mt_hashtab_ops live_ops = {
    .entry = sizeof(struct block),
    .max_load_pct = 50,
    .min_slots = 1024,
    .hash = block_hash,
    .empty = block_empty,
};

/* The slot of (pid, addr), or the empty slot where it would go; the table must have slots. */
static struct block *slot_of(struct mt_hashtab *live, int64_t pid, uint64_t addr)
{
	struct block k = {.addr = addr, .pid = pid};

	return mt_hashtab_find(live, &live_ops, block_key_hash(pid, addr), block_is, NULL, &k);
}

static int insert(struct mt_hashtab *live, int64_t pid, uint64_t addr, uint64_t size)
{
	struct block *b;

	if (mt_hashtab_reserve(live, &live_ops, NULL, live->used + 1))
		return -ENOMEM;
	b = slot_of(live, pid, addr);
	if (block_empty(b))
		mt_hashtab_added(live);
	*b = (struct block){.addr = addr, .pid = pid, .size = size};
	return 0;
}

/* ---- One event ------------------------------------------------------------------------------ */

struct cs_event {
	bool has_pid, has_ts, has_addr, has_size, has_old;
	int64_t pid;
	uint64_t ts, addr, size, old_addr;
	int type;
};

struct reader {
	struct mt_codspeed_summary *s;
	struct mt_hashtab live; /* struct block */
	int64_t *pids;
	size_t n_pids, cap_pids;
};

static bool key_is(const msgpack_object *k, const char *name)
{
	return k->type == MSGPACK_OBJECT_STR && k->via.str.size == strlen(name) &&
	       !memcmp(k->via.str.ptr, name, k->via.str.size);
}

static bool get_u64(const msgpack_object *v, uint64_t *out)
{
	if (v->type != MSGPACK_OBJECT_POSITIVE_INTEGER)
		return false;
	*out = v->via.u64;
	return true;
}

static bool get_i64(const msgpack_object *v, int64_t *out)
{
	if (v->type == MSGPACK_OBJECT_NEGATIVE_INTEGER)
		*out = v->via.i64;
	else if (v->type == MSGPACK_OBJECT_POSITIVE_INTEGER && v->via.u64 <= INT32_MAX)
		*out = (int64_t)v->via.u64;
	else
		return false;
	return true;
}

static int type_of(const msgpack_object *v)
{
	int t;

	for (t = 0; t < MT_CS_TYPES; t++) {
		if (key_is(v, type_names[t]))
			return t;
	}
	return -1;
}

/* The fields of one event map; false when it is not a CodSpeed event. */
static bool decode(const msgpack_object *o, struct cs_event *e)
{
	uint32_t i;
	int64_t tid;

	memset(e, 0, sizeof(*e));
	e->type = -1;
	if (o->type != MSGPACK_OBJECT_MAP)
		return false;
	for (i = 0; i < o->via.map.size; i++) {
		const msgpack_object *k = &o->via.map.ptr[i].key, *v = &o->via.map.ptr[i].val;
		bool ok = true;

		if (key_is(k, "pid"))
			ok = e->has_pid = get_i64(v, &e->pid);
		else if (key_is(k, "tid"))
			ok = get_i64(v, &tid);
		else if (key_is(k, "timestamp"))
			ok = e->has_ts = get_u64(v, &e->ts);
		else if (key_is(k, "addr"))
			ok = e->has_addr = get_u64(v, &e->addr);
		else if (key_is(k, "size"))
			ok = e->has_size = get_u64(v, &e->size);
		else if (key_is(k, "old_addr"))
			ok = e->has_old = get_u64(v, &e->old_addr);
		else if (key_is(k, "type"))
			ok = (e->type = type_of(v)) >= 0;
		if (!ok)
			return false;
	}
	return e->has_pid && e->has_ts && e->has_addr && e->type >= 0 &&
	       (e->has_size || e->type == MT_CS_FREE);
}

static int note_pid(struct reader *r, int64_t pid)
{
	size_t i;

	for (i = 0; i < r->n_pids; i++) {
		if (r->pids[i] == pid)
			return 0;
	}
	if (MT_GROW(r->pids, r->cap_pids, r->n_pids + 1, 16))
		return -ENOMEM;
	r->pids[r->n_pids++] = pid;
	r->s->processes = r->n_pids;
	return 0;
}

static void release(struct reader *r, int64_t pid, uint64_t addr)
{
	struct block *b;

	if (!r->live.slot)
		return;
	b = slot_of(&r->live, pid, addr);
	if (block_empty(b))
		return;
	r->s->live_blocks--;
	r->s->live_bytes -= b->size;
	mt_hashtab_erase(&r->live, &live_ops, NULL, b);
}

static int account(struct reader *r, const struct cs_event *e)
{
	struct mt_codspeed_summary *s = r->s;
	int ret;

	s->events++;
	s->by_type[e->type]++;
	if (s->events == 1 || e->ts < s->first_ns)
		s->first_ns = e->ts;
	if (e->ts > s->last_ns)
		s->last_ns = e->ts;
	ret = note_pid(r, e->pid);
	if (ret || e->type >= MT_CS_MMAP)
		return ret; /* mappings and brk are not heap blocks */
	if (e->type == MT_CS_FREE) {
		release(r, e->pid, e->addr);
		return 0;
	}
	if (e->type == MT_CS_REALLOC && e->has_old)
		release(r, e->pid, e->old_addr);
	s->bytes_allocated += e->size;
	release(r, e->pid, e->addr); /* a block freed unseen */
	ret = insert(&r->live, e->pid, e->addr, e->size);
	if (ret)
		return ret;
	s->live_blocks++;
	s->live_bytes += e->size;
	if (s->live_bytes > s->peak_bytes)
		s->peak_bytes = s->live_bytes;
	return 0;
}

/* ---- The stream: zstd frames into the MessagePack unpacker ---------------------------------- */

static int drain(struct reader *r, msgpack_unpacker *up, char *err, size_t errlen)
{
	msgpack_unpacked u;
	msgpack_unpack_return ur;
	struct cs_event e;
	int ret = 0;

	msgpack_unpacked_init(&u);
	while ((ur = msgpack_unpacker_next(up, &u)) == MSGPACK_UNPACK_SUCCESS) {
		if (!decode(&u.data, &e)) {
			mt_errbuf(err, errlen, "event %llu is not a CodSpeed memtrack event",
				  (unsigned long long)r->s->events);
			ret = -EBADMSG;
			break;
		}
		ret = account(r, &e);
		if (ret)
			break;
	}
	if (!ret && ur == MSGPACK_UNPACK_PARSE_ERROR) {
		mt_errbuf(err, errlen, "event %llu is not MessagePack",
			  (unsigned long long)r->s->events);
		ret = -EBADMSG;
	}
	msgpack_unpacked_destroy(&u);
	return ret;
}

static int feed(struct reader *r, msgpack_unpacker *up, const void *p, size_t n, char *err,
		size_t errlen)
{
	if (!msgpack_unpacker_reserve_buffer(up, n))
		return -ENOMEM;
	memcpy(msgpack_unpacker_buffer(up), p, n);
	msgpack_unpacker_buffer_consumed(up, n);
	return drain(r, up, err, errlen);
}

static int read_stream(int fd, struct reader *r, msgpack_unpacker *up, ZSTD_DCtx *dctx, char *err,
		       size_t errlen)
{
	size_t in_cap = ZSTD_DStreamInSize(), out_cap = ZSTD_DStreamOutSize(), z = 0;
	char *in = malloc(in_cap), *out = malloc(out_cap);
	ssize_t n;
	int ret = in && out ? 0 : -ENOMEM;

	while (!ret && (n = read(fd, in, in_cap)) != 0) {
		ZSTD_inBuffer ib = {in, n > 0 ? (size_t)n : 0, 0};

		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			ret = -errno;
			mt_errbuf(err, errlen, "cannot read: %s", strerror(-ret));
			break;
		}
		while (!ret && ib.pos < ib.size) {
			ZSTD_outBuffer ob = {out, out_cap, 0};

			z = ZSTD_decompressStream(dctx, &ob, &ib);
			if (ZSTD_isError(z)) {
				mt_errbuf(err, errlen, "not zstd frames: %s", ZSTD_getErrorName(z));
				ret = -EBADMSG;
			} else {
				ret = feed(r, up, out, ob.pos, err, errlen);
			}
		}
	}
	/* z != 0 at the end: the last frame is cut short. */
	if (!ret && z) {
		mt_errbuf(err, errlen, "the last zstd frame is truncated");
		ret = -EBADMSG;
	}
	if (!ret && msgpack_unpacker_message_size(up)) {
		mt_errbuf(err, errlen, "the last event is truncated");
		ret = -EBADMSG;
	}
	free(in);
	free(out);
	return ret;
}

int mt_codspeed_summarize(const char *path, struct mt_codspeed_summary *s, char *err, size_t errlen)
{
	struct reader r = {.s = s};
	msgpack_unpacker up;
	ZSTD_DCtx *dctx;
	char why[256];
	int fd, ret;

	memset(s, 0, sizeof(*s));
	fd = mt_regfile_open(path, MT_REGFILE_ONLY, why, sizeof(why));
	if (fd < 0) {
		mt_errbuf(err, errlen, "cannot open '%s': %s", path, why);
		return fd;
	}
	dctx = ZSTD_createDCtx();
	if (!dctx || !msgpack_unpacker_init(&up, 64 * 1024)) {
		ZSTD_freeDCtx(dctx);
		close(fd);
		return -ENOMEM;
	}
	ret = read_stream(fd, &r, &up, dctx, err, errlen);
	if (ret == -EBADMSG) {
		char why[160];

		snprintf(why, sizeof(why), "%s", err);
		mt_errbuf(err, errlen, "not a CodSpeed memory artifact: %s", why);
	}
	msgpack_unpacker_destroy(&up);
	ZSTD_freeDCtx(dctx);
	close(fd);
	mt_hashtab_free(&r.live);
	free(r.pids);
	return ret;
}
