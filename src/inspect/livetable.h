/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The live blocks of every traced process, kept by the supervisor for --leaks (docs/LEAKS.md):
 * the event stream replayed as it is drained (the events tap, writer/events.h), so that at a
 * process's exit stop, once the ring is drained, its blocks are exactly those the artifact says
 * are live. It follows the aggregation's rules (src/aggregate/images.h) for what a block is: a
 * fork's child starts with an address space of its own and no blocks (those it inherits are not
 * its allocations), a vfork child allocates in its parent's until it execs, an exec or an exit
 * ends the blocks of the process's own address space.
 */
#ifndef MT_LIVETABLE_H
#define MT_LIVETABLE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/memtrack.h"

struct mt_live_block {
	uint64_t addr;
	uint64_t size;
	uint32_t stack; /* the allocation's stack id, 0: none */
	uint32_t space; /* table-internal: the address space it lives in */
};

struct mt_livetable;

#define MT_LIVE_FILES 8 /* the allocators' files kept per process */

struct mt_livetable *mt_livetable_new(void);
void mt_livetable_free(struct mt_livetable *lt);
/* Replay a batch of the stream. Out of memory, the table is marked inexact and goes on. */
void mt_livetable_events(struct mt_livetable *lt, const struct mt_event *ev, size_t n);
/* Whether the table lost track (out of memory): what it says is not the artifact's truth. */
bool mt_livetable_inexact(const struct mt_livetable *lt);
/* Whether pid runs in its parent's address space (a vfork child before its exec). */
bool mt_livetable_shared(const struct mt_livetable *lt, uint32_t pid);
/*
 * The live blocks of pid's address space, sorted by address, in *out (to free); their count,
 * or a negative errno.
 */
long mt_livetable_blocks(const struct mt_livetable *lt, uint32_t pid, struct mt_live_block **out);
/*
 * The free memory of pid's address space that its blocks left (freed, or moved by a realloc, and
 * not given back to the kernel: livetable.c), sorted by address and overlapping live blocks or
 * one another at times, in *out (to free); their count, or a negative errno.
 */
long mt_livetable_freed(const struct mt_livetable *lt, uint32_t pid, struct mt_live_block **out);
/*
 * The files (their file_id) whose allocator calls made blocks in pid's address space, in ids (room
 * for MT_LIVE_FILES): their count, or -E2BIG when there were more.
 */
long mt_livetable_files(const struct mt_livetable *lt, uint32_t pid, uint16_t *ids);

#endif
