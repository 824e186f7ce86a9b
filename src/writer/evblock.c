// SPDX-License-Identifier: GPL-2.0
/*
 * The event block codec (format in docs/FORMAT.md). The encoder runs on memtrack's events thread
 * for every allocator call of the traced program, so it is a few shifts per field and no branch
 * that depends on more than the one event; the decoder trusts nothing it reads.
 */
#include <stddef.h>
#include <string.h>
#include <zstd.h>

#include "writer/artifact_format.h"
#include "writer/evblock.h"

#define VARINT_MAX 10u /* bytes of a 64-bit LEB128 */
/*
 * The codec's steps are inlined into each of their two callers, the one-stream and the
 * many-stream one: in the first, every stream is the same, and the compiler then reads and writes
 * one pointer as the version-3 codec did.
 */
#define STEP	   static inline __attribute__((always_inline))

void mt_evblock_reset(struct mt_evblock_state *s)
{
	memset(s, 0, offsetof(struct mt_evblock_state, alloc_addr));
}

void mt_evblock_reset_columns(struct mt_evblock_state *s)
{
	mt_evblock_reset(s);
	memset(s->slot_addr, 0, sizeof(s->slot_addr));
	memset(s->slot_alloc, 0, sizeof(s->slot_alloc));
	s->columns = true;
}

void mt_evblock_reset_columns_us(struct mt_evblock_state *s)
{
	mt_evblock_reset_columns(s);
	s->micro = true;
}

/* ---- encoding ------------------------------------------------------------------------------- */

/* A time in the block's unit: a microsecond block's is the microsecond it falls in. */
static inline uint64_t time_units(const struct mt_evblock_state *s, uint64_t ts_ns)
{
	return s->micro ? ts_ns / MT_ARTIFACT_MICRO_NS : ts_ns;
}

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

/*
 * The address an event's address differs from: in a compressed block (threads), its thread's
 * last in the block, so that threads taking turns do not jump between their arenas each event;
 * else (or for a thread not among the last ones) the previous event's.
 */
STEP uint64_t addr_base(const struct mt_evblock_state *s, uint32_t tid, bool threads)
{
	for (uint32_t i = 0; threads && i < s->threads; i++)
		if (s->thread_tid[i] == tid)
			return s->thread_addr[i];
	return s->addr;
}

/*
 * The size class of an allocation of size bytes, as glibc's chunks go (the size and 8 bytes of
 * header, in 16-byte steps, 32 at least), or -1 above MT_EVB_BINS classes.
 */
static inline int size_bin(uint64_t size)
{
	return size > 16 * MT_EVB_BINS - 24 ? -1 : size <= 24 ? 0 : (int)((size + 7) >> 4) - 1;
}

/* The topmost (newest) address of class b equal to addr, taken out. */
static inline void bin_take(struct mt_evblock_state *s, int b, uint64_t addr)
{
	uint64_t *a = s->bin_addr[b];

	for (int i = s->bin_n[b] - 1; i >= 0; i--) {
		if (a[i] != addr)
			continue;
		memmove(a + i, a + i + 1, (size_t)(s->bin_n[b] - 1 - i) * sizeof(*a));
		s->bin_n[b]--;
		return;
	}
}

/* A block of class b freed: the newest of its class, the oldest dropped when full. */
static inline void bin_push(struct mt_evblock_state *s, int b, uint64_t addr)
{
	uint64_t *a = s->bin_addr[b];

	if (s->bin_n[b] == MT_EVB_BIN_DEPTH) {
		memmove(a, a + 1, (MT_EVB_BIN_DEPTH - 1) * sizeof(*a));
		s->bin_n[b]--;
	}
	a[s->bin_n[b]++] = addr;
}

/*
 * In a columnar block, after an event: an allocation is counted (and, when its address was one of
 * its class's freed ones, that one taken out); a free of one of the block's allocations, whose
 * class is freed_bin, adds its address to the class.
 */
STEP void remember_columns(struct mt_evblock_state *s, const struct mt_event *e, int freed_bin)
{
	int b;

	if (!e->size) {
		if (freed_bin >= 0)
			bin_push(s, freed_bin, e->addr);
		return;
	}
	b = size_bin(e->size);
	if (b >= 0)
		bin_take(s, b, e->addr);
	s->alloc_bin[s->allocs % MT_EVB_REFS] = (uint8_t)(b + 1);
	s->alloc_addr[s->allocs++ % MT_EVB_REFS] = e->addr;
}

/* After an event: the previous event is e; in a compressed block, its thread's last address. */
STEP void remember(struct mt_evblock_state *s, const struct mt_event *e, bool threads,
		   int freed_bin)
{
	uint32_t i;

	if (s->columns)
		remember_columns(s, e, freed_bin);
	s->ts = time_units(s, e->ts_ns);
	s->addr = e->addr;
	s->pid = e->pid;
	s->tid = e->tid;
	s->file_id = e->file_id;
	if (!threads)
		return;
	for (i = 0; i < s->threads && s->thread_tid[i] != e->tid; i++)
		;
	if (i == s->threads && s->threads < MT_EVB_THREADS) {
		s->threads++;
	} else if (i == s->threads) {
		i = s->thread_next;
		s->thread_next = (s->thread_next + 1) % MT_EVB_THREADS;
	}
	s->thread_tid[i] = e->tid;
	s->thread_addr[i] = e->addr;
}

/* The encoder's slot of an address: its bits above malloc's 16-byte alignment, mixed. */
static inline uint32_t ref_slot(uint64_t addr)
{
	return (uint32_t)(((addr >> 4) * 0x9e3779b97f4a7c15ull) >> 50) & (MT_EVB_REF_SLOTS - 1);
}

/*
 * How far back among the block's last MT_EVB_REFS allocations the last one of addr is, plus
 * one, or 0 when it is not among them (or its slot was taken by another since: a lost reference
 * costs bytes, never correctness, as the allocation's address is checked).
 */
static inline uint32_t find_alloc(const struct mt_evblock_state *s, uint64_t addr)
{
	uint32_t slot = ref_slot(addr), n = s->slot_alloc[slot];

	if (s->slot_addr[slot] != addr || n >= s->allocs || s->allocs - n > MT_EVB_REFS ||
	    s->alloc_addr[n % MT_EVB_REFS] != addr)
		return 0;
	return s->allocs - n;
}

/* A time difference, zigzag-coded: a varint, or in a columnar block two bytes and a varint. */
STEP void put_time(const struct mt_evblock_state *s, uint8_t **o[MT_EVB_STREAMS], uint64_t zz)
{
	if (!s->columns) {
		*o[MT_EVB_S_TS] = put_varint(*o[MT_EVB_S_TS], zz);
		return;
	}
	*(*o[MT_EVB_S_TS])++ = (uint8_t)zz;
	*(*o[MT_EVB_S_T1])++ = (uint8_t)(zz >> 8);
	*o[MT_EVB_S_T2] = put_varint(*o[MT_EVB_S_T2], zz >> 16);
}

/* How far down from the newest of class b the newest address addr is, plus one, or 0. */
static inline uint32_t find_freed(const struct mt_evblock_state *s, int b, uint64_t addr)
{
	for (int i = s->bin_n[b] - 1; i >= 0; i--)
		if (s->bin_addr[b][i] == addr)
			return (uint32_t)(s->bin_n[b] - i);
	return 0;
}

/*
 * In a columnar block, the reference an address may be instead (0: none, the address follows):
 * for an event without a size, to one of the block's allocations (a free of a block allocated in
 * it); for an allocation of a class with blocks freed, to one of them. Without, nothing. The
 * class of the allocation freed into *freed_bin (else -1).
 */
STEP uint32_t put_ref(struct mt_evblock_state *s, uint8_t **o[MT_EVB_STREAMS],
		      const struct mt_event *e, int *freed_bin)
{
	uint32_t back;
	int b;

	*freed_bin = -1;
	if (!e->size) {
		back = find_alloc(s, e->addr);
		if (back)
			*freed_bin = s->alloc_bin[(s->allocs - back) % MT_EVB_REFS] - 1;
	} else {
		uint32_t slot = ref_slot(e->addr);

		s->slot_addr[slot] = e->addr;
		s->slot_alloc[slot] = s->allocs; /* its number once remember() counts it */
		b = size_bin(e->size);
		if (b < 0 || !s->bin_n[b])
			return 0;
		back = find_freed(s, b, e->addr);
	}
	*o[MT_EVB_S_REF] = put_varint(*o[MT_EVB_S_REF], back);
	return back;
}

/* An address: a reference (put_ref()), or the difference from the address of addr_base(). */
STEP int put_addr(struct mt_evblock_state *s, uint8_t **o[MT_EVB_STREAMS], const struct mt_event *e,
		  bool threads)
{
	int freed_bin = -1;

	if (s->columns && put_ref(s, o, e, &freed_bin))
		return freed_bin;
	*o[MT_EVB_S_ADDR] =
	    put_varint(*o[MT_EVB_S_ADDR], zigzag64(e->addr - addr_base(s, e->tid, threads)));
	return freed_bin;
}

/*
 * Encode e, each field into its stream's pointer: o[k] points at the write position of stream k.
 * For a version-3 block all eight are the same pointer, the fields one after the other.
 */
STEP void put_fields(struct mt_evblock_state *s, uint8_t **o[MT_EVB_STREAMS],
		     const struct mt_event *e, bool threads)
{
	uint8_t x = ext_bits(s, e);
	bool inline_kind = e->kind != MT_EVB_KIND_ESCAPE && e->kind < MT_EVB_KIND_BYTE;
	uint8_t **tag = o[MT_EVB_S_TAG], **rest = o[MT_EVB_S_REST];
	int freed_bin;

	*(*tag)++ = (uint8_t)((inline_kind ? e->kind : MT_EVB_KIND_BYTE) |
			      (e->flags & MT_EV_FAILED ? MT_EVB_FAILED : 0) |
			      (e->size ? MT_EVB_SIZE : 0) | (x ? MT_EVB_EXT : 0));
	if (x)
		*(*tag)++ = x;
	if (!inline_kind)
		*(*tag)++ = e->kind;
	put_time(s, o, zigzag64(time_units(s, e->ts_ns) - s->ts));
	if (x & MT_EVB_X_PID)
		*rest = put_varint(*rest, e->pid);
	if (x & MT_EVB_X_TID)
		*rest = put_varint(*rest, zigzag32(e->tid - e->pid));
	if (x & MT_EVB_X_FILE)
		*rest = put_varint(*rest, e->file_id);
	freed_bin = put_addr(s, o, e, threads);
	if (e->size)
		*o[MT_EVB_S_SIZE] = put_varint(*o[MT_EVB_S_SIZE], e->size);
	if (x & MT_EVB_X_OLD_ADDR)
		*rest = put_varint(*rest, zigzag64(e->old_addr - e->addr));
	if (x & MT_EVB_X_ALIGN)
		*rest = put_varint(*rest, e->align);
	if (x & MT_EVB_X_FLAGS)
		*(*rest)++ = (uint8_t)(e->flags >> 1);
	if (x & MT_EVB_X_STACK)
		*rest = put_varint(*rest, e->stack_id);
	remember(s, e, threads, freed_bin);
}

size_t mt_evblock_put(struct mt_evblock_state *s, uint8_t *start, const struct mt_event *e)
{
	uint8_t *p = start;
	uint8_t **o[MT_EVB_STREAMS] = {&p, &p, &p, &p, &p, &p, &p, &p};

	put_fields(s, o, e, false);
	return (size_t)(p - start);
}

uint8_t *mt_evblock_put_escape(uint8_t *p, uint32_t type, uint32_t len)
{
	*p++ = MT_EVB_KIND_ESCAPE;
	p = put_varint(p, type);
	return put_varint(p, len);
}

uint8_t *mt_evblock_put_escape_split(struct mt_evblock_split *out, uint32_t type, uint32_t len)
{
	uint8_t *data;

	*out->p[MT_EVB_S_TAG]++ = MT_EVB_KIND_ESCAPE;
	data = put_varint(put_varint(out->p[MT_EVB_S_REST], type), len);
	out->p[MT_EVB_S_REST] = data + len;
	return data;
}

void mt_evblock_put_split(struct mt_evblock_state *s, struct mt_evblock_split *out,
			  const struct mt_event *e)
{
	uint8_t **o[MT_EVB_STREAMS] = {&out->p[0], &out->p[1], &out->p[2], &out->p[3],
				       &out->p[4], &out->p[5], &out->p[6], &out->p[7]};

	put_fields(s, o, e, true);
}

/* ---- compressing ---------------------------------------------------------------------------- */

size_t mt_evblock_compress(ZSTD_CCtx *zc, uint8_t *dst, size_t cap, const uint8_t *raw,
			   const uint32_t len[MT_EVB_STREAMS], size_t n)
{
	ZSTD_outBuffer out = {dst, cap, 0};
	size_t left;

	if (ZSTD_isError(ZSTD_CCtx_reset(zc, ZSTD_reset_session_only)) ||
	    ZSTD_isError(ZSTD_CCtx_setPledgedSrcSize(zc, n)))
		return 0;
	for (int k = 0; k < MT_EVB_STREAMS; k++) {
		ZSTD_inBuffer in = {raw, len[k], 0};
		ZSTD_EndDirective end = k + 1 < MT_EVB_STREAMS ? ZSTD_e_flush : ZSTD_e_end;

		raw += len[k];
		do {
			left = ZSTD_compressStream2(zc, &out, &in, end);
			if (ZSTD_isError(left))
				return 0;
		} while (left && out.pos < out.size);
		if (left)
			return 0;
	}
	return out.pos;
}

/* ---- decoding ------------------------------------------------------------------------------- */

/*
 * The streams an entry is read from, and how it went. The cursor is read and advanced in place,
 * not copied in and out for each entry: the many-stream caller's cursor lives with its reader
 * and is undone only when an entry fails. In a version-3 block every stream is the first one.
 */
struct dec {
	struct mt_evblock_cursor *c;
	unsigned int mask;	    /* MT_EVB_STREAMS - 1, or 0 for one stream */
	enum mt_evblock_result res; /* MT_EVB_EVENT while all is well */
	bool threads;		    /* a compressed block: addresses by thread */
	int freed_bin;		    /* the class of the allocation the event freed, or -1 */
	/*
	 * Whether each byte read is checked against its stream's end. Not in
	 * mt_evblock_get_split_events(), whose streams may be read past their ends: there a field
	 * reads on after an error, as far as it would at most, and the event is checked whole.
	 */
	bool checked;
	/* Unchecked: the streams' cursors and ends, and whether one was read past its end. */
	const uint8_t *p[MT_EVB_STREAMS];
	const uint8_t *end[MT_EVB_STREAMS];
	bool past;
};

_Static_assert(!(MT_EVB_STREAMS & (MT_EVB_STREAMS - 1)), "stream numbers are masked");

static inline uint64_t unzigzag64(uint64_t v)
{
	return (v >> 1) ^ (0 - (v & 1));
}

static inline uint32_t unzigzag32(uint32_t v)
{
	return (v >> 1) ^ (0 - (v & 1));
}

STEP uint8_t get_byte(struct dec *d, enum mt_evblock_stream k)
{
	struct mt_evblock_cursor *c = d->c;
	unsigned int i = k & d->mask;

	if (!d->checked) {
		uint8_t b = *d->p[i]++;

		d->past |= d->p[i] > d->end[i];
		return b;
	}
	if (d->res != MT_EVB_EVENT)
		return 0;
	if (!c->left[i]) {
		d->res = MT_EVB_SHORT;
		return 0;
	}
	c->left[i]--;
	return *c->p[i]++;
}

/* get_varint() unchecked: its bytes read first, its stream's end looked at once after. */
STEP uint64_t get_varint_unchecked(struct dec *d, enum mt_evblock_stream k)
{
	unsigned int s = k & d->mask;
	const uint8_t *p = d->p[s];
	uint64_t v = 0;

	for (unsigned int i = 0; i < VARINT_MAX; i++) {
		uint8_t b = p[i];

		if (i == VARINT_MAX - 1 && b > 1)
			break;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80)) {
			d->p[s] = p + i + 1;
			d->past |= d->p[s] > d->end[s];
			return v;
		}
	}
	d->res = MT_EVB_CORRUPT;
	return 0;
}

/* A varint of at most 64 bits; more (an eleventh byte, or bits past 64) is corrupt. */
STEP uint64_t get_varint(struct dec *d, enum mt_evblock_stream k)
{
	uint64_t v = 0;
	unsigned int i;

	if (!d->checked)
		return get_varint_unchecked(d, k);
	for (i = 0; i < VARINT_MAX && d->res == MT_EVB_EVENT; i++) {
		uint8_t b = get_byte(d, k);

		if (i == VARINT_MAX - 1 && b > 1)
			break;
		v |= (uint64_t)(b & 0x7f) << (7 * i);
		if (!(b & 0x80))
			return v;
	}
	if (d->res == MT_EVB_EVENT)
		d->res = MT_EVB_CORRUPT;
	return 0;
}

/* A varint that must fit in max. */
STEP uint64_t get_bounded(struct dec *d, enum mt_evblock_stream k, uint64_t max)
{
	uint64_t v = get_varint(d, k);

	if (v > max && d->res == MT_EVB_EVENT)
		d->res = MT_EVB_CORRUPT;
	return v;
}

/* An entry other than an event: its type, its length, and that many bytes, all passed over. */
STEP uint32_t skip_escape(struct dec *d, struct mt_evblock_state *s)
{
	uint32_t type = (uint32_t)get_bounded(d, MT_EVB_S_REST, UINT32_MAX);
	uint64_t len = get_bounded(d, MT_EVB_S_REST, UINT32_MAX);
	unsigned int i = MT_EVB_S_REST & d->mask;

	if (d->res != MT_EVB_EVENT)
		return 0;
	if (len > d->c->left[i]) {
		d->res = MT_EVB_SHORT;
		return 0;
	}
	s->escape_data = d->c->p[i];
	s->escape_len = (uint32_t)len;
	d->c->p[i] += len;
	d->c->left[i] -= len;
	return type;
}

/* A time difference, as put_time() wrote it. */
STEP uint64_t get_time(struct dec *d, const struct mt_evblock_state *s)
{
	uint64_t zz;

	if (!s->columns)
		return get_varint(d, MT_EVB_S_TS);
	zz = get_byte(d, MT_EVB_S_TS);
	zz |= (uint64_t)get_byte(d, MT_EVB_S_T1) << 8;
	return zz | get_bounded(d, MT_EVB_S_T2, UINT64_MAX >> 16) << 16;
}

/*
 * An event's time: the previous one's and its difference; in a microsecond block, the first
 * nanosecond of that microsecond, which must be one of 2^64 ns (else remember() would not find
 * the same microsecond in it).
 */
STEP uint64_t get_ts(struct dec *d, const struct mt_evblock_state *s)
{
	uint64_t t = s->ts + unzigzag64(get_time(d, s));

	if (!s->micro)
		return t;
	if (t > UINT64_MAX / MT_ARTIFACT_MICRO_NS && d->res == MT_EVB_EVENT)
		d->res = MT_EVB_CORRUPT;
	return t * MT_ARTIFACT_MICRO_NS;
}

/*
 * An address, as put_addr() wrote it, of an event of size bytes. The state is not changed: the
 * class of an allocation freed goes to d->freed_bin, for remember().
 */
STEP uint64_t get_addr(struct dec *d, const struct mt_evblock_state *s, uint32_t tid, uint64_t size)
{
	uint64_t back = 0, n = 0;
	int b = size ? size_bin(size) : -1;

	d->freed_bin = -1;
	if (s->columns && !size) {
		back = get_bounded(d, MT_EVB_S_REF, MT_EVB_REFS);
		n = s->allocs < MT_EVB_REFS ? s->allocs : MT_EVB_REFS;
	} else if (s->columns && b >= 0 && s->bin_n[b]) {
		back = get_bounded(d, MT_EVB_S_REF, MT_EVB_BIN_DEPTH);
		n = s->bin_n[b];
	}
	if (back > n && d->res == MT_EVB_EVENT)
		d->res = MT_EVB_CORRUPT;
	if (!back || d->res != MT_EVB_EVENT)
		return addr_base(s, tid, d->threads) + unzigzag64(get_varint(d, MT_EVB_S_ADDR));
	if (size)
		return s->bin_addr[b][s->bin_n[b] - back];
	d->freed_bin = s->alloc_bin[(s->allocs - back) % MT_EVB_REFS] - 1;
	return s->alloc_addr[(s->allocs - back) % MT_EVB_REFS];
}

STEP void get_event(struct dec *d, uint8_t tag, const struct mt_evblock_state *s,
		    struct mt_event *e)
{
	uint8_t x = tag & MT_EVB_EXT ? get_byte(d, MT_EVB_S_TAG) : 0;

	if (x & ~MT_EVB_X_KNOWN)
		d->res = MT_EVB_CORRUPT;
	memset(e, 0, sizeof(*e));
	e->kind = tag & MT_EVB_KIND_MASK;
	if (e->kind == MT_EVB_KIND_BYTE)
		e->kind = get_byte(d, MT_EVB_S_TAG);
	e->flags = tag & MT_EVB_FAILED ? MT_EV_FAILED : 0;
	e->ts_ns = get_ts(d, s);
	e->pid = x & MT_EVB_X_PID ? (uint32_t)get_bounded(d, MT_EVB_S_REST, UINT32_MAX) : s->pid;
	e->tid = x & MT_EVB_X_TID
		     ? e->pid + unzigzag32((uint32_t)get_bounded(d, MT_EVB_S_REST, UINT32_MAX))
		     : s->tid;
	e->file_id =
	    x & MT_EVB_X_FILE ? (uint16_t)get_bounded(d, MT_EVB_S_REST, UINT16_MAX) : s->file_id;
	/*
	 * In a columnar block the size first, from its stream: an allocation's class says what its
	 * address is. In one stream, the address comes first.
	 */
	if (s->columns && (tag & MT_EVB_SIZE))
		e->size = get_varint(d, MT_EVB_S_SIZE);
	e->addr = get_addr(d, s, e->tid, e->size);
	if (!s->columns && (tag & MT_EVB_SIZE))
		e->size = get_varint(d, MT_EVB_S_SIZE);
	if (x & MT_EVB_X_OLD_ADDR)
		e->old_addr = e->addr + unzigzag64(get_varint(d, MT_EVB_S_REST));
	if (x & MT_EVB_X_ALIGN)
		e->align = (uint32_t)get_bounded(d, MT_EVB_S_REST, UINT32_MAX);
	if (x & MT_EVB_X_FLAGS)
		e->flags |= (uint8_t)(get_bounded(d, MT_EVB_S_REST, 0x7f) << 1);
	if (x & MT_EVB_X_STACK)
		e->stack_id = (uint32_t)get_bounded(d, MT_EVB_S_REST, UINT32_MAX);
}

/* Decode one entry from d's streams; s is updated only when it is a whole event. */
STEP enum mt_evblock_result get_entry(struct dec *d, struct mt_evblock_state *s, struct mt_event *e)
{
	uint8_t tag = get_byte(d, MT_EVB_S_TAG);

	if (d->res != MT_EVB_EVENT)
		return d->res;
	if ((tag & MT_EVB_KIND_MASK) == MT_EVB_KIND_ESCAPE) {
		/* The other bits of an escape's tag are reserved. */
		if (tag)
			return MT_EVB_CORRUPT;
		uint32_t type = skip_escape(d, s);

		if (d->res != MT_EVB_EVENT)
			return d->res;
		s->escape_type = type;
		/* Whole first, so that a cut entry is short whatever its type. */
		return type & MT_EVB_ESC_REQUIRED ? MT_EVB_REQUIRED : MT_EVB_SKIPPED;
	}
	get_event(d, tag, s, e);
	if (d->res != MT_EVB_EVENT)
		return d->res;
	remember(s, e, d->threads, d->freed_bin);
	return MT_EVB_EVENT;
}

enum mt_evblock_result mt_evblock_get(struct mt_evblock_state *s, const uint8_t *p, size_t left,
				      struct mt_event *e, size_t *used)
{
	struct mt_evblock_cursor c;
	struct dec d = {&c, 0, MT_EVB_EVENT, false, -1, true, {NULL}, {NULL}, false};
	enum mt_evblock_result res;

	/* Only stream 0 is read: every stream number is masked to it. */
	c.p[0] = p;
	c.left[0] = left;
	res = get_entry(&d, s, e);
	if (res == MT_EVB_EVENT || res == MT_EVB_SKIPPED || res == MT_EVB_REQUIRED)
		*used = left - c.left[0];
	return res;
}

enum mt_evblock_result mt_evblock_get_split(struct mt_evblock_state *s, struct mt_evblock_cursor *c,
					    struct mt_event *e)
{
	struct dec d = {c, MT_EVB_STREAMS - 1, MT_EVB_EVENT, true, -1, true, {NULL}, {NULL}, false};
	const uint8_t *start[MT_EVB_STREAMS];
	enum mt_evblock_result res;
	int k;

	/* Only the pointers: what a failed entry took from a stream is where they now are. */
	for (k = 0; k < MT_EVB_STREAMS; k++)
		start[k] = c->p[k];
	res = get_entry(&d, s, e);
	if (res == MT_EVB_EVENT || res == MT_EVB_SKIPPED || res == MT_EVB_REQUIRED)
		return res;
	for (k = 0; k < MT_EVB_STREAMS; k++) {
		c->left[k] += (size_t)(c->p[k] - start[k]);
		c->p[k] = start[k];
	}
	return res;
}

size_t mt_evblock_get_split_events(struct mt_evblock_state *s, struct mt_evblock_cursor *c,
				   struct mt_event *e, size_t max)
{
	struct dec d = {NULL, MT_EVB_STREAMS - 1, MT_EVB_EVENT, true, -1, false, {NULL}, {NULL},
			false};
	const uint8_t *start[MT_EVB_STREAMS];
	size_t n;
	int k;

	for (k = 0; k < MT_EVB_STREAMS; k++) {
		d.p[k] = c->p[k];
		d.end[k] = c->p[k] + c->left[k];
	}
	for (n = 0; n < max && d.p[MT_EVB_S_TAG] < d.end[MT_EVB_S_TAG]; n++) {
		uint8_t tag = *d.p[MT_EVB_S_TAG];

		if ((tag & MT_EVB_KIND_MASK) == MT_EVB_KIND_ESCAPE)
			break;
		for (k = 0; k < MT_EVB_STREAMS; k++)
			start[k] = d.p[k];
		d.p[MT_EVB_S_TAG]++;
		d.past = false;
		get_event(&d, tag, s, &e[n]);
		if (d.res != MT_EVB_EVENT || d.past) {
			/* Left whole for mt_evblock_get_split() to say what it is. */
			for (k = 0; k < MT_EVB_STREAMS; k++)
				d.p[k] = start[k];
			break;
		}
		remember(s, &e[n], true, d.freed_bin);
	}
	for (k = 0; k < MT_EVB_STREAMS; k++) {
		c->left[k] -= (size_t)(d.p[k] - c->p[k]);
		c->p[k] = d.p[k];
	}
	return n;
}
