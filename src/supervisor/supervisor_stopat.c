// SPDX-License-Identifier: GPL-2.0
/*
 * The stop point (--stop-at, docs/STOPS.md): where it is reached (at a process's exec, by the
 * program it runs or the files execve mapped, or at a mapping, by the file; the first match
 * only), and what the dynamic loader will map for the process, linked before the debugger has it.
 */

#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "classify/loaddeps.h"
#include "tracker/procmaps.h"
#include "supervisor/supervisor_int.h"

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
	return sup_handoff_know(&s->ho, path);
}

/*
 * Before the process goes to the debugger, link what ld.so will map for it (at an exec: libc and
 * the rest of the program's needs; at a dlopen's mapping: the plugin's), so that not even the
 * first call into them is missed. What the loader finds elsewhere is reported as mapped late.
 */
int sup_link_what_loader_maps(struct sup *s, struct handoff *h)
{
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
