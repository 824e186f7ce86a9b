// SPDX-License-Identifier: GPL-2.0
/*
 * The forks, vforks, execs and ends of the processes served to gdb (--gdb, docs/GDB.md): a
 * child gdb follows is served too, with a copy of its parent's breakpoints; an exec leaves none;
 * the end of a process is a stop for gdb, its last when no other is served.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>

#include "gdbtarget/gdbtarget_int.h"

/*
 * A fork the stub reports (gdb follows forks): the child is debugged too, with a copy of its
 * parent's breakpoints (its memory is a copy, gdb's int3 bytes in it), its threads parked as
 * they stop, until gdb detaches it (D;PID) or keeps it (detach-on-fork off, follow-fork-mode
 * child). A vfork's child shares its parent's memory: gdb takes the breakpoints out of it
 * itself until the vfork is done (vforkdone).
 */
static int follow_child(struct mt_gdbt *g, struct mt_gdbt_thread *t, int event, pid_t child)
{
	struct gdbt_proc *parent = gdbt_proc_of_thread(g, t), *p;
	struct mt_gdb_stop stop = {.kind = MT_GDB_STOP_SIGNAL,
				   .value = SIGTRAP,
				   .tid = t->tid,
				   .event = event == PTRACE_EVENT_FORK ? MT_GDB_EV_FORK
								       : MT_GDB_EV_VFORK,
				   .child = child};

	p = parent ? gdbt_add_proc(g, child) : NULL;
	if (!p)
		return -ENOMEM;
	p->forked = true;
	if (parent->n_breaks) {
		p->breaks = malloc(parent->n_breaks * sizeof(*p->breaks));
		if (!p->breaks) {
			gdbt_drop_proc(g, p);
			return -ENOMEM;
		}
		memcpy(p->breaks, parent->breaks, parent->n_breaks * sizeof(*p->breaks));
		p->n_breaks = parent->n_breaks;
	}
	return gdbt_event_stop(g, t, &stop);
}

/* Whether gdb follows this event of the process (fork events, qSupported). */
static bool follows(const struct mt_gdbt *g, int event)
{
	return event == PTRACE_EVENT_FORK ? g->fork_events : g->vfork_events;
}

/*
 * A fork of a process gdb debugs: followed when gdb follows forks. Else the child is not gdb's,
 * gdb's breakpoints are taken out of its copy.
 */
void mt_gdbt_new_child(struct mt_gdbt *g, struct mt_gdbt_thread *t, int event, pid_t child)
{
	struct gdbt_proc *p = gdbt_proc_of_thread(g, t);

	if ((event != PTRACE_EVENT_FORK && event != PTRACE_EVENT_VFORK) || !p)
		return;
	if (follows(g, event) && follow_child(g, t, event, child) == MT_GDBT_LEAVE)
		return;
	/*
	 * gdb is never told of a fork (no fork events): its follow-fork-mode child, which it does
	 * not send, cannot be honoured. Said once, where gdb shows memtrack's stderr.
	 */
	if (!g->fork_said)
		fprintf(
		    stderr,
		    "memtrack: gdb: process %d forked %d; gdb stays with %d (memtrack's stub has "
		    "no fork events: follow-fork-mode child is not followed), the child is "
		    "recorded\n",
		    g->pid, child, g->pid);
	g->fork_said = true;
	if (event != PTRACE_EVENT_FORK)
		return; /* a vfork child shares the memory, gdb's breakpoints included */
	for (size_t i = 0; i < p->n_breaks; i++) {
		uint8_t byte = gdbt_under(&p->breaks[i]);

		gdbt_write_raw(child, p->breaks[i].addr, &byte, 1);
	}
}

int mt_gdbt_vfork_done(struct mt_gdbt *g, struct mt_gdbt_thread *t)
{
	struct mt_gdb_stop stop = {.kind = MT_GDB_STOP_SIGNAL,
				   .value = SIGTRAP,
				   .tid = t->tid,
				   .event = MT_GDB_EV_VFORK_DONE};

	if (!g->vfork_events)
		return MT_GDBT_RESUME(0);
	return gdbt_event_stop(g, t, &stop);
}

/*
 * A process gdb debugs ran execve: a new address space, none of gdb's breakpoints in it. When
 * gdb follows execs, the exec is its next stop, once memtrack has handled it (mt_gdbt_carry()).
 */
void mt_gdbt_exec(struct mt_gdbt *g, struct mt_gdbt_thread *t)
{
	struct gdbt_proc *p = gdbt_proc_of_thread(g, t);

	if (!p)
		return;
	p->n_breaks = 0;
	p->probes_known = false;
	p->n_rets = 0;
	gdbt_forget_mem(p->pid); /* the old memory's */
	p->xol_start = p->xol_end = 0;
	p->xol_looked = false;
	if (g->exec_events)
		p->exec_tid = t->tid;
}

/*
 * The end of one of the processes gdb debugs while others are still: gdb hears of it as a stop
 * (W or X with its pid), the others stopped, when they run; the session goes on.
 */
static void other_gone(struct mt_gdbt *g, struct gdbt_proc *p, struct mt_gdb_stop *end)
{
	gdbt_drop_proc(g, p);
	if (g->cur == end->pid)
		g->cur = 0;
	end->others = true;
	if (g->state == GDB_RUNNING)
		gdbt_stop_for_gdb(g, end);
}

/* A thread of the process ended; the end of its leader is the process's, gdb's last stop. */
void mt_gdbt_gone(struct mt_gdbt *g, struct mt_gdbt_thread *t, int status)
{
	struct gdbt_proc *p = gdbt_proc_of(g, t->tid);
	struct mt_gdb_stop end = {0};

	gdbt_put_back_passed(g, t);
	if (g->state == GDB_PASSING && t->tid == g->passing_tid && !g->pass_stepping) {
		g->passing_tid = 0; /* gone before its step: the others run on */
		gdbt_end_pass(g);
	}
	if (!p)
		return; /* not a process's main thread */
	end.kind = WIFSIGNALED(status) ? MT_GDB_STOP_KILLED : MT_GDB_STOP_EXITED;
	end.value = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
	end.pid = p->pid;
	p->n_breaks = 0; /* nothing to take out of a process that is gone */
	if (g->n_procs > 1) {
		other_gone(g, p, &end);
		return;
	}
	/*
	 * Over gdb's pipe, gdb closes memtrack's stderr as soon as it hears of the end: the reply
	 * waits until the summary is printed (mt_run_result's gdb_final).
	 */
	if (g->conn && g->stdio)
		mt_gdb_stopped_later(g->conn, &end, g->cfg.final_reply, g->cfg.final_len);
	else if (g->conn)
		mt_gdb_stopped(g->conn, &end);
	if (g->end == GDB_END_NONE)
		g->end = GDB_END_EXIT;
	g->over = true;
}
