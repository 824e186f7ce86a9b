// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's software breakpoints in the served processes (--gdb, docs/GDB.md): int3 bytes memtrack
 * writes itself, an int1 where one of memtrack's uprobes has the kernel's int3 already (struct
 * gdb_break); and the int3 of a uprobe that is no longer the kernel's, undone.
 */

#include <errno.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "gdbtarget/gdbtarget_int.h"

struct gdb_break *gdbt_find_break(struct gdbt_proc *p, uint64_t addr)
{
	for (size_t i = 0; i < p->n_breaks; i++)
		if (p->breaks[i].addr == addr)
			return &p->breaks[i];
	return NULL;
}

int gdbt_op_insert_breakpoint(void *ctx, uint64_t addr, unsigned int kind)
{
	struct mt_gdbt *g = ctx;
	struct gdbt_proc *p = gdbt_cur(g);
	struct gdb_break b = {.addr = addr};
	const struct probe_byte *probe;
	struct gdb_break *grown;
	uint8_t int3 = GDB_INT3, int1 = GDB_INT1;
	ssize_t n;
	int err;

	(void)kind;
	if (!p)
		return -ESRCH;
	if (gdbt_find_break(p, addr))
		return 0;
	grown = realloc(p->breaks, (p->n_breaks + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	p->breaks = grown;
	gdbt_know_probes(g, p);
	probe = gdbt_find_probe(p, addr);
	if (probe) {
		b.orig = probe->orig;
		b.at_probe = true;
		err = gdbt_write_raw(p->pid, addr, &int1, 1);
	} else {
		n = gdbt_read_raw(p->pid, addr, &b.orig, 1);
		err = n == 1 ? gdbt_write_raw(p->pid, addr, &int3, 1) : n < 0 ? (int)n : -EFAULT;
	}
	if (err)
		return err;
	p->breaks[p->n_breaks++] = b;
	return 0;
}

uint8_t gdbt_under(const struct gdb_break *b)
{
	return b->at_probe ? GDB_INT3 : b->orig;
}

int gdbt_remove_break(struct gdbt_proc *p, struct gdb_break *b)
{
	uint8_t byte = gdbt_under(b);
	int err = gdbt_write_raw(p->pid, b->addr, &byte, 1);

	*b = p->breaks[--p->n_breaks];
	return err;
}

int gdbt_op_remove_breakpoint(void *ctx, uint64_t addr, unsigned int kind)
{
	struct gdbt_proc *p = gdbt_cur(ctx);
	struct gdb_break *b = p ? gdbt_find_break(p, addr) : NULL;

	(void)kind;
	return b ? gdbt_remove_break(p, b) : 0;
}

/*
 * An int3 of one of memtrack's uprobes that trapped to the thread instead of the kernel: the
 * page was copied when gdb's breakpoints were written into it, and the probe is no longer the
 * kernel's there (it was detached since, the copy kept its int3). The original byte goes back,
 * the pc onto it: the program runs as without memtrack's probe there, never given the SIGTRAP.
 */
bool gdbt_stray_probe(struct mt_gdbt *g, struct mt_gdbt_thread *t, const siginfo_t *si)
{
	struct gdbt_proc *p = gdbt_proc_of_thread(g, t);
	struct user_regs_struct r;
	const struct probe_byte *probe;

	if (!p || si->si_signo != SIGTRAP || si->si_code != SI_KERNEL ||
	    ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return false;
	gdbt_know_probes(g, p);
	probe = gdbt_find_probe(p, r.rip - 1);
	if (!probe || gdbt_find_break(p, r.rip - 1) ||
	    gdbt_write_raw(p->pid, probe->addr, &probe->orig, 1) < 0)
		return false;
	r.rip--;
	return ptrace(PTRACE_SETREGS, t->tid, 0, &r) == 0;
}
