// SPDX-License-Identifier: GPL-2.0
/*
 * Handing a process to a debugger at the stop point (--stop-at, docs/STOPS.md). The whole process
 * is handed over: the thread at the stop point is detached with a SIGSTOP queued, which stops the
 * whole thread group; every other thread is detached at its next stop (the group-stop reaches them
 * all), and only then is the pid printed, so that gdb finds no thread still traced. memtrack stays
 * the tree's supervisor: it waits for the process through a pidfd (so its process group is never
 * orphaned with a stopped member, which would bring SIGHUP), keeps its allocator links (its calls
 * are still recorded), serves the files it maps later without stopping it, sends the SIGCONT that
 * clears the group-stop once a debugger is attached, and ends with the root's real status.
 */

#include <errno.h>
#include <fnmatch.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ptrace.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include "writer/artifact.h"
#include "base/clock.h"
#include "writer/events.h"
#include "classify/loaddeps.h"
#include "base/printable.h"
#include "tracker/procmaps.h"
#include "tracker/procstatus.h"
#include "supervisor/supervisor_int.h"

bool sup_handoff_owns(const struct sup *s, const struct tracee *t)
{
	const struct handoff *h = &s->ho;

	if (!h->pid || !h->collecting)
		return false;
	if (t->proc >= 0)
		return t->proc == h->proc;
	return t->tgid == h->pid;
}

bool sup_handoff_alive(const struct sup *s)
{
	return s->ho.pid && !s->ho.ended;
}

/* ---- the files it maps ----------------------------------------------------------------- */

static int strv_add(char ***v, size_t *n, const char *str)
{
	char **grown = realloc(*v, (*n + 1) * sizeof(**v));

	if (!grown)
		return -ENOMEM;
	*v = grown;
	grown[*n] = strdup(str);
	if (!grown[*n])
		return -ENOMEM;
	(*n)++;
	return 0;
}

static bool strv_has(char *const *v, size_t n, const char *str)
{
	for (size_t i = 0; i < n; i++)
		if (strcmp(v[i], str) == 0)
			return true;
	return false;
}

static void strv_free(char **v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(v[i]);
	free(v);
}

static int remember_mapped(const struct mt_map_entry *e, void *arg)
{
	struct handoff *h = arg;

	if (strv_has(h->known, h->n_known, e->path))
		return 0;
	return strv_add(&h->known, &h->n_known, e->path) ? 1 : 0;
}

static const struct mt_tracked_file *with_probes(const struct sup *s, const char *path)
{
	size_t n = s->tracker ? mt_tracker_file_count(s->tracker) : 0;

	for (size_t i = 0; i < n; i++) {
		const struct mt_tracked_file *f = mt_tracker_file(s->tracker, i);

		if (f->probes && strcmp(f->path, path) == 0)
			return f;
	}
	return NULL;
}

/* A handoff record in the artifact, in its place in the stream (docs/FORMAT.md, type 7). */
static void record_handoff(struct sup *s, enum mt_handoff_what what, uint16_t file_id,
			   const char *text)
{
	struct mt_artifact_handoff rec = {.pid = s->ho.pid, .what = what, .file_id = file_id};

	if (!s->artifact)
		return;
	/*
	 * Its children are not memtrack's tracees: with probes per process, they get none (with
	 * probes in every process they are recorded, tracked through the fork tracepoint).
	 */
	if (what == MT_HANDOFF_AT && s->tracker && mt_tracker_per_process(s->tracker))
		rec.flags = MT_HANDOFF_CHILDREN_UNRECORDED;
	snprintf(rec.text, sizeof(rec.text), "%s", text);
	if (s->events)
		mt_events_write_handoff(s->events, &rec);
	else
		mt_artifact_write_handoff(s->artifact, &rec);
}

/* A file with probes mapped after the handoff: its calls until it was linked are not recorded. */
static int note_late(struct sup *s, const struct mt_tracked_file *f)
{
	struct handoff *h = &s->ho;

	if (strv_has(h->known, h->n_known, f->path) || strv_has(h->late, h->n_late, f->path))
		return 0;
	if (strv_add(&h->late, &h->n_late, f->path))
		return -ENOMEM;
	record_handoff(s, MT_HANDOFF_LATE_FILE, f->file_id, f->path);
	s->res->handoff_late_files = h->n_late;
	return 0;
}

static int note_late_mapping(const struct mt_map_entry *e, void *arg)
{
	struct sup *s = arg;
	const struct mt_tracked_file *f = with_probes(s, e->path);

	return f && note_late(s, f) ? 1 : 0;
}

/*
 * Serve the files the handed-off process mapped since the last look, without stopping it. Every
 * file with probes linked for it since its handoff was mapped late: known so even when the
 * process has ended by now (its maps gone), or mapped it after this look's request but before
 * its mapping showed (the tracepoint watcher asks at the mmap's entry). With probes in every
 * process nothing is linked per process: its mappings say it, while it runs.
 */
static int catch_up(struct sup *s)
{
	size_t n;
	int err;

	if (!s->tracker || s->ho.ended)
		return 0;
	err = mt_tracker_catch_up(s->tracker, s->ho.pid);
	if (err)
		return err;
	n = mt_tracker_file_count(s->tracker);
	for (size_t i = 0; i < n && !err; i++) {
		const struct mt_tracked_file *f = mt_tracker_file(s->tracker, i);

		if (f->probes && mt_tracker_linked(s->tracker, s->ho.pid, f->file_id))
			err = note_late(s, f);
	}
	if (!err)
		mt_procmaps_for_each_exec(s->ho.pid, note_late_mapping, s);
	return err;
}

/* ---- the files it will map ------------------------------------------------------------- */

/* pid's environment (NUL-separated), or NULL. */
static char *read_environ(pid_t pid, size_t *len)
{
	char path[64], *buf = NULL, *grown;
	size_t cap = 0;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/environ", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return NULL;
	*len = 0;
	do {
		if (cap - *len < 4096) {
			grown = realloc(buf, cap + 65536 + 1);
			if (!grown)
				break;
			buf = grown;
			cap += 65536;
		}
		n = read(fd, buf + *len, cap - *len);
		*len += n > 0 ? (size_t)n : 0;
	} while (n > 0);
	close(fd);
	if (buf)
		buf[*len] = '\0';
	return buf;
}

static const char *env_value(const char *env, size_t len, const char *name)
{
	size_t k = strlen(name);

	for (const char *p = env; p && p < env + len; p += strlen(p) + 1)
		if (strncmp(p, name, k) == 0 && p[k] == '=')
			return p + k + 1;
	return NULL;
}

static int link_ahead(const char *path, void *arg)
{
	struct sup *s = arg;
	int err = mt_tracker_link_path(s->tracker, s->ho.pid, path);

	if (err)
		return err;
	/* Its probes are in place before the process can run it: not a file mapped late. */
	return strv_add(&s->ho.known, &s->ho.n_known, path);
}

/*
 * Before the process goes to the debugger, link what ld.so will map for it (at an exec: libc and
 * the rest of the program's needs; at a dlopen's mapping: the plugin's), so that not even the
 * first call into them is missed. What the loader finds elsewhere is reported as mapped late.
 */
static int link_what_loader_maps(struct sup *s)
{
	struct handoff *h = &s->ho;
	struct mt_loader_env env = {
	    .program = s->procs[h->proc].exe,
	    .preload_file = "/etc/ld.so.preload",
	    .cache = "/etc/ld.so.cache",
	};
	size_t len = 0;
	char *envbuf = read_environ(h->pid, &len);
	int err;

	env.library_path = env_value(envbuf, len, "LD_LIBRARY_PATH");
	env.preload = env_value(envbuf, len, "LD_PRELOAD");
	err = mt_loader_deps(&env, (const char *const *)h->known, h->n_known, link_ahead, s);
	free(envbuf);
	return err;
}

/* ---- the stop point ------------------------------------------------------------------ */

/* Not reached yet (first match only), and aimed at t's process. */
static bool stop_point_open(const struct sup *s, const struct tracee *t, bool root_exec)
{
	return !s->ho.pid && mt_stop_point_aims_at(&s->cfg->stop, s->procs[t->proc].pos, root_exec);
}

struct exec_match {
	const struct mt_stop_point *sp;
	char *where;
	size_t len;
};

static int match_mapped(const struct mt_map_entry *e, void *arg)
{
	struct exec_match *m = arg;

	if (!mt_stop_point_matches(m->sp, e->path))
		return 0;
	snprintf(m->where, m->len, "right after its exec, which mapped %s", e->path);
	return 1;
}

/* The name a program was run by (exec:sh for /bin/sh, which is dash): its comm after the exec. */
static bool comm_matches(const struct mt_stop_point *sp, pid_t pid)
{
	char path[64], comm[32] = "";
	ssize_t n = -1;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/comm", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd >= 0) {
		n = read(fd, comm, sizeof(comm) - 1);
		close(fd);
	}
	if (n <= 0)
		return false;
	comm[strcspn(comm, "\n")] = '\0';
	return fnmatch(sp->glob, comm, 0) == 0;
}

bool sup_stop_point_at_exec(struct sup *s, struct tracee *t, bool root_first, char *where,
			    size_t len)
{
	const struct mt_stop_point *sp = &s->cfg->stop;
	const struct proc *p = &s->procs[t->proc];
	struct exec_match m = {sp, where, len};

	if (!stop_point_open(s, t, root_first))
		return false;
	if (sp->map) /* the program and its interpreter, mapped by execve itself */
		return mt_procmaps_for_each_exec(p->pid, match_mapped, &m) == 1;
	if (sp->glob && !mt_stop_point_matches(sp, p->exe ? p->exe : "?") &&
	    !comm_matches(sp, p->pid))
		return false;
	snprintf(where, len, "right after its exec of %s", p->exe ? p->exe : "?");
	return true;
}

bool sup_stop_point_at_map(struct sup *s, struct tracee *t, const char *path)
{
	return s->cfg->stop.map && stop_point_open(s, t, false) &&
	       mt_stop_point_matches(&s->cfg->stop, path);
}

/* ---- handing over -------------------------------------------------------------------- */

static void print_handed(struct sup *s)
{
	pid_t pid = s->ho.pid;

	fprintf(stderr,
		"memtrack: process %d (%s) is stopped %s; memtrack records its allocations and "
		"waits for it. Attach with: gdb -p %d -ex 'handle SIGSTOP nostop noprint pass' -ex "
		"'handle SIGCONT nostop noprint pass'\n",
		pid, s->procs[s->ho.proc].pos, s->ho.where, pid);
}

/* Detach one thread of the process handed over; sig is delivered where it can be. */
static int let_go(struct sup *s, struct tracee *t, int sig)
{
	if (ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)sig) < 0 && errno != ESRCH)
		return -errno;
	if (t->held)
		s->n_held--;
	sup_remove_tracee(s, t);
	return 0;
}

/* Threads of the process that memtrack holds stopped (pressure, a group-stop): detach them now. */
static int let_go_held(struct sup *s)
{
	for (size_t i = 0; i < s->live.n;) {
		struct tracee *t = s->live.v[i];
		int err;

		if (!sup_handoff_owns(s, t) || !(t->pressed || t->held || t->listening)) {
			i++;
			continue;
		}
		if (t->listening) {
			/* Listening: it reports a stop to an interrupt, and is detached there. */
			t->listening = false;
			if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0 && errno != ESRCH)
				return -errno;
			i++;
			continue;
		}
		err = let_go(s, t, 0);
		if (err)
			return err;
	}
	return 0;
}

static bool awaited_take(struct handoff *h, pid_t tid)
{
	for (size_t i = 0; i < h->n_awaited; i++) {
		if (h->awaited[i] == tid) {
			h->awaited[i] = h->awaited[--h->n_awaited];
			return true;
		}
	}
	return false;
}

/* Every thread is detached: the process is the debugger's. */
static int finish_collecting(struct sup *s)
{
	struct handoff *h = &s->ho;

	for (size_t i = 0; i < s->live.n; i++)
		if (sup_handoff_owns(s, s->live.v[i]))
			return 0;
	if (h->n_awaited)
		return 0;
	h->collecting = false;
	print_handed(s);
	return 0;
}

int sup_hand_off(struct sup *s, struct tracee *t, const char *where)
{
	struct handoff *h = &s->ho;
	struct json_object *d = sup_detail_new();
	pid_t pid = s->procs[t->proc].pid;
	int err;

	sup_detail_str(d, "at", where);
	sup_log_stop(s, t, "handoff", d);
	*h = (struct handoff){.pid = pid, .proc = t->proc, .pidfd = -1, .collecting = true};
	h->where = strdup(where);
	h->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (!h->where || h->pidfd < 0)
		return h->where ? -errno : -ENOMEM;
	mt_procmaps_for_each_exec(pid, remember_mapped, h);
	/* After the events it made under memtrack: the ones after it were the debugger's time. */
	record_handoff(s, MT_HANDOFF_AT, 0, where);
	if (s->tracker) {
		err = link_what_loader_maps(s);
		if (!err)
			err = mt_tracker_hand_off(s->tracker, pid);
		if (err)
			return err;
	}
	s->res->stopped_pid = pid;
	/*
	 * Detaching delivers its signal only from a signal-delivery-stop; at an event stop (an
	 * exec) it is ignored. A SIGSTOP queued first stops the whole group as soon as it runs.
	 */
	if (tgkill(pid, t->tid, SIGSTOP) < 0 && errno != ESRCH)
		return -errno;
	err = let_go(s, t, 0);
	if (!err)
		err = let_go_held(s);
	if (!err)
		err = finish_collecting(s);
	return err ? err : SUP_LEAVE;
}

/*
 * A stop of a thread of the process being handed over: what memtrack must do before the thread
 * may go on is done (a file it stopped for is attached, a new process is placed), then the thread
 * is detached. Nothing is logged: which stops come before the detach depends on timing.
 */
int sup_handoff_stop(struct sup *s, struct tracee *t, int status)
{
	int sig = WSTOPSIG(status), event = (unsigned int)status >> 16, err = 0, next;
	struct mt_inode_key key;
	unsigned long msg = 0;
	siginfo_t si;

	awaited_take(&s->ho, t->tid);
	switch (event) {
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		/* A new process: placed in the tree, it stays memtrack's. */
		next = sup_on_new_child(s, t, event);
		if (next < 0)
			return next;
		sig = 0;
		break;
	case PTRACE_EVENT_CLONE:
		/* A new thread: detached at its first stop, which may come before or after this. */
		if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) == 0) {
			struct tracee *c = sup_find_tracee(s, (pid_t)msg);

			if (c && c->started)
				err = let_go(s, c, 0);
			else if (!c && !awaited_take(&s->ho, (pid_t)msg))
				err = sup_handoff_await(s, (pid_t)msg);
		}
		sig = 0;
		break;
	case 0:
		if (ptrace(PTRACE_GETSIGINFO, t->tid, 0, &si) < 0)
			return errno == ESRCH ? 0 : -errno;
		if (sig == SIGSTOP && si.si_code == SI_KERNEL && s->tracker) {
			if (mt_tracker_take_pressure_mark(s->tracker, t->tid) > 0)
				sig = 0;
			if (mt_tracker_take_stop_mark(s->tracker, t->tid, &key) > 0) {
				sig = 0;
				err = mt_tracker_handle_stop(s->tracker, s->ho.pid, &key);
			}
		}
		break;
	default: /* its first stop, a group-stop, an interrupt, its exec, its exit */
		sig = 0;
		break;
	}
	if (!err)
		err = let_go(s, t, sig);
	if (!err)
		err = let_go_held(s);
	if (!err)
		err = finish_collecting(s);
	return err;
}

/* A thread reported created but not seen yet: the handoff waits for its first stop. */
int sup_handoff_await(struct sup *s, pid_t tid)
{
	struct handoff *h = &s->ho;
	pid_t *grown;

	grown = realloc(h->awaited, (h->n_awaited + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	h->awaited = grown;
	h->awaited[h->n_awaited++] = tid;
	return 0;
}

/* ---- while the debugger has it --------------------------------------------------------- */

/* The exit status of a process that ended (a zombie): field 52 of /proc/PID/stat, or -1. */
static int read_exit_code(pid_t pid)
{
	char path[64], buf[1024], *p;
	int code = -1, field = 2;
	ssize_t n;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/stat", pid);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return -1;
	n = read(fd, buf, sizeof(buf) - 1);
	close(fd);
	if (n <= 0)
		return -1;
	buf[n] = '\0';
	p = strrchr(buf, ')'); /* the name may hold spaces and parentheses */
	while (p && (p = strchr(p + 1, ' ')))
		if (++field == 52)
			return sscanf(p + 1, "%d", &code) == 1 ? code : -1;
	return -1;
}

/* The tracer of pid (TracerPid in its status), 0 when none or unknown. */
pid_t sup_tracer_of(pid_t pid)
{
	struct mt_proc_status st;

	return mt_proc_status_read(pid, 0, &st) ? 0 : st.tracer;
}

/*
 * A debugger attached: clear the group-stop (SIGCONT), so that after its detach the process runs
 * on. A debugger that attached and detached between two looks left no TracerPid, but the BPF side
 * saw its attach; seen at its ptrace call's entry, though, the attach may still be under way, and
 * the SIGCONT must not let the process run before the debugger holds it: such a sighting counts
 * when a later look still finds no tracer.
 */
static void continue_when_debugged(struct sup *s)
{
	struct handoff *h = &s->ho;
	bool traced = sup_tracer_of(h->pid) > 0;
	bool seen = s->tracker && mt_tracker_debugger_seen(s->tracker, h->pid);

	if (traced || (seen && h->seen_untraced)) {
		h->continued = true;
		kill(h->pid, SIGCONT);
	}
	h->seen_untraced = seen && !traced;
}

/* A file it mapped after its handoff and that it took with it before memtrack could open it. */
static int note_unresolved(const struct mt_inode_key *key, void *arg)
{
	struct sup *s = arg;
	char what[160];

	snprintf(what, sizeof(what),
		 "(a file gone with the process before memtrack could open it: device %u:%u, "
		 "inode %llu)",
		 (unsigned int)(key->dev >> 20), (unsigned int)(key->dev & 0xfffff),
		 (unsigned long long)key->ino);
	if (strv_add(&s->ho.late, &s->ho.n_late, what))
		return -ENOMEM;
	record_handoff(s, MT_HANDOFF_LATE_FILE, UINT16_MAX, what);
	s->res->handoff_late_files = s->ho.n_late;
	return 0;
}

/* The handed-off process ended: status is its wait status, or -1 when it could not be known. */
void sup_handoff_ended(struct sup *s, int status)
{
	struct handoff *h = &s->ho;

	if (h->ended)
		return;
	catch_up(s);
	if (s->tracker)
		mt_tracker_drop_requests(s->tracker, h->pid, note_unresolved, s);
	h->ended = true;
	if (h->pidfd >= 0)
		close(h->pidfd);
	h->pidfd = -1;
	if (status >= 0)
		sup_record_process(s, &s->procs[h->proc], status, true);
}

static bool readable(int fd)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return fd >= 0 && poll(&p, 1, 0) == 1;
}

/*
 * Look at the handed-off process: at every request it makes, else every HANDOFF_POLL_NS (the
 * loop comes here at every stop of the rest of the tree, which need not pay for it).
 */
int sup_handoff_tick(struct sup *s)
{
	struct handoff *h = &s->ho;
	uint64_t now = mt_clock_now_ns();

	if (!h->pid || h->ended)
		return 0;
	/* A thread it waited for may have ended instead of stopping (killed meanwhile). */
	if (h->collecting)
		return finish_collecting(s);
	if (now < h->next_look_ns && !readable(h->pidfd) &&
	    !(s->tracker && readable(mt_tracker_requests_fd(s->tracker))))
		return 0;
	h->next_look_ns = now + HANDOFF_POLL_NS;
	if (s->end_phase && !h->killed) {
		/* The tree is ended on a termination request: this process with it. */
		h->killed = true;
		kill(h->pid, s->end_sig);
		kill(h->pid, SIGCONT);
	}
	if (!h->continued)
		continue_when_debugged(s);
	/* The root is memtrack's child: its status comes from waitpid (sup_handoff_ended). */
	if (h->pid != s->root && readable(h->pidfd))
		sup_handoff_ended(s, read_exit_code(h->pid));
	return catch_up(s);
}

void sup_handoff_report(struct sup *s)
{
	struct handoff *h = &s->ho;
	char text[MT_PRINTABLE_MAX];

	if (s->cfg->stop.text && !h->pid)
		fprintf(stderr, "memtrack: the stop point '%s' was never reached\n",
			mt_printable(text, sizeof(text), s->cfg->stop.text));
	if (!h->pid)
		return;
	if (h->collecting)
		fprintf(stderr,
			"memtrack: process %d could not be handed over whole: %zu thread(s) "
			"never stopped\n",
			h->pid, h->n_awaited);
	/* A readable artifact says it in the summary (memtrack report, too). */
	if (h->n_late && !(s->artifact && mt_artifact_readable_later(s->artifact))) {
		fprintf(
		    stderr,
		    "memtrack: process %d (%s) mapped files with allocators after its handoff, "
		    "attached without stopping it: its calls into them before that may be missing:",
		    h->pid, s->procs[h->proc].pos);
		for (size_t i = 0; i < h->n_late; i++)
			fprintf(stderr, " %s", h->late[i]);
		fputc('\n', stderr);
	}
}

void sup_handoff_free(struct sup *s)
{
	struct handoff *h = &s->ho;

	if (h->pidfd >= 0 && h->pid)
		close(h->pidfd);
	free(h->where);
	free(h->awaited);
	strv_free(h->known, h->n_known);
	strv_free(h->late, h->n_late);
}
