// SPDX-License-Identifier: GPL-2.0
/*
 * The tracker's attach: a classified file's probe points linked, once for every process or in the
 * first process that maps it, the points the kernel accepted kept, the files not probed recorded.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <sys/syscall.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mount.h>
#include <sys/stat.h>
#include <sys/utsname.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.skel.h"

#include "writer/artifact.h"
#include "base/printable.h"
#include "inspect/procmaps.h"
#include "tracker/tracker.h"

#include "tracker/tracker_int.h"

static int attach_point(struct mt_tracker *t, struct mt_links *l, uint16_t file_id,
			const char *path, const struct mt_probe_point *p, bool retprobe, pid_t pid,
			uint64_t tag)
{
	LIBBPF_OPTS(bpf_uprobe_opts, opts, .retprobe = retprobe,
		    .bpf_cookie = MT_COOKIE(file_id, mt_point_cookie(p)) | tag);
	struct bpf_program *prog = tracker_prog(t, retprobe ? "alloc_exit" : "alloc_enter");
	struct bpf_link *link;

	if (!prog)
		return -ENOENT;
	link = bpf_program__attach_uprobe_opts(prog, pid, path, p->probe_offset, &opts);
	if (!link)
		return -errno;
	l->links[l->n_links++] = link;
	return 0;
}

/* Why the kernel would not probe a function, in words. */
const char *tracker_attach_error(int err)
{
	/* 524 is the kernel's internal ENOTSUPP: the instruction there cannot be probed. */
	if (err == -524)
		return "the kernel refuses a probe on its instruction (error 524)";
	return strerror(-err);
}

/*
 * One perf link per probe, entry and return probe of a point both or neither, on pid (-1: every
 * process), with tag in their cookies (the process they count for, MT_COOKIE_FOR). With ok (the
 * first attach of a file), a refused point is recorded as not probed and skipped, and ok collects
 * the accepted ones; without (a file linked again for another process), any refusal fails all.
 */
int tracker_attach_perf(struct mt_tracker *t, struct mt_tracked_file *f, const char *path,
			const struct mt_probe_point *pts, size_t n, pid_t pid, uint64_t tag,
			struct mt_links *l, struct mt_probe_point *ok, size_t *n_ok)
{
	int err = tracker_need(t, MT_NEED_PERF);

	if (err)
		return err;
	l->links = calloc(2 * n + 1, sizeof(*l->links));
	if (!l->links)
		return -ENOMEM;
	for (size_t i = 0; i < n; i++) {
		const struct mt_probe_point *p = &pts[i];
		size_t before = l->n_links;

		err = attach_point(t, l, f->file_id, path, p, false, pid, tag);
		if (!err && p->ret)
			err = attach_point(t, l, f->file_id, path, p, true, pid, tag);
		if (err) {
			while (l->n_links > before)
				bpf_link__destroy(l->links[--l->n_links]);
			if (err == -ENOMEM || !ok)
				return err;
			tracker_not_probed(t, f->path, p->symbol, err, "%s",
					   tracker_attach_error(err));
			continue;
		}
		if (ok)
			ok[(*n_ok)++] = *p;
	}
	return 0;
}

static int mt_uprobe_multi_link(struct bpf_program *prog, const char *path, const uint64_t *offsets,
				const uint64_t *cookies, size_t n, bool ret, pid_t pid)
{
	return tracker_uprobe_multi_link(bpf_program__fd(prog), path, offsets, cookies, n, ret,
					 pid);
}

int mt_uprobe_multi_attach_points(struct bpf_program *enter, struct bpf_program *exit,
				  const char *path, const struct mt_classification *c,
				  uint16_t file_id, pid_t pid, int fds[2])
{
	uint64_t *offs = calloc(2 * c->n_points, sizeof(*offs));
	uint64_t *cookies = calloc(2 * c->n_points, sizeof(*cookies));
	size_t n_ret = 0, base = c->n_points;
	int fd, err = 0;

	fds[0] = fds[1] = 0;
	if (!offs || !cookies) {
		err = -ENOMEM;
		goto out;
	}
	/* Entries first, return probes after them, in one pair of arrays. */
	for (size_t i = 0; i < c->n_points; i++) {
		const struct mt_probe_point *p = &c->points[i];

		offs[i] = p->probe_offset;
		cookies[i] = MT_COOKIE(file_id, mt_point_cookie(p));
		if (p->ret) {
			offs[base + n_ret] = p->probe_offset;
			cookies[base + n_ret++] = cookies[i];
		}
	}
	fd = mt_uprobe_multi_link(enter, path, offs, cookies, c->n_points, false, pid);
	if (fd < 0) {
		err = fd;
		goto out;
	}
	fds[0] = fd;
	if (n_ret) {
		fd =
		    mt_uprobe_multi_link(exit, path, offs + base, cookies + base, n_ret, true, pid);
		if (fd < 0) {
			close(fds[0]);
			fds[0] = 0;
			err = fd;
			goto out;
		}
		fds[1] = fd;
	}
out:
	free(offs);
	free(cookies);
	return err;
}

/* Can the kernel link this one point (and its return probe) in pid? 0, or why not. */
static int try_point(struct mt_tracker *t, const char *path, const struct mt_probe_point *p,
		     uint16_t file_id, pid_t pid)
{
	uint64_t cookie = MT_COOKIE(file_id, p->kind);
	int fd = mt_uprobe_multi_link(tracker_prog(t, "alloc_enter_multi"), path, &p->probe_offset,
				      &cookie, 1, false, pid);

	if (fd < 0)
		return fd;
	close(fd);
	if (!p->ret)
		return 0;
	fd = mt_uprobe_multi_link(tracker_prog(t, "alloc_exit_multi"), path, &p->probe_offset,
				  &cookie, 1, true, pid);
	if (fd < 0)
		return fd;
	close(fd);
	return 0;
}

/*
 * The kernel refused the file's link, which is all or nothing: try each point alone, record the
 * refused ones as not probed, and link the rest (they go to ok).
 */
static int attach_multi_accepted(struct mt_tracker *t, struct mt_tracked_file *f, const char *path,
				 const struct mt_classification *c, pid_t pid, struct mt_links *l,
				 struct mt_probe_point *ok_points, size_t *n_ok)
{
	struct mt_classification ok = *c;
	int err;

	ok.points = ok_points;
	ok.n_points = 0;
	for (size_t i = 0; i < c->n_points; i++) {
		err = try_point(t, path, &c->points[i], f->file_id, pid);
		if (err == -ENOMEM || err == -ESRCH)
			return err;
		if (err)
			tracker_not_probed(t, f->path, c->points[i].symbol, err, "%s",
					   tracker_attach_error(err));
		else
			ok.points[ok.n_points++] = c->points[i];
	}
	*n_ok = ok.n_points;
	if (!ok.n_points)
		return 0;
	return mt_uprobe_multi_attach_points(tracker_prog(t, "alloc_enter_multi"),
					     tracker_prog(t, "alloc_exit_multi"), path, &ok,
					     f->file_id, pid, l->multi_fd);
}

/* Link the points in c for pid (-1: every process); the accepted ones go to ok. */
static int link_first(struct mt_tracker *t, struct mt_tracked_file *f, const char *path,
		      const struct mt_classification *c, pid_t pid, struct mt_links *l,
		      struct mt_probe_point *ok, size_t *n_ok)
{
	int err;

	if (tracker_multi(t)) {
		err = mt_uprobe_multi_attach_points(tracker_prog(t, "alloc_enter_multi"),
						    tracker_prog(t, "alloc_exit_multi"), path, c,
						    f->file_id, pid, l->multi_fd);
		if (!err) {
			memcpy(ok, c->points, c->n_points * sizeof(*ok));
			*n_ok = c->n_points;
			return 0;
		}
		if (err != -EINVAL && err != -EOPNOTSUPP && err != -ESRCH)
			err = attach_multi_accepted(t, f, path, c, pid, l, ok, n_ok);
		if (err != -EINVAL && err != -EOPNOTSUPP)
			return err;
		/* A kernel that loaded the programs but cannot link them: probe one by one. */
		if (t->cfg.verbose)
			fprintf(stderr,
				"memtrack: uprobe_multi links refused (%s): one link per probe\n",
				strerror(-err));
		t->multi = false;
		t->mm_filter = false; /* the programs check the cookie's process */
	}
	if (t->cfg.system_scope)
		pid = -1;
	return tracker_attach_perf(t, f, path, c->points, c->n_points, pid,
				   pid > 0 ? MT_COOKIE_FOR(pid) : 0, l, ok, n_ok);
}

/* Whether c probes the entry of a function that may throw (a thread may end inside it). */
static bool may_throw(const struct mt_classification *c)
{
	for (size_t i = 0; i < c->n_points; i++)
		if (c->points[i].role == MT_ROLE_ENTRY_THROWS)
			return true;
	return false;
}

/*
 * The first attach of a classified file, in pid that maps it (--probe-scope=tree) or in every
 * process; the accepted points are kept for the other processes that will map it.
 */
int tracker_attach_file(struct mt_tracker *t, struct mt_tracked_file *f, int fd,
			const struct mt_classification *c, pid_t pid)
{
	char path[64], shown[MT_PRINTABLE_MAX];
	struct mt_links l = {0};
	int err;

	/* The kernel resolves the path to the inode at attach time: our fd names the very file. */
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	if (t->cfg.verbose)
		for (size_t i = 0; i < c->n_points; i++)
			fprintf(stderr, "memtrack: %s: %s at +%#" PRIx64 " (%s)\n",
				mt_printable(shown, sizeof(shown), f->path), c->points[i].symbol,
				c->points[i].probe_offset - c->points[i].func_offset,
				c->points[i].reason);
	f->points = calloc(c->n_points, sizeof(*f->points));
	if (!f->points)
		return -ENOMEM;
	if (may_throw(c))
		tracker_watch_exits_in_calls(t);
	if (t->cfg.system_scope)
		pid = -1;
	err = link_first(t, f, path, c, pid, &l, f->points, &f->n_points);
	tracker_warm_linked(t);
	if (err == -ESRCH) {
		/* The process is gone: nothing was tried, the next process tries them all. */
		memcpy(f->points, c->points, c->n_points * sizeof(*f->points));
		f->n_points = c->n_points;
		err = 0;
	}
	f->probes = f->n_points;
	if (!err && pid > 0 && f->n_points) {
		f->fd = fcntl(fd, F_DUPFD_CLOEXEC, 3);
		err = f->fd < 0 ? -errno : tracker_store_arm(t, pid, f, &l);
	} else if (!err) {
		f->system = l;
	}
	/* Only memtrack's own failures end the run; anything else leaves the file unprobed. */
	if (err && err != -ENOMEM) {
		tracker_not_probed(t, f->path, NULL, err, "cannot attach its probes: %s",
				   tracker_attach_error(err));
		f->probes = f->n_points = 0;
		err = 0;
	}
	if (err || !f->probes)
		tracker_collect_links(&l, NULL, NULL);
	return err;
}
