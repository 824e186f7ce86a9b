// SPDX-License-Identifier: GPL-2.0
/*
 * The supervisor's termination requests: the signals memtrack receives, forwarded to the command
 * or ending its tree, and the wait for the next stop or request.
 */

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <malloc.h>
#include <pthread.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/signalfd.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "writer/artifact.h"
#include "inspect/backtrace.h"
#include "base/clock.h"
#include "writer/events.h"
#include "base/privileges.h"
#include "inspect/procstatus.h"
#include "inspect/stoplog.h"
#include "supervisor/supervisor.h"
#include "tracker/tracker.h"

#include "supervisor/supervisor_int.h"

/* The signals memtrack takes as requests to end the run; SIGCHLD wakes the loop. */
static const int term_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define N_TERM_SIGS (sizeof(term_sigs) / sizeof(term_sigs[0]))

/* memtrack's signal mask before mt_supervise: what the command gets back. */
sigset_t sup_caller_mask;

/* ---- termination requests ------------------------------------------------------------ */

/*
 * memtrack blocks the termination signals and SIGCHLD in all its threads and takes them with
 * sigtimedwait in the loop, with their siginfo, so that a request is handled between two stops.
 *
 * The forwarding rule: a termination signal sent to memtrack reaches the command exactly once.
 * memtrack forwards it to the root only when the root will not get it otherwise. A signal sent to
 * the process group (Ctrl-C on a terminal, kill -- -PGID, timeout, systemd) reached the root too:
 * memtrack, as its tracer, sees the root's signal-delivery-stop (a delivery with the same signal,
 * si_code and sender not matched with a request yet), or the signal pending for the root
 * (SigPnd/ShdPnd in /proc/ROOT/status), or the root stopped at its delivery. Then the command got
 * it by itself and decides alone what to do with it (a REPL survives Ctrl-C). Otherwise (a kill
 * of memtrack's pid) memtrack forwards it and ends the tree: see end_tree().
 */
bool sup_is_term_sig(int sig)
{
	for (size_t i = 0; i < N_TERM_SIGS; i++)
		if (term_sigs[i] == sig)
			return true;
	return false;
}

static void wake_set(sigset_t *set)
{
	sigemptyset(set);
	sigaddset(set, SIGCHLD);
	for (size_t i = 0; i < N_TERM_SIGS; i++)
		sigaddset(set, term_sigs[i]);
}

/* Before any thread exists: every thread memtrack starts inherits the mask. */
void sup_block_requests(void)
{
	sigset_t set;

	wake_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, &sup_caller_mask);
}

/* After the run: requests that came too late to matter are dropped, the mask is restored. */
void sup_unblock_requests(void)
{
	const struct timespec zero = {0, 0};
	sigset_t set;

	wake_set(&set);
	sigdelset(&set, SIGCHLD);
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
	pthread_sigmask(SIG_SETMASK, &sup_caller_mask, NULL);
}

/* The recent send of this signal by this sender, made if needed (the oldest slot is reused). */
static struct sent *find_sent(struct sup *s, const siginfo_t *si)
{
	uint64_t now = mt_clock_now_ns();
	struct sent *oldest = &s->sent[0];
	const size_t n = sizeof(s->sent) / sizeof(s->sent[0]);

	for (size_t i = 0; i < n; i++) {
		struct sent *e = &s->sent[i];

		if (e->sig == si->si_signo && e->code == si->si_code && e->pid == si->si_pid &&
		    now - e->first_ns < SEND_WINDOW_NS)
			return e;
		if (e->first_ns < oldest->first_ns)
			oldest = e;
	}
	*oldest = (struct sent){
	    .sig = si->si_signo, .code = si->si_code, .pid = si->si_pid, .first_ns = now};
	return oldest;
}

/* Whether sig is pending for pid, thread (SigPnd) or process-wide (ShdPnd). */
/*
 * The root has the signal pending, or is stopped at its delivery; but not when it is parked
 * there for gdb: the end of gdb's session that the request brings resumes it without the signal
 * (gdb had not decided to pass it), so memtrack forwards it.
 */
static bool root_getting(struct sup *s, int sig)
{
	struct tracee *t = sup_find_tracee(s, s->root);
	siginfo_t si;

	if (mt_proc_sig_pending(s->root, sig))
		return true;
	if (t && sup_gdb_owns(s, t) && t->gdb.parked && t->gdb.at_signal)
		return false;
	return ptrace(PTRACE_GETSIGINFO, s->root, 0, &si) == 0 && si.si_signo == sig;
}

/*
 * A termination signal at the root's signal-delivery-stop: whether to deliver it. memtrack's own
 * forward is. One from a sender whose send memtrack already forwarded is the same send reaching
 * the root a second way (sent to memtrack and to the group): dropped once, but only while
 * memtrack's copy is delivered or still to come. A standard signal already pending absorbs a
 * second one, so when the sender's copy reached the root just before memtrack's, memtrack's
 * merged into it and this delivery is the only one: it is delivered.
 */
bool sup_root_delivery_wanted(struct sup *s, const siginfo_t *si)
{
	const size_t n = sizeof(s->sent) / sizeof(s->sent[0]);
	struct sent *e;

	if (si->si_code == SI_USER && si->si_pid == getpid()) {
		for (size_t i = 0; i < n; i++) {
			e = &s->sent[i];
			if (e->sig == si->si_signo && e->forwarded && !e->forward_delivered) {
				e->forward_delivered = true;
				break;
			}
		}
		return true;
	}
	e = find_sent(s, si);
	if (e->forwarded && e->delivered++ == 0) {
		/* Not memtrack's alone to end the tree, then: the command decides. */
		if (s->end_phase == 1 && s->end_send == e) {
			s->end_phase = 0;
			s->end_deadline = 0;
		}
		if (e->forward_delivered || mt_proc_sig_pending(s->root, si->si_signo))
			return false;
		e->forward_delivered = true;
		return true;
	}
	if (!e->forwarded)
		e->delivered++;
	return true;
}

/* Send sig to every process of the tree but the root, once per process. */
static void signal_the_rest(struct sup *s, int sig)
{
	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];

		if (t->tid == s->root || (t->proc >= 0 && s->procs[t->proc].pid != t->tid))
			continue;
		kill(t->tid, sig);
	}
}

/*
 * Ending the tree after a request the command did not get by itself: phase 1, the root has it
 * and END_GRACE_NS to end its own tree; phase 2, what is left gets the same signal and
 * END_GRACE_NS more; phase 3, what is left gets SIGKILL. memtrack becomes a child subreaper, so
 * the orphans of the tree are reaped by it. Without a root, phase 2 starts at once.
 */
static void end_tree(struct sup *s)
{
	switch (s->end_phase) {
	case 1:
		signal_the_rest(s, s->end_sig);
		s->end_phase = 2;
		s->end_deadline = mt_clock_now_ns() + END_GRACE_NS;
		break;
	case 2:
		for (size_t i = 0; i < s->live.n; i++)
			kill(s->live.v[i]->tid, SIGKILL);
		/* And what was handed over: a debugger that holds it does not hold memtrack. */
		for (size_t i = 0; i < sup_handoff_count(s); i++) {
			const struct handoff *h = sup_handoff_nth(s, i);

			if (h->pid && !h->ended)
				kill(h->pid, SIGKILL);
		}
		s->end_phase = 3;
		s->end_deadline = 0;
		break;
	}
}

/*
 * A termination signal sent to memtrack. Forwarded to the root unless the root got the same
 * sender's signal by itself (delivered, pending, or stopped at its delivery); then the command
 * handles it alone. A forwarded one ends the tree: see end_tree().
 */
static void on_request(struct sup *s, const siginfo_t *si)
{
	int sig = si->si_signo;
	bool getting = false;
	struct sent *e;

	/* memtrack attach: a request to detach, never forwarded (supervisor_attach.c). */
	if (s->cfg->attach_pid) {
		/* Asked again while detaching: memtrack waits for no thread any more. */
		s->detach_forced = s->detaching;
		s->detach_asked = true;
		return;
	}
	e = find_sent(s, si);
	if (!s->root_gone)
		getting = e->delivered || e->forwarded || root_getting(s, sig);
	/*
	 * Whoever gets it, nothing may stay stopped for a debugger: gdb's session ends
	 * (sup_gdb_tick), a process still waiting for its debugger is continued (sup_handoff_tick).
	 */
	s->gdb_end_asked = true;
	s->handoff_wake_asked = true;
	if (getting)
		return;
	if (!s->root_gone)
		e->forwarded = true;
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	if (!s->root_gone)
		kill(s->root, sig);
	if (s->end_phase)
		return;
	s->end_send = e;
	s->end_sig = sig;
	s->end_phase = 1;
	s->end_deadline = mt_clock_now_ns() + END_GRACE_NS;
	if (s->root_gone)
		end_tree(s);
}

/*
 * After ending the tree: a process whose parent died after it is reparented to memtrack (the
 * subreaper) as a zombie once memtrack, as its tracer, has seen it end. Reap those.
 */
void sup_reap_orphans(void)
{
	int status;

	while (waitpid(-1, &status, __WALL | WNOHANG) > 0)
		;
}

/* A termination request waits to be taken (a wait elsewhere than the loop's gives way to it). */
bool sup_request_pending(void)
{
	sigset_t pending;

	if (sigpending(&pending))
		return false;
	for (size_t i = 0; i < N_TERM_SIGS; i++)
		if (sigismember(&pending, term_sigs[i]) == 1)
			return true;
	return false;
}

/* Handle the requests that came, and the phase of ending the tree that is due. */
void sup_take_requests(struct sup *s)
{
	const struct timespec zero = {0, 0};
	siginfo_t si;
	sigset_t set;

	wake_set(&set);
	sigdelset(&set, SIGCHLD);
	while (sigtimedwait(&set, &si, &zero) > 0)
		on_request(s, &si);
	if (s->end_deadline && mt_clock_now_ns() >= s->end_deadline)
		end_tree(s);
}

/*
 * A handed-off process maps files without being stopped: wake as soon as it asks for one (its
 * attach request), when it ends (its pidfd), or when a signal comes (a signalfd, never read: the
 * signal stays pending for sigtimedwait).
 */
static void wait_for_handed(struct sup *s, const sigset_t *set, const struct timespec *timeout)
{
	struct pollfd p[3 + 16];
	nfds_t n = 0;

	if (s->sigfd <= 0)
		s->sigfd = signalfd(-1, set, SFD_CLOEXEC | SFD_NONBLOCK);
	if (s->sigfd > 0)
		p[n++] = (struct pollfd){.fd = s->sigfd, .events = POLLIN};
	/* gdb's packets (or its connection) wake the loop too: see src/gdbtarget/. */
	if (sup_gdb_fd(s) >= 0)
		p[n++] = (struct pollfd){.fd = sup_gdb_fd(s), .events = POLLIN};
	/* More than 16 handed-off processes: the others are looked at every HANDOFF_POLL_NS. */
	n += sup_handoff_pollfds(s, p + n, 16);
	if (s->tracker && sup_handoff_alive(s))
		p[n++] =
		    (struct pollfd){.fd = mt_tracker_requests_fd(s->tracker), .events = POLLIN};
	ppoll(p, n, timeout, NULL);
}

/* Sleep until a child changes state, a request comes, or the next phase of ending is due. */
int sup_wait_for_news(struct sup *s)
{
	struct timespec zero = {0, 0}, ts, *timeout = NULL;
	uint64_t now = mt_clock_now_ns(), left, wait_ns;
	siginfo_t si;
	sigset_t set;
	int sig;

	if (s->end_deadline || (s->detach_at_ns && !s->detaching) || s->detaching) {
		/* Detaching: memtrack attach waits DETACH_WAIT_NS at most (supervisor_attach.c). */
		uint64_t at = s->end_deadline ? s->end_deadline
			      : s->detaching  ? s->detach_start_ns + DETACH_WAIT_NS
					      : s->detach_at_ns;

		left = at > now ? at - now : 0;
		ts = (struct timespec){left / 1000000000ull, left % 1000000000ull};
		timeout = &ts;
	}
	/* The consumer makes room for held threads without telling: look again soon. */
	if (s->pressed.n && (!timeout || ts.tv_sec || ts.tv_nsec > PRESSURE_POLL_NS)) {
		ts = (struct timespec){0, PRESSURE_POLL_NS};
		timeout = &ts;
	}
	/* RSS is sampled at a fixed rate, whether or not a stop comes (supervisor_rss.c). */
	wait_ns = sup_rss_wait_ns(s);
	if (wait_ns != UINT64_MAX &&
	    (!timeout || (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec > wait_ns)) {
		ts = (struct timespec){wait_ns / 1000000000ull, wait_ns % 1000000000ull};
		timeout = &ts;
	}
	/* Threads held at their exit stops are let go at a bound (supervisor_leaks.c). */
	wait_ns = sup_leaks_wait_ns(s);
	if (wait_ns != UINT64_MAX &&
	    (!timeout || (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec > wait_ns)) {
		ts = (struct timespec){wait_ns / 1000000000ull, wait_ns % 1000000000ull};
		timeout = &ts;
	}
	/* So is the caller's progress (supervisor_progress.c). */
	wait_ns = sup_progress_wait_ns(s);
	if (wait_ns != UINT64_MAX &&
	    (!timeout || (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec > wait_ns)) {
		ts = (struct timespec){wait_ns / 1000000000ull, wait_ns % 1000000000ull};
		timeout = &ts;
	}
	/* A debugger's attach and a handed-off process's end are looked for, not signalled. */
	if (sup_handoff_alive(s) && (!timeout || ts.tv_sec || ts.tv_nsec > HANDOFF_POLL_NS)) {
		ts = (struct timespec){0, HANDOFF_POLL_NS};
		timeout = &ts;
	}
	wake_set(&set);
	if (sup_handoff_waited(s) || sup_gdb_fd(s) >= 0) {
		wait_for_handed(s, &set, timeout);
		timeout = &zero;
	}
	sig = sigtimedwait(&set, &si, timeout);
	if (sig < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (sig != SIGCHLD)
		on_request(s, &si);
	return 0;
}
