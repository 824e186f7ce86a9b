// SPDX-License-Identifier: GPL-2.0
/*
 * --trace-maps: a "mapped" record in the stop log for each process's first mapping of every file
 * after its exec, allocator or not, in the order of the process's own threads (docs/STOPS.md).
 * The BPF side stops the process at each (tracker_firstmaps.c); the files execve mapped itself
 * (the program, its interpreter) are named by the exec record and not again, whatever the
 * watcher back end (fentry sees those mappings, the tracepoint does not).
 */

#include <errno.h>
#include <stdlib.h>

#include "inspect/procmaps.h"
#include "supervisor/supervisor_int.h"

struct exec_files {
	struct sup *s;
	struct proc *p;
	int err;
};

static int remember_exec_file(const struct mt_map_entry *e, void *arg)
{
	struct exec_files *x = arg;
	struct mt_inode_key *grown;

	for (size_t i = 0; i < x->p->n_exec_files; i++)
		if (mt_inode_same_number(&x->p->exec_files[i], &e->key))
			return 0;
	grown = realloc(x->p->exec_files, (x->p->n_exec_files + 1) * sizeof(*grown));
	if (!grown) {
		x->err = -ENOMEM;
		return 1;
	}
	x->p->exec_files = grown;
	grown[x->p->n_exec_files++] = e->key;
	x->err = mt_tracker_maps_seen(x->s->tracker, x->p->pid, &e->key);
	return x->err ? 1 : 0;
}

int sup_maps_exec(struct sup *s, struct proc *p)
{
	struct exec_files x = {s, p, 0};

	if (!s->cfg->trace_maps || !s->tracker)
		return 0;
	mt_tracker_maps_forget(s->tracker, p->pid);
	p->n_exec_files = 0;
	mt_procmaps_for_each_exec(p->pid, remember_exec_file, &x);
	return x.err;
}

void sup_maps_log(struct sup *s, struct tracee *t, const struct mt_inode_key *key,
		  const struct mt_tracked_file *f)
{
	const struct proc *p = &s->procs[t->proc];
	struct json_object *d;

	if (!s->cfg->trace_maps || !f)
		return;
	for (size_t i = 0; i < p->n_exec_files; i++)
		if (mt_inode_same_number(&p->exec_files[i], key))
			return;
	d = sup_detail_new();
	sup_detail_str(d, "path", f->path);
	sup_log_stop(s, t, "mapped", d);
}
