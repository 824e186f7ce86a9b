/* SPDX-License-Identifier: GPL-2.0 */
/* Reading /proc/PID/maps: which files a stopped process has mapped, and where. */
#ifndef MT_PROCMAPS_H
#define MT_PROCMAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/types.h>

#include "../bpf/memtrack.h"

struct mt_map_entry {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	bool exec;
	struct mt_inode_key key; /* dev in the kernel's encoding, as the BPF side reads it */
	const char *path;	 /* points into the parsed line; "" for anonymous mappings */
};

/* Parse one line of /proc/PID/maps (newline stripped or not). Returns 0 or -EINVAL. */
int mt_maps_parse_line(char *line, struct mt_map_entry *e);

/*
 * Call fn for every executable file mapping of pid, in address order, until fn returns non-zero
 * (which is returned). Returns 0, fn's value, or a negative errno.
 */
int mt_maps_for_each_exec(pid_t pid, int (*fn)(const struct mt_map_entry *e, void *arg), void *arg);

/* The kernel's dev_t encoding (MAJOR << 20 | MINOR) of a user-space st_dev. */
uint64_t mt_kdev(dev_t dev);

#endif
