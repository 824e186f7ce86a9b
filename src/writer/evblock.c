// SPDX-License-Identifier: GPL-2.0
/*
 * The event block codec (format in docs/FORMAT.md). The encoder runs on memtrack's events thread
 * for every allocator call of the traced program, so it is a few shifts per field and no branch
 * that depends on more than the one event; the decoder trusts nothing it reads.
 */
#include <string.h>

#include "writer/evblock.h"

#define VARINT_MAX 10u /* bytes of a 64-bit LEB128 */

void mt_evblock_reset(struct mt_evblock_state *s)
{
	memset(s, 0, sizeof(*s));
}

/* ---- encoding ------------------------------------------------------------------------------- */

static inline uint64_t zigzag64(uint64_t delta)
{
	return (delta << 1) ^ (uint64_t)((int64_t)delta >> 63);
}

static inline uint32_t zigzag32(uint32_t delta)
{
	return (delta << 1) ^ (uint32_t)((int32_t)delta >> 31);
}

static inline uint8_t *put_varint(uint8_t *p, uint64_t v)
{
	while (v >= 0x80) {
		*p++ = (uint8_t)(v | 0x80);
		v >>= 7;
	}
	*p++ = (uint8_t)v;
	return p;
}

static uint8_t ext_bits(const struct mt_evblock_state *s, const struct mt_event *e)
{
	uint8_t x = 0;

	if (e->pid != s->pid)
		x |= MT_EVB_X_PID;
	if (e->tid != s->tid)
		x |= MT_EVB_X_TID;
	if (e->file_id != s->file_id)
		x |= MT_EVB_X_FILE;
	if (e->old_addr)
		x |= MT_EVB_X_OLD_ADDR;
	if (e->align)
		x |= MT_EVB_X_ALIGN;
	if (e->flags & ~MT_EV_FAILED)
		x |= MT_EVB_X_FLAGS;
	if (e->stack_id)
		x |= MT_EVB_X_STACK;
	return x;
}

size_t mt_evblock_put(struct mt_evblock_state *s, uint8_t *start, const struct mt_event *e)
{
	uint8_t x = ext_bits(s, e);
	bool inline_kind = e->kind != MT_EVB_KIND_ESCAPE && e->kind < MT_EVB_KIND_BYTE;
	uint8_t *p = start;

	*p++ = (uint8_t)((inline_kind ? e->kind : MT_EVB_KIND_BYTE) |
			 (e->flags & MT_EV_FAILED ? MT_EVB_FAILED : 0) |
			 (e->size ? MT_EVB_SIZE : 0) | (x ? MT_EVB_EXT : 0));
	if (x)
		*p++ = x;
	if (!inline_kind)
		*p++ = e->kind;
	p = put_varint(p, zigzag64(e->ts_ns - s->ts_ns));
	if (x & MT_EVB_X_PID)
		p = put_varint(p, e->pid);
	if (x & MT_EVB_X_TID)
		p = put_varint(p, zigzag32(e->tid - e->pid));
	if (x & MT_EVB_X_FILE)
		p = put_varint(p, e->file_id);
	p = put_varint(p, zigzag64(e->addr - s->addr));
	if (e->size)
		p = put_varint(p, e->size);
	if (x & MT_EVB_X_OLD_ADDR)
		p = put_varint(p, zigzag64(e->old_addr - e->addr));
	if (x & MT_EVB_X_ALIGN)
		p = put_varint(p, e->align);
	if (x & MT_EVB_X_FLAGS)
		*p++ = (uint8_t)(e->flags >> 1);
	if (x & MT_EVB_X_STACK)
		p = put_varint(p, e->stack_id);
	s->ts_ns = e->ts_ns;
	s->addr = e->addr;
	s->pid = e->pid;
	s->tid = e->tid;
	s->file_id = e->file_id;
	return (size_t)(p - start);
}

/* ---- decoding ------------------------------------------------------------------------------- */

struct in {
	const uint8_t *p;
	size_t left;
	enum mt_evblock_result res; /* MT_EVB_EVENT while all is well */
};

static inline uint64_t unzigzag64(uint64_t v)
{
	return (v >> 1) ^ (0 - (v & 1));
}

static inline uint32_t unzigzag32(uint32_t v)
{
	return (v >> 1) ^ (0 - (v & 1));
}

static uint8_t get_byte(struct in *in)
{
	if (in->res != MT_EVB_EVENT)
		return 0;
	if (!in->left) {
		in->res = MT_EVB_SHORT;
		return 0;
	}
	in->left--;
	return *in->p++;
}

/* A varint of at most 64 bits; more (an eleventh byte, or bits past 64) is corrupt. */
static uint64_t get_varint(struct in *in)
{
	uint64_t v = 0;
	unsigned int i;

	for (i = 0; i < VARINT_MAX && in->res == MT_EVB_EVENT; i++) {
		uint8_t b = get_byte(in);

		if (i == VARINT_MAX - 1 && b > 1)
			break;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	if (in->res == MT_EVB_EVENT)
		in->res = MT_EVB_CORRUPT;
	return 0;
}

/* A varint that must fit in max. */
static uint64_t get_bounded(struct in *in, uint64_t max)
{
	uint64_t v = get_varint(in);

	if (v > max && in->res == MT_EVB_EVENT)
		in->res = MT_EVB_CORRUPT;
	return v;
}

/* An entry other than an event: its type, its length, and that many bytes, all passed over. */
static uint32_t skip_escape(struct in *in)
{
	uint32_t type = (uint32_t)get_bounded(in, UINT32_MAX);
	uint64_t len = get_bounded(in, UINT32_MAX);

	if (in->res != MT_EVB_EVENT)
		return 0;
	if (len > in->left) {
		in->res = MT_EVB_SHORT;
		return 0;
	}
	in->p += len;
	in->left -= len;
	return type;
}

static void get_event(struct in *in, uint8_t tag, const struct mt_evblock_state *s,
		      struct mt_event *e)
{
	uint8_t x = tag & MT_EVB_EXT ? get_byte(in) : 0;

	if (x & ~MT_EVB_X_KNOWN)
		in->res = MT_EVB_CORRUPT;
	memset(e, 0, sizeof(*e));
	e->kind = tag & MT_EVB_KIND_MASK;
	if (e->kind == MT_EVB_KIND_BYTE)
		e->kind = get_byte(in);
	e->flags = tag & MT_EVB_FAILED ? MT_EV_FAILED : 0;
	e->ts_ns = s->ts_ns + unzigzag64(get_varint(in));
	e->pid = x & MT_EVB_X_PID ? (uint32_t)get_bounded(in, UINT32_MAX) : s->pid;
	e->tid =
	    x & MT_EVB_X_TID ? e->pid + unzigzag32((uint32_t)get_bounded(in, UINT32_MAX)) : s->tid;
	e->file_id = x & MT_EVB_X_FILE ? (uint16_t)get_bounded(in, UINT16_MAX) : s->file_id;
	e->addr = s->addr + unzigzag64(get_varint(in));
	if (tag & MT_EVB_SIZE)
		e->size = get_varint(in);
	if (x & MT_EVB_X_OLD_ADDR)
		e->old_addr = e->addr + unzigzag64(get_varint(in));
	if (x & MT_EVB_X_ALIGN)
		e->align = (uint32_t)get_bounded(in, UINT32_MAX);
	if (x & MT_EVB_X_FLAGS)
		e->flags |= (uint8_t)(get_bounded(in, 0x7f) << 1);
	if (x & MT_EVB_X_STACK)
		e->stack_id = (uint32_t)get_bounded(in, UINT32_MAX);
}

enum mt_evblock_result mt_evblock_get(struct mt_evblock_state *s, const uint8_t *p, size_t left,
				      struct mt_event *e, size_t *used)
{
	struct in in = {p, left, MT_EVB_EVENT};
	uint8_t tag = get_byte(&in);

	if (in.res != MT_EVB_EVENT)
		return in.res;
	if ((tag & MT_EVB_KIND_MASK) == MT_EVB_KIND_ESCAPE) {
		/* The other bits of an escape's tag are reserved. */
		if (tag)
			return MT_EVB_CORRUPT;
		uint32_t type = skip_escape(&in);

		if (in.res != MT_EVB_EVENT)
			return in.res;
		s->escape_type = type;
		*used = left - in.left;
		/* Whole first, so that a cut entry is short whatever its type. */
		return type & MT_EVB_ESC_REQUIRED ? MT_EVB_REQUIRED : MT_EVB_SKIPPED;
	}
	get_event(&in, tag, s, e);
	if (in.res != MT_EVB_EVENT)
		return in.res;
	s->ts_ns = e->ts_ns;
	s->addr = e->addr;
	s->pid = e->pid;
	s->tid = e->tid;
	s->file_id = e->file_id;
	*used = left - in.left;
	return MT_EVB_EVENT;
}
