// SPDX-License-Identifier: GPL-2.0
/*
 * The stop point (--stop-at, docs/STOPS.md): where it is reached (at a process's exec, by the
 * program it runs or the files execve mapped, or at a mapping, by the file; the first match
 * only). What the loader will map, linked before the debugger has it, is supervisor_ahead.c's.
 */

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inspect/procmaps.h"
#include "supervisor/supervisor_int.h"

/*
 * Not reached yet (first match only: handed off, or served to gdb), and aimed at t's process. A
 * later match runs on under memtrack: gdb has one process, and one that waited for a debugger
 * no one comes for would stay stopped until memtrack is killed.
 */
static bool stop_point_open(const struct sup *s, const struct tracee *t, bool root_exec)
{
	return !s->ho.pid && !sup_gdb_reached(s) &&
	       mt_stop_point_aims_at(&s->cfg->stop, s->procs[t->proc].pos, root_exec);
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
