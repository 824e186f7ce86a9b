// SPDX-License-Identifier: GPL-2.0
/*
 * The processes served to gdb (--gdb, docs/GDB.md): the first one and the children of its forks
 * that gdb follows, found, added and dropped; and the parked thread a request names.
 */

#include <stdlib.h>

#include "gdbtarget/gdbtarget_int.h"

/* The parked thread tid of the process (0 or -1: the thread that stopped). */
struct mt_gdbt_thread *gdbt_parked(struct mt_gdbt *g, pid_t tid)
{
	struct mt_gdbt_thread *t;

	if (tid <= 0)
		tid = g->stop.tid;
	t = gdbt_find_thread(g, tid);
	return t && t->parked ? t : NULL;
}

struct gdbt_proc *gdbt_proc_of(struct mt_gdbt *g, pid_t pid)
{
	for (size_t i = 0; i < g->n_procs; i++)
		if (g->procs[i]->pid == pid)
			return g->procs[i];
	return NULL;
}

struct gdbt_proc *gdbt_cur(struct mt_gdbt *g)
{
	struct gdbt_proc *p = gdbt_proc_of(g, g->cur);
	struct mt_gdbt_thread *t;

	if (p)
		return p;
	t = gdbt_find_thread(g, g->stop.tid);
	p = t ? gdbt_proc_of(g, t->pid) : NULL;
	return p ? p : g->n_procs ? g->procs[0] : NULL;
}

struct gdbt_proc *gdbt_add_proc(struct mt_gdbt *g, pid_t pid)
{
	struct gdbt_proc **grown = realloc(g->procs, (g->n_procs + 1) * sizeof(*grown));
	struct gdbt_proc *p = calloc(1, sizeof(*p));

	if (grown)
		g->procs = grown;
	if (!grown || !p) {
		free(p);
		return NULL;
	}
	p->pid = pid;
	g->procs[g->n_procs++] = p;
	return p;
}

void gdbt_drop_proc(struct mt_gdbt *g, struct gdbt_proc *p)
{
	for (size_t i = 0; i < g->n_procs; i++) {
		if (g->procs[i] != p)
			continue;
		g->procs[i] = g->procs[--g->n_procs];
		free(p->breaks);
		free(p->probes);
		free(p->rets);
		free(p);
		return;
	}
}

struct gdbt_proc *gdbt_proc_of_thread(struct mt_gdbt *g, const struct mt_gdbt_thread *t)
{
	return gdbt_proc_of(g, t->pid);
}

int gdbt_op_threads(void *ctx, pid_t *tids, size_t max)
{
	struct mt_gdbt *g = ctx;
	struct mt_gdbt_thread *t;
	size_t n = 0, pos = 0;

	if (max && gdbt_find_thread(g, g->pid))
		tids[n++] = g->pid;
	while (n < max && (t = gdbt_next_thread(g, &pos)))
		if (t->tid != g->pid)
			tids[n++] = t->tid;
	return (int)n;
}
