// SPDX-License-Identifier: GPL-2.0
/*
 * Run control of the process served to gdb (--gdb, docs/GDB.md), all-stop as gdbserver's: when
 * a thread of the process stops for gdb (a breakpoint, a step, a signal, gdb's interrupt), every
 * other thread of it is interrupted (PTRACE_INTERRUPT) and parked at its next stop, whatever that
 * stop is (memtrack handles it first); once all are parked, gdb hears of the first stop, once.
 * A parked thread stays in its ptrace stop until gdb resumes it.
 *
 * What the other threads met meanwhile is never lost nor given to the program as a signal it
 * would not get without gdb: a thread at one of gdb's breakpoints has its pc put back on the
 * breakpoint (it hits it again when resumed, if gdb left it in); a finished single-step is just
 * a stop; any other signal, and a watchpoint's trap, are held and reported at a later resume,
 * before anything runs, as gdbserver reports its pending statuses.
 */

#include <errno.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/user.h>
#include <sys/wait.h>
#include <unistd.h>

#include "gdbtarget/gdbtarget_int.h"
#include "inspect/procstatus.h"

/* Parked at this stop; at_signal: a signal-delivery-stop, where a resume can deliver a signal. */
static void park(struct mt_gdbt_thread *t, int sig, bool at_signal)
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
		if (t->parked)
			continue;
		all = false;
		if (t->interrupted)
			continue;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0 && errno != ESRCH)
			return -errno;
		t->interrupted = true;
	}
	if (!all || g->state != GDB_STOPPING)
		return 0;
	g->state = GDB_STOPPED;
	g->probes_known = false; /* files may have been mapped while it ran */
	gdbt_forget_returns(g);
	if (!g->conn)
		return 0;
	g->stops++;
	return mt_gdb_stopped(g->conn, &g->stop);
}

/* A thread stopped for gdb: the process stops whole, then gdb hears of it. */
static int stop_for_gdb(struct mt_gdbt *g, const struct mt_gdb_stop *stop)
{

	g->stop = *stop;
	g->state = GDB_STOPPING;
	return gdbt_collect(g);
}

static int hold(struct mt_gdbt *g, const struct mt_gdb_stop *stop)
{
	struct held_stop *grown = realloc(g->held, (g->n_held + 1) * sizeof(*grown));

	if (!grown)
		return -ENOMEM;
	g->held = grown;
	g->held[g->n_held++] = (struct held_stop){stop->tid, *stop};
	return 0;
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
	struct user_regs_struct r;
	struct gdb_break *b;

	if (si->si_signo != SIGTRAP || (si->si_code != SI_KERNEL && si->si_code != TRAP_BRKPT))
		return false;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return false;
	b = gdbt_find_break(g, r.rip - 1);
	if (!b || b->at_probe != (si->si_code == TRAP_BRKPT)) {
		b = gdbt_find_break(g, r.rip);
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
static bool step_trap(const struct mt_gdbt *g, const struct mt_gdbt_thread *t, const siginfo_t *si,
		      bool on_break)
{
	if (si->si_signo != SIGTRAP || on_break)
		return false;
	if (si->si_code == TRAP_TRACE || si->si_code == TRAP_BRKPT)
		return true;
	return si->si_code == SI_USER && si->si_pid == g->pid && t->stepped;
}

/* Whether a thread's pc is in the kernel's uretprobe trampoline, which gdb must never see. */
static bool at_trampoline(struct mt_gdbt *g, struct mt_gdbt_thread *t)
{
	struct user_regs_struct r;

	return ptrace(PTRACE_GETREGS, t->tid, 0, &r) == 0 && gdbt_at_trampoline(g, r.rip);
}

static int step_on(struct mt_gdbt_thread *t)
{
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) < 0 && errno != ESRCH)
		return -errno;
	t->stepped = true;
	return MT_GDBT_LEAVE;
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
	bool stepped;
	int err = 0;

	if (sig == t->pass && si->si_code == SI_TKILL && si->si_pid == getpid()) {
		/* The signal gdb gave at a resume from a stop where it could not be delivered. */
		t->pass = 0;
		return MT_GDBT_RESUME(sig);
	}
	stop.swbreak = back_on_break(g, t, si);
	stepped =
	    step_trap(g, t, si, stop.swbreak) || (!stop.swbreak && gdbt_stray_probe(g, t, si));
	if (stepped && !t->step && g->state == GDB_RUNNING)
		return MT_GDBT_RESUME(0); /* a late one: the thread runs on as gdb resumed it */
	if (stepped && t->step && g->state == GDB_RUNNING && at_trampoline(g, t))
		return step_on(t); /* a ret into the trampoline: on to the caller, as without it */
	if (sig == SIGTRAP && si->si_code == TRAP_HWBKPT)
		gdbt_hw_hit(g, t, &stop);
	if (sig == SIGTRAP && !stop.swbreak && !stepped && !stop.hw && g->cfg.verbose)
		fprintf(stderr,
			"memtrack: gdb: thread %d got a SIGTRAP of none of gdb's (code %d)\n",
			t->tid, si->si_code);
	park(t, 0, true);
	if (g->state == GDB_RUNNING)
		err = stop_for_gdb(g, &stop);
	else if (!stop.swbreak && !stepped)
		err = hold(g, &stop);
	if (!err && g->state != GDB_RUNNING)
		err = gdbt_collect(g);
	return err ? err : MT_GDBT_LEAVE;
}

/* How gdb's continue resumes a thread: to its next syscall too while gdb catches them. */
static enum __ptrace_request continue_request(const struct mt_gdbt *g)
{
	return g->catch_syscalls ? PTRACE_SYSCALL : PTRACE_CONT;
}

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
	park(t, 0, false);
	if (g->state == GDB_RUNNING)
		err = stop_for_gdb(g, &stop);
	else
		err = hold(g, &stop);
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
	struct mt_gdbt_thread *t;
	size_t pos = 0;

	memset(g->catch_nrs, 0, sizeof(g->catch_nrs));
	g->catch_every = on && !n;
	for (size_t i = 0; i < n; i++) {
		if (nrs[i] < 0 || nrs[i] >= GDB_SYSCALLS)
			g->catch_every = true;
		else
			g->catch_nrs[nrs[i] / 8] |= (uint8_t)(1u << nrs[i] % 8);
	}
	g->catch_syscalls = on;
	while (on && (t = gdbt_next_thread(g, &pos)))
		if (t->parked &&
		    ptrace(PTRACE_SETOPTIONS, t->tid, 0,
			   (void *)(long)(g->cfg.ptrace_options | PTRACE_O_TRACESYSGOOD)) < 0 &&
		    errno != ESRCH)
			return -errno;
	return 0;
}

/*
 * What the stop handler decided for a thread of the process (next, a MT_GDBT_RESUME): while gdb has
 * the process stopped, the thread is parked instead (with the signal it was to get); while gdb
 * has it stepping, it steps on.
 */
int mt_gdbt_carry(struct mt_gdbt *g, struct mt_gdbt_thread *t, int next)
{
	int err;

	if (next <= MT_GDBT_LEAVE)
		return next;
	err = gdbt_apply_hw(g, t); /* a new thread: gdb's watchpoints are its too */
	if (err)
		return err;
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
		park(t, next - 1, false);
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

static const struct mt_gdb_action *action_for(const struct mt_gdb_action *a, size_t n, pid_t tid)
{
	for (size_t i = 0; i < n; i++)
		if (a[i].tid == tid)
			return &a[i];
	for (size_t i = 0; i < n; i++)
		if (a[i].tid == -1)
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
		if (!action_for(a, n, t->tid))
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
	pid_t pid = g->pid;
	int err;

	if (sig && t->at_signal)
		g->host.log_signal(g->host.ctx, t,
				   sig); /* as without gdb: a fatal one says where it struck */

	if (sig && !t->at_signal) {
		if (syscall(SYS_tgkill, pid, t->tid, sig) < 0 && errno != ESRCH)
			return -errno;
		t->pass = sig;
		sig = 0;
	}
	err = gdbt_keep_return(g, t);
	if (err)
		return err;
	t->parked = false;
	t->step = act->kind == 's';
	/* A step's trap still queued comes at once: it is known for a step's until then. */
	if (t->step || !mt_proc_sig_pending(t->tid, SIGTRAP))
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
	while ((t = gdbt_next_thread(g, &pos))) {
		const struct mt_gdb_action *act;

		if (!t->parked)
			continue;
		act = action_for(a, n, t->tid);
		if (!act)
			continue; /* not named: it stays stopped */
		err = resume_one(g, t, act);
		if (err)
			return err;
	}
	return 0;
}

int gdbt_op_interrupt(void *ctx)
{
	struct mt_gdbt *g = ctx;
	struct mt_gdb_stop stop = {.kind = MT_GDB_STOP_SIGNAL, .value = SIGINT, .tid = g->pid};

	if (g->state != GDB_RUNNING)
		return 0;
	return stop_for_gdb(g, &stop);
}

int gdbt_op_threads(void *ctx, pid_t *tids, size_t max)
{
	struct mt_gdbt *g = ctx;
	struct mt_gdbt_thread *t;
	size_t n = 0, pos = 0;

	if (max && gdbt_find_thread(g, g->pid))
		tids[n++] = g->pid;
	while (n < max && (t = gdbt_next_thread(g, &pos)))
		if (t->tid != g->pid)
			tids[n++] = t->tid;
	return (int)n;
}

/* Leave the process to memtrack alone: breakpoints out, every parked thread resumed. */
int gdbt_let_run(struct mt_gdbt *g)
{
	struct mt_gdbt_thread *t;
	size_t pos = 0;
	int err = 0;

	while (g->n_breaks)
		gdbt_remove_break(g, &g->breaks[g->n_breaks - 1]);
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
	pid_t pid = g->pid;

	g->end = GDB_END_KILL;
	/*
	 * Over gdb's pipe, gdb reads memtrack's stderr only while it waits for a reply, and stops
	 * once it has vKill's: the OK waits for the summary, as the exit's reply does.
	 */
	if (g->stdio && g->conn)
		mt_gdb_final_reply_later(g->conn, g->cfg.final_reply, g->cfg.final_len);
	/* SIGKILL ends even a thread in a ptrace stop; the loop sees its end as in any run. */
	kill(pid, SIGKILL);
	return gdbt_let_run(g);
}

/* A fork of the process: the child is not gdb's, gdb's breakpoints are taken out of its copy. */
void mt_gdbt_new_child(struct mt_gdbt *g, struct mt_gdbt_thread *t, int event, pid_t child)
{
	(void)t;
	if (event != PTRACE_EVENT_FORK && event != PTRACE_EVENT_VFORK)
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
	for (size_t i = 0; i < g->n_breaks; i++) {
		uint8_t byte = gdbt_under(&g->breaks[i]);

		gdbt_write_raw(child, g->breaks[i].addr, &byte, 1);
	}
}

/* The process ran execve: a new address space, none of gdb's breakpoints in it. */
void mt_gdbt_exec(struct mt_gdbt *g, struct mt_gdbt_thread *t)
{
	(void)t;
	g->n_breaks = 0;
	g->probes_known = false;
	g->n_rets = 0;
	g->xol_start = g->xol_end = 0;
}

/* A thread of the process ended; the end of its leader is the process's, gdb's last stop. */
void mt_gdbt_gone(struct mt_gdbt *g, struct mt_gdbt_thread *t, int status)
{
	struct mt_gdb_stop end = {0};

	if (t->tid != g->pid)
		return;
	end.kind = WIFSIGNALED(status) ? MT_GDB_STOP_KILLED : MT_GDB_STOP_EXITED;
	end.value = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
	g->n_breaks = 0; /* nothing to take out of a process that is gone */
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
