// SPDX-License-Identifier: GPL-2.0
/*
 * The end of gdb's hold on the processes it debugs (--gdb, docs/GDB.md): gdb detaches or kills
 * them all (D, k), which ends the session, or one of several (D;PID, vKill;PID); what gdb lets go
 * runs on under memtrack alone.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>

#include "gdbtarget/gdbtarget_int.h"

/* Leave the process to memtrack alone: breakpoints out, every parked thread resumed. */
int gdbt_let_run(struct mt_gdbt *g)
{
	struct mt_gdbt_thread *t;
	size_t pos = 0;
	int err = 0;

	for (size_t i = 0; i < g->n_procs; i++)
		while (g->procs[i]->n_breaks)
			gdbt_remove_break(g->procs[i],
					  &g->procs[i]->breaks[g->procs[i]->n_breaks - 1]);
	for (int i = 0; i < GDB_HW_SLOTS; i++)
		g->hw[i].used = false;
	g->hw_gen++;
	g->n_held = 0; /* a held signal is the program's: it is delivered below */
	while ((t = gdbt_next_thread(g, &pos))) {
		t->interrupted = false;
		t->step = false;
		if (!t->parked)
			continue;
		t->parked = false;
		gdbt_apply_hw(g, t);
		if (t->sig)
			g->host.log_signal(g->host.ctx, t, t->sig);
		if (!err)
			err = g->host.resume(g->host.ctx, t, t->sig);
	}
	g->over = true;
	return err;
}

int gdbt_op_detach(void *ctx)
{
	struct mt_gdbt *g = ctx;

	g->end = GDB_END_DETACH;
	/* Over gdb's pipe, gdb stops reading memtrack's stderr once detached: said now. */
	if (g->stdio && g->cfg.artifact_path)
		fprintf(stderr,
			"memtrack: gdb detached; process %d runs on, recorded into %s (memtrack "
			"report %s once it ended)\n",
			g->pid, g->cfg.artifact_path, g->cfg.artifact_path);
	return gdbt_let_run(g);
}

int gdbt_op_kill(void *ctx)
{
	struct mt_gdbt *g = ctx;

	g->end = GDB_END_KILL;
	/*
	 * Over gdb's pipe, gdb reads memtrack's stderr only while it waits for a reply, and stops
	 * once it has vKill's: the OK waits for the summary, as the exit's reply does.
	 */
	if (g->stdio && g->conn)
		mt_gdb_final_reply_later(g->conn, g->cfg.final_reply, g->cfg.final_len);
	/* SIGKILL ends even a thread in a ptrace stop; the loop sees its end as in any run. */
	for (size_t i = 0; i < g->n_procs; i++)
		kill(g->procs[i]->pid, SIGKILL);
	return gdbt_let_run(g);
}

/*
 * Let process p run on without gdb while others are still debugged: its breakpoints out (gdb
 * took them out already when it detaches after a fork), its parked threads resumed.
 */
static int release_proc(struct mt_gdbt *g, struct gdbt_proc *p)
{
	struct mt_gdbt_thread *t;
	size_t pos = 0;
	pid_t pid = p->pid;
	int err = 0;

	while (p->n_breaks)
		gdbt_remove_break(p, &p->breaks[p->n_breaks - 1]);
	while ((t = gdbt_next_thread(g, &pos))) {
		if (t->pid != pid)
			continue;
		t->interrupted = false;
		t->step = false;
		if (!t->parked)
			continue;
		t->parked = false;
		if (t->sig)
			g->host.log_signal(g->host.ctx, t, t->sig);
		if (!err)
			err = g->host.resume(g->host.ctx, t, t->sig);
	}
	gdbt_drop_proc(g, p);
	if (g->cur == pid)
		g->cur = 0;
	return err;
}

/*
 * One of several processes gdb lets go (D;PID) or kills (vKill;PID): the processes left, or an
 * error. The last one ends the session as a plain D or k does.
 */
static int end_process(struct mt_gdbt *g, pid_t pid, bool kill_it)
{
	struct gdbt_proc *p = gdbt_proc_of(g, pid);
	int err;

	if (!p)
		return -ESRCH;
	if (g->n_procs == 1)
		return (kill_it ? gdbt_op_kill(g) : gdbt_op_detach(g)) < 0 ? -EIO : 0;
	/* SIGKILL ends even a thread in a ptrace stop; its end is memtrack's alone. */
	if (kill_it)
		kill(pid, SIGKILL);
	err = release_proc(g, p);
	return err ? err : (int)g->n_procs;
}

int gdbt_op_detach_process(void *ctx, pid_t pid)
{
	return end_process(ctx, pid, false);
}

int gdbt_op_kill_process(void *ctx, pid_t pid)
{
	return end_process(ctx, pid, true);
}
