// SPDX-License-Identifier: GPL-2.0
/*
 * The ptrace supervisor. The command is spawned stopped at its exec (PTRACE_SEIZE), armed and
 * classified, then continued; from then on one loop waits for every stop of the tree and handles
 * each kind in one place (see the stop table in docs/STOPS.md).
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

#include "artifact.h"
#include "backtrace.h"
#include "clock.h"
#include "events.h"
#include "privileges.h"
#include "stoplog.h"
#include "supervisor.h"
#include "tracker.h"

#define PTRACE_OPTIONS                                                                             \
	(PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |     \
	 PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)

struct proc {
	pid_t pid;
	pid_t parent_pid;
	char *pos;
	char *exe;
	unsigned int children;
	unsigned int threads;
};

/*
 * A traced thread. Each is allocated on its own and never moves: a stop handler may hold one
 * across the creation of others (a fork report creates the child's).
 */
struct tracee {
	pid_t tid;
	int proc;	/* index in procs, -1 until its creator reports it */
	bool started;	/* its first (attach) stop has been seen */
	bool held;	/* stopped at that first stop until its creator reports it */
	bool pressed;	/* held at a pressure stop until the events consumer made room */
	pid_t tgid;	/* its thread group, read at its first stop (0 before) */
	int end_status; /* how it ended, when it ended before its creator reported it */
	struct mt_log_thread *log;
};

/* A set of tracees, in no order: removing swaps the last one in. */
struct tracee_set {
	struct tracee **v;
	size_t n, cap;
};

struct sup {
	const struct mt_run_config *cfg;
	struct mt_run_result *res;
	struct mt_tracker *tracker;
	struct mt_events *events;
	struct mt_artifact_writer *artifact;
	struct mt_stoplog *log;
	pid_t root;

	struct proc *procs;
	size_t n_procs, cap_procs;
	struct tracee_set live;
	/* Tracees that ended before their creator reported them: placed when it does. */
	struct tracee_set unplaced;
	/* Threads held at a pressure stop (see on_pressure_stop()), also in live. */
	struct tracee_set pressed;
	size_t files_logged; /* tracker files already named in the log */
	size_t n_held;
	unsigned int n_orphans;
	bool root_gone; /* the root ended, or was left stopped for a debugger */
	bool told_left; /* "waiting for N process(es) left by CMD" was said */

	/* Recent termination signals, one per sender: see on_request(). */
	struct sent {
		int sig, code;
		pid_t pid;
		uint64_t first_ns;
		bool forwarded;		/* memtrack sent it on to the root */
		bool forward_delivered; /* the root got memtrack's copy, or one it merged into */
		unsigned int delivered; /* deliveries to the root from the sender itself */
	} sent[8];
	/* Ending the tree on a termination request: see end_tree(). */
	const struct sent *end_send; /* the send that started it */
	int end_sig;
	int end_phase;
	uint64_t end_deadline;
};

/* The signals memtrack takes as requests to end the run; SIGCHLD wakes the loop. */
static const int term_sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
#define N_TERM_SIGS (sizeof(term_sigs) / sizeof(term_sigs[0]))

/* How often the loop looks whether the consumer made room for threads held by back-pressure. */
#define PRESSURE_POLL_NS (1000 * 1000)

/* How long signals of one sender count as one send (timeout sends to memtrack, then the group). */
#define SEND_WINDOW_NS (1000 * 1000000ull)

/* The grace the command gets to end its tree, then the rest gets it, before SIGKILL. */
#define END_GRACE_NS (2000 * 1000000ull)

/* memtrack's signal mask before mt_supervise: what the command gets back. */
static sigset_t caller_mask;

int mt_exec_failure_code(int neg_errno)
{
	return neg_errno == -ENOENT || neg_errno == -ENOTDIR ? 127 : 126;
}

/* ---- the tree ------------------------------------------------------------------------ */

static struct tracee *tset_find(const struct tracee_set *set, pid_t tid)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i]->tid == tid)
			return set->v[i];
	return NULL;
}

static int tset_put(struct tracee_set *set, struct tracee *t)
{
	struct tracee **grown;

	if (set->n == set->cap) {
		size_t c = set->cap ? 2 * set->cap : 32;

		grown = realloc(set->v, c * sizeof(*grown));
		if (!grown)
			return -ENOMEM;
		set->v = grown;
		set->cap = c;
	}
	set->v[set->n++] = t;
	return 0;
}

/* Take t out of the set; the caller owns it then. */
static void tset_take(struct tracee_set *set, struct tracee *t)
{
	for (size_t i = 0; i < set->n; i++) {
		if (set->v[i] == t) {
			set->v[i] = set->v[--set->n];
			return;
		}
	}
}

static void tset_free(struct tracee_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		free(set->v[i]);
	free(set->v);
}

static struct tracee *find_tracee(struct sup *s, pid_t tid)
{
	return tset_find(&s->live, tid);
}

static struct tracee *add_tracee(struct sup *s, pid_t tid)
{
	struct tracee *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	*t = (struct tracee){.tid = tid, .proc = -1, .log = mt_stoplog_thread(s->log)};
	if (!t->log || tset_put(&s->live, t) < 0) {
		free(t);
		return NULL;
	}
	return t;
}

/*
 * The tracee a creator reports: live, or already ended and waiting for its place (*ended is set
 * and the caller owns it), or not seen yet (its first stop is on its way).
 */
static struct tracee *reported_child(struct sup *s, pid_t tid, bool *ended)
{
	struct tracee *t = find_tracee(s, tid);

	*ended = false;
	if (t)
		return t;
	t = tset_find(&s->unplaced, tid);
	if (t) {
		tset_take(&s->unplaced, t);
		*ended = true;
		return t;
	}
	return add_tracee(s, tid);
}

/* t is no longer held at a pressure stop: resumed, or woken by SIGKILL, or gone. */
static void unpress(struct sup *s, struct tracee *t)
{
	if (!t->pressed)
		return;
	t->pressed = false;
	tset_take(&s->pressed, t);
}

static void remove_tracee(struct sup *s, struct tracee *t)
{
	unpress(s, t);
	tset_take(&s->live, t);
	free(t);
}

static int add_proc(struct sup *s, pid_t pid, int parent)
{
	struct proc *p;
	char pos[512];

	if (s->n_procs == s->cap_procs) {
		size_t cap = s->cap_procs ? 2 * s->cap_procs : 16;

		p = realloc(s->procs, cap * sizeof(*p));
		if (!p)
			return -ENOMEM;
		s->procs = p;
		s->cap_procs = cap;
	}
	if (parent == -1)
		snprintf(pos, sizeof(pos), "0");
	else if (parent < -1)
		snprintf(pos, sizeof(pos), "x%u", s->n_orphans++);
	else
		snprintf(pos, sizeof(pos), "%s.%u", s->procs[parent].pos,
			 s->procs[parent].children++);
	p = &s->procs[s->n_procs];
	*p = (struct proc){.pid = pid, .parent_pid = parent < 0 ? 0 : s->procs[parent].pid};
	p->exe = strdup("?");
	p->pos = strdup(pos);
	if (!p->pos)
		return -ENOMEM;
	s->res->processes++;
	s->res->threads++;
	return s->n_procs++;
}

static char *read_exe(pid_t pid)
{
	char path[64], buf[4096];
	ssize_t n;

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	n = readlink(path, buf, sizeof(buf) - 1);
	if (n < 0)
		return strdup("?");
	buf[n] = '\0';
	return strdup(buf);
}

static const char *signame(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "%d", sig);
	return buf;
}

/* ---- logging ------------------------------------------------------------------------- */

static struct json_object *detail_new(void)
{
	return json_object_new_object();
}

static void detail_str(struct json_object *d, const char *key, const char *val)
{
	json_object_object_add(d, key, json_object_new_string(val));
}

static void detail_int(struct json_object *d, const char *key, int64_t val)
{
	json_object_object_add(d, key, json_object_new_int64(val));
}

/* Name the files the tracker handled since the last stop, with what it attached. */
static void detail_files(struct sup *s, struct json_object *d)
{
	struct json_object *arr;
	size_t n;

	if (!s->tracker)
		return;
	n = mt_tracker_file_count(s->tracker);
	if (n == s->files_logged)
		return;
	arr = json_object_new_array();
	for (; s->files_logged < n; s->files_logged++) {
		const struct mt_tracked_file *f = mt_tracker_file(s->tracker, s->files_logged);
		struct json_object *o = json_object_new_object();

		detail_str(o, "path", f->path);
		detail_str(o, "family", mt_family_name(f->family));
		detail_int(o, "probes", f->probes);
		if (f->no_symbols)
			json_object_object_add(o, "no_symbols", json_object_new_boolean(1));
		json_object_array_add(arr, o);
	}
	json_object_object_add(d, "files", arr);
}

static int log_stop(struct sup *s, struct tracee *t, const char *kind, struct json_object *d)
{
	if (!s->cfg->trace_stops_path) {
		json_object_put(d);
		return 0;
	}
	return mt_stoplog_add(s->log, t->log, kind, d);
}

/* ---- resuming ------------------------------------------------------------------------ */

static int resume(pid_t tid, int sig)
{
	/* ESRCH: the tracee was killed meanwhile (SIGKILL, exit of its group); its death follows.
	 */
	if (ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig) < 0 && errno != ESRCH)
		return -errno;
	return 0;
}

static void record_process(struct sup *s, const struct proc *p, int status, bool exited)
{
	struct mt_artifact_process rec = {
	    .pid = p->pid,
	    .parent = p->parent_pid,
	    .exit_status = status,
	    .exited = exited,
	};

	if (!s->artifact)
		return;
	snprintf(rec.exe, sizeof(rec.exe), "%s", p->exe ? p->exe : "?");
	mt_artifact_write_process(s->artifact, &rec);
}

/*
 * Leave pid stopped for a debugger: no longer tracked by the watcher, detached with SIGSTOP
 * pending, so that it stops as soon as it runs and gdb can attach.
 */
static int stop_here(struct sup *s, struct tracee *t, const char *where)
{
	pid_t pid = t->proc >= 0 ? s->procs[t->proc].pid : t->tid;

	if (s->tracker) {
		mt_tracker_disarm(s->tracker, pid);
		/* A debugger must find no breakpoint of memtrack's in it (break malloc works). */
		mt_tracker_release(s->tracker, pid, true);
	}
	/*
	 * Detaching delivers its signal only from a signal-delivery-stop; at an event stop (the
	 * exec of a seized tracee) it is ignored. A SIGSTOP queued first stops the process anyway.
	 */
	if (tgkill(pid, t->tid, SIGSTOP) < 0 && errno != ESRCH)
		return -errno;
	if (ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)SIGSTOP) < 0)
		return -errno;
	s->res->stopped_pid = pid;
	if (pid == s->root)
		s->root_gone = true;
	fprintf(stderr, "memtrack: process %d is stopped %s; attach with: gdb -p %d\n", pid, where,
		pid);
	remove_tracee(s, t);
	return 0;
}

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
static bool is_term_sig(int sig)
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
static void block_requests(void)
{
	sigset_t set;

	wake_set(&set);
	pthread_sigmask(SIG_BLOCK, &set, &caller_mask);
}

/* After the run: requests that came too late to matter are dropped, the mask is restored. */
static void unblock_requests(void)
{
	const struct timespec zero = {0, 0};
	sigset_t set;

	wake_set(&set);
	sigdelset(&set, SIGCHLD);
	while (sigtimedwait(&set, NULL, &zero) > 0)
		;
	pthread_sigmask(SIG_SETMASK, &caller_mask, NULL);
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
static bool sig_pending(pid_t pid, int sig)
{
	char path[64], line[128];
	unsigned long long mask;
	bool pending = false;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", pid);
	f = fopen(path, "re");
	if (!f)
		return false;
	while (fgets(line, sizeof(line), f))
		if ((sscanf(line, "SigPnd: %llx", &mask) == 1 ||
		     sscanf(line, "ShdPnd: %llx", &mask) == 1) &&
		    (mask & (1ull << (sig - 1))))
			pending = true;
	fclose(f);
	return pending;
}

/* The root has the signal pending, or is stopped at its delivery. */
static bool root_getting(struct sup *s, int sig)
{
	siginfo_t si;

	return sig_pending(s->root, sig) ||
	       (ptrace(PTRACE_GETSIGINFO, s->root, 0, &si) == 0 && si.si_signo == sig);
}

/*
 * A termination signal at the root's signal-delivery-stop: whether to deliver it. memtrack's own
 * forward is. One from a sender whose send memtrack already forwarded is the same send reaching
 * the root a second way (sent to memtrack and to the group): dropped once, but only while
 * memtrack's copy is delivered or still to come. A standard signal already pending absorbs a
 * second one, so when the sender's copy reached the root just before memtrack's, memtrack's
 * merged into it and this delivery is the only one: it is delivered.
 */
static bool root_delivery_wanted(struct sup *s, const siginfo_t *si)
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
		if (e->forward_delivered || sig_pending(s->root, si->si_signo))
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
	struct sent *e;

	e = find_sent(s, si);
	if (!s->root_gone) {
		if (e->delivered || e->forwarded || root_getting(s, sig))
			return;
		e->forwarded = true;
	}
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
static void reap_orphans(void)
{
	int status;

	while (waitpid(-1, &status, __WALL | WNOHANG) > 0)
		;
}

/* Handle the requests that came, and the phase of ending the tree that is due. */
static void take_requests(struct sup *s)
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

/* Sleep until a child changes state, a request comes, or the next phase of ending is due. */
static int wait_for_news(struct sup *s)
{
	struct timespec ts, *timeout = NULL;
	uint64_t now = mt_clock_now_ns(), left;
	siginfo_t si;
	sigset_t set;
	int sig;

	if (s->end_deadline) {
		left = s->end_deadline > now ? s->end_deadline - now : 0;
		ts = (struct timespec){left / 1000000000ull, left % 1000000000ull};
		timeout = &ts;
	}
	/* The consumer makes room for held threads without telling: look again soon. */
	if (s->pressed.n && (!timeout || ts.tv_sec || ts.tv_nsec > PRESSURE_POLL_NS)) {
		ts = (struct timespec){0, PRESSURE_POLL_NS};
		timeout = &ts;
	}
	wake_set(&set);
	sig = sigtimedwait(&set, &si, timeout);
	if (sig < 0)
		return errno == EAGAIN || errno == EINTR ? 0 : -errno;
	if (sig != SIGCHLD)
		on_request(s, &si);
	return 0;
}

/* ---- the stops ----------------------------------------------------------------------- */

static int on_exec(struct sup *s, struct tracee *t, bool root_first, bool new_leader)
{
	struct proc *p = &s->procs[t->proc];
	struct json_object *d = detail_new();
	int err = 0;

	free(p->exe);
	p->exe = read_exe(p->pid);
	if (s->tracker) {
		if (root_first)
			err = mt_tracker_arm(s->tracker, p->pid);
		/* The program and its interpreter were mapped by execve itself: classify them now.
		 */
		if (!err)
			err = mt_tracker_exec(s->tracker, p->pid, new_leader);
	}
	detail_str(d, "path", p->exe ? p->exe : "?");
	detail_files(s, d);
	log_stop(s, t, "exec", d);
	if (err)
		return err;
	record_process(s, p, 0, false);
	if (s->cfg->stop_at && strcmp(s->cfg->stop_at, "exec") == 0 && root_first)
		return stop_here(s, t, "right after its exec");
	if (root_first)
		s->res->resume_ns = mt_clock_now_ns();
	return resume(t->tid, 0);
}

/* The thread group of a stopped tracee, from /proc/TID/status; 0 when it cannot be read. */
static pid_t read_tgid(pid_t tid)
{
	char path[64], line[128];
	pid_t tgid = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/status", tid);
	f = fopen(path, "re");
	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "Tgid: %d", &tgid) == 1)
			break;
	fclose(f);
	return tgid;
}

static bool is_thread_of(pid_t tgid, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d", tgid, tid);
	return access(path, F_OK) == 0;
}

/* A fork, vfork or clone reported by its parent: place the new tracee in the tree. */
static int on_new_child(struct sup *s, struct tracee *t, int event)
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
	child = reported_child(s, (pid_t)msg, &ended);
	if (!child)
		return -ENOMEM;
	d = detail_new();
	parent = &s->procs[t->proc];
	tgid = parent->pid;
	if (event == PTRACE_EVENT_CLONE &&
	    (child->tgid ? child->tgid != child->tid : is_thread_of(tgid, child->tid))) {
		child->proc = t->proc;
		err = mt_stoplog_place(child->log, parent->pos, ++parent->threads);
		s->res->threads++;
		detail_int(d, "thread", parent->threads);
	} else {
		idx = add_proc(s, child->tid, t->proc);
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
		/* Stopped before its first instruction: its links are in place before it runs. */
		if (!err && !ended && s->tracker)
			err = mt_tracker_inherit(s->tracker, tgid, child->tid,
						 event == PTRACE_EVENT_VFORK);
		detail_str(d, "child", s->procs[idx].pos);
		if (ended)
			record_process(s, &s->procs[idx], child->end_status, true);
	}
	log_stop(s, t, kinds[event], d);
	if (ended)
		free(child);
	else if (!err && child->held) {
		child->held = false;
		s->n_held--;
		err = resume(child->tid, 0);
	}
	return err ? err : resume(t->tid, 0);
}

/*
 * A tracee whose creator will never report it (the creator was killed at its fork): place it
 * as an orphan process, so that its stops can be handled.
 */
static int place_orphan(struct sup *s, struct tracee *t)
{
	int idx = add_proc(s, t->tid, -2);

	if (idx < 0)
		return idx;
	t->proc = idx;
	return mt_stoplog_place(t->log, s->procs[idx].pos, 0);
}

/* When every live tracee waits for its creator's report, none is coming: release them. */
static int release_held(struct sup *s)
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
			err = resume(t->tid, 0);
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
		old = find_tracee(s, (pid_t)former);
		if (old) {
			t->log = old->log;
			remove_tracee(s, old);
		}
	}
	return on_exec(s, t, false, new_leader);
}

static int on_exit_event(struct sup *s, struct tracee *t)
{
	struct json_object *d = detail_new();
	unsigned long status = 0;

	ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &status);
	if (WIFSIGNALED((int)status)) {
		char buf[16];

		detail_str(d, "signal", signame(WTERMSIG((int)status), buf, sizeof(buf)));
	} else {
		detail_int(d, "code", WEXITSTATUS((int)status));
	}
	log_stop(s, t, "exit", d);
	return resume(t->tid, 0);
}

static bool matches_stop_at_map(const struct sup *s, const char *path)
{
	const char *glob, *base;

	if (!s->cfg->stop_at || strncmp(s->cfg->stop_at, "map:", 4) != 0)
		return false;
	glob = s->cfg->stop_at + 4;
	base = strrchr(path, '/');
	return fnmatch(glob, path, 0) == 0 || (base && fnmatch(glob, base + 1, 0) == 0);
}

static int on_watcher_stop(struct sup *s, struct tracee *t, const struct mt_inode_key *key)
{
	pid_t pid = s->procs[t->proc].pid;
	const struct mt_tracked_file *f;
	struct json_object *d = detail_new();
	int err;

	err = mt_tracker_handle_stop(s->tracker, pid, key);
	f = mt_tracker_find(s->tracker, key);
	detail_str(d, "path", f ? f->path : "?");
	detail_files(s, d);
	log_stop(s, t, "map", d);
	if (err)
		return err;
	if (f && matches_stop_at_map(s, f->path)) {
		char where[4200];

		snprintf(where, sizeof(where), "right after mapping %s", f->path);
		return stop_here(s, t, where);
	}
	return resume(t->tid, 0);
}

/*
 * A pressure stop: the events ring was nearly full when the thread emitted (its event is in the
 * ring). It stays stopped, its SIGSTOP suppressed, until the consumer has made room
 * (resume_pressed()). Not logged: when the ring fills depends on how fast the consumer runs, and
 * the log of a deterministic program must not.
 */
static int on_pressure_stop(struct sup *s, struct tracee *t)
{
	int err;

	if (mt_events_has_room(s->events))
		return resume(t->tid, 0);
	err = tset_put(&s->pressed, t);
	if (err)
		return err;
	t->pressed = true;
	return 0;
}

/* Resume the threads held at pressure stops once the consumer has made room. */
static int resume_pressed(struct sup *s)
{
	struct tracee *t;
	int err;

	if (!s->pressed.n || !mt_events_has_room(s->events))
		return 0;
	while (s->pressed.n) {
		t = s->pressed.v[s->pressed.n - 1];
		unpress(s, t);
		err = resume(t->tid, 0);
		if (err)
			return err;
	}
	return 0;
}

static bool is_stop_sig(int sig)
{
	return sig == SIGSTOP || sig == SIGTSTP || sig == SIGTTIN || sig == SIGTTOU;
}

/* A signal about to kill a process: say where it struck, while the thread can still be read. */
static void record_backtrace(struct sup *s, struct tracee *t, int sig, struct json_object *d)
{
	struct json_object *frames = mt_backtrace(t->tid, 32);
	char buf[16];
	size_t n;

	if (!frames)
		return;
	n = json_object_array_length(frames);
	fprintf(stderr, "memtrack: process %d (%s) got %s at", s->procs[t->proc].pid,
		s->procs[t->proc].exe, signame(sig, buf, sizeof(buf)));
	for (size_t i = 0; i < n && i < 8; i++)
		fprintf(stderr, "%s %s", i ? " <-" : "",
			json_object_get_string(json_object_array_get_idx(frames, i)));
	fputc('\n', stderr);
	json_object_object_add(d, "backtrace", frames);
}

static int on_signal_stop(struct sup *s, struct tracee *t, int sig)
{
	struct mt_inode_key key;
	struct json_object *d;
	siginfo_t si;
	char buf[16];
	int marked, pressed;
	bool cancelled;

	if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) < 0) {
		if (errno != EINVAL)
			return errno == ESRCH ? 0 : -errno;
		/* A group-stop of a seized tracee is a PTRACE_EVENT_STOP (on_event_stop()). */
		return resume(t->tid, 0);
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
	}
	if (t->tid == s->root && is_term_sig(sig) && !root_delivery_wanted(s, &si)) {
		d = detail_new();
		detail_str(d, "signal", signame(sig, buf, sizeof(buf)));
		log_stop(s, t, "signal-dropped", d);
		return resume(t->tid, 0);
	}
	/*
	 * A stop signal that a SIGCONT followed while the thread was at its delivery would have
	 * been cancelled by it without memtrack (dequeue and stop are one step there): not
	 * re-injected.
	 */
	cancelled = is_stop_sig(sig) && sig_pending(t->tid, SIGCONT);
	/* SIGCHLDs coalesce when children end together: logging them would make the log vary. */
	if (sig != SIGCHLD) {
		d = detail_new();
		detail_str(d, "signal", signame(sig, buf, sizeof(buf)));
		if (mt_signal_is_fatal(s->procs[t->proc].pid, sig))
			record_backtrace(s, t, sig, d);
		log_stop(s, t, "signal", d);
	}
	return resume(t->tid, cancelled ? 0 : sig);
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
		return resume(t->tid, 0);
	d = detail_new();
	detail_str(d, "signal", signame(sig, buf, sizeof(buf)));
	log_stop(s, t, "group-stop", d);
	if (ptrace(PTRACE_LISTEN, t->tid, 0, 0) < 0 && errno != ESRCH)
		return -errno;
	return 0;
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
		t->tgid = read_tgid(t->tid);
		log_stop(s, t, "start", NULL);
		if (t->proc >= 0)
			return resume(t->tid, 0);
		t->held = true;
		s->n_held++;
		return 0;
	}
	t->started = true;
	if (t->proc < 0) {
		err = place_orphan(s, t);
		if (err)
			return err;
	}
	switch (event) {
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
	case PTRACE_EVENT_CLONE:
		return on_new_child(s, t, event);
	case PTRACE_EVENT_EXEC:
		return on_exec_event(s, t);
	case PTRACE_EVENT_EXIT:
		return on_exit_event(s, t);
	case PTRACE_EVENT_STOP:
		return on_event_stop(s, t, sig);
	case 0:
		return on_signal_stop(s, t, sig);
	default:
		return resume(t->tid, 0);
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
static bool backpressure_off(void)
{
	return getenv("MT_NO_BACKPRESSURE") != NULL;
}
#else
static int injected_fault(void)
{
	return 0;
}

static bool backpressure_off(void)
{
	return false;
}
#endif

/*
 * A tracee can be killed (SIGKILL, its group's exit) between its stop and our ptrace requests:
 * ESRCH then only means its death report is on its way, not that supervision failed.
 */
static int on_stop(struct sup *s, struct tracee *t, int status)
{
	int err = injected_fault() ?: dispatch_stop(s, t, status);

	return err == -ESRCH ? 0 : err;
}

/* The name of a process, printable: /proc/PID/comm with control characters replaced. */
static void read_comm(pid_t pid, char *buf, size_t len)
{
	char path[64];
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, buf, len - 1);
		close(fd);
	}
	if (n <= 0) {
		snprintf(buf, len, "?");
		return;
	}
	buf[n] = '\0';
	buf[strcspn(buf, "\n")] = '\0';
	for (char *c = buf; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
}

static int cmp_pid(const void *a, const void *b)
{
	pid_t x = *(const pid_t *)a, y = *(const pid_t *)b;

	return (x > y) - (x < y);
}

/*
 * The root ended and other processes of its tree run on (daemons, background jobs): memtrack
 * waits for them, as a tracker must, and says so once, naming the first 8 by pid.
 */
static void tell_left(struct sup *s)
{
	char list[512] = "", name[32];
	size_t n = 0, used = 0;
	pid_t *pids;

	s->told_left = true;
	pids = calloc(s->live.n + 1, sizeof(*pids));
	if (!pids)
		return;
	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];

		/* A thread is counted with its process, by its leader. */
		if (t->proc < 0 || s->procs[t->proc].pid == t->tid)
			pids[n++] = t->tid;
	}
	qsort(pids, n, sizeof(*pids), cmp_pid);
	for (size_t i = 0; i < n && i < 8; i++) {
		read_comm(pids[i], name, sizeof(name));
		used += snprintf(list + used, sizeof(list) - used, " %d %s", pids[i], name);
	}
	if (n)
		fprintf(stderr, "memtrack: waiting for %zu process%s left by %s:%s%s\n", n,
			n == 1 ? "" : "es", s->cfg->argv[0], list, n > 8 ? " ..." : "");
	free(pids);
}

static void on_gone(struct sup *s, struct tracee *t, int status)
{
	struct json_object *d = detail_new();
	char buf[16];

	if (WIFSIGNALED(status))
		detail_str(d, "signal", signame(WTERMSIG(status), buf, sizeof(buf)));
	else
		detail_int(d, "code", WEXITSTATUS(status));
	log_stop(s, t, "gone", d);
	if (t->held)
		s->n_held--;
	t->held = false;
	if (t->proc >= 0 && s->procs[t->proc].pid == t->tid) {
		record_process(s, &s->procs[t->proc], status, true);
		/* A leader is reaped after its last thread: the process's links can go. */
		if (s->tracker)
			mt_tracker_release(s->tracker, t->tid, false);
	}
	if (t->tid == s->root) {
		s->root_gone = true;
		s->res->wait_status = status;
		s->res->exit_code =
		    WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	}
	s->res->end_ns = mt_clock_now_ns();
	if (t->tid == s->root && !s->told_left) {
		remove_tracee(s, t);
		tell_left(s);
		return;
	}
	if (t->proc < 0) {
		t->end_status = status;
		tset_take(&s->live, t);
		if (!tset_put(&s->unplaced, t))
			return;
		fprintf(stderr, "memtrack: out of memory: a stop will not be placed in the tree\n");
	}
	remove_tracee(s, t);
}

static int event_loop(struct sup *s)
{
	struct tracee *t;
	int status, err;
	pid_t tid;

	/* A process left stopped by --stop-at is still our child: wait for tracees only. */
	while (s->live.n > 0) {
		if (s->n_held == s->live.n) {
			err = release_held(s);
			if (err)
				return err;
		}
		take_requests(s);
		err = resume_pressed(s);
		if (err)
			return err;
		tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid == 0) {
			err = wait_for_news(s);
			if (err)
				return err;
			continue;
		}
		if (tid < 0) {
			if (errno == EINTR)
				continue;
			if (errno == ECHILD)
				return 0;
			return -errno;
		}
		/* The process left stopped for a debugger is still our child, no longer a tracee.
		 */
		if (tid == s->res->stopped_pid)
			continue;
		t = find_tracee(s, tid);
		if (!t) {
			t = add_tracee(s, tid);
			if (!t)
				return -ENOMEM;
		}
		/* A held thread that reports anything was woken (SIGKILL) or is gone. */
		unpress(s, t);
		if (WIFEXITED(status) || WIFSIGNALED(status)) {
			on_gone(s, t, status);
			continue;
		}
		if (!WIFSTOPPED(status))
			continue;
		err = on_stop(s, t, status);
		if (err)
			return err;
	}
	return 0;
}

/* ---- spawning ------------------------------------------------------------------------ */

/*
 * The child waits until the parent has seized it (go_fd gives EOF), so that its execve stops it
 * before its first instruction. PTRACE_SEIZE, not PTRACE_TRACEME: only a seized tracee can be
 * left in a group-stop (PTRACE_LISTEN), and its auto-attached descendants are seized too.
 */
static void child_exec(const struct mt_run_config *cfg, int err_fd, int go_fd)
{
	char go;
	int e;

	pthread_sigmask(SIG_SETMASK, &caller_mask, NULL);
	while (read(go_fd, &go, 1) < 0 && errno == EINTR)
		;
	close(go_fd);
	if (cfg->identity.drop_privileges && (e = -mt_become_user(&cfg->identity)) != 0) {
		errno = e;
		goto fail;
	}
	signal(SIGPIPE, SIG_DFL); /* memtrack ignores it; an ignored signal survives exec */
	execvp(cfg->argv[0], cfg->argv);
fail:
	e = errno;
	if (write(err_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* The file execvp runs for cmd: cmd itself when it has a '/', else the first one in PATH. */
static bool find_command(const char *cmd, char *path, size_t len)
{
	const char *dirs = getenv("PATH") ?: "/bin:/usr/bin";

	if (strchr(cmd, '/')) {
		snprintf(path, len, "%s", cmd);
		return true;
	}
	while (*dirs) {
		size_t n = strcspn(dirs, ":");

		snprintf(path, len, "%.*s%s%s", (int)n, dirs, n ? "/" : "", cmd);
		if (access(path, F_OK) == 0)
			return true;
		dirs += n + (dirs[n] == ':');
	}
	return false;
}

/* The interpreter a "#!" line of path names, printable; false when it has none. */
static bool read_interpreter(const char *path, char *interp, size_t len)
{
	char line[256];
	ssize_t n = -1;
	size_t start, end;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	if (fd >= 0) {
		n = read(fd, line, sizeof(line) - 1);
		close(fd);
	}
	if (n < 3 || line[0] != '#' || line[1] != '!')
		return false;
	line[n] = '\0';
	start = 2 + strspn(line + 2, " \t");
	end = start + strcspn(line + start, " \t\n");
	if (end == start)
		return false;
	line[end] = '\0';
	snprintf(interp, len, "%s", line + start);
	for (char *c = interp; *c; c++)
		if ((unsigned char)*c < 0x20 || *c == 0x7f)
			*c = '?';
	return true;
}

/*
 * Say why cmd could not be executed. execve reports a script whose "#!" interpreter is missing as
 * ENOENT, as if the script were: name the interpreter then.
 */
static void say_exec_failure(const char *cmd, int err)
{
	char path[4096], interp[256];

	if (err == ENOENT && find_command(cmd, path, sizeof(path)) &&
	    read_interpreter(path, interp, sizeof(interp)) && access(interp, X_OK) < 0) {
		fprintf(stderr, "memtrack: cannot run '%s': its interpreter %s: %s\n", cmd, interp,
			strerror(errno));
		return;
	}
	fprintf(stderr, "memtrack: cannot run '%s': %s\n", cmd, strerror(err));
}

/* Fork the command; on success it is stopped at its exec with the trace options set. */
static int spawn(struct sup *s)
{
	int pipefd[2], gofd[2], status, child_errno = 0, err;
	ssize_t n;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	if (pipe2(gofd, O_CLOEXEC) < 0) {
		err = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		return err;
	}
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		err = -errno;
		close(pipefd[0]);
		close(pipefd[1]);
		close(gofd[0]);
		close(gofd[1]);
		return err;
	}
	if (pid == 0) {
		close(pipefd[0]);
		close(gofd[1]);
		child_exec(s->cfg, pipefd[1], gofd[0]);
	}
	close(pipefd[1]);
	close(gofd[0]);
	err = ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)PTRACE_OPTIONS) < 0 ? -errno : 0;
	if (err) {
		kill(pid, SIGKILL); /* before it may go on untraced */
		close(gofd[1]);
		close(pipefd[0]);
		waitpid(pid, &status, __WALL);
		return err;
	}
	close(gofd[1]);
	do
		n = read(pipefd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	while (waitpid(pid, &status, __WALL) < 0)
		if (errno != EINTR)
			return -errno;
	if (n == sizeof(child_errno)) {
		say_exec_failure(s->cfg->argv[0], child_errno);
		s->res->exec_errno = child_errno;
		return -child_errno;
	}
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP) {
		fprintf(stderr, "memtrack: '%s' did not stop at its exec\n", s->cfg->argv[0]);
		kill(pid, SIGKILL);
		waitpid(pid, &status, __WALL);
		return -ECHILD;
	}
	if (ptrace(PTRACE_SETOPTIONS, pid, 0, (void *)(long)PTRACE_OPTIONS) < 0) {
		int err = -errno;

		kill(pid, SIGKILL);
		waitpid(pid, &status, __WALL);
		return err;
	}
	s->root = pid;
	return 0;
}

static int open_tracking(struct sup *s)
{
	struct mt_tracker_config tc = {
	    .watcher = s->cfg->watcher,
	    .placement = s->cfg->placement,
	    .system_scope = s->cfg->system_scope,
	    .events = s->cfg->artifact_path != NULL,
	    .ring_size = s->cfg->ring_size,
	    .no_backpressure = backpressure_off(),
	    .verbose = s->cfg->verbose,
	};
	int err;

	err = mt_tracker_open(&s->tracker, &tc);
	if (err)
		return err;
	/*
	 * Loading parsed the kernel's BTF (twice where fentry is refused): about 10 MiB that libbpf
	 * freed but glibc keeps in the heap. Give it back before the run: memtrack's own footprint.
	 */
	malloc_trim(0);
	snprintf(s->res->watcher, sizeof(s->res->watcher), "%s", mt_tracker_watcher(s->tracker));
	return 0;
}

static int open_artifact(struct sup *s)
{
	struct mt_artifact_header h = {0};
	struct timespec rt;
	int argc = 0, err;

	while (s->cfg->argv[argc])
		argc++;
	clock_gettime(CLOCK_REALTIME, &rt);
	h.start_time_ns = (uint64_t)rt.tv_sec * 1000000000ull + rt.tv_nsec;
	h.start_mono_ns = mt_clock_now_ns();
	h.watcher = mt_tracker_watcher(s->tracker);
	h.argc = argc;
	h.argv = s->cfg->argv;
	err = mt_artifact_create(&s->artifact, s->cfg->artifact_path, &h);
	if (err) {
		fprintf(stderr, "memtrack: cannot create %s: %s\n", s->cfg->artifact_path,
			strerror(-err));
		return err;
	}
	mt_tracker_set_artifact(s->tracker, s->artifact);
	return mt_events_start(&s->events, mt_tracker_events_fd(s->tracker), s->artifact);
}

/* Drain the last events and close the artifact with every drop count in its footer. */
static int finish_artifact(struct sup *s)
{
	struct mt_artifact_footer foot = {0};
	struct mt_drop_counts c = {0};
	int err = 0, e;

	if (s->events)
		err = mt_events_stop(s->events, &foot.events);
	s->events = NULL;
	if (!s->artifact)
		return err;
	e = mt_tracker_counters(s->tracker, &c);
	if (!err)
		err = e;
	foot.requests_dropped = c.requests_dropped;
	foot.events_dropped = c.events_dropped;
	foot.args_lost = c.args_lost;
	if (s->cfg->verbose && c.pressure_stops)
		fprintf(
		    stderr,
		    "memtrack: the events ring was nearly full: threads were stopped %llu times "
		    "until it had room\n",
		    (unsigned long long)c.pressure_stops);
	foot.end_mono_ns = mt_clock_now_ns();
	e = mt_artifact_finish(s->artifact, &foot);
	s->artifact = NULL;
	/* A write error stopped the recording (the writer said so), not the run. */
	s->res->incomplete =
	    e || c.events_dropped || c.args_lost || mt_tracker_unprobed_count(s->tracker);
	return err;
}

static void sup_free(struct sup *s)
{
	for (size_t i = 0; i < s->n_procs; i++) {
		free(s->procs[i].pos);
		free(s->procs[i].exe);
	}
	free(s->procs);
	tset_free(&s->live);
	tset_free(&s->unplaced);
	free(s->pressed.v); /* its tracees are in live */
	mt_stoplog_free(s->log);
	mt_tracker_close(s->tracker);
}

/* How long a fatal error waits for the killed tree before leaving the rest to EXITKILL. */
#define RELEASE_NS (500 * 1000000ull)

/*
 * Release the tree after a fatal error, as strace does. Every known tracee is killed (the tree
 * cannot be recorded any further, and PTRACE_O_EXITKILL would kill it at memtrack's exit anyway);
 * every stop reported meanwhile, of a known tracee or of one never seen (a new child at its first
 * stop, a thread at its exit stop), gets the kill too and is resumed so that it takes effect; the
 * dead are reaped, orphans included. Bounded: whatever is still there after RELEASE_NS dies with
 * memtrack's exit.
 */
static void release_tree(struct sup *s)
{
	uint64_t deadline = mt_clock_now_ns() + RELEASE_NS;
	const struct timespec tick = {0, 1000000};
	int status;
	pid_t tid;

	/* The children of the processes killed here come to memtrack, to be reaped, not to init. */
	prctl(PR_SET_CHILD_SUBREAPER, 1);
	/*
	 * A tracee already exiting ignores SIGKILL: one whose stop the loop took but did not resume
	 * (where the error struck, held ones, one at its exit stop) must be resumed too.
	 */
	for (size_t i = 0; i < s->live.n; i++) {
		kill(s->live.v[i]->tid, SIGKILL);
		ptrace(PTRACE_CONT, s->live.v[i]->tid, 0, 0);
	}
	while (mt_clock_now_ns() < deadline) {
		tid = waitpid(-1, &status, __WALL | WNOHANG);
		if (tid < 0 && errno == ECHILD)
			return;
		if (tid <= 0) {
			nanosleep(&tick, NULL);
			continue;
		}
		if (WIFSTOPPED(status) && tid != s->res->stopped_pid) {
			kill(tid, SIGKILL);
			ptrace(PTRACE_CONT, tid, 0, 0);
		}
	}
}

static void *detach_tracker(void *tracker)
{
	mt_tracker_detach(tracker);
	return NULL;
}

int mt_supervise(const struct mt_run_config *cfg, struct mt_run_result *res)
{
	bool detaching;
	pthread_t detacher;
	struct sup s = {.cfg = cfg, .res = res};
	struct tracee *t;
	int err, idx;

	memset(res, 0, sizeof(*res));
	s.log = mt_stoplog_new();
	if (!s.log)
		return -ENOMEM;
	block_requests();
	if (cfg->track) {
		err = open_tracking(&s);
		if (err)
			goto out;
	}
	err = spawn(&s);
	if (err)
		goto out;
	/*
	 * Created once the command is known to run (stopped before its first instruction): a
	 * command that cannot start neither clobbers an earlier artifact nor leaves an empty one.
	 */
	if (cfg->track && cfg->artifact_path) {
		err = open_artifact(&s);
		if (err) {
			int status;

			kill(s.root, SIGKILL);
			waitpid(s.root, &status, __WALL);
			goto out;
		}
	}
	t = add_tracee(&s, s.root);
	idx = t ? add_proc(&s, s.root, -1) : -ENOMEM;
	if (idx < 0) {
		err = idx;
		goto fatal;
	}
	t->proc = idx;
	t->started = true;
	mt_stoplog_place(t->log, s.procs[idx].pos, 0);
	err = on_exec(&s, t, true, false);
	if (!err)
		err = event_loop(&s);
	if (!err && s.end_phase)
		reap_orphans();
fatal:
	if (err) {
		fprintf(stderr, "memtrack: supervising '%s' failed: %s\n", cfg->argv[0],
			strerror(-err));
		release_tree(&s);
	}
out:
	/* Detaching waits for grace periods: let it run while the artifact is finished. */
	detaching = s.tracker && !pthread_create(&detacher, NULL, detach_tracker, s.tracker);
	if (s.artifact || s.events) {
		int e = finish_artifact(&s);

		if (!err)
			err = e;
	}
	if (detaching)
		pthread_join(detacher, NULL);
	if (cfg->trace_stops_path) {
		int e = mt_stoplog_write(s.log, cfg->trace_stops_path);

		if (e) {
			fprintf(stderr, "memtrack: cannot write %s: %s\n", cfg->trace_stops_path,
				strerror(-e));
			if (!err)
				err = e;
		}
	}
	sup_free(&s);
	if (s.end_phase)
		prctl(PR_SET_CHILD_SUBREAPER, 0);
	unblock_requests();
	return err;
}
