// SPDX-License-Identifier: GPL-2.0
/*
 * A tracer inside the traced tree (strace, gdb, a crash handler; docs/STOPS.md). memtrack traces
 * every process of the tree, so the kernel refuses another tracer (EPERM). The BPF side stops a
 * tracee that asks to trace (PTRACE_TRACEME, PTRACE_ATTACH, PTRACE_SEIZE) right after its call,
 * on its way back to user space; at that stop memtrack hands the target process over as it does
 * at a stop point (supervisor_handoff.c: it keeps its probes and records its allocations without
 * being its tracer), then has the caller make the call again, which now finds the target free.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/user.h>
#include <unistd.h>

#include "tracker/tracker.h"
#include "supervisor/supervisor_int.h"

/*
 * The kernel's "restart this system call" return (include/linux/errno.h, never seen by user
 * space): left in the return register at a signal-delivery-stop, the kernel makes the call again
 * once the stop ends without a handler to run, as after any interrupted call.
 */
#define MT_ERESTARTSYS		 512
#define MT_ERESTARTNOINTR	 513
#define MT_ERESTARTNOHAND	 514
#define MT_ERESTART_RESTARTBLOCK 516

static const char *request_name(unsigned int request)
{
	switch (request) {
	case PTRACE_TRACEME:
		return "PTRACE_TRACEME";
	case PTRACE_ATTACH:
		return "PTRACE_ATTACH";
	default:
		return "PTRACE_SEIZE";
	}
}

/* The call was interrupted (our SIGSTOP came while it slept): the kernel makes it again. */
static bool restarts(long ret)
{
	return ret == -MT_ERESTARTSYS || ret == -MT_ERESTARTNOINTR || ret == -MT_ERESTARTNOHAND ||
	       ret == -MT_ERESTART_RESTARTBLOCK;
}

/*
 * The process of the tree that t's call would trace (an index in procs), or -1 when memtrack
 * does not trace it or cannot let it go: the root asking its parent, memtrack, to trace it; a
 * process served to gdb (--gdb) or being handed over already.
 */
static int target_of(struct sup *s, struct tracee *t, const struct mt_ptrace_mark *m)
{
	struct tracee *x = t;

	if (m->request == PTRACE_TRACEME && s->procs[t->proc].pid == s->root)
		return -1;
	if (m->request != PTRACE_TRACEME) {
		x = sup_find_tracee(s, (pid_t)m->pid);
		if (!x || x->proc < 0 || x->proc == t->proc)
			return -1;
	}
	if (sup_gdb_owns(s, x) || sup_handoff_owns(s, x))
		return -1;
	return x->proc;
}

/* The call is made again when t runs on: let that one through the BPF side's stop. */
static int make_again(struct sup *s, pid_t tid, struct user_regs_struct *regs,
		      const struct mt_ptrace_mark *m)
{
	regs->rax = (unsigned long long)-MT_ERESTARTNOINTR;
	if (ptrace(PTRACE_SETREGS, tid, 0, regs) < 0)
		return -errno;
	return mt_tracker_pass_ptrace(s->tracker, tid, m);
}

static void log_call(struct sup *s, struct tracee *t, const struct mt_ptrace_mark *m, int target)
{
	struct json_object *d = sup_detail_new();

	sup_detail_str(d, "request", request_name(m->request));
	if (target >= 0)
		sup_detail_str(d, "handed_over", s->procs[target].pos);
	sup_log_stop(s, t, "ptrace", d);
}

/* Who will trace the target: the caller, or for PTRACE_TRACEME its parent (-1: not in the tree). */
static int tracer_of(struct sup *s, struct tracee *t, const struct mt_ptrace_mark *m)
{
	pid_t parent = s->procs[t->proc].parent_pid;

	if (m->request != PTRACE_TRACEME)
		return t->proc;
	for (size_t i = s->n_procs; i-- > 0;)
		if (s->procs[i].pid == parent)
			return (int)i;
	return -1;
}

static struct handoff *new_inner(struct sup *s)
{
	struct handoff **grown = realloc(s->inner, (s->n_inner + 1) * sizeof(*grown));

	if (!grown)
		return NULL;
	s->inner = grown;
	grown[s->n_inner] = calloc(1, sizeof(**grown));
	return grown[s->n_inner] ? grown[s->n_inner++] : NULL;
}

/*
 * Hand process target to the tracer t is a thread of. PTRACE_TRACEME: t is the target's own
 * thread, detached here, and makes its call again at once (its other threads are detached as
 * they stop). An attach: t waits, stopped, until every thread of the target is detached.
 */
static int hand_to_tracer(struct sup *s, struct tracee *t, int target,
			  const struct mt_ptrace_mark *m)
{
	int tracer = tracer_of(s, t, m);
	struct handoff *h = new_inner(s);
	char where[600];
	int err;

	if (!h)
		return -ENOMEM;
	if (tracer >= 0)
		snprintf(where, sizeof(where), "to its tracer, process %s (%s), at its %s",
			 s->procs[tracer].pos, s->procs[tracer].exe, request_name(m->request));
	else
		snprintf(where, sizeof(where), "to its tracer at its %s", request_name(m->request));
	err = sup_handoff_begin(s, h, target, where, true);
	if (err)
		return err;
	if (m->request == PTRACE_TRACEME) {
		if (ptrace(PTRACE_DETACH, t->tid, 0, 0) < 0 && errno != ESRCH)
			return -errno;
		/* Still read by the stop's caller: freed with the handoff. */
		sup_unpress(s, t);
		sup_tset_take(&s->live, t);
		h->detached = t;
	} else {
		h->caller = t->tid;
		h->call = *m;
	}
	if (s->cfg->verbose)
		fprintf(stderr, "memtrack: process %d (%s) handed %s\n", h->pid,
			s->procs[target].pos, where);
	err = sup_handoff_collect(s, h);
	return err ? err : SUP_LEAVE;
}

int sup_inner_ptrace(struct sup *s, struct tracee *t, const struct mt_ptrace_mark *m)
{
	struct user_regs_struct regs;
	int target = target_of(s, t, m), err;
	long ret;

	if (ptrace(PTRACE_GETREGS, t->tid, 0, &regs) < 0)
		return errno == ESRCH ? SUP_LEAVE : -errno;
	ret = (long)regs.rax;
	/* Refused because memtrack traces the target (or not made yet): made again once free. */
	if (target >= 0 && ret != -EPERM && !restarts(ret))
		target = -1;
	log_call(s, t, m, target);
	if (m->request != PTRACE_TRACEME && (pid_t)m->pid == getpid() && !s->told_traced) {
		/* Its first thread only, not the supervisor's (mt_supervise): it goes on. */
		s->told_traced = true;
		fprintf(stderr, "memtrack: process %d (%s) traced memtrack itself (%s)\n",
			s->procs[t->proc].pid, s->procs[t->proc].pos, request_name(m->request));
	}
	if (target < 0) {
		/* The call ran: its result stands, unless the kernel makes it again anyway. */
		err = restarts(ret) ? mt_tracker_pass_ptrace(s->tracker, t->tid, m) : 0;
		return err ? err : SUP_RESUME(0);
	}
	err = make_again(s, t->tid, &regs, m);
	return err ? err : hand_to_tracer(s, t, target, m);
}
