// SPDX-License-Identifier: GPL-2.0
/*
 * --trace-maps: the BPF side stops a process at its first mapping of every file since its exec
 * (the first_maps map), so that the stop log has each process's mappings in its own order, files
 * without an allocator included (docs/STOPS.md). What a process mapped is forgotten at its exec
 * (a new address space maps its files anew) and at its end.
 */

#include <errno.h>
#include <stdlib.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "memtrack.skel.h"
#include "tracker/tracker.h"
#include "tracker/tracker_int.h"

void mt_tracker_maps_forget(struct mt_tracker *t, pid_t pid)
{
	int fd = bpf_map__fd(t->skel->maps.first_maps);
	struct mt_arm_key k, *prev = NULL, *mine = NULL, *grown;
	size_t n = 0;

	if (!t->cfg.trace_maps)
		return;
	/* Opt-in: one walk of the map per exec and per end, then the process's keys go. */
	while (bpf_map_get_next_key(fd, prev, &k) == 0) {
		if (k.tgid == (__u32)pid) {
			grown = realloc(mine, (n + 1) * sizeof(*mine));
			if (!grown)
				break;
			mine = grown;
			mine[n++] = k;
		}
		prev = &k;
	}
	for (size_t i = 0; i < n; i++)
		bpf_map_delete_elem(fd, &mine[i]);
	free(mine);
}

int mt_tracker_maps_seen(struct mt_tracker *t, pid_t pid, const struct mt_inode_key *key)
{
	struct mt_arm_key k = {.tgid = pid, .dev = key->dev, .ino = key->ino};
	__u8 one = 1;

	if (!t->cfg.trace_maps)
		return 0;
	if (bpf_map_update_elem(bpf_map__fd(t->skel->maps.first_maps), &k, &one, BPF_ANY))
		return -errno;
	return 0;
}
