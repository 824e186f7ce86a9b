/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The unwinding algorithm over unwind tables (src/unwind/unwind_table.h), in user space: the
 * reference the BPF unwinder follows step for step (docs/STACKS.md), and what the tests check
 * against libunwind on stopped processes. Memory is read through a callback, so the same code
 * serves a ptrace'd process (process_vm_readv) and any other source.
 */
#ifndef MT_UNWIND_WALK_H
#define MT_UNWIND_WALK_H

#include <stddef.h>
#include <stdint.h>

#include "unwind/unwind_table.h"

struct mt_unwind_regs {
	uint64_t rip, rsp, rbp;
};

/* One executable mapping of the process: [start, end) maps the file from offset. */
struct mt_unwind_map {
	uint64_t start, end, offset;
	const struct mt_unwind_table *table; /* NULL or no rows: unwound by frame pointer */
};

/* Read the 8 bytes at addr into *val; 0 or a negative errno. */
typedef int (*mt_unwind_read_fn)(void *arg, uint64_t addr, uint64_t *val);

/*
 * Unwind from regs: pcs[0] = rip, then each caller's return address (or, past a signal frame, the
 * interrupted pc), at most max. maps are sorted by start. Returns the number of pcs and sets *why.
 */
size_t mt_unwind_walk(const struct mt_unwind_map *maps, size_t n_maps,
		      const struct mt_unwind_regs *regs, mt_unwind_read_fn read, void *arg,
		      uint64_t *pcs, size_t max, enum mt_unwind_stop *why);

#endif
