// SPDX-License-Identifier: GPL-2.0
/*
 * The stops of the processes served to gdb (--gdb, docs/GDB.md), all-stop as gdbserver's: when
 * a thread of the process stops for gdb (a breakpoint, a step, a signal, gdb's interrupt), every
 * other thread of it is interrupted (PTRACE_INTERRUPT) and parked at its next stop, whatever that
 * stop is (memtrack handles it first); once all are parked, gdb hears of the first stop, once.
 * A parked thread stays in its ptrace stop until gdb resumes it (gdbtarget_resume.c).
 *
 * What the other threads met meanwhile is never lost nor given to the program as a signal it
 * would not get without gdb: a thread at one of gdb's breakpoints has its pc put back on the
 * breakpoint (it hits it again when resumed, if gdb left it in); a finished single-step is just
 * a stop; any other signal, and a watchpoint's trap, are held and reported at a later resume,
 * before anything runs, as gdbserver reports its pending statuses. A breakpoint whose conditions
 * all fail is no stop for gdb: the thread passes it (condition_fails()).
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <unistd.h>

#include "gdbtarget/gdbtarget_int.h"
#include "inspect/procstatus.h"

/* Parked at this stop; at_signal: a signal-delivery-stop, where a resume can deliver a signal. */
void gdbt_park(struct mt_gdbt_thread *t, int sig, bool at_signal)
{
	t->parked = true;
	t->interrupted = false;
	t->step = false;
	t->sig = sig;
	t->at_signal = at_signal;
}

int gdbt_collect(struct mt_gdbt *g)
{
	struct mt_gdbt_thread *t;
	size_t pos = 0;
	bool all = true;

	while ((t = gdbt_next_thread(g, &pos))) {
		struct gdbt_proc *p = t->parked ? gdbt_proc_of_thread(g, t) : NULL;

		if (p)
			p->forked = false; /* its first thread is parked: it can be told of */
		if (t->parked || (g->state == GDB_PASSING && t->tid == g->passing_tid))
			continue;
		all = false;
		if (t->interrupted)
			continue;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0 && errno != ESRCH)
			return -errno;
		t->interrupted = true;
	}
	for (size_t i = 0; i < g->n_procs; i++)
		all = all && !g->procs[i]->forked;
	if (all && g->state == GDB_PASSING && !g->pass_stepping)
		return gdbt_pass_step(g);
	if (!all || g->state != GDB_STOPPING)
		return 0;
	g->state = GDB_STOPPED;
	for (size_t i = 0; i < g->n_procs; i++) {
		g->procs[i]->probes_known = false; /* files may have been mapped while it ran */
		g->procs[i]->xol_looked = false;
		g->procs[i]->kernel_rets_known = false;
	}
	gdbt_forget_returns(g);
	if (!g->conn)
		return 0;
	g->stops++;
	return mt_gdb_stopped(g->conn, &g->stop);
}

/* A thread stopped for gdb: the process stops whole, then gdb hears of it. */
int gdbt_stop_for_gdb(struct mt_gdbt *g, const struct mt_gdb_stop *stop)
{
	g->stop = *stop;
	g->state = GDB_STOPPING;
	return gdbt_collect(g);
}

int gdbt_hold(struct mt_gdbt *g, const struct mt_gdb_stop *stop)
{
	struct held_stop *grown = realloc(g->held, (g->n_held + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	g->held = grown;
	g->held[g->n_held++] = (struct held_stop){stop->tid, *stop};
	return 0;
}

/* A stop of an event of thread t for gdb: reported, or held while the process is being stopped. */
int gdbt_event_stop(struct mt_gdbt *g, struct mt_gdbt_thread *t, const struct mt_gdb_stop *stop)
{
	int err;

	gdbt_park(t, 0, false);
	if (g->state == GDB_RUNNING)
		err = gdbt_stop_for_gdb(g, stop);
	else
		err = gdbt_hold(g, stop);
	if (!err && g->state != GDB_RUNNING)
		err = gdbt_collect(g);
	return err ? err : MT_GDBT_LEAVE;
}

/*
 * Whether a thread's SIGTRAP is one of gdb's breakpoints, its pc then put back on it: an int3
 * traps as SI_KERNEL, an int1 as TRAP_BRKPT, both with the pc after them. Some hypervisors
 * report the int1 as a fault, the pc still on it (a PVM guest: gdb's `break malloc` over
 * memtrack's probe spun there, the thread trapping again at each resume): a thread not
 * single-stepped that stops so with TRAP_BRKPT is at that breakpoint already.
 */
static bool back_on_break(struct mt_gdbt *g, struct mt_gdbt_thread *t, const siginfo_t *si)
{
	struct gdbt_proc *p = gdbt_proc_of_thread(g, t);
	struct user_regs_struct r;
	struct gdb_break *b;

	if (!p || si->si_signo != SIGTRAP ||
	    (si->si_code != SI_KERNEL && si->si_code != TRAP_BRKPT))
		return false;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return false;
	b = gdbt_find_break(p, r.rip - 1);
	if (!b || b->at_probe != (si->si_code == TRAP_BRKPT)) {
		b = gdbt_find_break(p, r.rip);
		return b && b->at_probe && si->si_code == TRAP_BRKPT && !t->stepped;
	}
	r.rip--;
	return ptrace(PTRACE_SETREGS, t->tid, 0, &r) == 0;
}

/*
 * A SIGTRAP of a tracer's single-step: TRAP_TRACE, TRAP_BRKPT, or, when the step went over one
 * of memtrack's uprobes, the one the kernel sends from the thread to itself (SI_USER) once it
 * stepped the probed instruction out of line; not one of gdb's int1 breakpoints. It may come
 * late: after the thread was interrupted and parked, even after it was continued since (queued
 * behind the interrupt's stop). Only gdb single-steps the process's threads, so none is the
 * program's (but for a program that sets the trap flag itself, or raises SIGTRAP while stepped).
 */
static bool step_trap(const struct mt_gdbt_thread *t, const siginfo_t *si, bool on_break)
{
	if (si->si_signo != SIGTRAP || on_break)
		return false;
	if (si->si_code == TRAP_TRACE || si->si_code == TRAP_BRKPT)
		return true;
	return si->si_code == SI_USER && si->si_pid == t->pid && t->stepped;
}

/* Whether a thread's pc is in the kernel's uretprobe trampoline, which gdb must never see. */
static bool at_trampoline(struct mt_gdbt *g, struct mt_gdbt_thread *t)
{
	struct gdbt_proc *p = gdbt_proc_of_thread(g, t);
	struct user_regs_struct r;

	return p && ptrace(PTRACE_GETREGS, t->tid, 0, &r) == 0 && gdbt_at_trampoline(p, r.rip);
}

/* Whether no thread served but t runs: gdb's others are all parked. */
static bool runs_alone(struct mt_gdbt *g, const struct mt_gdbt_thread *t)
{
	struct mt_gdbt_thread *o;
	size_t pos = 0;

	while ((o = gdbt_next_thread(g, &pos)))
		if (o != t && !o->parked)
			return false;
	return true;
}

/* Whether gdb single-steps a thread served other than t. */
static bool others_stepped(struct mt_gdbt *g, const struct mt_gdbt_thread *t)
{
	struct mt_gdbt_thread *o;
	size_t pos = 0;

	while ((o = gdbt_next_thread(g, &pos)))
		if (o != t && !o->parked && o->step)
			return true;
	return false;
}

/*
 * A hit of a breakpoint whose conditions gdb gave the stub (mt_gdb_break_reported()) and none
 * holds: the thread goes on as if the breakpoint were not there, gdb told nothing. Past a
 * hardware one it just continues (the kernel set the resume flag); past an int3 it steps with
 * the original byte back, put out again at its next stop (gdbt_put_back_passed()). Other threads
 * that run are parked first (GDB_PASSING), as gdbserver stops them, so that none passes the
 * breakpoint while it is out, and resumed after (gdbt_end_pass()).
 */
static bool condition_fails(struct mt_gdbt *g, struct mt_gdbt_thread *t,
			    const struct mt_gdb_stop *stop, int *next)
{
	struct gdbt_proc *p = gdbt_proc_of_thread(g, t);
	struct mt_gdbt_thread *o;
	struct user_regs_struct r;
	struct gdb_break *b;
	size_t pos = 0;

	if (!p || ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0 ||
	    mt_gdb_break_reported(g->conn, t->tid, r.rip, stop->hw == 'h'))
		return false;
	b = gdbt_find_break(p, r.rip);
	if (!b) {
		t->parked = false;
		*next = MT_GDBT_RESUME(0);
		return true;
	}
	g->passing_tid = t->tid;
	g->passing_pid = p->pid;
	g->passing_addr = b->addr;
	g->pass_interrupt = false;
	if (runs_alone(g, t)) {
		*next = gdbt_pass_step(g);
		g->passing_begun = true; /* this stop's carry comes next: not the step's end */
		return true;
	}
	while ((o = gdbt_next_thread(g, &pos)))
		o->pass_kept = o->parked && o != t; /* gdb's: left parked after the pass */
	g->state = GDB_PASSING;
	*next = gdbt_collect(g);
	if (g->pass_stepping)
		g->passing_begun = true;
	return true;
}

/*
 * A signal-delivery-stop of a thread of the process (not one of memtrack's own SIGSTOPs). While
 * the process runs, it is gdb's stop. While it is being stopped (or is stopped), the thread is
 * parked: at a breakpoint with its pc put back, after a step as it is, with any other signal or a
 * watchpoint's trap held for a later report.
 */
int mt_gdbt_signal(struct mt_gdbt *g, struct mt_gdbt_thread *t, int sig, const siginfo_t *si)
{
	struct mt_gdb_stop stop = {.kind = MT_GDB_STOP_SIGNAL, .value = sig, .tid = t->tid};
	bool stepped, may_pass;
	int err = 0;

	if (sig == t->pass && si->si_code == SI_TKILL && si->si_pid == getpid()) {
		/* The signal gdb gave at a resume from a stop where it could not be delivered. */
		t->pass = 0;
		return MT_GDBT_RESUME(sig);
	}
	err = gdbt_put_back_passed(g, t);
	if (err)
		return err;
	stop.swbreak = back_on_break(g, t, si);
	stepped = step_trap(t, si, stop.swbreak) || (!stop.swbreak && gdbt_stray_probe(g, t, si));
	if (stepped && !t->step && g->state == GDB_RUNNING)
		return MT_GDBT_RESUME(0); /* a late one: the thread runs on as gdb resumed it */
	/* A ret into the trampoline: on to the caller, as without it. */
	if (stepped && t->step && g->state == GDB_RUNNING && at_trampoline(g, t))
		return gdbt_step_on(t);
	if (sig == SIGTRAP && si->si_code == TRAP_HWBKPT)
		gdbt_hw_hit(g, t, &stop);
	if (sig == SIGTRAP && !stop.swbreak && !stepped && !stop.hw && g->cfg.verbose)
		fprintf(stderr,
			"memtrack: gdb: thread %d got a SIGTRAP of none of gdb's (code %d)\n",
			t->tid, si->si_code);
	may_pass = g->conn && g->state == GDB_RUNNING && !t->step &&
		   (stop.swbreak || stop.hw == 'h') && !others_stepped(g, t);
	gdbt_park(t, 0, true);
	if (may_pass && condition_fails(g, t, &stop, &err))
		return err;
	if (g->state == GDB_RUNNING)
		err = gdbt_stop_for_gdb(g, &stop);
	else if (!stop.swbreak && !stepped)
		err = gdbt_hold(g, &stop);
	if (!err && g->state != GDB_RUNNING)
		err = gdbt_collect(g);
	return err ? err : MT_GDBT_LEAVE;
}

/* The exec of thread t's process, for gdb, once memtrack let it go on: its stop. */
static int exec_stop(struct mt_gdbt *g, struct mt_gdbt_thread *t, struct gdbt_proc *p)
{
	struct mt_gdb_stop stop = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = t->tid, .event = MT_GDB_EV_EXEC};
	char link[64];
	ssize_t n;

	p->exec_tid = 0;
	snprintf(link, sizeof(link), "/proc/%d/exe", p->pid);
	n = readlink(link, stop.path, sizeof(stop.path) - 1);
	stop.path[n > 0 ? n : 0] = '\0';
	return gdbt_event_stop(g, t, &stop);
}

/*
 * What the stop handler decided for a thread of the process (next, a MT_GDBT_RESUME): while gdb has
 * the process stopped, the thread is parked instead (with the signal it was to get); while gdb
 * has it stepping, it steps on.
 */
int mt_gdbt_carry(struct mt_gdbt *g, struct mt_gdbt_thread *t, int next)
{
	struct gdbt_proc *p;
	int err;

	err = gdbt_put_back_passed(g, t); /* whatever stopped its step over a breakpoint */
	if (err)
		return err;
	if (next <= MT_GDBT_LEAVE)
		return next;
	err = gdbt_apply_hw(g, t); /* a new thread: gdb's watchpoints are its too */
	if (err)
		return err;
	p = gdbt_proc_of_thread(g, t);
	if (p && p->exec_tid == t->tid)
		return exec_stop(g, t, p);
	if (g->state != GDB_RUNNING && mt_proc_sig_pending(t->tid, SIGTRAP)) {
		/*
		 * Interrupted right after a breakpoint's int3 or a step: the trap is queued behind
		 * the interrupt's stop. It runs no instruction before its signal-delivery-stop,
		 * where it is parked as a breakpoint or step is (mt_gdbt_signal()), never later
		 * with gdb's breakpoint gone.
		 */
		return next;
	}
	if (g->state != GDB_RUNNING) {
		gdbt_park(t, next - 1, false);
		err = gdbt_collect(g);
		return err ? err : MT_GDBT_LEAVE;
	}
	t->interrupted = false;
	if (!t->step && !g->catch_syscalls)
		return next;
	if (!t->step) {
		/* memtrack's own stops do not end gdb's catching of syscalls */
		if (ptrace(PTRACE_SYSCALL, t->tid, 0, (void *)(long)(next - 1)) < 0 &&
		    errno != ESRCH)
			return -errno;
		return MT_GDBT_LEAVE;
	}
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, (void *)(long)(next - 1)) < 0 && errno != ESRCH)
		return -errno;
	t->stepped = true;
	return MT_GDBT_LEAVE;
}

int gdbt_op_interrupt(void *ctx)
{
	struct mt_gdbt *g = ctx;
	struct gdbt_proc *p = gdbt_cur(g);
	struct mt_gdb_stop stop = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGINT, .tid = p ? p->pid : g->pid};

	if (g->state == GDB_PASSING)
		g->pass_interrupt = true; /* reported once the pass is over (gdbt_end_pass()) */
	if (g->state != GDB_RUNNING)
		return 0;
	return gdbt_stop_for_gdb(g, &stop);
}
