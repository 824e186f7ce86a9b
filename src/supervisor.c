// SPDX-License-Identifier: GPL-2.0
/*
 * The ptrace supervisor. The command is spawned stopped at its exec (PTRACE_TRACEME), armed and
 * classified, then continued; from then on one loop waits for every stop of the tree and handles
 * each kind in one place (see the stop table in docs/STOPS.md).
 */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <grp.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <json-c/json.h>

#include "artifact.h"
#include "backtrace.h"
#include "events.h"
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

/* A live traced thread. */
struct tracee {
	pid_t tid;
	int proc;     /* index in procs, -1 until its creator reports it */
	bool started; /* its first (attach) stop has been seen */
	bool held;    /* stopped at that first stop until its creator reports it */
	struct mt_log_thread *log;
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
	struct tracee *tracees;
	size_t n_tracees, cap_tracees;
	/* Tracees that ended before their creator reported them: placed when it does. */
	struct tracee *unplaced;
	size_t n_unplaced, cap_unplaced;
	size_t files_logged; /* tracker files already named in the log */
	size_t n_held;
	unsigned int n_orphans;
};

static volatile pid_t forward_to;

uint64_t mt_now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000ull + ts.tv_nsec;
}

int mt_exec_failure_code(int neg_errno)
{
	return neg_errno == -ENOENT || neg_errno == -ENOTDIR ? 127 : 126;
}

/*
 * A signal sent to memtrack by another process goes to the command. One from the terminal
 * (SI_KERNEL) already reached the command's process group, so it is not sent twice.
 */
static void forward_signal(int sig, siginfo_t *si, void *uc)
{
	(void)uc;
	if (forward_to > 0 && si->si_code != SI_KERNEL)
		kill(forward_to, sig);
}

static void install_forwarding(pid_t root, struct sigaction *old)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};
	struct sigaction sa = {.sa_sigaction = forward_signal, .sa_flags = SA_SIGINFO | SA_RESTART};

	forward_to = root;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < 4; i++)
		sigaction(sigs[i], &sa, &old[i]);
}

static void restore_signals(const struct sigaction *old)
{
	static const int sigs[] = {SIGINT, SIGTERM, SIGHUP, SIGQUIT};

	forward_to = 0;
	for (size_t i = 0; i < 4; i++)
		sigaction(sigs[i], &old[i], NULL);
}

/* ---- the tree ------------------------------------------------------------------------ */

static struct tracee *find_tracee(struct sup *s, pid_t tid)
{
	for (size_t i = 0; i < s->n_tracees; i++)
		if (s->tracees[i].tid == tid)
			return &s->tracees[i];
	return NULL;
}

static struct tracee *push_tracee(struct tracee **arr, size_t *n, size_t *cap,
				  const struct tracee *t)
{
	struct tracee *grown;

	if (*n == *cap) {
		size_t c = *cap ? 2 * *cap : 32;

		grown = realloc(*arr, c * sizeof(*grown));
		if (!grown)
			return NULL;
		*arr = grown;
		*cap = c;
	}
	(*arr)[*n] = *t;
	return &(*arr)[(*n)++];
}

static struct tracee *add_tracee(struct sup *s, pid_t tid)
{
	struct tracee t = {.tid = tid, .proc = -1, .log = mt_stoplog_thread(s->log)};

	if (!t.log)
		return NULL;
	return push_tracee(&s->tracees, &s->n_tracees, &s->cap_tracees, &t);
}

/* The tracee a creator reports: live, or already ended and waiting for its place. */
static struct tracee *reported_child(struct sup *s, pid_t tid, struct tracee *slot)
{
	struct tracee *t = find_tracee(s, tid);

	if (t)
		return t;
	for (size_t i = 0; i < s->n_unplaced; i++) {
		if (s->unplaced[i].tid == tid) {
			*slot = s->unplaced[i];
			s->unplaced[i] = s->unplaced[--s->n_unplaced];
			return slot;
		}
	}
	return add_tracee(s, tid);
}

static void remove_tracee(struct sup *s, struct tracee *t)
{
	*t = s->tracees[--s->n_tracees];
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

	if (s->tracker)
		mt_tracker_disarm(s->tracker, pid);
	if (ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)SIGSTOP) < 0)
		return -errno;
	s->res->stopped_pid = pid;
	fprintf(stderr, "memtrack: process %d is stopped %s; attach with: gdb -p %d\n", pid, where,
		pid);
	remove_tracee(s, t);
	return 0;
}

/* ---- the stops ----------------------------------------------------------------------- */

static int on_exec(struct sup *s, struct tracee *t, bool root_first)
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
			err = mt_tracker_scan(s->tracker, p->pid);
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
		s->res->resume_ns = mt_now_ns();
	return resume(t->tid, 0);
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
	struct tracee *child, ended;
	struct json_object *d;
	unsigned long msg = 0;
	struct proc *parent;
	pid_t tgid;
	int idx, err;

	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) < 0)
		return -errno;
	child = reported_child(s, (pid_t)msg, &ended);
	t = find_tracee(s, t->tid); /* add_tracee may have moved the array */
	if (!child || !t)
		return -ENOMEM;
	d = detail_new();
	parent = &s->procs[t->proc];
	tgid = parent->pid;
	if (event == PTRACE_EVENT_CLONE && is_thread_of(tgid, child->tid)) {
		child->proc = t->proc;
		err = mt_stoplog_place(child->log, parent->pos, ++parent->threads);
		s->res->threads++;
		detail_int(d, "thread", parent->threads);
	} else {
		idx = add_proc(s, child->tid, t->proc);
		if (idx < 0) {
			json_object_put(d);
			return idx;
		}
		child->proc = idx;
		free(s->procs[idx].exe);
		s->procs[idx].exe = strdup(s->procs[t->proc].exe ? s->procs[t->proc].exe : "?");
		err = mt_stoplog_place(child->log, s->procs[idx].pos, 0);
		detail_str(d, "child", s->procs[idx].pos);
	}
	log_stop(s, t, kinds[event], d);
	if (!err && child->held) {
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

	for (size_t i = 0; i < s->n_tracees; i++) {
		struct tracee *t = &s->tracees[i];

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

	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &former) == 0 && (pid_t)former != t->tid) {
		old = find_tracee(s, (pid_t)former);
		if (old) {
			t->log = old->log;
			remove_tracee(s, old);
			t = find_tracee(s, t->tid);
		}
	}
	return on_exec(s, t, false);
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
	int marked;

	if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) < 0) {
		if (errno != EINVAL)
			return errno == ESRCH ? 0 : -errno;
		/*
		 * Group-stop. A tracee attached without PTRACE_SEIZE cannot be left in it (no
		 * PTRACE_LISTEN): like strace, memtrack resumes it, so the stop does not hold.
		 */
		d = detail_new();
		detail_str(d, "signal", signame(sig, buf, sizeof(buf)));
		log_stop(s, t, "group-stop", d);
		return resume(t->tid, 0);
	}
	if (sig == SIGSTOP && si.si_code == SI_KERNEL && s->tracker) {
		marked = mt_tracker_take_stop_mark(s->tracker, t->tid, &key);
		if (marked < 0)
			return marked;
		if (marked)
			return on_watcher_stop(s, t, &key);
	}
	/* SIGCHLDs coalesce when children end together: logging them would make the log vary. */
	if (sig != SIGCHLD) {
		d = detail_new();
		detail_str(d, "signal", signame(sig, buf, sizeof(buf)));
		if (mt_signal_is_fatal(s->procs[t->proc].pid, sig))
			record_backtrace(s, t, sig, d);
		log_stop(s, t, "signal", d);
	}
	return resume(t->tid, sig);
}

static int dispatch_stop(struct sup *s, struct tracee *t, int status)
{
	int sig = WSTOPSIG(status), event = (unsigned int)status >> 16;

	int err;

	if (!t->started && sig == SIGSTOP && event == 0) {
		/*
		 * The attach stop of a new tracee. When it comes before its creator's report, the
		 * tracee waits here until that report places it in the tree.
		 */
		t->started = true;
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
	case 0:
		return on_signal_stop(s, t, sig);
	default:
		return resume(t->tid, 0);
	}
}

/*
 * A tracee can be killed (SIGKILL, its group's exit) between its stop and our ptrace requests:
 * ESRCH then only means its death report is on its way, not that supervision failed.
 */
static int on_stop(struct sup *s, struct tracee *t, int status)
{
	int err = dispatch_stop(s, t, status);

	return err == -ESRCH ? 0 : err;
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
	if (t->proc >= 0 && s->procs[t->proc].pid == t->tid)
		record_process(s, &s->procs[t->proc], status, true);
	if (t->tid == s->root) {
		s->res->wait_status = status;
		s->res->exit_code =
		    WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
	}
	s->res->end_ns = mt_now_ns();
	if (t->proc < 0 && !push_tracee(&s->unplaced, &s->n_unplaced, &s->cap_unplaced, t))
		fprintf(stderr, "memtrack: out of memory: a stop will not be placed in the tree\n");
	remove_tracee(s, t);
}

static int event_loop(struct sup *s)
{
	struct tracee *t;
	int status, err;
	pid_t tid;

	/* A process left stopped by --stop-at is still our child: wait for tracees only. */
	while (s->n_tracees > 0) {
		if (s->n_held == s->n_tracees) {
			err = release_held(s);
			if (err)
				return err;
		}
		tid = waitpid(-1, &status, __WALL);
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

static void child_exec(const struct mt_run_config *cfg, int err_fd)
{
	int e;

	if (cfg->drop_privileges &&
	    (setgroups(0, NULL) < 0 || setgid(cfg->gid) < 0 || setuid(cfg->uid) < 0))
		goto fail;
	if (ptrace(PTRACE_TRACEME, 0, 0, 0) < 0)
		goto fail;
	signal(SIGPIPE, SIG_DFL); /* memtrack ignores it; an ignored signal survives exec */
	execvp(cfg->argv[0], cfg->argv);
fail:
	e = errno;
	if (write(err_fd, &e, sizeof(e)) < 0)
		_exit(127);
	_exit(127);
}

/* Fork the command; on success it is stopped at its exec with the trace options set. */
static int spawn(struct sup *s)
{
	int pipefd[2], status, child_errno = 0;
	ssize_t n;
	pid_t pid;

	if (pipe2(pipefd, O_CLOEXEC) < 0)
		return -errno;
	fflush(NULL);
	pid = fork();
	if (pid < 0) {
		close(pipefd[0]);
		close(pipefd[1]);
		return -errno;
	}
	if (pid == 0) {
		close(pipefd[0]);
		child_exec(s->cfg, pipefd[1]);
	}
	close(pipefd[1]);
	do
		n = read(pipefd[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	close(pipefd[0]);
	while (waitpid(pid, &status, __WALL) < 0)
		if (errno != EINTR)
			return -errno;
	if (n == sizeof(child_errno)) {
		fprintf(stderr, "memtrack: cannot run '%s': %s\n", s->cfg->argv[0],
			strerror(child_errno));
		s->res->exec_errno = child_errno;
		return -child_errno;
	}
	if (!WIFSTOPPED(status) || WSTOPSIG(status) != SIGTRAP) {
		fprintf(stderr, "memtrack: '%s' did not stop at its exec\n", s->cfg->argv[0]);
		kill(pid, SIGKILL);
		return -ECHILD;
	}
	if (ptrace(PTRACE_SETOPTIONS, pid, 0, (void *)(long)PTRACE_OPTIONS) < 0) {
		int err = -errno;

		kill(pid, SIGKILL);
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
	    .events = s->cfg->artifact_path != NULL,
	    .ring_size = s->cfg->ring_size,
	    .verbose = s->cfg->verbose,
	};
	int err;

	err = mt_tracker_open(&s->tracker, &tc);
	if (err)
		return err;
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
	h.start_mono_ns = mt_now_ns();
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
	foot.end_mono_ns = mt_now_ns();
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
	free(s->tracees);
	free(s->unplaced);
	mt_stoplog_free(s->log);
	mt_tracker_close(s->tracker);
}

/* Kill what is left of the tree after a fatal error and reap it, so no tracee stays stopped. */
static void kill_tree(struct sup *s)
{
	int status;

	for (size_t i = 0; i < s->n_tracees; i++)
		kill(s->tracees[i].tid, SIGKILL);
	while (waitpid(-1, &status, __WALL) > 0 || errno == EINTR)
		;
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
	struct sigaction old[4];
	struct tracee *t;
	int err, idx;

	memset(res, 0, sizeof(*res));
	s.log = mt_stoplog_new();
	if (!s.log)
		return -ENOMEM;
	if (cfg->track) {
		err = open_tracking(&s);
		if (!err && cfg->artifact_path)
			err = open_artifact(&s);
		if (err)
			goto out;
	}
	err = spawn(&s);
	if (err)
		goto out;
	install_forwarding(s.root, old);
	t = add_tracee(&s, s.root);
	idx = t ? add_proc(&s, s.root, -1) : -ENOMEM;
	if (idx < 0) {
		err = idx;
		goto fatal;
	}
	t->proc = idx;
	t->started = true;
	mt_stoplog_place(t->log, s.procs[idx].pos, 0);
	err = on_exec(&s, t, true);
	if (!err)
		err = event_loop(&s);
fatal:
	if (err) {
		fprintf(stderr, "memtrack: supervising '%s' failed: %s\n", cfg->argv[0],
			strerror(-err));
		kill_tree(&s);
	}
	restore_signals(old);
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
	return err;
}
