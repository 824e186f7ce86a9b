// SPDX-License-Identifier: GPL-2.0
/*
 * The tracker's per-process links (--probe-scope=tree): each process that maps a probed file gets
 * its own links, inherited at birth, dropped at exit and exec by the closer, off the stop path.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <pthread.h>
#include <signal.h>
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

#include "base/clock.h"
#include "writer/artifact.h"
#include "base/printable.h"
#include "inspect/procmaps.h"
#include "inspect/procstatus.h"
#include "tracker/tracker.h"

#include "tracker/tracker_int.h"

/* ---- per-process links (--probe-scope=tree) ------------------------------------------ */

/* Link f's accepted points again, for pid. */
static int link_again(struct mt_tracker *t, const struct mt_tracked_file *f, pid_t pid,
		      struct mt_links *l)
{
	struct mt_classification c = {.points = f->points, .n_points = f->n_points};
	char path[64];
	uint64_t start = mt_clock_now_ns(), took;
	int err;

	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
	if (tracker_multi(t))
		err = mt_uprobe_multi_attach_points(tracker_prog(t, "alloc_enter_multi"),
						    tracker_prog(t, "alloc_exit_multi"), path, &c,
						    f->file_id, pid, l->multi_fd);
	else
		err = tracker_attach_perf(t, (struct mt_tracked_file *)f, path, f->points,
					  f->n_points, pid, MT_COOKIE_FOR(pid), l, NULL, NULL);
	if (err)
		tracker_collect_links(l, NULL, NULL);
	took = mt_clock_now_ns() - start;
	t->link_ns += took;
	t->links_made++;
	if (took > LINK_SLOW_NS) {
		t->links_slow++;
		t->link_slow_ns += took;
	}
	tracker_warm_linked(t);
	return err;
}

/* pid maps f: make sure it has its links to it. Only memtrack's own failures are returned. */
int tracker_ensure_armed(struct mt_tracker *t, pid_t pid, const struct mt_tracked_file *f)
{
	struct mt_links l = {0};
	int err;

	if (t->cfg.system_scope || !f->n_points || f->fd <= 0 ||
	    tracker_find_arm(t, pid, f->file_id))
		return 0;
	err = link_again(t, f, pid, &l);
	if (err == -ESRCH)
		return 0; /* gone: nothing runs the file there any more */
	if (err == -ENOMEM)
		return err;
	if (err)
		tracker_not_probed(t, f->path, NULL, err,
				   "cannot attach its probes in process %d: %s", pid,
				   tracker_attach_error(err));
	err = tracker_store_arm(t, pid, f, &l);
	if (err)
		tracker_collect_links(&l, NULL, NULL);
	return err;
}

int mt_tracker_inherit(struct mt_tracker *t, pid_t parent, pid_t child, bool shares_mm)
{
	size_t n = t->n_arms;
	int err;

	if (t->cfg.system_scope || (shares_mm && tracker_mm_filter(t)))
		return 0;
	for (size_t i = 0; i < n; i++) {
		if (t->arms[i].pid != parent)
			continue;
		err = tracker_ensure_armed(t, child, &t->files[t->arms[i].file_id]);
		if (err)
			return err;
	}
	return 0;
}

/* Hand l's links to the closer (tracker_closer.c): detaching waits for grace periods. */
static void close_later(struct mt_tracker *t, struct mt_links *l)
{
	struct detach *d = calloc(l->n_links + 2, sizeof(*d));
	size_t k = 0;

	if (!d) {
		tracker_collect_links(l, NULL, NULL);
		return;
	}
	tracker_collect_links(l, d, &k);
	tracker_close_links(t, d, k);
	free(d);
}

void mt_tracker_release(struct mt_tracker *t, pid_t pid, bool wait)
{
	size_t kept = 0;

	for (size_t i = 0; i < t->n_arms; i++) {
		struct mt_arm *a = &t->arms[i];
		struct mt_arm_key k;

		if (a->pid != pid) {
			t->arms[kept++] = *a;
			continue;
		}
		k = tracker_arm_key(pid, &t->files[a->file_id]);
		tracker_key_remove(t, MT_KEYS_ARMED, t->skel->maps.armed, &k, NULL);
		if (wait) {
			tracker_collect_links(&a->l, NULL, NULL);
			tracker_collect_links(&a->keep, NULL, NULL);
		} else {
			close_later(t, &a->l);
			if (a->keep.n_links)
				close_later(t, &a->keep);
		}
	}
	t->n_arms = kept;
}

struct exit_seen {
	bool (*fn)(pid_t tid, void *arg);
	void *arg;
};

/*
 * Whether tid of pid is a thread that goes on running. A thread of a group exit taken for a live
 * one would get keepers: 64 threads paid 15 ms of links at their process's exit.
 */
static bool thread_goes_on(pid_t pid, pid_t tid, const struct exit_seen *seen)
{
	return !(seen->fn && seen->fn(tid, seen->arg)) && !mt_proc_task_exiting(pid, tid);
}

/* A thread of pid other than its leader and than tid that goes on running; 0 when none. */
static pid_t live_thread(pid_t pid, pid_t tid, const struct exit_seen *seen)
{
	char path[64];
	struct dirent *e;
	pid_t found = 0, x;
	DIR *d;

	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		x = (pid_t)atoi(e->d_name);
		if (x > 0 && x != pid && x != tid && thread_goes_on(pid, x, seen))
			found = x;
	}
	closedir(d);
	return found;
}

/*
 * The links that take over a's file on tid, a live thread. With uprobe_multi (6.12 on) the
 * leader's links go on counting for the thread group: keepers, one perf link per point to a
 * program that counts nothing, only keep the breakpoints in place. With per-process perf links
 * (6.1) the leader's links stop counting when its mm goes: the new links count from then on
 * (MT_COOKIE_AFTER_LEADER), and not before, so nothing counts twice while both exist.
 */
static int link_successor(struct mt_tracker *t, const struct mt_arm *a, pid_t tid,
			  struct mt_links *l)
{
	struct mt_tracked_file *f = &t->files[a->file_id];
	struct bpf_link *link;
	char path[64];

	snprintf(path, sizeof(path), "/proc/self/fd/%d", f->fd);
	if (!tracker_multi(t))
		return tracker_attach_perf(t, f, path, f->points, f->n_points, tid,
					   MT_COOKIE_FOR(a->pid) | MT_COOKIE_AFTER_LEADER, l, NULL,
					   NULL);
	l->links = calloc(f->n_points + 1, sizeof(*l->links));
	if (!l->links)
		return -ENOMEM;
	for (size_t i = 0; i < f->n_points; i++) {
		link = bpf_program__attach_uprobe_opts(tracker_prog(t, "keep_breakpoints"), tid,
						       path, f->points[i].probe_offset, NULL);
		if (!link)
			return -errno;
		l->links[l->n_links++] = link;
	}
	return 0;
}

/*
 * Thread tid of pid is about to exit (its exit stop, before the kernel drops its mm). The
 * kernel's filters decide whether a breakpoint may stay in an address space from the linked
 * task's mm: once pid's leader (or the thread its keepers name) has exited, its links say no,
 * and the next unregistration of any link on the file removes the breakpoints from a process
 * that still runs (on 6.1 the first hit there does). So the links move to a live thread.
 */
int mt_tracker_thread_exits(struct mt_tracker *t, pid_t pid, pid_t tid,
			    bool (*seen_exiting)(pid_t tid, void *arg), void *arg)
{
	const struct exit_seen seen = {seen_exiting, arg};
	pid_t live = 0;
	int err;

	if (t->cfg.system_scope || tracker_mm_filter(t))
		return 0;
	for (size_t i = 0; i < t->n_arms; i++) {
		struct mt_arm *a = &t->arms[i];
		struct mt_links l = {0};

		/* Perf links that count cannot be moved twice without a window: see PROBES.md. */
		if (a->pid != pid || (tid != pid && (a->keep_tid != tid || !tracker_multi(t))))
			continue;
		if (!live)
			live = live_thread(pid, tid, &seen);
		if (!live)
			return 0; /* the process ends with this thread */
		err = link_successor(t, a, live, &l);
		if (err)
			tracker_collect_links(&l, NULL, NULL);
		if (err == -ENOMEM)
			return err;
		if (err == -ESRCH)
			return 0;
		if (err) {
			tracker_not_probed(
			    t, t->files[a->file_id].path, NULL, err,
			    "cannot keep its probes in process %d after its thread %d "
			    "exited: %s",
			    pid, tid, tracker_attach_error(err));
			continue;
		}
		if (a->keep.n_links)
			close_later(t, &a->keep);
		a->keep = l;
		a->keep_tid = live;
	}
	return 0;
}
