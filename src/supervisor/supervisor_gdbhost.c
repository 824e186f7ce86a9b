// SPDX-License-Identifier: GPL-2.0
/*
 * The supervisor's side of the gdb target (src/gdbtarget/, docs/GDB.md): the session opened with
 * the supervisor as its host (struct mt_gdbt_host: the served process's threads among the
 * tracees, their resumes, the log of their signals), and the loop's and the stop handlers' calls
 * into it, made only for the threads of the process gdb drives.
 */

#include <stddef.h>
#include <sys/ptrace.h>

#include "supervisor/supervisor_int.h"

static struct tracee *tracee_of(struct mt_gdbt_thread *t)
{
	return (struct tracee *)((char *)t - offsetof(struct tracee, gdb));
}

/* t's gdb state, its process set, when t is a thread of a process gdb debugs; else NULL. */
static struct mt_gdbt_thread *served(struct sup *s, struct tracee *t)
{
	if (!sup_gdb_owns(s, t))
		return NULL;
	t->gdb.pid = sup_pid_of(s, t);
	return &t->gdb;
}

static struct mt_gdbt_thread *host_next_thread(void *ctx, size_t *pos)
{
	struct sup *s = ctx;

	while (*pos < s->live.n) {
		struct mt_gdbt_thread *gt = served(s, s->live.v[(*pos)++]);

		if (gt)
			return gt;
	}
	return NULL;
}

static struct mt_gdbt_thread *host_find_thread(void *ctx, pid_t tid)
{
	struct sup *s = ctx;
	struct tracee *t = sup_find_tracee(s, tid);

	return t ? served(s, t) : NULL;
}

static int host_resume(void *ctx, struct mt_gdbt_thread *t, int sig)
{
	(void)ctx;
	return sup_resume(t->tid, sig);
}

static void host_log_signal(void *ctx, struct mt_gdbt_thread *t, int sig)
{
	sup_log_signal(ctx, tracee_of(t), sig);
}

static bool host_request_pending(void *ctx)
{
	(void)ctx;
	return sup_request_pending();
}

int sup_gdb_open(struct sup *s)
{
	const struct mt_gdbt_config cfg = {
	    .spec = s->cfg->gdb,
	    .verbose = s->cfg->verbose,
	    .artifact_path = s->cfg->artifact_path,
	    .tracker = s->tracker,
	    .ptrace_options = PTRACE_OPTIONS,
	    .final_reply = s->res->gdb_final,
	    .final_len = sizeof(s->res->gdb_final),
	};
	const struct mt_gdbt_host host = {
	    .ctx = s,
	    .next_thread = host_next_thread,
	    .find_thread = host_find_thread,
	    .resume = host_resume,
	    .log_signal = host_log_signal,
	    .request_pending = host_request_pending,
	};

	return mt_gdbt_open(&s->gdb, &cfg, &host);
}

/* The process reached the stop point (the command's exec, or --stop-at's): it is gdb's now. */
int sup_gdb_start(struct sup *s, struct tracee *t, const char *where)
{
	const struct proc *p = &s->procs[t->proc];

	t->gdb.pid = p->pid;
	return mt_gdbt_start(s->gdb, &t->gdb, p->pid, p->pos, where);
}

int sup_gdb_signal(struct sup *s, struct tracee *t, int sig, const siginfo_t *si)
{
	struct mt_gdbt_thread *gt = served(s, t);

	return gt ? mt_gdbt_signal(s->gdb, gt, sig, si) : SUP_RESUME(sig);
}

int sup_gdb_syscall(struct sup *s, struct tracee *t)
{
	struct mt_gdbt_thread *gt = served(s, t);

	return gt ? mt_gdbt_syscall(s->gdb, gt) : SUP_RESUME(0);
}

int sup_gdb_carry(struct sup *s, struct tracee *t, int next)
{
	struct mt_gdbt_thread *gt = served(s, t);

	return gt ? mt_gdbt_carry(s->gdb, gt, next) : next;
}

void sup_gdb_new_child(struct sup *s, struct tracee *t, int event, pid_t child)
{
	struct mt_gdbt_thread *gt = served(s, t);

	if (gt)
		mt_gdbt_new_child(s->gdb, gt, event, child);
}

void sup_gdb_exec(struct sup *s, struct tracee *t)
{
	struct mt_gdbt_thread *gt = served(s, t);

	if (gt)
		mt_gdbt_exec(s->gdb, gt);
}

int sup_gdb_vfork_done(struct sup *s, struct tracee *t)
{
	struct mt_gdbt_thread *gt = served(s, t);

	return gt ? mt_gdbt_vfork_done(s->gdb, gt) : SUP_RESUME(0);
}

void sup_gdb_gone(struct sup *s, struct tracee *t, int status)
{
	struct mt_gdbt_thread *gt = served(s, t);

	if (gt)
		mt_gdbt_gone(s->gdb, gt, status);
}

/* The loop's turn: a termination request ends gdb's session first (mt_gdbt_end_request). */
int sup_gdb_tick(struct sup *s)
{
	if (s->gdb_end_asked) {
		s->gdb_end_asked = false;
		if (s->gdb)
			mt_gdbt_end_request(s->gdb);
	}
	return s->gdb ? mt_gdbt_tick(s->gdb) : 0;
}

/* What happened under gdb, for the summary (mt_run_result's gdb_summary). */
void sup_gdb_report(struct sup *s)
{
	if (s->gdb)
		mt_gdbt_report(s->gdb, s->res->gdb_summary, sizeof(s->res->gdb_summary));
}

void sup_gdb_free(struct sup *s)
{
	mt_gdbt_free(s->gdb);
	s->gdb = NULL;
}
