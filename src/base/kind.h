/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What an allocator call of each kind (enum mt_kind, bpf/memtrack.h) does to blocks, in one place
 * for everything that replays events: the aggregation and CodSpeed's artifact.
 */
#ifndef MT_KIND_H
#define MT_KIND_H

#include <stdbool.h>
#include <stdint.h>

enum mt_kind_effect {
	MT_KIND_NONE = 0, /* not an allocator call: a lifecycle record, or out of range */
	MT_KIND_ALLOC,	  /* makes a block */
	MT_KIND_REALLOC,  /* may move a block, giving the old one up */
	MT_KIND_FREE,	  /* releases a block */
	/*
	 * Allocates in a collected heap (Go's): counted with its size, no address, never freed by
	 * a call: no block is made, and live bytes never include it.
	 */
	MT_KIND_COLLECTED,
};

enum mt_kind_effect mt_kind_effect(uint8_t kind);

/*
 * An allocator function whose calls are counted, not recorded (enum mt_unrecorded, the size of
 * an MT_K_UNRECORDED event): its name, or NULL for a number this version does not know.
 */
const char *mt_unrecorded_name(uint64_t fn);
/*
 * Whether fn frees a whole heap at once (the blocks it frees stay live in the figures), rather
 * than hand out a block that the figures miss.
 */
bool mt_unrecorded_frees_heap(uint64_t fn);

#endif
