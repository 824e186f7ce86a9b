// SPDX-License-Identifier: GPL-2.0
/*
 * The kernel's hidden return addresses, read with a task iterator (bpf/uretprobe_returns.bpf.c)
 * attached to one process at a time: each read is one link, one iterator file, read to its end.
 * The threads are stopped (ptrace) while it runs, so their chains hold still.
 */

#include <errno.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "tracker/tracker_returns.h"
#include "uretprobe_returns.skel.h"

/* The iterator's record (struct hidden_return of the BPF side). */
struct record {
	uint64_t tid, slot, ra;
};

struct mt_hidden_returns {
	struct uretprobe_returns_bpf *skel;
};

int mt_hidden_returns_open(struct mt_hidden_returns **out)
{
	struct mt_hidden_returns *h = calloc(1, sizeof(*h));

	*out = NULL;
	if (!h)
		return -ENOMEM;
	h->skel = uretprobe_returns_bpf__open_and_load();
	if (!h->skel) {
		int err = errno ? -errno : -EINVAL;

		free(h);
		return err;
	}
	*out = h;
	return 0;
}

/* The iterator's records into v; how many, or a negative errno. */
static int read_records(int fd, struct mt_hidden_return *v, size_t max)
{
	struct record r;
	size_t n = 0;
	ssize_t got;

	while ((got = read(fd, &r, sizeof(r))) == sizeof(r)) {
		if (n < max)
			v[n++] = (struct mt_hidden_return){(pid_t)r.tid, r.slot, r.ra};
	}
	if (got < 0)
		return -errno;
	return (int)n;
}

int mt_hidden_returns_read(struct mt_hidden_returns *h, pid_t pid, struct mt_hidden_return *v,
			   size_t max)
{
	union bpf_iter_link_info info = {.task.pid = (__u32)pid};
	LIBBPF_OPTS(bpf_iter_attach_opts, opts, .link_info = &info, .link_info_len = sizeof(info));
	struct bpf_link *link;
	int fd, n;

	link = bpf_program__attach_iter(h->skel->progs.hidden_returns, &opts);
	if (!link)
		return errno ? -errno : -EINVAL;
	fd = bpf_iter_create(bpf_link__fd(link));
	if (fd < 0) {
		n = -errno;
		bpf_link__destroy(link);
		return n;
	}
	n = read_records(fd, v, max);
	close(fd);
	bpf_link__destroy(link);
	return n;
}

void mt_hidden_returns_close(struct mt_hidden_returns *h)
{
	if (!h)
		return;
	uretprobe_returns_bpf__destroy(h->skel);
	free(h);
}
