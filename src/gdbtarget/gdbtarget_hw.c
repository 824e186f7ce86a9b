// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's hardware breakpoints and watchpoints (--gdb, docs/GDB.md): the threads' debug registers
 * (PTRACE_POKEUSER on u_debugreg), the same in every thread, a watched range in aligned pieces
 * of one register each.
 */

#include <errno.h>
#include <stddef.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "gdbtarget/gdbtarget_int.h"

#define DR_OFFSET(i) offsetof(struct user, u_debugreg[i])
#define DR6_HITS     0xfu

/* DR7's bits for a slot: local enable, then RW (00 exec, 01 write, 11 access) and LEN. */
static unsigned long dr7_bits(const struct hw_slot *h, int i)
{
	static const unsigned long len_bits[9] = {[1] = 0, [2] = 1, [4] = 3, [8] = 2};
	unsigned long rw = h->kind == MT_GDB_HW_EXEC ? 0 : h->kind == MT_GDB_HW_WRITE ? 1 : 3;
	unsigned long len = h->kind == MT_GDB_HW_EXEC ? 0 : len_bits[h->len];

	return 1ul << (2 * i) | (rw | len << 2) << (16 + 4 * i);
}

static int poke_dr(pid_t tid, int i, unsigned long v)
{
	if (ptrace(PTRACE_POKEUSER, tid, (void *)DR_OFFSET(i), (void *)v) == 0)
		return 0;
	/* EIO: no debug registers through ptrace here; ESRCH: the thread is going. */
	return errno == EIO || errno == ENODEV ? -EOPNOTSUPP : -errno;
}

/* The slots into a thread's debug registers: DR7 off while the addresses change. */
static int write_hw(const struct mt_gdbt *g, pid_t tid)
{
	unsigned long dr7 = 0;
	int err = poke_dr(tid, 7, 0);

	for (int i = 0; i < GDB_HW_SLOTS && !err; i++) {
		if (!g->hw[i].used)
			continue;
		err = poke_dr(tid, i, g->hw[i].addr);
		dr7 |= dr7_bits(&g->hw[i], i);
	}
	return err ? err : dr7 ? poke_dr(tid, 7, dr7) : 0;
}

int gdbt_apply_hw(struct mt_gdbt *g, struct mt_gdbt_thread *t)
{
	int err;

	if (t->hw_gen == g->hw_gen)
		return 0;
	err = write_hw(g, t->tid);
	if (!err || err == -ESRCH)
		t->hw_gen = g->hw_gen;
	return err == -ESRCH ? 0 : err;
}

/* Every parked thread of the process (all of them while gdb asks) gets the slots now. */
static int apply_hw_all(struct mt_gdbt *g)
{
	struct mt_gdbt_thread *t;
	size_t pos = 0;
	int err = 0;

	g->hw_gen++;
	while (!err && (t = gdbt_next_thread(g, &pos)))
		if (t->parked)
			err = gdbt_apply_hw(g, t);
	return err;
}

/* The largest aligned piece (8, 4, 2, 1 bytes) that starts at addr and fits in len. */
static unsigned int piece(uint64_t addr, uint64_t len)
{
	unsigned int n = 8;

	while (n > 1 && (addr % n || n > len))
		n /= 2;
	return n;
}

static void free_point(struct mt_gdbt *g, enum mt_gdb_hw_kind kind, uint64_t addr, uint64_t len)
{
	for (int i = 0; i < GDB_HW_SLOTS; i++)
		if (g->hw[i].used && g->hw[i].kind == kind && g->hw[i].point_addr == addr &&
		    g->hw[i].point_len == len)
			g->hw[i].used = false;
}

/* A watched range in aligned pieces, one debug register each; -ENOSPC when they do not fit. */
int gdbt_op_insert_hw(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len)
{
	struct mt_gdbt *g = ctx;
	uint64_t at = addr, left = kind == MT_GDB_HW_EXEC ? 1 : len;
	int i = 0, err;

	if (!left)
		return -EINVAL;
	while (left) {
		unsigned int n = kind == MT_GDB_HW_EXEC ? 1 : piece(at, left);

		while (i < GDB_HW_SLOTS && g->hw[i].used)
			i++;
		if (i == GDB_HW_SLOTS) {
			free_point(g, kind, addr, len);
			return -ENOSPC;
		}
		g->hw[i] = (struct hw_slot){true, kind, at, n, addr, len};
		at += n;
		left -= n;
	}
	err = apply_hw_all(g);
	if (err) {
		free_point(g, kind, addr, len);
		apply_hw_all(g);
	}
	return err;
}

int gdbt_op_remove_hw(void *ctx, enum mt_gdb_hw_kind kind, uint64_t addr, size_t len)
{
	struct mt_gdbt *g = ctx;

	free_point(g, kind, addr, len);
	return apply_hw_all(g);
}

bool gdbt_hw_hit(struct mt_gdbt *g, struct mt_gdbt_thread *t, struct mt_gdb_stop *stop)
{
	static const char kinds[] = {[MT_GDB_HW_EXEC] = 'h',
				     [MT_GDB_HW_WRITE] = 'w',
				     [MT_GDB_HW_READ] = 'r',
				     [MT_GDB_HW_ACCESS] = 'a'};
	long dr6;

	errno = 0;
	dr6 = ptrace(PTRACE_PEEKUSER, t->tid, (void *)DR_OFFSET(6), 0);
	if (errno || !(dr6 & DR6_HITS))
		return false;
	ptrace(PTRACE_POKEUSER, t->tid, (void *)DR_OFFSET(6), 0);
	for (int i = 0; i < GDB_HW_SLOTS; i++) {
		if (!(dr6 & (1l << i)) || !g->hw[i].used)
			continue;
		stop->hw = kinds[g->hw[i].kind];
		stop->data_addr = g->hw[i].point_addr;
		return true;
	}
	return false;
}
