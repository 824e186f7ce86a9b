// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack attach: a process already running, and with --tree its descendants, recorded from
 * now on (docs/STOPS.md, "Attaching to a running process"). Every thread is seized without being
 * stopped (PTRACE_SEIZE), so the program never notices; its processes are armed in the BPF maps
 * and the files they have mapped classified and probed; from then on the loop follows it as it
 * follows a launched tree. On a request (SIGINT, SIGTERM, SIGHUP, SIGQUIT) or at --duration's
 * end the tree is detached: disarmed first (no watcher or back-pressure stop can come any more),
 * its probes detached, then every thread is interrupted and detached at its next stop with what
 * that stop would have delivered, so that no signal is lost and no thread is left stopped.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/wait.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/duration.h"
#include "base/printable.h"
#include "inspect/debug_rights.h"
#include "inspect/procstatus.h"
#include "supervisor/supervisor_int.h"

/* A launched tree dies with memtrack (PTRACE_O_EXITKILL); an attached one must not. */
#define ATTACH_OPTIONS (PTRACE_OPTIONS & ~PTRACE_O_EXITKILL)

/* ---- refusals ------------------------------------------------------------------------ */

/* The parent of pid (field 4 of /proc/PID/stat); 0: unknown. */
static pid_t parent_of(pid_t pid)
{
	long long ppid;

	return mt_proc_stat_field(pid, 4, &ppid) ? 0 : (pid_t)ppid;
}

/* Whether pid is memtrack or one of its ancestors: seizing it could stop memtrack's own parent. */
static bool is_ancestor(pid_t pid)
{
	for (pid_t p = getpid(); p > 0; p = parent_of(p))
		if (p == pid)
			return true;
	return false;
}

#define YAMA_SCOPE "/proc/sys/kernel/yama/ptrace_scope"

#ifdef MT_FAULT_INJECTION
/*
 * Test builds only (build/tests/memtrack-faults): MT_YAMA_SCOPE=FILE is read instead, for a
 * kernel without Yama, and because a test may not set the scope to 3 (it holds until a reboot).
 */
static const char *yama_path(void)
{
	return getenv("MT_YAMA_SCOPE") ?: YAMA_SCOPE;
}
#else
static const char *yama_path(void)
{
	return YAMA_SCOPE;
}
#endif

/* Yama's ptrace_scope (0 classic, 1 restricted, 2 admin-only, 3 none); -1 without Yama. */
static int yama_scope(void)
{
	char buf[16] = "";
	int fd = open(yama_path(), O_RDONLY | O_CLOEXEC);
	ssize_t n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);

	if (fd >= 0)
		close(fd);
	return n > 0 ? atoi(buf) : -1;
}

static bool is_kernel_thread(pid_t pid)
{
	char path[64], target[16];

	snprintf(path, sizeof(path), "/proc/%d/exe", pid);
	return readlink(path, target, sizeof(target)) < 0 && errno == ENOENT;
}

/* "memtrack attach: SENTENCE" on stderr; err. */
__attribute__((format(printf, 2, 3))) static int refuse(int err, const char *fmt, ...)
{
	va_list ap;

	fprintf(stderr, "memtrack attach: ");
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return err;
}

int mt_attach_check(pid_t pid, bool tree, const struct mt_identity *who)
{
	struct mt_proc_status st;
	char why[160];
	int scope;

	if (pid <= 0 || mt_proc_status_read(pid, 0, &st))
		return refuse(-ESRCH, "no process %d", pid);
	if (st.tgid && st.tgid != pid)
		return refuse(-EINVAL, "%d is a thread of process %d: attach to the process", pid,
			      st.tgid);
	if (st.state == 'Z' || st.state == 'X')
		return refuse(-ESRCH, "process %d has ended (a zombie)", pid);
	if (is_kernel_thread(pid))
		return refuse(-EPERM, "process %d is a kernel thread: it has no heap to record",
			      pid);
	if (is_ancestor(pid))
		return refuse(-EPERM,
			      tree ? "process %d is memtrack or one of its ancestors: memtrack "
				     "cannot record the tree it runs in"
				   : "process %d is memtrack or one of its ancestors: stopping it "
				     "could stop memtrack",
			      pid);
	if (st.tracer)
		return refuse(-EBUSY,
			      "process %d is traced already by process %d (a debugger or a "
			      "tracer): a process has one tracer",
			      pid, st.tracer);
	scope = yama_scope();
	if (scope >= 3)
		return refuse(-EPERM,
			      "Yama's ptrace_scope is 3 (/proc/sys/kernel/yama/ptrace_scope): no "
			      "process may be attached to (process %d), until a reboot",
			      pid);
	if (scope >= 1 && who->elevated)
		return refuse(-EPERM,
			      "Yama's ptrace_scope is %d (/proc/sys/kernel/yama/ptrace_scope): "
			      "attaching needs CAP_SYS_PTRACE, which the user who started memtrack "
			      "does not have",
			      scope);
	if (mt_invoker_may_debug(who, pid, why, sizeof(why)))
		return refuse(-EPERM, "may not attach to process %d: %s", pid, why);
	return 0;
}

/* ---- seizing ------------------------------------------------------------------------- */

/*
 * Seize tid without stopping it; 1 when seized, 0 when gone or already memtrack's (its report
 * comes: a thread or child of a thread seized before), or -errno. The kernel refuses a thread on
 * its way out with EPERM, as it does a thread it does not let memtrack trace: that one is gone.
 */
static int seize(pid_t tid)
{
	if (ptrace(PTRACE_SEIZE, tid, 0, (void *)(long)ATTACH_OPTIONS) == 0)
		return 1;
	if (errno == ESRCH ||
	    (errno == EPERM && (sup_tracer_of(tid) == getpid() || mt_proc_task_exiting(tid, tid))))
		return 0;
	return -errno;
}

/* A seized thread of process proc, placed in the tree as its creator's report would. */
static int place_seized(struct sup *s, int proc, pid_t tid)
{
	struct proc *p = &s->procs[proc];
	struct tracee *t = sup_add_tracee(s, tid);

	if (!t)
		return -ENOMEM;
	t->proc = proc;
	t->started = true;
	t->tgid = p->pid;
	if (tid == p->pid)
		return mt_stoplog_place(t->log, p->pos, 0);
	s->res->threads++;
	return mt_stoplog_place(t->log, p->pos, ++p->threads);
}

/* Seize the threads of process proc not seized yet; *added counts the new ones. */
static int seize_threads(struct sup *s, int proc, size_t *added)
{
	char path[64];
	struct dirent *d;
	DIR *dir;
	int err = 0, r;

	snprintf(path, sizeof(path), "/proc/%d/task", s->procs[proc].pid);
	dir = opendir(path);
	if (!dir)
		return 0; /* ended meanwhile: its death is reported */
	while (!err && (d = readdir(dir))) {
		pid_t tid = (pid_t)atoi(d->d_name);

		if (tid <= 0 || sup_find_tracee(s, tid))
			continue;
		r = seize(tid);
		if (r > 0)
			err = place_seized(s, proc, tid);
		else
			err = r;
		*added += r > 0;
	}
	closedir(dir);
	return err;
}

static int proc_index(const struct sup *s, pid_t pid)
{
	for (size_t i = 0; i < s->n_procs; i++)
		if (s->procs[i].pid == pid)
			return (int)i;
	return -1;
}

/* A process seized whole (its leader here): in the table, as a child of parent (-1: root). */
static int seize_process(struct sup *s, pid_t pid, int parent, size_t *added)
{
	int r = seize(pid), idx;

	if (r <= 0)
		return r;
	idx = sup_add_proc(s, pid, parent);
	if (idx < 0)
		return idx;
	/* sup_add_proc counts the leader's thread, which place_seized counts only for others. */
	free(s->procs[idx].exe);
	s->procs[idx].exe = sup_read_exe(pid);
	(*added)++;
	r = place_seized(s, idx, pid);
	return r ? r : seize_threads(s, idx, added);
}

/* --tree: seize the children of every thread of process proc not seized yet. */
static int seize_children(struct sup *s, int proc, size_t *added)
{
	char path[320], buf[4096], *p, *end;
	pid_t pid = s->procs[proc].pid;
	struct dirent *d;
	int err = 0;
	DIR *dir;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	dir = opendir(path);
	if (!dir)
		return 0;
	while (!err && (d = readdir(dir))) {
		ssize_t n;
		int fd;

		if (d->d_name[0] == '.')
			continue;
		snprintf(path, sizeof(path), "/proc/%d/task/%s/children", pid, d->d_name);
		fd = open(path, O_RDONLY | O_CLOEXEC);
		n = fd < 0 ? -1 : read(fd, buf, sizeof(buf) - 1);
		if (fd >= 0)
			close(fd);
		buf[n > 0 ? n : 0] = '\0';
		for (p = buf; !err && *p; p = end) {
			pid_t child = (pid_t)strtol(p, &end, 10);

			if (end == p)
				break;
			if (child > 0 && proc_index(s, child) < 0)
				err = seize_process(s, child, proc, added);
		}
	}
	closedir(dir);
	return err;
}

/*
 * Seize the process (and with --tree its descendants), again until a pass finds nothing new: a
 * thread or process made by one not seized yet is not followed by ptrace, and shows in /proc.
 */
int sup_attach(struct sup *s)
{
	uint64_t start = mt_clock_now_ns();
	size_t added = 0;
	int err;

	s->root = s->cfg->attach_pid;
	err = seize_process(s, s->root, -1, &added);
	if (!err && !added)
		err = -ESRCH;
	while (!err && added) {
		added = 0;
		for (size_t i = 0; !err && i < s->n_procs; i++) {
			err = seize_threads(s, (int)i, &added);
			if (!err && s->cfg->attach_tree)
				err = seize_children(s, (int)i, &added);
		}
	}
	s->res->attach_ns = mt_clock_now_ns() - start;
	if (err) {
		fprintf(stderr, "memtrack attach: cannot trace process %d: %s\n", s->root,
			strerror(-err));
		sup_attach_abandon(s);
	}
	return err;
}

/* One line once the recording runs, so that a user (or a test) knows when it started. */
static void say_attached(const struct sup *s)
{
	char name[MT_PRINTABLE_MAX], d[32];

	fprintf(stderr, "memtrack: attached to process %d (%s): %u process%s, %u thread%s; ",
		s->root, mt_printable(name, sizeof(name), s->cfg->argv[0]), s->res->processes,
		s->res->processes == 1 ? "" : "es", s->res->threads,
		s->res->threads == 1 ? "" : "s");
	if (s->cfg->duration_ns)
		fprintf(stderr, "detaching in %s\n",
			mt_format_duration((double)s->cfg->duration_ns, d, sizeof(d)));
	else
		fprintf(stderr, "Ctrl-C or SIGTERM detaches\n");
}

static int scan_all(struct sup *s)
{
	int err = 0;

	for (size_t i = 0; !err && i < s->n_procs; i++) {
		err = mt_tracker_scan(s->tracker, s->procs[i].pid);
		if (err == -ESRCH || err == -ENOENT)
			err = 0; /* it ended meanwhile: its death is reported */
	}
	return err;
}

/*
 * Arm every seized process and probe what it has mapped: its calls are recorded from here. The
 * recording is off while links are made (a malloc linked before free, or an entry before its
 * return, would make a count wrong), then on; what was mapped meanwhile, with no watcher to stop
 * for it, is found by a second scan. Blocks allocated before are unknown: the report counts their
 * frees apart.
 */
int sup_attach_arm(struct sup *s)
{
	uint64_t start = mt_clock_now_ns();
	int err = 0;

	if (s->tracker)
		mt_tracker_record(s->tracker, false);
	for (size_t i = 0; !err && i < s->n_procs; i++) {
		sup_record_process(s, &s->procs[i], 0, false);
		if (s->tracker)
			err = mt_tracker_arm(s->tracker, s->procs[i].pid);
	}
	if (!err && s->tracker)
		err = scan_all(s);
	if (!err && s->tracker) {
		mt_tracker_record(s->tracker, true);
		err = scan_all(s);
	}
	sup_log_files(s);
	s->res->attach_ns += mt_clock_now_ns() - start;
	s->res->resume_ns = mt_clock_now_ns();
	if (s->cfg->duration_ns)
		s->detach_at_ns = s->res->resume_ns + s->cfg->duration_ns;
	if (!err && !s->cfg->quiet)
		say_attached(s);
	return err;
}

/* ---- detaching ----------------------------------------------------------------------- */

/*
 * The start of the detach: no process of the tree is tracked any more (the watcher and the
 * back-pressure stop nobody, nothing new is recorded) and its probes are gone before any thread
 * runs untraced; then every thread memtrack holds stopped is let go, the others interrupted.
 */
static int detach_begin(struct sup *s)
{
	s->detaching = true;
	s->detach_start_ns = mt_clock_now_ns();
	/* Every probe stops recording at once, before links go one by one. */
	if (s->tracker)
		mt_tracker_record(s->tracker, false);
	for (size_t i = 0; s->tracker && i < s->n_procs; i++) {
		int err = mt_tracker_disarm(s->tracker, s->procs[i].pid);

		if (err)
			return err;
		/*
		 * With the recording off the probes do nothing but cost a trap: their links go to
		 * the closer (a uprobe's unregistering waits for grace periods, seconds in a busy
		 * process), which detaches them after memtrack, rather than holding the threads.
		 */
		mt_tracker_release(s->tracker, s->procs[i].pid, false);
	}
	for (size_t i = 0; i < s->live.n;) {
		struct tracee *t = s->live.v[i];
		int err;

		if (t->pressed || t->held) {
			sup_unpress(s, t);
			err = sup_let_go(s, t, 0);
			s->res->detached++;
			if (err)
				return err;
			continue;
		}
		/* Listening in a group-stop, it reports the interrupt; detached, it stays stopped.
		 */
		t->listening = false;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0 && errno != ESRCH)
			return -errno;
		i++;
	}
	return 0;
}

/*
 * Detaching waits for each thread's next stop; one that never comes (a thread inside vfork, which
 * no interrupt stops, until its child execs or ends) holds memtrack until a second request or
 * DETACH_WAIT_NS. Then the threads left are the kernel's to detach at the supervisor's exit: no
 * PTRACE_O_EXITKILL, they run on, their probes gone already, their interrupt dropped.
 */
static void detach_give_up(struct sup *s)
{
	if (!s->detach_forced && mt_clock_now_ns() - s->detach_start_ns < DETACH_WAIT_NS)
		return;
	s->detach_forced = true;
	fprintf(
	    stderr,
	    "memtrack: %zu thread(s) did not stop to be detached: they are detached as memtrack "
	    "exits\n",
	    s->live.n);
	s->res->detached += (unsigned int)s->live.n;
	while (s->live.n)
		sup_remove_tracee(s, s->live.v[s->live.n - 1]);
}

/* Start detaching when asked, or when --duration is over. */
int sup_attach_tick(struct sup *s)
{
	if (!s->cfg->attach_pid)
		return 0;
	if (s->detaching) {
		if (s->live.n)
			detach_give_up(s);
		return 0;
	}
	if (!s->detach_asked && !(s->detach_at_ns && mt_clock_now_ns() >= s->detach_at_ns))
		return 0;
	return detach_begin(s);
}

/* Whether one of memtrack's marks says that a SIGSTOP for tid is memtrack's own. */
static int memtrack_stop(struct sup *s, pid_t tid)
{
	struct mt_ptrace_mark call;
	struct mt_inode_key key;
	int a, b, c;

	if (!s->tracker)
		return 0;
	a = mt_tracker_take_stop_mark(s->tracker, tid, &key);
	b = mt_tracker_take_pressure_mark(s->tracker, tid);
	c = mt_tracker_take_ptrace_mark(s->tracker, tid, &call);
	if (a < 0 || b < 0 || c < 0)
		return a < 0 ? a : b < 0 ? b : c;
	return a || b || c;
}

/*
 * A thread or process created while detaching is memtrack's tracee until its first stop: the
 * loop waits for it, unless that stop came already (then it is in the set, or detached).
 */
static int await_created(struct sup *s, struct tracee *t)
{
	unsigned long msg = 0;
	struct tracee *c;

	if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) < 0)
		return errno == ESRCH ? 0 : -errno;
	if (sup_find_tracee(s, (pid_t)msg) || sup_tracer_of((pid_t)msg) != getpid())
		return 0;
	c = sup_add_tracee(s, (pid_t)msg);
	return c ? 0 : -ENOMEM;
}

/*
 * A stop while detaching: the thread is detached there, with the signal it was stopped to take
 * (a signal-delivery-stop), or with none (an event, the interrupt, a group-stop: a thread of a
 * stopped process stays stopped). memtrack's own SIGSTOPs are suppressed, those still pending
 * too: the thread is resumed to take it first.
 */
int sup_detach_stop(struct sup *s, struct tracee *t, int status)
{
	int sig = WSTOPSIG(status), event = (unsigned int)status >> 16, mine, err;
	siginfo_t si;

	t->started = true;
	if (event == PTRACE_EVENT_FORK || event == PTRACE_EVENT_VFORK ||
	    event == PTRACE_EVENT_CLONE) {
		err = await_created(s, t);
		if (err)
			return err;
	}
	if (event == 0) {
		if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) < 0)
			return errno == ESRCH ? 0 : -errno;
		mine = sig == SIGSTOP && si.si_code == SI_KERNEL ? memtrack_stop(s, t->tid) : 0;
		if (mine < 0)
			return mine;
		if (mine || (sig == SIGSTOP && t->swallow))
			sig = 0;
	} else {
		mine = memtrack_stop(s, t->tid);
		if (mine < 0)
			return mine;
		if (mine && mt_proc_sig_pending(t->tid, SIGSTOP)) {
			t->swallow = true;
			return SUP_RESUME(0);
		}
		sig = 0;
	}
	err = sup_let_go(s, t, sig);
	s->res->detached++;
	return err ? err : SUP_LEAVE;
}

/*
 * A fatal error, or the attach could not be completed: memtrack leaves the tree as it found it
 * as best it can: nothing tracked, and its threads left to the kernel's detach at memtrack's
 * exit (no PTRACE_O_EXITKILL: they run on).
 */
void sup_attach_abandon(struct sup *s)
{
	for (size_t i = 0; s->tracker && i < s->n_procs; i++)
		mt_tracker_disarm(s->tracker, s->procs[i].pid);
}
