// SPDX-License-Identifier: GPL-2.0
/*
 * The artifact reader's header and metadata records (process, file, not probed, footer): each
 * payload decoded through a bounded cursor, every length checked before it sizes anything.
 */
#include <endian.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "reader/artifact_read_int.h"

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
	ssize_t k = mt_artread_src_read(r, magic, sizeof(magic));

	if (k < 0)
		return (int)k;
	if (k == 0)
		return mt_artread_fail(r, -EBADMSG, "not a memtrack artifact (empty file)");
	if (memcmp(magic, MT_ARTIFACT_MAGIC, (size_t)k))
		return mt_artread_fail(r, -EBADMSG, "not a memtrack artifact (bad magic)");
	if ((size_t)k < sizeof(magic))
		return mt_artread_fail(r, -EBADMSG,
				       "truncated artifact: the file ends inside its header");
	return 0;
}

static int parse_argv(struct mt_artifact_reader *r, struct cursor *c)
{
	struct mt_artifact_info *in = &r->info;
	bool nomem = false;
	uint32_t argc;

	/* Every argument takes at least its 4-byte length: bounds argc before allocating. */
	if (!get_u32(c, &argc) || argc > c->left / 4)
		return mt_artread_corrupt(r, 16, "bad argument count in header");
	in->argv = calloc((size_t)argc + 1, sizeof(*in->argv));
	if (!in->argv)
		return mt_artread_fail(r, -ENOMEM, "out of memory");
	for (in->argc = 0; (uint32_t)in->argc < argc; in->argc++) {
		in->argv[in->argc] = get_str_alloc(c, MT_ARTIFACT_ARG_MAX, &nomem);
		if (nomem)
			return mt_artread_fail(r, -ENOMEM, "out of memory");
		if (!in->argv[in->argc])
			return mt_artread_corrupt(r, 16, "bad command-line argument in header");
	}
	return 0;
}

int mt_artread_header(struct mt_artifact_reader *r)
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
	k = mt_artread_src_read(r, fixed, sizeof(fixed));
	if (k < 0)
		return (int)k;
	if ((size_t)k < sizeof(fixed))
		return mt_artread_fail(r, -EBADMSG,
				       "truncated artifact: the file ends inside its header");
	get_u32(&c, &in->version);
	get_u32(&c, &hlen);
	if (in->version < MT_ARTIFACT_VERSION_MIN || in->version > MT_ARTIFACT_VERSION)
		return mt_artread_fail(
		    r, -EPROTONOSUPPORT,
		    "unsupported artifact format version %u (this memtrack reads versions "
		    "%u to %u)",
		    in->version, MT_ARTIFACT_VERSION_MIN, MT_ARTIFACT_VERSION);
	if (hlen > MT_ARTIFACT_HEADER_MAX)
		return mt_artread_corrupt(r, 12, "header length out of bounds");
	k = mt_artread_payload(r, hlen);
	if (k < 0)
		return (int)k;
	if ((size_t)k < hlen)
		return mt_artread_fail(r, -EBADMSG,
				       "truncated artifact: the file ends inside its header");
	c = (struct cursor){r->payload, hlen};
	if (!get_u64(&c, &in->start_time_ns) || !get_u64(&c, &in->start_mono_ns) ||
	    !get_str(&c, in->watcher, MT_ARTIFACT_WATCHER_MAX))
		return mt_artread_corrupt(r, 16, "bad header");
	err = parse_argv(r, &c);
	/* The flags, when written; bytes after them are fields of a later revision: ignored. */
	if (!err && c.left >= 4)
		get_u32(&c, &in->flags);
	return err;
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
		return mt_artread_corrupt(r, at, "bad process record");
	/* The position came with version 3's lifecycle stream; older records end at exe. */
	p->position[0] = '\0';
	if (c->left && !get_str(c, p->position, sizeof(p->position) - 1))
		return mt_artread_corrupt(r, at, "bad process record");
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
		return mt_artread_corrupt(r, at, "bad file record");
	/* Version 2 adds the exact count after the path; version 1 has only the 16 bits. */
	if (!get_u32(c, &f->probes))
		f->probes = probes16;
	/* Version 4 adds how the file's frames are unwound. */
	if (!get_u32(c, &f->unwind_rows) || !get_u32(c, (uint32_t *)&f->unwind_error)) {
		f->unwind_rows = 0;
		f->unwind_error = 0;
	}
	return 0;
}

static int parse_stack(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_stack *s = &r->stack;

	if (!get_u32(c, &s->id) || !get_u32(c, &s->stop) || !get_u32(c, &s->n) || !s->id || !s->n ||
	    s->n > MT_ARTIFACT_STACK_FRAMES || c->left < 8 * (size_t)s->n)
		return mt_artread_corrupt(r, at, "bad stack record");
	for (uint32_t i = 0; i < s->n; i++)
		get_u64(c, &s->frames[i]);
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
		return mt_artread_corrupt(r, at, "bad not-probed record");
	u->error = (int32_t)error;
	return 0;
}

static int parse_handoff(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_handoff *h = &r->handoff;

	if (!get_u32(c, &h->pid) || !get_u8(c, &h->what) || !get_u8(c, &h->flags) ||
	    !get_u16(c, &h->file_id) || !get_str(c, h->text, sizeof(h->text) - 1))
		return mt_artread_corrupt(r, at, "bad handoff record");
	return 0;
}

static int parse_mapping(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_mapping *m = &r->mapping;
	uint32_t error;
	uint16_t zero16;

	if (!get_u64(c, &m->ts_ns) || !get_u32(c, &m->pid) || !get_u32(c, &m->tid) ||
	    !get_u8(c, &m->what) || !get_u8(c, &m->origin) || !get_u16(c, &zero16) ||
	    !get_u32(c, &error) || !get_u32(c, &m->prot) || !get_u32(c, &m->flags) ||
	    !get_u64(c, &m->addr) || !get_u64(c, &m->len) || !get_u64(c, &m->old_addr) ||
	    !get_u64(c, &m->old_len) || !get_u64(c, &m->offset) || !get_u64(c, &m->dev) ||
	    !get_u64(c, &m->ino) || !get_str(c, m->name, MT_ARTIFACT_MAPPING_NAME))
		return mt_artread_corrupt(r, at, "bad mapping record");
	m->error = (int32_t)error;
	return 0;
}

static int parse_bench(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_bench *b = &r->bench;
	uint32_t pid;
	uint16_t zero16;

	b->marker_ts_ns = 0;
	if (!get_u64(c, &b->ts_ns) || !get_u32(c, &pid) || !get_u8(c, &b->what) ||
	    !get_u8(c, &b->marker) || !get_u16(c, &zero16) ||
	    !get_str(c, b->uri, MT_ARTIFACT_BENCH_URI_MAX) ||
	    (b->what == MT_BENCH_MARKER && !get_u64(c, &b->marker_ts_ns)))
		return mt_artread_corrupt(r, at, "bad benchmark mark");
	b->pid = (int32_t)pid;
	return 0;
}

static int parse_leaks(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_leaks *l = &r->leaks;
	uint32_t pad;

	if (!get_u32(c, &l->pid) || !get_u32(c, &l->chunk) || !get_u32(c, &l->flags) ||
	    !get_u32(c, &l->threads) || !get_u32(c, &l->regions) ||
	    !get_u32(c, &l->unreadable_regions) || !get_u64(c, &l->unreadable_bytes) ||
	    !get_u64(c, &l->scanned_bytes) || !get_u64(c, &l->scan_ns) ||
	    !get_u64(c, &l->scan_cpu_ns) || !get_u32(c, &l->n) || !get_u32(c, &pad) ||
	    l->n > MT_ARTIFACT_LEAKS_PER || c->left != (size_t)l->n * MT_ARTIFACT_LEAK_ENTRY)
		return mt_artread_corrupt(r, at, "bad leak record");
	if (!r->leak_blocks) {
		r->leak_blocks = malloc(MT_ARTIFACT_LEAKS_PER * sizeof(*r->leak_blocks));
		if (!r->leak_blocks)
			return mt_artread_fail(r, -ENOMEM, "out of memory");
	}
	for (uint32_t i = 0; i < l->n; i++) {
		struct mt_artifact_leak_block *b = &r->leak_blocks[i];
		uint8_t zero[3];

		get_u64(c, &b->addr);
		get_u64(c, &b->size);
		get_u32(c, &b->stack);
		get_u8(c, &b->cls);
		take(c, zero, sizeof(zero));
	}
	l->blocks = r->leak_blocks;
	return 0;
}

static int parse_rss(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_rss *s = &r->rss;
	uint8_t zero8;
	uint16_t zero16;

	if (!get_u64(c, &s->ts_ns) || !get_u32(c, &s->pid) || !get_u8(c, &s->why) ||
	    !get_u8(c, &zero8) || !get_u16(c, &zero16) || !get_u64(c, &s->anon) ||
	    !get_u64(c, &s->file) || !get_u64(c, &s->shmem) || !get_u64(c, &s->hwm))
		return mt_artread_corrupt(r, at, "bad RSS sample record");
	return 0;
}

/* After the footer the file must end: anything more is not something this writer produced. */
static int check_end(struct mt_artifact_reader *r)
{
	uint8_t extra;
	uint64_t at = r->offset;
	ssize_t k = mt_artread_src_read(r, &extra, 1);

	if (k < 0)
		return (int)k;
	if (k)
		return mt_artread_corrupt(r, at, "data after the footer");
	return 0;
}

static int parse_footer(struct mt_artifact_reader *r, struct cursor *c, uint64_t at)
{
	struct mt_artifact_footer *f = &r->footer;
	char msg[96];

	if (!get_u64(c, &f->events) || !get_u64(c, &f->requests_dropped) ||
	    !get_u64(c, &f->events_dropped) || !get_u64(c, &f->args_lost) ||
	    !get_u64(c, &f->end_mono_ns))
		return mt_artread_corrupt(r, at, "bad footer");
	if (!get_u64(c, &f->stacks_lost))
		f->stacks_lost = 0;
	if (f->events != r->events_read) {
		snprintf(msg, sizeof(msg), "footer counts %llu events but %llu were read",
			 (unsigned long long)f->events, (unsigned long long)r->events_read);
		return mt_artread_corrupt(r, at, msg);
	}
	return check_end(r);
}

/* Bounds of a record's payload length by type; unknown types are bounded by the largest. */
bool mt_artread_len_ok(uint32_t type, uint32_t len)
{
	switch (type) {
	case MT_REC_PROCESS:
		return len >= MT_ARTIFACT_PROCESS_FIXED + 4 && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_FILE:
		return len >= MT_ARTIFACT_FILE_FIXED + 8 && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_EVENTS:
		return len && len % MT_ARTIFACT_EVENT_SIZE == 0 && len <= MT_ARTIFACT_RECORD_MAX;
	case MT_REC_FOOTER:
		return len >= MT_ARTIFACT_FOOTER_MIN && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_UNPROBED:
		return len >= MT_ARTIFACT_UNPROBED_FIXED + 12 && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_STACK:
		return len >= MT_ARTIFACT_STACK_FIXED + 8 &&
		       len <= MT_ARTIFACT_STACK_FIXED + 8 * MT_ARTIFACT_STACK_FRAMES;
	case MT_REC_HANDOFF:
		return len >= MT_ARTIFACT_HANDOFF_FIXED + 4 && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_MAPPING:
		return len >= MT_ARTIFACT_MAPPING_FIXED + 4 && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_LEAKS:
		return len >= MT_ARTIFACT_LEAKS_FIXED &&
		       len <=
			   MT_ARTIFACT_LEAKS_FIXED + MT_ARTIFACT_LEAK_ENTRY * MT_ARTIFACT_LEAKS_PER;
	case MT_REC_RSS:
		return len >= MT_ARTIFACT_RSS_SIZE && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_BENCH:
		return len >= MT_ARTIFACT_BENCH_FIXED + 4 && len <= MT_ARTIFACT_META_MAX;
	case MT_REC_BLOCK:
		return len >= MT_ARTIFACT_BLOCK_FIXED + MT_ARTIFACT_BLOCK_ENTRY_MIN &&
		       len <= MT_ARTIFACT_BLOCK_MAX;
	case MT_REC_ZBLOCK:
		return len > MT_ARTIFACT_ZBLOCK_FIXED && len <= MT_ARTIFACT_ZBLOCK_MAX;
	case MT_REC_CBLOCK:
	case MT_REC_UBLOCK:
		return len > MT_ARTIFACT_CBLOCK_FIXED && len <= MT_ARTIFACT_CBLOCK_MAX;
	default:
		return len <= MT_ARTIFACT_RECORD_MAX;
	}
}

int mt_artread_meta(struct mt_artifact_reader *r, uint32_t type, uint32_t len, uint64_t at,
		    struct mt_artifact_item *it)
{
	ssize_t k = mt_artread_payload(r, len);

	if (k < 0)
		return (int)k;
	if ((size_t)k < len) {
		r->truncated = true;
		r->done = true;
		return 0;
	}
	return mt_artread_parse(r, type, r->payload, len, at, it);
}

int mt_artread_parse(struct mt_artifact_reader *r, uint32_t type, const uint8_t *payload,
		     uint32_t len, uint64_t at, struct mt_artifact_item *it)
{
	struct cursor c = {payload, len};
	int err;

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
	case MT_REC_STACK:
		err = parse_stack(r, &c, at);
		it->type = MT_ITEM_STACK;
		it->stack = &r->stack;
		break;
	case MT_REC_HANDOFF:
		err = parse_handoff(r, &c, at);
		it->type = MT_ITEM_HANDOFF;
		it->handoff = &r->handoff;
		break;
	case MT_REC_MAPPING:
		err = parse_mapping(r, &c, at);
		it->type = MT_ITEM_MAPPING;
		it->mapping = &r->mapping;
		break;
	case MT_REC_LEAKS:
		err = parse_leaks(r, &c, at);
		it->type = MT_ITEM_LEAKS;
		it->leaks = &r->leaks;
		break;
	case MT_REC_RSS:
		err = parse_rss(r, &c, at);
		it->type = MT_ITEM_RSS;
		it->rss = &r->rss;
		break;
	case MT_REC_BENCH:
		err = parse_bench(r, &c, at);
		it->type = MT_ITEM_BENCH;
		it->bench = &r->bench;
		break;
	case MT_REC_FOOTER:
		err = parse_footer(r, &c, at);
		it->type = MT_ITEM_FOOTER;
		it->footer = &r->footer;
		r->done = true;
		break;
	default:
		/* A type this reader does not know, inside a block: passed over, as a record is. */
		return 2;
	}
	return err ? err : 1;
}
