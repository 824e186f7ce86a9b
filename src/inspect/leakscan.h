/* SPDX-License-Identifier: GPL-2.0 */
/*
 * A leak scan of a stopped process, as memcheck's --leak-check=full does it (docs/LEAKS.md): from
 * its roots (the registers given, each thread's stack from its stack pointer up, the writable
 * private mappings less the blocks and the free memory: data, bss, TLS, anonymous memory), through
 * the live blocks given, every block gets its class (enum mt_leak_class, writer/artifact.h). Memory
 * is read with process_vm_readv; what cannot be read is counted, never guessed.
 */
#ifndef MT_LEAKSCAN_H
#define MT_LEAKSCAN_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>
#include <sys/user.h>

#include "inspect/livetable.h"

struct mt_leak_stats {
	uint32_t threads;
	uint32_t regions;
	uint32_t unreadable_regions;
	uint64_t unreadable_bytes;
	uint64_t scanned_bytes;
};

/* What the allocator holds of a process: its live blocks and its free memory. */
struct mt_leak_heap {
	const struct mt_live_block *blocks; /* sorted by address, not overlapping */
	size_t n;
	const struct mt_live_block *freed; /* sorted by address (mt_livetable_freed) */
	size_t n_freed;
	/*
	 * The allocator keeps its books among its blocks (jemalloc's extent records and thread
	 * caches point at blocks' starts): every anonymous mapping that holds a block, and [heap],
	 * is the allocator's, none of it a root.
	 */
	bool books_apart;
};

/*
 * Classify the blocks of h of process pid, whose n_regs threads are stopped with the registers
 * regs: cls[i] is block i's class. The roots are the registers, the stacks and every writable
 * private mapping less h's blocks and free memory. 0 or a negative errno (out of memory,
 * /proc/PID/smaps unreadable).
 */
int mt_leak_scan(pid_t pid, const struct mt_leak_heap *h, const struct user_regs_struct *regs,
		 size_t n_regs, uint8_t *cls, struct mt_leak_stats *st);

/* The block of b whose start is ptr or whose bytes hold it: its index, or -1. */
long mt_leak_lookup(const struct mt_live_block *b, size_t n, uint64_t ptr);

#endif
