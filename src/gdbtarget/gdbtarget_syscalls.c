// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's syscall catchpoints (QCatchSyscalls; --gdb, docs/GDB.md): which syscalls gdb catches,
 * their stops, and the ptrace options of the threads served that they need.
 */

#include <errno.h>
#include <signal.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>

#include "gdbtarget/gdbtarget_int.h"

static bool catches(const struct mt_gdbt *g, unsigned long nr)
{
	return g->catch_every || (nr < GDB_SYSCALLS && (g->catch_nrs[nr / 8] & (1u << nr % 8)));
}

/*
 * A syscall-stop: one of gdb's catchpoints (its entry or its return) when gdb catches that
 * syscall, reported as any other stop (held when the process is being stopped already); else
 * the thread goes on to its next one.
 */
int mt_gdbt_syscall(struct mt_gdbt *g, struct mt_gdbt_thread *t)
{
	struct __ptrace_syscall_info info;
	struct mt_gdb_stop stop = {.kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = t->tid};
	struct user_regs_struct r;
	int err = 0;

	if (!g->catch_syscalls)
		return MT_GDBT_RESUME(0);
	if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, sizeof(info), &info) <= 0 ||
	    ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return errno == ESRCH ? MT_GDBT_LEAVE : -errno;
	if (info.op != PTRACE_SYSCALL_INFO_ENTRY && info.op != PTRACE_SYSCALL_INFO_EXIT)
		return MT_GDBT_RESUME(0);
	if (!catches(g, r.orig_rax))
		return MT_GDBT_RESUME(0);
	stop.syscall = info.op == PTRACE_SYSCALL_INFO_ENTRY ? 'e' : 'r';
	stop.sysno = (int)r.orig_rax;
	gdbt_park(t, 0, false);
	if (g->state == GDB_RUNNING)
		err = gdbt_stop_for_gdb(g, &stop);
	else
		err = gdbt_hold(g, &stop);
	if (!err && g->state != GDB_RUNNING)
		err = gdbt_collect(g);
	return err ? err : MT_GDBT_LEAVE;
}

/*
 * QCatchSyscalls. The syscall-stops are told apart from a SIGTRAP by PTRACE_O_TRACESYSGOOD,
 * set on every thread of the process (threads it creates later inherit it); they happen only
 * while gdb catches, threads being resumed with PTRACE_SYSCALL only then.
 */
int gdbt_op_catch_syscalls(void *ctx, bool on, const int *nrs, size_t n)
{
	struct mt_gdbt *g = ctx;

	memset(g->catch_nrs, 0, sizeof(g->catch_nrs));
	g->catch_every = on && !n;
	for (size_t i = 0; i < n; i++) {
		if (nrs[i] < 0 || nrs[i] >= GDB_SYSCALLS)
			g->catch_every = true;
		else
			g->catch_nrs[nrs[i] / 8] |= (uint8_t)(1u << nrs[i] % 8);
	}
	g->catch_syscalls = on;
	g->syscall_stops = g->syscall_stops || on;
	return gdbt_set_options(g);
}

/*
 * The ptrace options of every parked thread of the processes served: memtrack's, with
 * syscall-stops marked once gdb caught syscalls, vfork-done stops while gdb follows vforks.
 */
int gdbt_set_options(struct mt_gdbt *g)
{
	long options = g->cfg.ptrace_options;
	struct mt_gdbt_thread *t;
	size_t pos = 0;

	if (g->syscall_stops)
		options |= PTRACE_O_TRACESYSGOOD;
	if (g->vfork_events)
		options |= PTRACE_O_TRACEVFORKDONE;
	while ((t = gdbt_next_thread(g, &pos)))
		if (t->parked && ptrace(PTRACE_SETOPTIONS, t->tid, 0, (void *)options) < 0 &&
		    errno != ESRCH)
			return -errno;
	return 0;
}
