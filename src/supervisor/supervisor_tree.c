// SPDX-License-Identifier: GPL-2.0
/*
 * The supervisor's tree: the set of traced threads and the table of processes, who holds a
 * tracee (a handoff, gdb), and how a stopped one is resumed.
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

#include "base/grow.h"
#include "base/strv.h"
#include "writer/artifact.h"
#include "inspect/backtrace.h"
#include "base/clock.h"
#include "writer/events.h"
#include "base/privileges.h"
#include "inspect/stoplog.h"
#include "supervisor/supervisor.h"
#include "tracker/tracker.h"

#include "supervisor/supervisor_int.h"

/* ---- the tree ------------------------------------------------------------------------ */

static struct tracee *tset_find(const struct tracee_set *set, pid_t tid)
{
	for (size_t i = 0; i < set->n; i++)
		if (set->v[i]->tid == tid)
			return set->v[i];
	return NULL;
}

int sup_tset_put(struct tracee_set *set, struct tracee *t)
{
	if (MT_GROW(set->v, set->cap, set->n + 1, 32))
		return -ENOMEM;
	set->v[set->n++] = t;
	return 0;
}

/* Take t out of the set; the caller owns it then. */
void sup_tset_take(struct tracee_set *set, struct tracee *t)
{
	for (size_t i = 0; i < set->n; i++) {
		if (set->v[i] == t) {
			set->v[i] = set->v[--set->n];
			return;
		}
	}
}

void sup_tset_free(struct tracee_set *set)
{
	for (size_t i = 0; i < set->n; i++)
		free(set->v[i]);
	free(set->v);
}

struct tracee *sup_find_tracee(struct sup *s, pid_t tid)
{
	return tset_find(&s->live, tid);
}

struct tracee *sup_add_tracee(struct sup *s, pid_t tid)
{
	struct tracee *t = calloc(1, sizeof(*t));

	if (!t)
		return NULL;
	*t = (struct tracee){
	    .tid = tid, .proc = -1, .log = mt_stoplog_thread(s->log), .gdb = {.tid = tid}};
	if (!t->log || sup_tset_put(&s->live, t) < 0) {
		free(t);
		return NULL;
	}
	return t;
}

/*
 * The tracee a creator reports: live, or already ended and waiting for its place (*ended is set
 * and the caller owns it), or not seen yet (its first stop is on its way).
 */
struct tracee *sup_reported_child(struct sup *s, pid_t tid, bool *ended)
{
	struct tracee *t = sup_find_tracee(s, tid);

	*ended = false;
	if (t)
		return t;
	t = tset_find(&s->unplaced, tid);
	if (t) {
		sup_tset_take(&s->unplaced, t);
		*ended = true;
		return t;
	}
	return sup_add_tracee(s, tid);
}

/* t is no longer held at a pressure stop: resumed, or woken by SIGKILL, or gone. */
void sup_unpress(struct sup *s, struct tracee *t)
{
	if (!t->pressed)
		return;
	t->pressed = false;
	sup_tset_take(&s->pressed, t);
}

void sup_remove_tracee(struct sup *s, struct tracee *t)
{
	sup_unpress(s, t);
	sup_tset_take(&s->live, t);
	free(t);
}

/* Threads of process proc but except that have not come to their exit stop. */
size_t sup_threads_running(const struct sup *s, int proc, pid_t except)
{
	size_t n = 0;

	for (size_t i = 0; i < s->live.n; i++) {
		const struct tracee *o = s->live.v[i];

		n += o->proc == proc && o->tid != except && !o->exiting;
	}
	return n;
}

int sup_add_proc(struct sup *s, pid_t pid, int parent)
{
	struct proc *p;
	char pos[512];

	if (MT_GROW(s->procs, s->cap_procs, s->n_procs + 1, 16))
		return -ENOMEM;
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

char *sup_read_exe(pid_t pid)
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

const char *sup_signame(int sig, char *buf, size_t len)
{
	const char *abbrev = sigabbrev_np(sig);

	if (abbrev)
		snprintf(buf, len, "SIG%s", abbrev);
	else
		snprintf(buf, len, "%d", sig);
	return buf;
}

/* ---- the handoffs (their state; supervisor_handoff.c hands over) --------------------- */

/* The handoffs of the run: to a debugger at the stop point (s->ho), to the tree's tracers. */
struct handoff *sup_handoff_nth(struct sup *s, size_t i)
{
	return i ? s->inner[i - 1] : &s->ho;
}

size_t sup_handoff_count(const struct sup *s)
{
	return 1 + s->n_inner;
}

/* Whether tid is a thread of the process tgid, from /proc (one lookup, no read). */
bool sup_is_thread_of(pid_t tgid, pid_t tid)
{
	char path[64];

	snprintf(path, sizeof(path), "/proc/%d/task/%d", tgid, tid);
	return access(path, F_OK) == 0;
}

/* Whether t is a thread of h's process while h detaches them. */
bool sup_handoff_holds(const struct handoff *h, const struct tracee *t)
{
	if (!h->pid || !h->collecting)
		return false;
	if (t->proc >= 0)
		return t->proc == h->proc;
	/* Held for its creator's report since before the handoff began: its group not read. */
	return t->tgid ? t->tgid == h->pid : sup_is_thread_of(h->pid, t->tid);
}

/* The handoff whose process t is a thread of, while its threads are being detached. */
struct handoff *sup_handoff_owner(const struct sup *s, const struct tracee *t)
{
	for (size_t i = 0; i < sup_handoff_count(s); i++)
		if (sup_handoff_holds(sup_handoff_nth((struct sup *)s, i), t))
			return sup_handoff_nth((struct sup *)s, i);
	return NULL;
}

/* Whether t is a thread of a process being handed over (supervisor_handoff.c). */
bool sup_handoff_owns(const struct sup *s, const struct tracee *t)
{
	return sup_handoff_owner(s, t) != NULL;
}

/* path will be mapped with its probes in place: not a file mapped late. */
int sup_handoff_know(struct handoff *h, const char *path)
{
	return mt_strv_add(&h->known, &h->n_known, path);
}

/* gdb's session (src/gdbtarget/), from the tracees' side: whose they are, what to poll. */
bool sup_gdb_owns(const struct sup *s, const struct tracee *t)
{
	return s->gdb && mt_gdbt_serves(s->gdb, sup_pid_of(s, t));
}

/* The process of a tracee: its place in the tree, else its thread group (0 before its start). */
pid_t sup_pid_of(const struct sup *s, const struct tracee *t)
{
	return t->proc >= 0 ? s->procs[t->proc].pid : t->tgid;
}

/* A process reached the stop point and was served to gdb (whether or not its session is over). */
bool sup_gdb_reached(const struct sup *s)
{
	return mt_gdbt_reached(s->gdb);
}

int sup_gdb_fd(const struct sup *s)
{
	return mt_gdbt_fd(s->gdb);
}

/* ---- resuming ------------------------------------------------------------------------ */

/* Let a stopped tracee run on, delivering sig (0: none). */
int sup_resume(pid_t tid, int sig)
{
	/* ESRCH: the tracee was killed meanwhile (SIGKILL, exit of its group); its death follows.
	 */
	if (ptrace(PTRACE_CONT, tid, 0, (void *)(long)sig) < 0 && errno != ESRCH)
		return -errno;
	return 0;
}

/*
 * Detach stopped tracee t (a process handed over, memtrack attach's end), sig delivered where it
 * can be (from a signal-delivery-stop), and forget it.
 */
int sup_let_go(struct sup *s, struct tracee *t, int sig)
{
	if (ptrace(PTRACE_DETACH, t->tid, 0, (void *)(long)sig) < 0 && errno != ESRCH)
		return -errno;
	if (t->held)
		s->n_held--;
	sup_remove_tracee(s, t);
	return 0;
}

/*
 * A stop handler's decision carried out. Every stopped tracee memtrack resumes is resumed by
 * sup_resume, but for gdb's vCont, which may single-step (src/gdbtarget/gdbtarget_resume.c), and a
 * group-stop left in PTRACE_LISTEN (supervisor_stops.c).
 */
int sup_carry_out(struct tracee *t, int next)
{
	if (next <= SUP_LEAVE) /* an error, or left as the handler left it */
		return next;
	return sup_resume(t->tid, next - 1);
}
