// SPDX-License-Identifier: GPL-2.0
/*
 * The unwinder over unwind tables (src/unwind/unwind_walk.h). Per frame: find the mapping of pc,
 * turn pc into the file's link-time address, binary-search the row (the rule row of a wide pair,
 * bpf/unwind_row.h), compute the CFA from the row's rule, read the return address at CFA - 8 and
 * the caller's rbp where the row says. A return address is looked up one byte back (the call may
 * be a function's last instruction); the pc a signal frame restores is exact and is looked up as
 * is.
 */
#include <errno.h>
#include <stdbool.h>

#include "unwind/unwind_walk.h"

static const struct mt_unwind_map *map_of(const struct mt_unwind_map *maps, size_t n, uint64_t pc)
{
	size_t lo = 0, hi = n;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (pc < maps[mid].start)
			hi = mid;
		else if (pc >= maps[mid].end)
			lo = mid + 1;
		else
			return &maps[mid];
	}
	return NULL;
}

/* The row for pc in m's file; NULL when the file has no table (frame pointer). */
static const struct mt_unwind_row *row_of(const struct mt_unwind_map *m, uint64_t pc, bool exact)
{
	const struct mt_unwind_table *t = m->table;
	uint64_t addr;

	if (!t || !t->n_rows)
		return NULL;
	addr = pc - m->start + m->offset - t->exec_offset + t->exec_vaddr - (exact ? 0 : 1);
	return mt_unwind_table_find(t, addr);
}

/* The kernel's signal frame: the interrupted registers are in the ucontext at rsp. */
static int step_signal(struct mt_unwind_regs *r, mt_unwind_read_fn read, void *arg)
{
	uint64_t rip, rsp, rbp;

	if (read(arg, r->rsp + MT_SIGFRAME_RIP, &rip) ||
	    read(arg, r->rsp + MT_SIGFRAME_RSP, &rsp) || read(arg, r->rsp + MT_SIGFRAME_RBP, &rbp))
		return -EFAULT;
	r->rip = rip;
	r->rsp = rsp;
	r->rbp = rbp;
	return 0;
}

/* A frame with a frame pointer: the caller's rbp at rbp, the return address above it. */
static int step_frame_pointer(struct mt_unwind_regs *r, mt_unwind_read_fn read, void *arg)
{
	uint64_t ra, rbp;

	if (!r->rbp || read(arg, r->rbp + 8, &ra) || read(arg, r->rbp, &rbp))
		return -EFAULT;
	r->rsp = r->rbp + 16;
	r->rip = ra;
	r->rbp = rbp;
	return 0;
}

/* One step by row, whose CFA offset is off. Returns 0, 1 at the outermost frame, or -errno. */
static int step_row(const struct mt_unwind_row *row, uint32_t off, struct mt_unwind_regs *r,
		    mt_unwind_read_fn read, void *arg)
{
	uint64_t cfa, ra, rbp = r->rbp;

	switch (MT_UNW_CFA(row)) {
	case MT_CFA_RSP:
		cfa = r->rsp + off;
		break;
	case MT_CFA_RBP:
		cfa = r->rbp + off;
		break;
	case MT_CFA_PLT:
		cfa = r->rsp + row->cfa_off + ((r->rip & 15) >= (uint64_t)row->rbp_off ? 8 : 0);
		break;
	case MT_CFA_NONE:
		return step_frame_pointer(r, read, arg);
	case MT_CFA_END:
		return 1;
	default:
		return -ENOENT;
	}
	if (read(arg, cfa - 8, &ra))
		return -EFAULT;
	if (MT_UNW_RBP(row) == MT_RBP_AT_CFA && read(arg, cfa + 8 * row->rbp_off, &rbp))
		return -EFAULT;
	if (MT_UNW_RBP(row) == MT_RBP_UNKNOWN)
		rbp = 0; /* a frame-pointer step above this one stops rather than guess */
	r->rip = ra;
	r->rsp = cfa;
	r->rbp = rbp;
	return 0;
}

size_t mt_unwind_walk(const struct mt_unwind_map *maps, size_t n_maps,
		      const struct mt_unwind_regs *regs, mt_unwind_read_fn read, void *arg,
		      uint64_t *pcs, size_t max, enum mt_unwind_stop *why)
{
	struct mt_unwind_regs r = *regs;
	bool exact = true; /* the first pc, and a pc a signal frame restored */
	size_t n = 0;

	*why = MT_UNWIND_TRUNCATED;
	while (n < max) {
		const struct mt_unwind_map *m = map_of(maps, n_maps, r.rip);
		const struct mt_unwind_row *row;
		int err;

		pcs[n++] = r.rip;
		if (!m) {
			*why = MT_UNWIND_LOST;
			return n;
		}
		row = row_of(m, r.rip, exact);
		exact = row && MT_UNW_CFA(row) == MT_CFA_SIGNAL;
		if (exact)
			err = step_signal(&r, read, arg);
		else if (row)
			err = step_row(row, mt_unwind_table_cfa_off(m->table, row), &r, read, arg);
		else
			err = step_frame_pointer(&r, read, arg);
		if (err) {
			*why = err > 0 ? MT_UNWIND_COMPLETE : MT_UNWIND_LOST;
			return n;
		}
		if (!r.rip) {
			*why = MT_UNWIND_COMPLETE; /* a zero return address ends a stack too */
			return n;
		}
	}
	return n;
}
