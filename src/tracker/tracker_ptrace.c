// SPDX-License-Identifier: GPL-2.0
/*
 * The watch for tracers inside the traced tree (docs/STOPS.md, "A tracer inside the tree"): the
 * BPF program on the ptrace system call's entry that stops a tracee asking to trace another one,
 * and the marks that tell memtrack why that tracee stopped and let its call through once.
 */

#include <errno.h>
#include <stdio.h>
#include <string.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.skel.h"
#include "tracker/tracker.h"
#include "tracker/tracker_int.h"

int mt_tracker_watch_tracers(struct mt_tracker *t)
{
	if (t->tracers)
		return 0;
	t->tracers = bpf_program__attach(t->skel->progs.watch_tracer);
	if (t->tracers)
		return 0;
	if (t->cfg.verbose)
		fprintf(stderr,
			"memtrack: cannot watch for tracers in the tree (%s): their attach will be "
			"refused\n",
			strerror(errno));
	return -errno;
}

int mt_tracker_take_ptrace_mark(struct mt_tracker *t, pid_t tid, struct mt_ptrace_mark *m)
{
	int fd = bpf_map__fd(t->skel->maps.ptrace_marks);
	__u32 k = tid;

	if (!t->tracers)
		return 0;
	if (bpf_map_lookup_elem(fd, &k, m))
		return errno == ENOENT ? 0 : -errno;
	/* A pass mark is for the call run again, not a reason for this stop. */
	if (m->pass)
		return 0;
	if (bpf_map_delete_elem(fd, &k) && errno != ENOENT)
		return -errno;
	return 1;
}

int mt_tracker_pass_ptrace(struct mt_tracker *t, pid_t tid, const struct mt_ptrace_mark *m)
{
	struct mt_ptrace_mark pass = *m;
	__u32 k = tid;

	pass.pass = 1;
	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.ptrace_marks), &k, &pass, BPF_ANY))
		return -errno;
	return 0;
}
