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

static int pass_step(struct mt_gdbt *g);
static int end_pass(struct mt_gdbt *g);
static int resume_one(struct mt_gdbt *g, struct mt_gdbt_thread *t, const struct mt_gdb_action *act);

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
		return pass_step(g);
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

static int step_on(struct mt_gdbt_thread *t)
{
	if (ptrace(PTRACE_SINGLESTEP, t->tid, 0, 0) < 0 && errno != ESRCH)
		return -errno;
	t->stepped = true;
	return MT_GDBT_LEAVE;
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
static int pass_step(struct mt_gdbt *g)
{
	struct mt_gdbt_thread *t = gdbt_find_thread(g, g->passing_tid);
	struct gdb_break *b = passed_break(g);
	uint8_t under;
	int err;

	if (!t || !b) {
		g->passing_tid = 0;
		return end_pass(g);
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
	err = step_on(t);
	return err < 0 ? err : 0;
}

/*
 * A hit of a breakpoint whose conditions gdb gave the stub (mt_gdb_break_reported()) and none
 * holds: the thread goes on as if the breakpoint were not there, gdb told nothing. Past a
 * hardware one it just continues (the kernel set the resume flag); past an int3 it steps with
 * the original byte back, put out again at its next stop (put_back_passed()). Other threads
 * that run are parked first (GDB_PASSING), as gdbserver stops them, so that none passes the
 * breakpoint while it is out, and resumed after (end_pass()).
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
		*next = pass_step(g);
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
 * The pass over a breakpoint is over: the threads it parked run on, or, when one of them met
 * something for gdb meanwhile (held) or gdb interrupted, the process stops for gdb.
 */
static int end_pass(struct mt_gdbt *g)
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
static int put_back_passed(struct mt_gdbt *g, struct mt_gdbt_thread *t)
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
	return g->over ? 0 : end_pass(g);
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
	err = put_back_passed(g, t);
	if (err)
		return err;
	stop.swbreak = back_on_break(g, t, si);
	stepped = step_trap(t, si, stop.swbreak) || (!stop.swbreak && gdbt_stray_probe(g, t, si));
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
	may_pass = g->conn && g->state == GDB_RUNNING && !t->step &&
		   (stop.swbreak || stop.hw == 'h') && !others_stepped(g, t);
	park(t, 0, true);
	if (may_pass && condition_fails(g, t, &stop, &err))
		return err;
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

/* A stop of an event of thread t for gdb: reported, or held while the process is being stopped. */
static int event_stop(struct mt_gdbt *g, struct mt_gdbt_thread *t, const struct mt_gdb_stop *stop)
{
	int err;

	park(t, 0, false);
	if (g->state == GDB_RUNNING)
		err = stop_for_gdb(g, stop);
	else
		err = hold(g, stop);
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
	return event_stop(g, t, &stop);
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

	err = put_back_passed(g, t); /* whatever stopped its step over a breakpoint */
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

int gdbt_op_interrupt(void *ctx)
{
	struct mt_gdbt *g = ctx;
	struct gdbt_proc *p = gdbt_cur(g);
	struct mt_gdb_stop stop = {
	    .kind = MT_GDB_STOP_SIGNAL, .value = SIGINT, .tid = p ? p->pid : g->pid};

	if (g->state == GDB_PASSING)
		g->pass_interrupt = true; /* reported once the pass is over (end_pass()) */
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
	return event_stop(g, t, &stop);
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
	return event_stop(g, t, &stop);
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
		stop_for_gdb(g, end);
}

/* A thread of the process ended; the end of its leader is the process's, gdb's last stop. */
void mt_gdbt_gone(struct mt_gdbt *g, struct mt_gdbt_thread *t, int status)
{
	struct gdbt_proc *p = gdbt_proc_of(g, t->tid);
	struct mt_gdb_stop end = {0};

	put_back_passed(g, t);
	if (g->state == GDB_PASSING && t->tid == g->passing_tid && !g->pass_stepping) {
		g->passing_tid = 0; /* gone before its step: the others run on */
		end_pass(g);
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
