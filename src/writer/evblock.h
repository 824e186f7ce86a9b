/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event block codec (docs/FORMAT.md, "Event block"): events as deltas against the previous
 * event of the same block, in LEB128 varints. A block starts from a zero state, so each block
 * decodes on its own: a file cut inside a block loses no event of the blocks before it.
 */
#ifndef MT_EVBLOCK_H
#define MT_EVBLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/memtrack.h"

/*
 * The largest encoding of one event: tag, extension, kind, the flags byte, then ten varints at
 * their longest (67 bytes).
 */
#define MT_EVBLOCK_EVENT_MAX 72u

/* Tag byte of an entry. */
#define MT_EVB_KIND_MASK    0x1fu
#define MT_EVB_KIND_ESCAPE  0u	  /* kind 0: an entry other than an event (type, length, bytes) */
#define MT_EVB_ESC_REQUIRED 1u	  /* escape types with bit 0 set must be understood, not skipped */
#define MT_EVB_KIND_BYTE    0x1fu /* kind 31: the kind follows in a byte of its own */
#define MT_EVB_FAILED	    0x20u /* MT_EV_FAILED */
#define MT_EVB_SIZE	    0x40u /* a size follows (else it is 0) */
#define MT_EVB_EXT	    0x80u /* an extension byte follows */

/* Extension byte: which of the rarely changing fields follow. */
#define MT_EVB_X_PID	  0x01u /* pid changed */
#define MT_EVB_X_TID	  0x02u /* tid changed */
#define MT_EVB_X_FILE	  0x04u /* file_id changed */
#define MT_EVB_X_OLD_ADDR 0x08u /* old_addr is not 0 */
#define MT_EVB_X_ALIGN	  0x10u /* align is not 0 */
#define MT_EVB_X_FLAGS	  0x20u /* flags has bits other than MT_EV_FAILED */
#define MT_EVB_X_STACK	  0x40u /* stack_id is not 0 (version 4) */
#define MT_EVB_X_KNOWN	  0x7fu

/*
 * The fields of a compressed block's entries (version 5) are kept in five streams, one after the
 * other in the block, so that the general-purpose compressor finds each field's repeats next to
 * each other: the tags (tag, extension and kind bytes), the time differences, the address
 * differences, the sizes, and the rest (pid, tid, file, old address, align, flags, stack id, and
 * an escape's type, length and bytes). A version-3 block has them all in one.
 */
enum mt_evblock_stream {
	MT_EVB_S_TAG,
	MT_EVB_S_TS,
	MT_EVB_S_ADDR,
	MT_EVB_S_SIZE,
	MT_EVB_S_REST,
	/*
	 * Version 6's columns (a columnar block, MT_EVB_COLUMNS): stream 1 then holds the low byte
	 * of each zigzag time difference, these its second byte and the rest of it, and the
	 * references of the events without a size to the block's allocations.
	 */
	MT_EVB_S_T1,
	MT_EVB_S_T2,
	MT_EVB_S_REF,
	MT_EVB_STREAMS
};

#define MT_EVB_STREAMS_V5 5 /* a version-5 block's streams: the first five */

/*
 * The most bytes one event puts in each stream (together MT_EVBLOCK_EVENT_MAX at most, in
 * either layout: a columnar time is 1 + 1 + 7 bytes, a referenced address 5 and none).
 */
#define MT_EVB_STREAM_MAX                                                                          \
	{                                                                                          \
		3u, 10u, 10u, 10u, 34u, 1u, 7u, 5u                                                 \
	}

/* Where the next bytes of each stream go (encoding). */
struct mt_evblock_split {
	uint8_t *p[MT_EVB_STREAMS];
};

/* The bytes of each stream not decoded yet (decoding). */
struct mt_evblock_cursor {
	const uint8_t *p[MT_EVB_STREAMS];
	size_t left[MT_EVB_STREAMS];
};

/* Threads whose last address a compressed block's state keeps (docs/FORMAT.md). */
#define MT_EVB_THREADS	 8u
/*
 * A columnar block's allocations that an event without a size may name as its address: the
 * last MT_EVB_REFS of the block (docs/FORMAT.md); the encoder finds them in a table of
 * MT_EVB_REF_SLOTS slots by address, where a newer allocation takes an older one's slot.
 */
#define MT_EVB_REFS	 4096u
#define MT_EVB_REF_SLOTS 16384u /* 4 a reference: 1 in 9 of the window lost to a shared slot */
/*
 * A columnar block's freed blocks by size class (docs/FORMAT.md): the last MT_EVB_BIN_DEPTH
 * addresses freed in each of MT_EVB_BINS classes of 16 bytes, which an allocation of the class
 * may name instead of its address (an allocator hands the block it was just given back out).
 */
#define MT_EVB_BINS	 64u
#define MT_EVB_BIN_DEPTH 8u

/*
 * What an entry is decoded against: the previous event of the block; in a compressed block, also
 * the last address of each of the last MT_EVB_THREADS threads, the one an address differs from.
 */
struct mt_evblock_state {
	uint64_t ts; /* the previous event's time, in the block's unit (micro: us, else ns) */
	uint64_t addr;
	uint32_t pid;
	uint32_t tid;
	uint16_t file_id;
	uint32_t thread_tid[MT_EVB_THREADS];
	uint64_t thread_addr[MT_EVB_THREADS];
	uint32_t threads;	    /* slots taken */
	uint32_t thread_next;	    /* the slot a new thread takes once all are */
	bool columns;		    /* a columnar block (version 6): planes of times, references */
	bool micro;		    /* its times in microseconds (version 7), not nanoseconds */
	uint32_t allocs;	    /* events with a size so far in the block */
	uint8_t bin_n[MT_EVB_BINS]; /* addresses in each class, the newest last */
	uint64_t bin_addr[MT_EVB_BINS][MT_EVB_BIN_DEPTH];
	uint32_t escape_type; /* of the last escape entry */
	/* Its bytes, where the entries were decoded from: valid as long as those are. */
	const uint8_t *escape_data;
	uint32_t escape_len;
	/*
	 * A columnar block's last MT_EVB_REFS allocations: allocation n at n % MT_EVB_REFS, read
	 * only below allocs, so never cleared. The slots are cleared by mt_evblock_reset_columns()
	 * only: the rest of the state is all that a plain or version-5 block needs.
	 */
	uint64_t alloc_addr[MT_EVB_REFS];
	uint8_t alloc_bin[MT_EVB_REFS]; /* its size class plus one, 0 for none */
	/* The encoder's: the number of the last allocation of an address in its hash's slot. */
	uint64_t slot_addr[MT_EVB_REF_SLOTS];
	uint32_t slot_alloc[MT_EVB_REF_SLOTS];
};

/* The state at the start of a block: of a version-5 (or plain) block. */
void mt_evblock_reset(struct mt_evblock_state *s);
/* The state at the start of a columnar block (version 6, docs/FORMAT.md). */
void mt_evblock_reset_columns(struct mt_evblock_state *s);
/*
 * The same, times in microseconds (version 7): an event's time is encoded as the microsecond it
 * falls in, and decoded as that microsecond's first nanosecond.
 */
void mt_evblock_reset_columns_us(struct mt_evblock_state *s);

/* Encode e at p, which has room for MT_EVBLOCK_EVENT_MAX bytes. Returns the bytes written. */
size_t mt_evblock_put(struct mt_evblock_state *s, uint8_t *p, const struct mt_event *e);

/*
 * The most bytes an escape entry adds to its data: its tag, its type and its length (the type
 * and the length at most 5 bytes each).
 */
#define MT_EVB_ESCAPE_HEAD 11u

/*
 * An escape entry of type carrying len bytes, at p: its head. Returns where its bytes go, which
 * the caller writes.
 */
uint8_t *mt_evblock_put_escape(uint8_t *p, uint32_t type, uint32_t len);
/* The same into the streams of out: the tag into stream 0, the rest into stream 4, which is
 * advanced past the len bytes that the caller writes at the pointer returned. */
uint8_t *mt_evblock_put_escape_split(struct mt_evblock_split *out, uint32_t type, uint32_t len);

/* Encode e into the streams of out, each advanced past what it received. */
void mt_evblock_put_split(struct mt_evblock_state *s, struct mt_evblock_split *out,
			  const struct mt_event *e);

/*
 * The n bytes of raw, a columnar block's streams one after the other (their lengths len), as one
 * zstd frame at dst (cap bytes) at zc's level, each stream ending a zstd block of its own, so
 * that each gets its own literal code. Its length, or 0 when zstd fails (only its allocations
 * can, with cap at least ZSTD_compressBound(n) plus 8 bytes a stream for the blocks' headers).
 */
struct ZSTD_CCtx_s;
size_t mt_evblock_compress(struct ZSTD_CCtx_s *zc, uint8_t *dst, size_t cap, const uint8_t *raw,
			   const uint32_t len[MT_EVB_STREAMS], size_t n);

enum mt_evblock_result {
	MT_EVB_EVENT = 1,     /* *e holds the next event */
	MT_EVB_SKIPPED = 2,   /* an entry of a type this reader does not know, passed over */
	MT_EVB_SHORT = 0,     /* the bytes end inside the entry */
	MT_EVB_CORRUPT = -1,  /* not an entry this format allows */
	MT_EVB_REQUIRED = -2, /* an escape to be understood, of a type this reader does not know */
};

/*
 * Decode the entry at p (left bytes available). On MT_EVB_EVENT and MT_EVB_SKIPPED *used is the
 * entry's length; on MT_EVB_SHORT and MT_EVB_CORRUPT nothing is consumed and s is unchanged; on
 * MT_EVB_SKIPPED and MT_EVB_REQUIRED s->escape_type, s->escape_data and s->escape_len say which
 * type and which bytes. Version 3 defines no escape type: every escape
 * is skipped or, with bit 0 of its type set, required.
 */
enum mt_evblock_result mt_evblock_get(struct mt_evblock_state *s, const uint8_t *p, size_t left,
				      struct mt_event *e, size_t *used);

/*
 * The same for the entry at c, whose streams are advanced past it on MT_EVB_EVENT and
 * MT_EVB_SKIPPED (and left unchanged otherwise). MT_EVB_SHORT: a stream ends inside the entry.
 */
enum mt_evblock_result mt_evblock_get_split(struct mt_evblock_state *s, struct mt_evblock_cursor *c,
					    struct mt_event *e);

/*
 * Bytes past the end of each stream that mt_evblock_get_split_events() may read (and then not
 * use): more than one event reads from a stream.
 */
#define MT_EVB_READ_PAST MT_EVBLOCK_EVENT_MAX

/*
 * Decode the events at c into e, at most max of them, as mt_evblock_get_split() would one by
 * one, without checking each byte against its stream's end: an event is checked whole, after.
 * Each stream must be followed by MT_EVB_READ_PAST readable bytes (the streams one after the
 * other in one buffer, and as many after the last). Stops before an entry that is not a whole
 * good event, and leaves it to mt_evblock_get_split(). Returns the events decoded; c is
 * advanced past them.
 */
size_t mt_evblock_get_split_events(struct mt_evblock_state *s, struct mt_evblock_cursor *c,
				   struct mt_event *e, size_t max);

#endif
