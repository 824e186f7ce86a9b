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

/* Parked at this stop; at_signal: a signal-delivery-stop, where a resume can deliver a signal. */
static void park(struct tracee *t, int sig, bool at_signal)
{
	t->gdb_parked = true;
	t->gdb_interrupted = false;
	t->gdb_step = false;
	t->gdb_sig = sig;
	t->gdb_at_signal = at_signal;
}

int sup_gdb_collect(struct sup *s)
{
	struct sup_gdb *g = s->gdb;
	bool all = true;

	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];

		if (!sup_gdb_owns(s, t) || t->gdb_parked)
			continue;
		all = false;
		if (t->gdb_interrupted)
			continue;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0 && errno != ESRCH)
			return -errno;
		t->gdb_interrupted = true;
	}
	if (!all || g->state != GDB_STOPPING)
		return 0;
	g->state = GDB_STOPPED;
	g->probes_known = false; /* files may have been mapped while it ran */
	sup_gdb_forget_returns(s);
	if (!g->conn)
		return 0;
	g->stops++;
	return mt_gdb_stopped(g->conn, &g->stop);
}

/* A thread stopped for gdb: the process stops whole, then gdb hears of it. */
static int stop_for_gdb(struct sup *s, const struct mt_gdb_stop *stop)
{
	struct sup_gdb *g = s->gdb;

	g->stop = *stop;
	g->state = GDB_STOPPING;
	return sup_gdb_collect(s);
}

static int hold(struct sup_gdb *g, const struct mt_gdb_stop *stop)
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
static bool back_on_break(struct sup_gdb *g, struct tracee *t, const siginfo_t *si)
{
	struct user_regs_struct r;
	struct gdb_break *b;

	if (si->si_signo != SIGTRAP || (si->si_code != SI_KERNEL && si->si_code != TRAP_BRKPT))
		return false;
	if (ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return false;
	b = sup_gdb_find_break(g, r.rip - 1);
	if (!b || b->at_probe != (si->si_code == TRAP_BRKPT)) {
		b = sup_gdb_find_break(g, r.rip);
		return b && b->at_probe && si->si_code == TRAP_BRKPT && !t->gdb_stepped;
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
static bool step_trap(const struct sup *s, const struct tracee *t, const siginfo_t *si,
		      bool on_break)
{
	if (si->si_signo != SIGTRAP || on_break)
		return false;
	if (si->si_code == TRAP_TRACE || si->si_code == TRAP_BRKPT)
		return true;
	return si->si_code == SI_USER && si->si_pid == s->gdb->pid && t->gdb_stepped;
}

/* Whether a thread's pc is in the kernel's uretprobe trampoline, which gdb must never see. */
static bool at_trampoline(struct sup *s, struct tracee *t)
{
	struct user_regs_struct r;

	return ptrace(PTRACE_GETREGS, t->tid, 0, &r) == 0 && sup_gdb_at_trampoline(s, r.rip);
}

static int step_on(struct tracee *t)
{
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) < 0 && errno != ESRCH)
		return -errno;
	t->gdb_stepped = true;
	return SUP_LEAVE;
}

/*
 * A signal-delivery-stop of a thread of the process (not one of memtrack's own SIGSTOPs). While
 * the process runs, it is gdb's stop. While it is being stopped (or is stopped), the thread is
 * parked: at a breakpoint with its pc put back, after a step as it is, with any other signal or a
 * watchpoint's trap held for a later report.
 */
int sup_gdb_signal(struct sup *s, struct tracee *t, int sig, const siginfo_t *si)
{
	struct sup_gdb *g = s->gdb;
	struct mt_gdb_stop stop = {.kind = MT_GDB_STOP_SIGNAL, .value = sig, .tid = t->tid};
	bool stepped;
	int err = 0;

	if (sig == t->gdb_pass && si->si_code == SI_TKILL && si->si_pid == getpid()) {
		/* The signal gdb gave at a resume from a stop where it could not be delivered. */
		t->gdb_pass = 0;
		return SUP_RESUME(sig);
	}
	stop.swbreak = back_on_break(g, t, si);
	stepped =
	    step_trap(s, t, si, stop.swbreak) || (!stop.swbreak && sup_gdb_stray_probe(s, t, si));
	if (stepped && !t->gdb_step && g->state == GDB_RUNNING)
		return SUP_RESUME(0); /* a late one: the thread runs on as gdb resumed it */
	if (stepped && t->gdb_step && g->state == GDB_RUNNING && at_trampoline(s, t))
		return step_on(t); /* a ret into the trampoline: on to the caller, as without it */
	if (sig == SIGTRAP && si->si_code == TRAP_HWBKPT)
		sup_gdb_hw_hit(s, t, &stop);
	if (sig == SIGTRAP && !stop.swbreak && !stepped && !stop.hw && s->cfg->verbose)
		fprintf(stderr,
			"memtrack: gdb: thread %d got a SIGTRAP of none of gdb's (code %d)\n",
			t->tid, si->si_code);
	park(t, 0, true);
	if (g->state == GDB_RUNNING)
		err = stop_for_gdb(s, &stop);
	else if (!stop.swbreak && !stepped)
		err = hold(g, &stop);
	if (!err && g->state != GDB_RUNNING)
		err = sup_gdb_collect(s);
	return err ? err : SUP_LEAVE;
}

/* How gdb's continue resumes a thread: to its next syscall too while gdb catches them. */
static enum __ptrace_request continue_request(const struct sup_gdb *g)
{
	return g->catch_syscalls ? PTRACE_SYSCALL : PTRACE_CONT;
}

static bool catches(const struct sup_gdb *g, unsigned long nr)
{
	return g->catch_every || (nr < GDB_SYSCALLS && (g->catch_nrs[nr / 8] & (1u << nr % 8)));
}

/*
 * A syscall-stop: one of gdb's catchpoints (its entry or its return) when gdb catches that
 * syscall, reported as any other stop (held when the process is being stopped already); else
 * the thread goes on to its next one.
 */
int sup_gdb_syscall(struct sup *s, struct tracee *t)
{
	struct sup_gdb *g = s->gdb;
	struct __ptrace_syscall_info info;
	struct mt_gdb_stop stop = {.kind = MT_GDB_STOP_SIGNAL, .value = SIGTRAP, .tid = t->tid};
	struct user_regs_struct r;
	int err = 0;

	if (!g || !sup_gdb_owns(s, t) || !g->catch_syscalls)
		return SUP_RESUME(0);
	if (ptrace(PTRACE_GET_SYSCALL_INFO, t->tid, sizeof(info), &info) <= 0 ||
	    ptrace(PTRACE_GETREGS, t->tid, 0, &r) < 0)
		return errno == ESRCH ? SUP_LEAVE : -errno;
	if (info.op != PTRACE_SYSCALL_INFO_ENTRY && info.op != PTRACE_SYSCALL_INFO_EXIT)
		return SUP_RESUME(0);
	if (!catches(g, r.orig_rax))
		return SUP_RESUME(0);
	stop.syscall = info.op == PTRACE_SYSCALL_INFO_ENTRY ? 'e' : 'r';
	stop.sysno = (int)r.orig_rax;
	park(t, 0, false);
	if (g->state == GDB_RUNNING)
		err = stop_for_gdb(s, &stop);
	else
		err = hold(g, &stop);
	if (!err && g->state != GDB_RUNNING)
		err = sup_gdb_collect(s);
	return err ? err : SUP_LEAVE;
}

/*
 * QCatchSyscalls. The syscall-stops are told apart from a SIGTRAP by PTRACE_O_TRACESYSGOOD,
 * set on every thread of the process (threads it creates later inherit it); they happen only
 * while gdb catches, threads being resumed with PTRACE_SYSCALL only then.
 */
int sup_gdb_op_catch_syscalls(void *ctx, bool on, const int *nrs, size_t n)
{
	struct sup *s = ctx;
	struct sup_gdb *g = s->gdb;

	memset(g->catch_nrs, 0, sizeof(g->catch_nrs));
	g->catch_every = on && !n;
	for (size_t i = 0; i < n; i++) {
		if (nrs[i] < 0 || nrs[i] >= GDB_SYSCALLS)
			g->catch_every = true;
		else
			g->catch_nrs[nrs[i] / 8] |= (uint8_t)(1u << nrs[i] % 8);
	}
	g->catch_syscalls = on;
	for (size_t i = 0; on && i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];

		if (sup_gdb_owns(s, t) && t->gdb_parked &&
		    ptrace(PTRACE_SETOPTIONS, t->tid, 0,
			   (void *)(long)(PTRACE_OPTIONS | PTRACE_O_TRACESYSGOOD)) < 0 &&
		    errno != ESRCH)
			return -errno;
	}
	return 0;
}

/*
 * What the stop handler decided for a thread of the process (next, a SUP_RESUME): while gdb has
 * the process stopped, the thread is parked instead (with the signal it was to get); while gdb
 * has it stepping, it steps on.
 */
int sup_gdb_carry(struct sup *s, struct tracee *t, int next)
{
	struct sup_gdb *g = s->gdb;
	int err;

	if (next <= SUP_LEAVE)
		return next;
	err = sup_gdb_apply_hw(s, t); /* a new thread: gdb's watchpoints are its too */
	if (err)
		return err;
	if (g->state != GDB_RUNNING && sup_sig_pending(t->tid, SIGTRAP)) {
		/*
		 * Interrupted right after a breakpoint's int3 or a step: the trap is queued behind
		 * the interrupt's stop. It runs no instruction before its signal-delivery-stop,
		 * where it is parked as a breakpoint or step is (sup_gdb_signal()), never later
		 * with gdb's breakpoint gone.
		 */
		return next;
	}
	if (g->state != GDB_RUNNING) {
		park(t, next - 1, false);
		err = sup_gdb_collect(s);
		return err ? err : SUP_LEAVE;
	}
	t->gdb_interrupted = false;
	if (!t->gdb_step && !g->catch_syscalls)
		return next;
	if (!t->gdb_step) {
		/* memtrack's own stops do not end gdb's catching of syscalls */
		if (ptrace(PTRACE_SYSCALL, t->tid, 0, (void *)(long)(next - 1)) < 0 &&
		    errno != ESRCH)
			return -errno;
		return SUP_LEAVE;
	}
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, (void *)(long)(next - 1)) < 0 && errno != ESRCH)
		return -errno;
	t->gdb_stepped = true;
	return SUP_LEAVE;
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
static bool report_held(struct sup *s, const struct mt_gdb_action *a, size_t n)
{
	struct sup_gdb *g = s->gdb;

	for (size_t i = 0; i < g->n_held; i++) {
		struct tracee *t = sup_gdb_parked(s, g->held[i].tid);

		if (!t) {
			g->held[i--] = g->held[--g->n_held];
			continue;
		}
		if (!action_for(a, n, t->tid))
			continue;
		g->stop = g->held[i].stop;
		g->held[i] = g->held[--g->n_held];
		g->state = GDB_STOPPING; /* all parked: reported at the next look (sup_gdb_tick) */
		return true;
	}
	return false;
}

/*
 * Resume one parked thread. A signal gdb gives is delivered by the resume at a signal-delivery
 * stop; at any other (an interrupt, one of memtrack's events) the kernel would drop it, so it is
 * sent to the thread instead and let through when it arrives (gdb's `signal SIGUSR1` after ^C).
 */
static int resume_one(struct sup *s, struct tracee *t, const struct mt_gdb_action *act)
{
	int sig = act->sig ? act->sig : t->gdb_sig;
	pid_t pid = s->gdb->pid;
	int err;

	if (sig && t->gdb_at_signal)
		sup_log_signal(s, t, sig); /* as without gdb: a fatal one says where it struck */

	if (sig && !t->gdb_at_signal) {
		if (syscall(SYS_tgkill, pid, t->tid, sig) < 0 && errno != ESRCH)
			return -errno;
		t->gdb_pass = sig;
		sig = 0;
	}
	err = sup_gdb_keep_return(s, t);
	if (err)
		return err;
	t->gdb_parked = false;
	t->gdb_step = act->kind == 's';
	/* A step's trap still queued comes at once: it is known for a step's until then. */
	if (t->gdb_step || !sup_sig_pending(t->tid, SIGTRAP))
		t->gdb_stepped = t->gdb_step;
	if (ptrace(t->gdb_step ? PTRACE_SINGLESTEP : continue_request(s->gdb), t->tid, 0,
		   (void *)(long)sig) < 0 &&
	    errno != ESRCH)
		return -errno;
	return 0;
}

int sup_gdb_op_resume(void *ctx, const struct mt_gdb_action *a, size_t n)
{
	struct sup *s = ctx;
	struct sup_gdb *g = s->gdb;
	int err;

	if (report_held(s, a, n))
		return 0;
	g->state = GDB_RUNNING;
	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];
		const struct mt_gdb_action *act;

		if (!sup_gdb_owns(s, t) || !t->gdb_parked)
			continue;
		act = action_for(a, n, t->tid);
		if (!act)
			continue; /* not named: it stays stopped */
		err = resume_one(s, t, act);
		if (err)
			return err;
	}
	return 0;
}

int sup_gdb_op_interrupt(void *ctx)
{
	struct sup *s = ctx;
	struct sup_gdb *g = s->gdb;
	struct mt_gdb_stop stop = {.kind = MT_GDB_STOP_SIGNAL, .value = SIGINT, .tid = g->pid};

	if (g->state != GDB_RUNNING)
		return 0;
	return stop_for_gdb(s, &stop);
}

int sup_gdb_op_threads(void *ctx, pid_t *tids, size_t max)
{
	struct sup *s = ctx;
	size_t n = 0;

	if (max && sup_find_tracee(s, s->gdb->pid))
		tids[n++] = s->gdb->pid;
	for (size_t i = 0; i < s->live.n && n < max; i++) {
		struct tracee *t = s->live.v[i];

		if (sup_gdb_owns(s, t) && t->tid != s->gdb->pid)
			tids[n++] = t->tid;
	}
	return (int)n;
}

/* Leave the process to memtrack alone: breakpoints out, every parked thread resumed. */
int sup_gdb_let_run(struct sup *s)
{
	struct sup_gdb *g = s->gdb;
	int err = 0;

	while (g->n_breaks)
		sup_gdb_remove_break(s, &g->breaks[g->n_breaks - 1]);
	for (int i = 0; i < GDB_HW_SLOTS; i++)
		g->hw[i].used = false;
	g->hw_gen++;
	g->n_held = 0; /* a held signal is the program's: it is delivered below */
	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];

		if (!sup_gdb_owns(s, t))
			continue;
		t->gdb_interrupted = false;
		t->gdb_step = false;
		if (!t->gdb_parked)
			continue;
		t->gdb_parked = false;
		sup_gdb_apply_hw(s, t);
		if (t->gdb_sig)
			sup_log_signal(s, t, t->gdb_sig);
		if (!err)
			err = sup_resume(t->tid, t->gdb_sig);
	}
	g->over = true;
	return err;
}

int sup_gdb_op_detach(void *ctx)
{
	struct sup *s = ctx;

	s->gdb->end = GDB_END_DETACH;
	/* Over gdb's pipe, gdb stops reading memtrack's stderr once detached: said now. */
	if (s->gdb->stdio && s->cfg->artifact_path)
		fprintf(stderr,
			"memtrack: gdb detached; process %d runs on, recorded into %s (memtrack "
			"report %s once it ended)\n",
			s->gdb->pid, s->cfg->artifact_path, s->cfg->artifact_path);
	return sup_gdb_let_run(s);
}

int sup_gdb_op_kill(void *ctx)
{
	struct sup *s = ctx;
	pid_t pid = s->gdb->pid;

	s->gdb->end = GDB_END_KILL;
	/*
	 * Over gdb's pipe, gdb reads memtrack's stderr only while it waits for a reply, and stops
	 * once it has vKill's: the OK waits for the summary, as the exit's reply does.
	 */
	if (s->gdb->stdio && s->gdb->conn)
		mt_gdb_final_reply_later(s->gdb->conn, s->res->gdb_final,
					 sizeof(s->res->gdb_final));
	/* SIGKILL ends even a thread in a ptrace stop; the loop sees its end as in any run. */
	kill(pid, SIGKILL);
	return sup_gdb_let_run(s);
}

/* A fork of the process: the child is not gdb's, gdb's breakpoints are taken out of its copy. */
void sup_gdb_new_child(struct sup *s, struct tracee *t, int event)
{
	struct sup_gdb *g = s->gdb;
	unsigned long child = 0;

	if (!sup_gdb_owns(s, t) || (event != PTRACE_EVENT_FORK && event != PTRACE_EVENT_VFORK) ||
	    ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &child) < 0)
		return;
	/*
	 * gdb is never told of a fork (no fork events): its follow-fork-mode child, which it does
	 * not send, cannot be honoured. Said once, where gdb shows memtrack's stderr.
	 */
	if (!g->fork_said)
		fprintf(
		    stderr,
		    "memtrack: gdb: process %d forked %lu; gdb stays with %d (memtrack's stub has "
		    "no fork events: follow-fork-mode child is not followed), the child is "
		    "recorded\n",
		    g->pid, child, g->pid);
	g->fork_said = true;
	if (event != PTRACE_EVENT_FORK)
		return; /* a vfork child shares the memory, gdb's breakpoints included */
	for (size_t i = 0; i < g->n_breaks; i++) {
		uint8_t byte = sup_gdb_under(&g->breaks[i]);

		sup_gdb_write_raw((pid_t)child, g->breaks[i].addr, &byte, 1);
	}
}

/* The process ran execve: a new address space, none of gdb's breakpoints in it. */
void sup_gdb_exec(struct sup *s, struct tracee *t)
{
	struct sup_gdb *g = s->gdb;

	if (!sup_gdb_owns(s, t))
		return;
	g->n_breaks = 0;
	g->probes_known = false;
	g->n_rets = 0;
	g->xol_start = g->xol_end = 0;
}

/* A thread of the process ended; the end of its leader is the process's, gdb's last stop. */
void sup_gdb_gone(struct sup *s, struct tracee *t, int status)
{
	struct sup_gdb *g = s->gdb;
	struct mt_gdb_stop end = {0};

	if (!sup_gdb_owns(s, t) || t->tid != g->pid)
		return;
	end.kind = WIFSIGNALED(status) ? MT_GDB_STOP_KILLED : MT_GDB_STOP_EXITED;
	end.value = WIFSIGNALED(status) ? WTERMSIG(status) : WEXITSTATUS(status);
	g->n_breaks = 0; /* nothing to take out of a process that is gone */
	/*
	 * Over gdb's pipe, gdb closes memtrack's stderr as soon as it hears of the end: the reply
	 * waits until the summary is printed (mt_run_result's gdb_final).
	 */
	if (g->conn && g->stdio)
		mt_gdb_stopped_later(g->conn, &end, s->res->gdb_final, sizeof(s->res->gdb_final));
	else if (g->conn)
		mt_gdb_stopped(g->conn, &end);
	if (g->end == GDB_END_NONE)
		g->end = GDB_END_EXIT;
	g->over = true;
}
