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

#include "base/fdready.h"
#include "base/strv.h"
#include "writer/artifact.h"
#include "base/clock.h"
#include "writer/events.h"
#include "base/printable.h"
#include "inspect/procmaps.h"
#include "inspect/procstatus.h"
#include "supervisor/supervisor_int.h"

static bool alive(const struct handoff *h)
{
	return h->pid && !h->ended;
}

bool sup_handoff_alive(const struct sup *s)
{
	for (size_t i = 0; i < sup_handoff_count(s); i++)
		if (alive(sup_handoff_nth((struct sup *)s, i)))
			return true;
	return false;
}

/* Waited for, all threads detached: the loop polls their pidfds (up to max). */
size_t sup_handoff_pollfds(const struct sup *s, struct pollfd *p, size_t max)
{
	size_t n = 0;

	for (size_t i = 0; i < sup_handoff_count(s) && n < max; i++) {
		const struct handoff *h = sup_handoff_nth((struct sup *)s, i);

		if (alive(h) && !h->collecting)
			p[n++] = (struct pollfd){.fd = h->pidfd, .events = POLLIN};
	}
	return n;
}

bool sup_handoff_waited(const struct sup *s)
{
	for (size_t i = 0; i < sup_handoff_count(s); i++)
		if (alive(sup_handoff_nth((struct sup *)s, i)) &&
		    !sup_handoff_nth((struct sup *)s, i)->collecting)
			return true;
	return false;
}

struct handoff *sup_handoff_of(struct sup *s, pid_t pid)
{
	for (size_t i = 0; i < sup_handoff_count(s); i++)
		if (sup_handoff_nth(s, i)->pid && sup_handoff_nth(s, i)->pid == pid)
			return sup_handoff_nth(s, i);
	return NULL;
}

/* ---- the files it maps ----------------------------------------------------------------- */

static int remember_mapped(const struct mt_map_entry *e, void *arg)
{
	struct handoff *h = arg;

	if (mt_strv_has(h->known, h->n_known, e->path))
		return 0;
	return mt_strv_add(&h->known, &h->n_known, e->path) ? 1 : 0;
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
static void record_handoff(struct sup *s, struct handoff *h, enum mt_handoff_what what,
			   uint16_t file_id, const char *text)
{
	struct mt_artifact_handoff rec = {.pid = h->pid, .what = what, .file_id = file_id};

	if (!s->artifact)
		return;
	/*
	 * Its children are not memtrack's tracees: with probes per process, they get none (with
	 * probes in every process they are recorded, tracked through the fork tracepoint).
	 */
	if (what == MT_HANDOFF_AT && s->tracker && mt_tracker_per_process(s->tracker))
		rec.flags = MT_HANDOFF_CHILDREN_UNRECORDED;
	if (what == MT_HANDOFF_AT && h->inner)
		rec.flags |= MT_HANDOFF_TO_TRACER;
	snprintf(rec.text, sizeof(rec.text), "%s", text);
	if (s->events)
		mt_events_write_handoff(s->events, &rec);
	else
		mt_artifact_write_handoff(s->artifact, &rec);
}

/* A file with probes mapped after the handoff: its calls until it was linked are not recorded. */
static int note_late(struct sup *s, struct handoff *h, const struct mt_tracked_file *f)
{
	if (mt_strv_has(h->known, h->n_known, f->path) || mt_strv_has(h->late, h->n_late, f->path))
		return 0;
	if (mt_strv_add(&h->late, &h->n_late, f->path))
		return -ENOMEM;
	record_handoff(s, h, MT_HANDOFF_LATE_FILE, f->file_id, f->path);
	s->res->handoff_late_files++;
	return 0;
}

/* A handoff and its run, for the callbacks that walk its files. */
struct handoff_of {
	struct sup *s;
	struct handoff *h;
};

static int note_late_mapping(const struct mt_map_entry *e, void *arg)
{
	struct handoff_of *o = arg;
	const struct mt_tracked_file *f = with_probes(o->s, e->path);

	return f && note_late(o->s, o->h, f) ? 1 : 0;
}

/*
 * Serve the files the handed-off process mapped since the last look, without stopping it. Every
 * file with probes linked for it since its handoff was mapped late: known so even when the
 * process has ended by now (its maps gone), or mapped it after this look's request but before
 * its mapping showed (the tracepoint watcher asks at the mmap's entry). With probes in every
 * process nothing is linked per process: its mappings say it, while it runs.
 */
static int catch_up(struct sup *s, struct handoff *h)
{
	struct handoff_of o = {s, h};
	size_t n;
	int err;

	if (!s->tracker || h->ended)
		return 0;
	err = mt_tracker_catch_up(s->tracker, h->pid);
	if (err)
		return err;
	n = mt_tracker_file_count(s->tracker);
	for (size_t i = 0; i < n && !err; i++) {
		const struct mt_tracked_file *f = mt_tracker_file(s->tracker, i);

		if (f->probes && mt_tracker_linked(s->tracker, h->pid, f->file_id))
			err = note_late(s, h, f);
	}
	if (!err)
		mt_procmaps_for_each_exec(h->pid, note_late_mapping, &o);
	return err;
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

/* Threads of the process that memtrack holds stopped (pressure, a group-stop): detach them now. */
static int let_go_held(struct sup *s, struct handoff *h)
{
	for (size_t i = 0; i < s->live.n;) {
		struct tracee *t = s->live.v[i];
		int err;

		if (!sup_handoff_holds(h, t) || !(t->pressed || t->held || t->listening)) {
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
		err = sup_let_go(s, t, 0);
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

/* Every thread of h's process is detached: the tracer that waits makes its attach again. */
static int inner_collected(struct sup *s, struct handoff *h)
{
	pid_t caller = h->caller;

	(void)s;
	h->caller = 0;
	return caller ? sup_resume(caller, 0) : 0;
}

/* Every thread is detached: the process is the debugger's, or its tracer's. */
static int finish_collecting(struct sup *s, struct handoff *h)
{
	for (size_t i = 0; i < s->live.n; i++)
		if (sup_handoff_holds(h, s->live.v[i]))
			return 0;
	if (h->n_awaited || !h->collecting)
		return 0;
	h->collecting = false;
	if (h->inner)
		return inner_collected(s, h);
	print_handed(s);
	return 0;
}

/*
 * Start handing process proc over (its threads are detached by the caller): it stays tracked by
 * the BPF side, which records its allocations and never stops it again.
 */
int sup_handoff_begin(struct sup *s, struct handoff *h, int proc, const char *where, bool inner)
{
	pid_t pid = s->procs[proc].pid;
	int err;

	*h = (struct handoff){
	    .pid = pid, .proc = proc, .pidfd = -1, .collecting = true, .inner = inner};
	h->where = strdup(where);
	h->pidfd = (int)syscall(SYS_pidfd_open, pid, 0);
	if (!h->where || h->pidfd < 0)
		return h->where ? -errno : -ENOMEM;
	mt_procmaps_for_each_exec(pid, remember_mapped, h);
	/* After the events it made under memtrack: the ones after it were the debugger's time. */
	record_handoff(s, h, MT_HANDOFF_AT, 0, where);
	if (!s->tracker)
		return 0;
	/* A tracer takes it at once: what its loader maps later is served as it comes. */
	err = inner ? 0 : sup_link_what_loader_maps(s, h);
	return err ? err : mt_tracker_hand_off(s->tracker, pid);
}

/*
 * Detach the threads of h's process that memtrack holds, and stop the others (PTRACE_INTERRUPT)
 * so that each is detached at its next stop; done when none is left.
 */
int sup_handoff_collect(struct sup *s, struct handoff *h)
{
	for (size_t i = 0; i < s->live.n; i++) {
		struct tracee *t = s->live.v[i];

		if (!sup_handoff_holds(h, t) || t->pressed || t->held || t->listening)
			continue;
		if (ptrace(PTRACE_INTERRUPT, t->tid, 0, 0) < 0 && errno != ESRCH)
			return -errno;
	}
	return let_go_held(s, h) ?: finish_collecting(s, h);
}

int sup_hand_off(struct sup *s, struct tracee *t, const char *where)
{
	struct handoff *h = &s->ho;
	struct json_object *d = sup_detail_new();
	pid_t pid = s->procs[t->proc].pid;
	int err;

	sup_detail_str(d, "at", where);
	sup_log_stop(s, t, "handoff", d);
	err = sup_handoff_begin(s, h, t->proc, where, false);
	if (err)
		return err;
	s->res->stopped_pid = pid;
	/*
	 * Detaching delivers its signal only from a signal-delivery-stop; at an event stop (an
	 * exec) it is ignored. A SIGSTOP queued first stops the whole group as soon as it runs.
	 */
	if (tgkill(pid, t->tid, SIGSTOP) < 0 && errno != ESRCH)
		return -errno;
	err = sup_let_go(s, t, 0);
	if (!err)
		err = let_go_held(s, h);
	if (!err)
		err = finish_collecting(s, h);
	return err ? err : SUP_LEAVE;
}

/* A thread reported created but not seen yet: the handoff waits for its first stop. */
static int await_thread(struct handoff *h, pid_t tid)
{
	pid_t *grown;

	grown = realloc(h->awaited, (h->n_awaited + 1) * sizeof(*grown));
	if (!grown)
		return -ENOMEM;
	h->awaited = grown;
	h->awaited[h->n_awaited++] = tid;
	return 0;
}

/*
 * A stop of a thread of the process being handed over: what memtrack must do before the thread
 * may go on is done (a file it stopped for is attached; a new process was placed by the caller),
 * then the thread is detached. Nothing is logged: which stops come before the detach depends on
 * timing.
 */
int sup_handoff_stop(struct sup *s, struct tracee *t, int status)
{
	int sig = WSTOPSIG(status), event = (unsigned int)status >> 16, err = 0;
	struct handoff *h = sup_handoff_owner(s, t);
	struct mt_inode_key key;
	unsigned long msg = 0;
	siginfo_t si;

	awaited_take(h, t->tid);
	switch (event) {
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		/* A new process, placed by handed_off_stop: it stays memtrack's. */
		sig = 0;
		break;
	case PTRACE_EVENT_CLONE:
		/* A new thread: detached at its first stop, which may come before or after this. */
		if (ptrace(PTRACE_GETEVENTMSG, t->tid, 0, &msg) == 0) {
			struct tracee *c = sup_find_tracee(s, (pid_t)msg);

			if (c && c->started)
				err = sup_let_go(s, c, 0);
			else if (!c && !awaited_take(h, (pid_t)msg))
				err = await_thread(h, (pid_t)msg);
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
				err = mt_tracker_handle_stop(s->tracker, h->pid, &key);
			}
		}
		break;
	default: /* its first stop, a group-stop, an interrupt, its exec, its exit */
		sig = 0;
		break;
	}
	if (!err)
		err = sup_let_go(s, t, sig);
	if (!err)
		err = let_go_held(s, h);
	if (!err)
		err = finish_collecting(s, h);
	return err;
}

/* ---- while the debugger has it --------------------------------------------------------- */

/* The exit status of a process that ended (a zombie): field 52 of /proc/PID/stat, or -1. */
static int read_exit_code(pid_t pid)
{
	long long code;

	return mt_proc_stat_field(pid, 52, &code) ? -1 : (int)code;
}

/*
 * The process tracing pid, 0 when none or unknown. TracerPid names the tracer's thread: memtrack's
 * is not its first (mt_supervise), so the thread's group is looked up.
 */
pid_t sup_tracer_of(pid_t pid)
{
	struct mt_proc_status st;
	pid_t tracer;

	if (mt_proc_status_read(pid, 0, &st) || !st.tracer)
		return 0;
	tracer = st.tracer;
	return mt_proc_status_read(tracer, 0, &st) || !st.tgid ? tracer : st.tgid;
}

/*
 * A debugger attached: clear the group-stop (SIGCONT), so that after its detach the process runs
 * on. A debugger that attached and detached between two looks left no TracerPid, but the BPF side
 * saw its attach; seen at its ptrace call's entry, though, the attach may still be under way, and
 * the SIGCONT must not let the process run before the debugger holds it: such a sighting counts
 * when a later look still finds no tracer.
 */
static void continue_when_debugged(struct sup *s, struct handoff *h)
{
	bool traced = sup_tracer_of(h->pid) > 0;
	bool seen = s->tracker && mt_tracker_debugger_seen(s->tracker, h->pid);

	if (traced || (seen && h->seen_untraced)) {
		h->continued = true;
		kill(h->pid, SIGCONT);
	}
	h->seen_untraced = seen && !traced;
}

/*
 * A file it mapped after its handoff and that it took with it before memtrack could open it:
 * found again by its inode, it is named only if it has an allocator (calls into it were missed);
 * not found, it is named by device and inode (whether it had one cannot be known).
 */
static int note_unresolved(const struct mt_inode_key *key, void *arg)
{
	struct handoff_of *o = arg;
	bool allocator = false;
	char what[4096];
	int found = sup_find_lost(o->s, o->h, key, what, sizeof(what), &allocator);

	if (found < 0)
		return found;
	if (found && !allocator)
		return 0;
	if (!found)
		snprintf(what, sizeof(what),
			 "(a file gone with the process before memtrack could open it: device "
			 "%u:%u, inode %llu)",
			 (unsigned int)(key->dev >> 20), (unsigned int)(key->dev & 0xfffff),
			 (unsigned long long)key->ino);
	if (mt_strv_add(&o->h->late, &o->h->n_late, what))
		return -ENOMEM;
	record_handoff(o->s, o->h, MT_HANDOFF_LATE_FILE, UINT16_MAX, what);
	o->s->res->handoff_late_files++;
	return 0;
}

/* The handed-off process ended: status is its wait status, or -1 when it could not be known. */
void sup_handoff_ended(struct sup *s, struct handoff *h, int status)
{
	struct handoff_of o = {s, h};

	if (h->ended)
		return;
	catch_up(s, h);
	if (s->tracker)
		mt_tracker_drop_requests(s->tracker, h->pid, note_unresolved, &o);
	h->ended = true;
	if (h->pidfd >= 0)
		close(h->pidfd);
	h->pidfd = -1;
	if (status >= 0)
		sup_record_process(s, &s->procs[h->proc], status, true);
}

/*
 * Look at the handed-off process: at every request it makes, else every HANDOFF_POLL_NS (the
 * loop comes here at every stop of the rest of the tree, which need not pay for it).
 */
static int tick(struct sup *s, struct handoff *h)
{
	uint64_t now = mt_clock_now_ns();

	if (!h->pid || h->ended)
		return 0;
	/* A thread it waited for may have ended instead of stopping (killed meanwhile). */
	if (h->collecting)
		return finish_collecting(s, h);
	if (s->handoff_wake_asked && !h->continued && !h->inner) {
		/*
		 * A termination request while it waits for a debugger no one ran: continued, it
		 * gets the signal sent to it (or to its group) as any process of the run does.
		 */
		h->continued = true;
		kill(h->pid, SIGCONT);
	}
	if (now < h->next_look_ns && !mt_fd_readable(h->pidfd) &&
	    !(s->tracker && mt_fd_readable(mt_tracker_requests_fd(s->tracker))))
		return 0;
	h->next_look_ns = now + HANDOFF_POLL_NS;
	if (s->end_phase && !h->killed) {
		/* The tree is ended on a termination request: this process with it. */
		h->killed = true;
		kill(h->pid, s->end_sig);
		kill(h->pid, SIGCONT);
	}
	/* A tracer of the tree holds it as it wants: it never waits for memtrack's SIGCONT. */
	if (!h->continued && !h->inner)
		continue_when_debugged(s, h);
	/* The root is memtrack's child: its status comes from waitpid (sup_handoff_ended). */
	if (h->pid != s->root && mt_fd_readable(h->pidfd))
		sup_handoff_ended(s, h, read_exit_code(h->pid));
	return catch_up(s, h);
}

/* h's process has ended (a zombie, maybe held by its debugger): its wait status in *status. */
bool sup_handoff_dead(const struct handoff *h, int *status)
{
	if (h->ended || h->pidfd < 0 || !mt_fd_readable(h->pidfd))
		return false;
	*status = read_exit_code(h->pid);
	return *status >= 0;
}

int sup_handoff_tick(struct sup *s)
{
	bool collecting = false;
	int err = 0;

	for (size_t i = 0; i < sup_handoff_count(s) && !err; i++) {
		err = tick(s, sup_handoff_nth(s, i));
		collecting |= sup_handoff_nth(s, i)->collecting;
	}
	/* One being collected waits for its debugger once it is done: the request holds. */
	if (!collecting)
		s->handoff_wake_asked = false;
	return err;
}

static void report(struct sup *s, struct handoff *h)
{
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

void sup_handoff_report(struct sup *s)
{
	char text[MT_PRINTABLE_MAX];

	if (s->cfg->stop.text && !s->ho.pid && !sup_gdb_reached(s))
		fprintf(stderr, "memtrack: the stop point '%s' was never reached\n",
			mt_printable(text, sizeof(text), s->cfg->stop.text));
	for (size_t i = 0; i < sup_handoff_count(s); i++)
		report(s, sup_handoff_nth(s, i));
}

static void handoff_free(struct handoff *h)
{
	if (h->pidfd >= 0 && h->pid)
		close(h->pidfd);
	free(h->where);
	free(h->awaited);
	free(h->detached);
	mt_strv_free(h->known, h->n_known);
	mt_strv_free(h->late, h->n_late);
}

void sup_handoff_free(struct sup *s)
{
	for (size_t i = 0; i < sup_handoff_count(s); i++)
		handoff_free(sup_handoff_nth(s, i));
	for (size_t i = 0; i < s->n_inner; i++)
		free(s->inner[i]);
	free(s->inner);
}
