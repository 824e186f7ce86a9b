// SPDX-License-Identifier: GPL-2.0
/*
 * gdb's resumes of the processes it debugs (--gdb, docs/GDB.md): each parked thread continued,
 * single-stepped or left stopped as vCont's actions say, unless a stop held meanwhile is reported
 * instead; and the step of one thread over a breakpoint whose conditions failed (condition_fails(),
 * gdbtarget_stops.c), the byte under it back for that one instruction while the others are parked.
 */

#include <errno.h>
#include <signal.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gdbtarget/gdbtarget_int.h"
#include "inspect/procstatus.h"

/* How gdb's continue resumes a thread: to its next syscall too while gdb catches them. */
static enum __ptrace_request continue_request(const struct mt_gdbt *g)
{
	return g->catch_syscalls ? PTRACE_SYSCALL : PTRACE_CONT;
}

int gdbt_step_on(struct mt_gdbt_thread *t)
{
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) < 0 && errno != ESRCH)
		return -errno;
	t->stepped = true;
	return MT_GDBT_LEAVE;
}

/* The action of a resume for thread t: the first that names it, else the first of its process. */
static const struct mt_gdb_action *action_for(const struct mt_gdb_action *a, size_t n,
					      const struct mt_gdbt_thread *t)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].tid == t->tid)
			return &a[i];
	for (size_t i = 0; i < n; i++)
		if (a[i].tid == -1 && (!a[i].pid || a[i].pid == t->pid))
			return &a[i];
	return NULL;
}

/*
 * A held stop of a thread this resume would run: it is reported now instead, nothing resumed,
 * as gdbserver does. Held stops of threads gone or left stopped wait.
 */
static bool report_held(struct mt_gdbt *g, const struct mt_gdb_action *a, size_t n)
{
	for (size_t i = 0; i < g->n_held; i++) {
		struct mt_gdbt_thread *t = gdbt_parked(g, g->held[i].tid);

		if (!t) {
			g->held[i--] = g->held[--g->n_held];
			continue;
		}
		if (!action_for(a, n, t))
			continue;
		g->stop = g->held[i].stop;
		g->held[i] = g->held[--g->n_held];
		g->state = GDB_STOPPING; /* all parked: reported at the next look (mt_gdbt_tick) */
		return true;
	}
	return false;
}

/*
 * Resume one parked thread. A signal gdb gives is delivered by the resume at a signal-delivery
 * stop; at any other (an interrupt, one of memtrack's events) the kernel would drop it, so it is
 * sent to the thread instead and let through when it arrives (gdb's `signal SIGUSR1` after ^C).
 */
static int resume_one(struct mt_gdbt *g, struct mt_gdbt_thread *t, const struct mt_gdb_action *act)
{
	int sig = act->sig ? act->sig : t->sig;
	pid_t pid = t->pid;
	struct gdbt_proc *p;
	int err;

	/* As without gdb: a fatal one says where it struck. */
	if (sig && t->at_signal)
		g->host.log_signal(g->host.ctx, t, sig);

	if (sig && !t->at_signal) {
		if (syscall(SYS_tgkill, pid, t->tid, sig) < 0 && errno != ESRCH)
			return -errno;
		t->pass = sig;
		sig = 0;
	}
	err = gdbt_keep_return(g, t);
	if (err)
		return err;
	p = gdbt_proc_of_thread(g, t);
	if (p && !p->resumed && p->pid != g->pid)
		g->forks_followed++; /* a child gdb kept, not one it detached at its fork */
	if (p)
		p->resumed = true;
	t->parked = false;
	t->step = act->kind == 's';
	/* A step's trap still queued comes at once: it is known for a step's until then. */
	if (t->step || !t->stepped || !mt_proc_sig_pending(t->tid, SIGTRAP))
		t->stepped = t->step;
	if (ptrace(t->step ? PTRACE_SINGLESTEP : continue_request(g), t->tid, 0,
		   (void *)(long)sig) < 0 &&
	    errno != ESRCH)
		return -errno;
	return 0;
}

int gdbt_op_resume(void *ctx, const struct mt_gdb_action *a, size_t n)
{
	struct mt_gdbt *g = ctx;
	struct mt_gdbt_thread *t;
	size_t pos = 0;
	int err;

	if (report_held(g, a, n))
		return 0;
	g->state = GDB_RUNNING;
	for (size_t i = 0; i < g->n_procs; i++)
		g->procs[i]->xol_looked = false; /* a uprobe it hits may map [uprobes] */
	while ((t = gdbt_next_thread(g, &pos))) {
		const struct mt_gdb_action *act;

		if (!t->parked)
			continue;
		act = action_for(a, n, t);
		if (!act)
			continue; /* not named: it stays stopped */
		err = resume_one(g, t, act);
		if (err)
			return err;
	}
	return 0;
}

/* The breakpoint being passed, in its process; NULL when either is gone. */
static struct gdb_break *passed_break(struct mt_gdbt *g)
{
	struct gdbt_proc *p = gdbt_proc_of(g, g->passing_pid);

	return p ? gdbt_find_break(p, g->passing_addr) : NULL;
}

/*
 * The passing thread steps over its breakpoint, the byte under it back for that instruction:
 * the others are parked (or gdb's), none can pass it unseen.
 */
int gdbt_pass_step(struct mt_gdbt *g)
{
	struct mt_gdbt_thread *t = gdbt_find_thread(g, g->passing_tid);
	struct gdb_break *b = passed_break(g);
	uint8_t under;
	int err;

	if (!t || !b) {
		g->passing_tid = 0;
		return gdbt_end_pass(g);
	}
	under = gdbt_under(b);
	err = gdbt_write_raw(g->passing_pid, b->addr, &under, 1);
	if (!err)
		err = gdbt_keep_return(g, t);
	if (err)
		return err;
	t->parked = false;
	g->pass_stepping = true;
	g->passing_begun = false;
	err = gdbt_step_on(t);
	return err < 0 ? err : 0;
}

/*
 * The pass over a breakpoint is over: the threads it parked run on, or, when one of them met
 * something for gdb meanwhile (held) or gdb interrupted, the process stops for gdb.
 */
int gdbt_end_pass(struct mt_gdbt *g)
{
	struct mt_gdb_stop sigint = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGINT, .tid = g->passing_pid};
	const struct mt_gdb_action go = {.kind = 'c'};
	struct mt_gdbt_thread *t;
	size_t pos = 0;
	int err = 0;

	if (g->state != GDB_PASSING)
		return 0;
	g->state = GDB_RUNNING;
	if (g->pass_interrupt || g->n_held) {
		/* The stop's handling parks the thread, then the process stops whole (collect). */
		g->stop = sigint;
		if (!g->pass_interrupt) {
			g->stop = g->held[0].stop;
			g->held[0] = g->held[--g->n_held];
		}
		g->state = GDB_STOPPING;
		return 0;
	}
	while ((t = gdbt_next_thread(g, &pos))) {
		if (t->parked && !t->pass_kept && !err)
			err = resume_one(g, t, &go);
		t->pass_kept = false;
	}
	return err;
}

/* A thread that stepped over a breakpoint (condition_fails()): the breakpoint goes back in. */
int gdbt_put_back_passed(struct mt_gdbt *g, struct mt_gdbt_thread *t)
{
	struct gdb_break *b;
	uint8_t trap;

	if (g->passing_tid != t->tid || !g->pass_stepping)
		return 0;
	if (g->passing_begun) {
		g->passing_begun = false; /* the stop the step began at: its end is the next */
		return 0;
	}
	g->passing_tid = 0;
	g->pass_stepping = false;
	b = passed_break(g);
	trap = b && b->at_probe ? GDB_INT1 : GDB_INT3;
	if (b)
		gdbt_write_raw(g->passing_pid, b->addr, &trap, 1);
	return g->over ? 0 : gdbt_end_pass(g);
}
