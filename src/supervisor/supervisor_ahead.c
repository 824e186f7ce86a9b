// SPDX-License-Identifier: GPL-2.0
/*
 * What the dynamic loader will map for a process, linked before it maps it (loaddeps.h finds it):
 * before a debugger's handoff, so that not even the first call into those files is missed, and at
 * each exec of exec-harness's runs, so that no watcher stop comes at their first mapping.
 */

#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "base/strv.h"
#include "classify/loaddeps.h"
#include "inspect/procmaps.h"
#include "supervisor/supervisor_int.h"

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

/*
 * Call fn with each file ld.so will map for pid, which runs exe and has mapped the n known: the
 * walk remembered by cfg->loader_cache when there is one.
 */
static int for_each_loader_dep(struct sup *s, pid_t pid, const char *exe, char *const *known,
			       size_t n, int (*fn)(const char *path, void *arg), void *arg)
{
	struct mt_loader_env env = {
	    .program = exe,
	    .preload_file = "/etc/ld.so.preload",
	    .cache = "/etc/ld.so.cache",
	};
	size_t len = 0;
	char *envbuf = read_environ(pid, &len);
	int err;

	env.library_path = env_value(envbuf, len, "LD_LIBRARY_PATH");
	env.preload = env_value(envbuf, len, "LD_PRELOAD");
	if (s->cfg->loader_cache)
		err = mt_loader_deps_cached(s->cfg->loader_cache, &env, (const char *const *)known,
					    n, fn, arg);
	else
		err = mt_loader_deps(&env, (const char *const *)known, n, fn, arg);
	free(envbuf);
	return err;
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
	return for_each_loader_dep(s, h->pid, s->procs[h->proc].exe, h->known, h->n_known,
				   link_ahead, s);
}

int sup_exec_mapped_add(const struct mt_map_entry *e, void *arg)
{
	struct sup_exec_mapped *m = arg;

	if (!*e->path || mt_strv_has(m->paths, m->n, e->path))
		return 0;
	return mt_strv_add(&m->paths, &m->n, e->path) ? -ENOMEM : 0;
}

void sup_exec_mapped_free(struct sup_exec_mapped *m)
{
	mt_strv_free(m->paths, m->n);
	*m = (struct sup_exec_mapped){0};
}

struct exec_link {
	struct sup *s;
	pid_t pid;
};

static int link_for_exec(const char *path, void *arg)
{
	struct exec_link *x = arg;

	return mt_tracker_link_path(x->s->tracker, x->pid, path);
}

/*
 * With cfg->loader_cache (exec-harness's runs, whose benchmarks run the same programs over and
 * over): at p's exec, link what ld.so will map for it, so that the watcher need not stop it at
 * each file's first mapping (a link made before the mapping puts its breakpoints in at the mmap).
 * A file it maps otherwise (found elsewhere, or by dlopen) stops it as ever. The walk is made
 * once per program; a stop costs more than the rest (docs/PERFORMANCE.md, section 4). What
 * execve mapped (the program and its interpreter) is the tracker's scan's (mapped): the maps are
 * read once at the stop, not once for each.
 */
int sup_link_at_exec(struct sup *s, struct proc *p, const struct sup_exec_mapped *mapped)
{
	struct exec_link x = {.s = s, .pid = p->pid};
	int err = 0;

	if (p->exe)
		err = for_each_loader_dep(s, p->pid, p->exe, mapped->paths, mapped->n,
					  link_for_exec, &x);
	return err == -ENOENT || err == -ESRCH ? 0 : err;
}
