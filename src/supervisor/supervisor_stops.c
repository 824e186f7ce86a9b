// SPDX-License-Identifier: GPL-2.0
/*
 * The supervisor's stop handlers, one per kind of stop (docs/STOPS.md). What they share (the
 * stop log's records, resuming) is below them: supervisor_log.c, supervisor_tree.c.
 */

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <malloc.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
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

#include "inspect/debug_rights.h"
#include "supervisor/supervisor_int.h"

/* ---- the stops ----------------------------------------------------------------------- */

/*
 * The stop point reached: the process goes to gdb's stub (--gdb), or is handed to a debugger;
 * only one that the invoker could debug without memtrack (docs/SECURITY.md), else it runs on.
 */
static int give_away(struct sup *s, struct tracee *t, const char *where)
{
	pid_t pid = s->procs[t->proc].pid;
	char why[128];

	if (mt_invoker_may_debug(&s->cfg->identity, pid, why, sizeof(why))) {
		fprintf(stderr, "memtrack: process %d is not handed to a debugger: %s\n", pid, why);
		return SUP_RESUME(0);
	}
	return s->cfg->gdb ? sup_gdb_start(s, t, where) : sup_hand_off(s, t, where);
}

int sup_on_exec(struct sup *s, struct tracee *t, bool root_first, bool new_leader)
{
	struct proc *p = &s->procs[t->proc];
	char where[4200];
	struct json_object *d = sup_detail_new();
	struct sup_exec_mapped mapped = {0};
	bool ahead = s->cfg->loader_cache != NULL;
	int err = 0;

	free(p->exe);
	p->exe = sup_read_exe(p->pid);
	if (s->tracker) {
		if (root_first)
			err = mt_tracker_arm(s->tracker, p->pid);
		/* The program and its interpreter were mapped by execve itself: classify them now.
		 */
		if (!err)
			err = mt_tracker_exec(s->tracker, p->pid, new_leader,
					      ahead ? sup_exec_mapped_add : NULL, &mapped);
		if (!err)
			err = sup_maps_exec(s, p);
		if (!err && ahead)
			err = sup_link_at_exec(s, p, &mapped);
		sup_exec_mapped_free(&mapped);
	}
	sup_detail_str(d, "path", p->exe ? p->exe : "?");
	sup_log_files(s);
	sup_log_stop(s, t, "exec", d);
	if (err)
		return err;
	sup_record_process(s, p, 0, false);
	if (sup_stop_point_at_exec(s, t, root_first, where, sizeof(where)))
		return give_away(s, t, where);
	if (root_first && s->cfg->gdb && !s->cfg->stop.text) {
		s->res->resume_ns = mt_clock_now_ns();
		snprintf(where, sizeof(where), "right after its exec of %s", p->exe ? p->exe : "?");
		return give_away(s, t, where);
	}
	if (root_first)
		s->res->resume_ns = mt_clock_now_ns();
	return SUP_RESUME(0);
}

/* The thread group of a stopped tracee, from /proc/TID/status; 0 when it cannot be read. */
static pid_t sup_read_tgid(pid_t tid)
{
	struct mt_proc_status st;

	return mt_proc_status_read(tid, 0, &st) ? 0 : st.tgid;
}

/* A fork, vfork or clone reported by its parent: place the new tracee in the tree. */
static int sup_on_new_child(struct sup *s, struct tracee *t, int event)
{
	static const char *const kinds[] = {
	    [PTRACE_EVENT_FORK] = "fork",
	    [PTRACE_EVENT_VFORK] = "vfork",
	    [PTRACE_EVENT_CLONE] = "clone",
	};
	struct tracee *child;
	struct json_object *d;
	bool ended;
	unsigned long msg = 0;
	struct proc *parent;
	pid_t tgid;
	int idx, err;

	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) < 0)
		return -errno;
	sup_gdb_new_child(s, t, event, (pid_t)msg);
	child = sup_reported_child(s, (pid_t)msg, &ended);
	if (!child)
		return -ENOMEM;
	d = sup_detail_new();
	parent = &s->procs[t->proc];
	tgid = parent->pid;
	if (event == PTRACE_EVENT_CLONE &&
	    (child->tgid ? child->tgid != child->tid : sup_is_thread_of(tgid, child->tid))) {
		child->proc = t->proc;
		err = mt_stoplog_place(child->log, parent->pos, ++parent->threads);
		s->res->threads++;
		sup_detail_int(d, "new_thread", parent->threads);
	} else {
		idx = sup_add_proc(s, child->tid, t->proc);
		if (idx < 0) {
			json_object_put(d);
			if (ended)
				free(child);
			return idx;
		}
		child->proc = idx;
		free(s->procs[idx].exe);
		s->procs[idx].exe = strdup(s->procs[t->proc].exe ? s->procs[t->proc].exe : "?");
		err = mt_stoplog_place(child->log, s->procs[idx].pos, 0);
		/*
		 * Attached: a child forked between its parent's seizing and arming was not armed
		 * by the BPF side's fork tracepoint; arming again is harmless.
		 */
		if (!err && !ended && s->tracker && s->cfg->attach_pid)
			err = mt_tracker_arm(s->tracker, child->tid);
		/* Stopped before its first instruction: its links are in place before it runs. */
		if (!err && !ended && s->tracker)
			err = mt_tracker_inherit(s->tracker, tgid, child->tid,
						 event == PTRACE_EVENT_VFORK);
		sup_detail_str(d, "child", s->procs[idx].pos);
		/* Its position and parent, joined to its fork in the stream. */
		sup_record_process(s, &s->procs[idx], child->end_status, ended);
	}
	sup_log_stop(s, t, kinds[event], d);
	if (ended)
		free(child);
	else if (!err && child->held) {
		child->held = false;
		s->n_held--;
		/* A child gdb follows (its fork events) is parked for gdb instead. */
		err = sup_carry_out(child, sup_gdb_carry(s, child, SUP_RESUME(0)));
	}
	return err ? err : SUP_RESUME(0);
}

/*
 * A tracee whose creator will never report it (the creator was killed at its fork): place it
 * as an orphan process, so that its stops can be handled.
 */
static int place_orphan(struct sup *s, struct tracee *t)
{
	int idx;

	/*
	 * A thread whose creator was killed before reporting the clone (the process died while
	 * it was created) is a thread of that process, not a process of its own.
	 */
	if (!t->tgid)
		t->tgid = sup_read_tgid(t->tid);
	for (size_t i = s->n_procs; t->tgid && t->tgid != t->tid && i-- > 0;) {
		if (s->procs[i].pid != t->tgid)
			continue;
		t->proc = (int)i;
		s->res->threads++;
		return mt_stoplog_place(t->log, s->procs[i].pos, ++s->procs[i].threads);
	}
	idx = sup_add_proc(s, t->tid, -2);

	if (idx < 0)
		return idx;
	t->proc = idx;
	return mt_stoplog_place(t->log, s->procs[idx].pos, 0);
}

/* When every live tracee waits for its creator's report, none is coming: release them. */
int sup_release_held(struct sup *s)
{
	int err;

	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];

		if (!t->held)
			continue;
		t->held = false;
		s->n_held--;
		err = place_orphan(s, t);
		if (!err)
			err = sup_resume(t->tid, 0);
		if (err)
			return err;
	}
	return 0;
}

/* execve from a non-leader thread: that thread takes the leader's tid, the old leader is gone. */
static int on_exec_event(struct sup *s, struct tracee *t)
{
	unsigned long former = 0;
	struct tracee *old;
	bool new_leader = false;

	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &former) == 0 && (pid_t)former != t->tid) {
		new_leader = true;
		old = sup_find_tracee(s, (pid_t)former);
		if (old) {
			t->log = old->log;
			sup_remove_tracee(s, old);
		}
	}
	sup_gdb_exec(s, t);
	return sup_on_exec(s, t, false, new_leader);
}

/* Whether tid was seen at its exit stop (mt_tracker_thread_exits). */
static bool seen_exiting(pid_t tid, void *arg)
{
	struct tracee *t = sup_find_tracee(arg, tid);

	return t && t->exiting;
}

static int on_exit_event(struct sup *s, struct tracee *t)
{
	struct json_object *d = sup_detail_new();
	unsigned long status = 0;
	int err;

	ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &status);
	if (WIFSIGNALED((int)status)) {
		char buf[16];

		sup_detail_str(d, "signal", sup_signame(WTERMSIG((int)status), buf, sizeof(buf)));
	} else {
		sup_detail_int(d, "code", WEXITSTATUS((int)status));
	}
	sup_log_stop(s, t, "exit", d);
	t->exiting = true;
	/*
	 * A leader that exits before its threads: the process's breakpoints must stay. A thread
	 * not placed yet has a creator still running, so none running means none left: the
	 * tracker's walk of /proc/PID/task is saved at every single-threaded process's exit.
	 */
	if (s->tracker && t->proc >= 0 && sup_threads_running(s, t->proc, t->tid)) {
		err = mt_tracker_thread_exits(s->tracker, s->procs[t->proc].pid, t->tid,
					      seen_exiting, s);
		if (err)
			return err;
	}
	/* Its memory is still there: the process's RSS at its end (supervisor_rss.c). */
	err = sup_rss_exit_stop(s, t);
	if (err)
		return err;
	/*
	 * --leaks: the last thread's exit stop scans the process (supervisor_leaks.c); not the
	 * process served to gdb, whose threads gdb stops and resumes.
	 */
	return sup_gdb_owns(s, t) ? SUP_RESUME(0) : sup_leaks_exit_stop(s, t, (int)status);
}

static int on_watcher_stop(struct sup *s, struct tracee *t, const struct mt_inode_key *key)
{
	pid_t pid = s->procs[t->proc].pid;
	const struct mt_tracked_file *f;
	struct json_object *d = sup_detail_new();
	int err;

	err = mt_tracker_handle_stop(s->tracker, pid, key);
	f = mt_tracker_find(s->tracker, key);
	sup_log_files(s);
	sup_maps_log(s, t, key, f);
	/*
	 * Every process that maps a file with probes stops for its links (a request, a wait for
	 * another's, or a known file not linked for it), whatever the timing; for a file without,
	 * only the first mapper and those that map it meanwhile do: those stops are not logged.
	 */
	if (f && f->probes) {
		sup_detail_str(d, "path", f->path);
		/* Who mapped it (dlopen <- load_plugin <- main): the same names in every run. */
		if (s->cfg->trace_stops_path && !sup_handoff_owns(s, t)) {
			struct json_object *frames = sup_stack_of(s, t);

			if (frames)
				json_object_object_add(d, "backtrace", frames);
		}
		sup_log_stop(s, t, "map", d);
	} else {
		json_object_put(d);
	}
	if (err)
		return err;
	if (f && sup_stop_point_at_map(s, t, f->path)) {
		char where[4200];

		snprintf(where, sizeof(where), "right after mapping %s", f->path);
		return give_away(s, t, where);
	}
	return SUP_RESUME(0);
}

/*
 * A pressure stop: the events ring was nearly full when the thread emitted (its event is in the
 * ring). It stays stopped, its SIGSTOP suppressed, until the consumer has made room
 * (sup_resume_pressed()). Not logged: when the ring fills depends on how fast the consumer runs,
 * and the log of a deterministic program must not.
 */
static int on_pressure_stop(struct sup *s, struct tracee *t)
{
	int err;

	if (mt_events_has_room(s->events))
		return SUP_RESUME(0);
	err = sup_tset_put(&s->pressed, t);
	if (err)
		return err;
	t->pressed = true;
	return SUP_LEAVE;
}

/* Resume the threads held at pressure stops once the consumer has made room. */
int sup_resume_pressed(struct sup *s)
{
	struct tracee *t;
	int err;

	if (!s->pressed.n || !mt_events_has_room(s->events))
		return 0;
	while (s->pressed.n) {
		t = s->pressed.v[s->pressed.n - 1];
		sup_unpress(s, t);
		err = sup_resume(t->tid, 0);
		if (err)
			return err;
	}
	return 0;
}

static bool is_stop_sig(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

static int on_signal_stop(struct sup *s, struct tracee *t, int sig)
{
	struct mt_ptrace_mark call;
	struct mt_inode_key key;
	struct json_object *d;
	siginfo_t si;
	char buf[16];
	int marked, pressed, traces;
	bool cancelled;

	if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) < 0) {
		if (errno != EINVAL)
			return errno == ESRCH ? SUP_LEAVE : -errno;
		/* A group-stop of a seized tracee is a PTRACE_EVENT_STOP (on_event_stop()). */
		return SUP_RESUME(0);
	}
	if (sig == SIGSTOP && si.si_code == SI_KERNEL && s->tracker) {
		/*
		 * The watcher's and back-pressure's SIGSTOPs merge into one stop when both came.
		 * The map stop then resumes the thread, which stops again at its next event while
		 * the ring is still nearly full: nothing is lost either way.
		 */
		pressed = mt_tracker_take_pressure_mark(s->tracker, t->tid);
		marked = mt_tracker_take_stop_mark(s->tracker, t->tid, &key);
		if (marked < 0 || pressed < 0)
			return marked < 0 ? marked : pressed;
		if (marked)
			return on_watcher_stop(s, t, &key);
		if (pressed)
			return on_pressure_stop(s, t);
		/* A tracer in the tree asked to trace: supervisor_inner.c. */
		traces = mt_tracker_take_ptrace_mark(s->tracker, t->tid, &call);
		if (traces)
			return traces < 0 ? traces : sup_inner_ptrace(s, t, &call);
	}
	/* Any other signal of the process served to gdb is gdb's to decide. */
	if (sup_gdb_owns(s, t))
		return sup_gdb_signal(s, t, sig, &si);
	/* An attached process gets every signal: memtrack's requests are its own (detach). */
	if (t->tid == s->root && !s->cfg->attach_pid && sup_is_term_sig(sig) &&
	    !sup_root_delivery_wanted(s, &si)) {
		d = sup_detail_new();
		sup_detail_str(d, "signal", sup_signame(sig, buf, sizeof(buf)));
		sup_log_stop(s, t, "signal-dropped", d);
		return SUP_RESUME(0);
	}
	/*
	 * A stop signal that a SIGCONT followed while the thread was at its delivery would have
	 * been cancelled by it without memtrack (dequeue and stop are one step there): not
	 * re-injected.
	 */
	cancelled = is_stop_sig(sig) && mt_proc_sig_pending(t->tid, SIGCONT);
	sup_log_signal(s, t, sig);
	return SUP_RESUME(cancelled ? 0 : sig);
}

/*
 * A group-stop of a seized tracee (PTRACE_EVENT_STOP with the stop signal): a SIGSTOP or SIGTSTP
 * of the user's (memtrack's own are suppressed before they can stop anything). The thread is left
 * in it with PTRACE_LISTEN, as strace does: the process stays stopped as without memtrack, and a
 * SIGCONT wakes it. The stop after that wake-up (SIGTRAP) just continues, unlogged: how many of
 * those come depends on timing.
 */
static int on_event_stop(struct sup *s, struct tracee *t, int sig)
{
	struct json_object *d;
	char buf[16];

	if (!is_stop_sig(sig))
		return SUP_RESUME(0);
	d = sup_detail_new();
	sup_detail_str(d, "signal", sup_signame(sig, buf, sizeof(buf)));
	sup_log_stop(s, t, "group-stop", d);
	if (ptrace(PTRACE_LISTEN, t->tid, 0, 0) < 0 && errno != ESRCH)
		return -errno;
	t->listening = true;
	return SUP_LEAVE;
}

/*
 * A stop of a thread of the process being handed over. A new process it forked is placed in the
 * tree first, as any other (it stays memtrack's); then the handoff detaches the thread.
 */
static int handed_off_stop(struct sup *s, struct tracee *t, int status)
{
	int event = (unsigned int)status >> 16, next;

	if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK) {
		next = sup_on_new_child(s, t, event);
		if (next < 0)
			return next;
	}
	return sup_handoff_stop(s, t, status);
}

static int dispatch_stop(struct sup *s, struct tracee *t, int status)
{
	int sig = WSTOPSIG(status), event = (unsigned int)status >> 16;

	int err;

	if (!t->started && event == PTRACE_EVENT_STOP) {
		/*
		 * The attach stop of a new tracee. When it comes before its creator's report, the
		 * tracee waits here until that report places it in the tree.
		 */
		t->started = true;
		/*
		 * Placed already: its process's pid is its thread group, without a /proc read. Held
		 * for its creator's report, it is placed by that report; only a handoff or gdb asks
		 * whose thread it is before, and placing it as an orphan reads it then.
		 */
		if (t->proc >= 0)
			t->tgid = s->procs[t->proc].pid;
		else if (s->gdb || sup_handoff_alive(s))
			t->tgid = sup_read_tgid(t->tid);
		if (sup_handoff_owns(s, t))
			return handed_off_stop(s, t, status);
		sup_log_stop(s, t, "start", NULL);
		if (t->proc >= 0)
			return SUP_RESUME(0);
		t->held = true;
		s->n_held++;
		return SUP_LEAVE;
	}
	t->started = true;
	if (sup_handoff_owns(s, t))
		return handed_off_stop(s, t, status);
	if (t->proc < 0) {
		err = place_orphan(s, t);
		if (err)
			return err;
	}
	switch (event) {
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		return sup_on_new_child(s, t, event);
	case PTRACE_EVENT_EXEC:
		return on_exec_event(s, t);
	case PTRACE_EVENT_EXIT:
		return on_exit_event(s, t);
	case PTRACE_EVENT_VFORK_DONE:
		return sup_gdb_vfork_done(s, t);
	case PTRACE_EVENT_STOP:
		return on_event_stop(s, t, sig);
	case 0:
		if (sig == (SIGTRAP | 0x80))
			return sup_gdb_syscall(s, t);
		return on_signal_stop(s, t, sig);
	default:
		return SUP_RESUME(0);
	}
}

#ifdef MT_FAULT_INJECTION
/*
 * Test builds only (build/tests/memtrack-faults; the memtrack binary has none of this): with
 * MT_FAULT_AT_STOP=N in its environment, the Nth stop fails as a refused ptrace request would,
 * leaving its tracee stopped, so that the tests can drive the fatal path on a live tree.
 */
static int injected_fault(void)
{
	static long stops;
	const char *at = getenv("MT_FAULT_AT_STOP");

	return at && ++stops == atol(at) ? -EPERM : 0;
}

/* MT_NO_BACKPRESSURE=1: a full ring drops events, so that the tests can drive the drop path. */
bool sup_backpressure_off(void)
{
	return getenv("MT_NO_BACKPRESSURE") != NULL;
}

/* MT_NO_UPROBE_MULTI=1: per-process perf links, the way of kernels before 6.6 (6.1) once proven. */
bool sup_uprobe_multi_off(void)
{
	return getenv("MT_NO_UPROBE_MULTI") != NULL;
}

/* MT_REFUSE_CALLERS=1: the callers' programs are refused, as a kernel's verifier may refuse them.
 */
bool sup_callers_refused(void)
{
	return getenv("MT_REFUSE_CALLERS") != NULL;
}
#else
static int injected_fault(void)
{
	return 0;
}

bool sup_backpressure_off(void)
{
	return false;
}

bool sup_uprobe_multi_off(void)
{
	return false;
}

bool sup_callers_refused(void)
{
	return false;
}
#endif

/*
 * A tracee can be killed (SIGKILL, its group's exit) between its stop and our ptrace requests:
 * ESRCH then only means its death report is on its way, not that supervision failed.
 */
int sup_on_stop(struct sup *s, struct tracee *t, int status)
{
	int err;

	t->listening = false;
	err = injected_fault();
	if (!err) {
		int next = dispatch_stop(s, t, status);

		/* A thread of the process gdb has stopped stays parked; one gdb steps, steps on. */
		if (sup_gdb_owns(s, t))
			next = sup_gdb_carry(s, t, next);
		err = sup_carry_out(t, next);
	}

	return err == -ESRCH ? 0 : err;
}
