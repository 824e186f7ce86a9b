/* SPDX-License-Identifier: GPL-2.0 */
/* Reading /proc/PID/maps: which files a stopped process has mapped, and where. */
#ifndef MT_PROCMAPS_H
#define MT_PROCMAPS_H

#include <stdbool.h>
#include <stdint.h>
#include <sys/stat.h>
#include <sys/types.h>

#include "bpf/memtrack.h"

struct mt_map_entry {
	uint64_t start;
	uint64_t end;
	uint64_t offset;
	bool exec;
	bool read, write, shared; /* the other permissions: r, w, and s (shared) against p */
	struct mt_inode_key
	    key;	  /* dev in the kernel's encoding; no ctime (see mt_procmaps_entry_key) */
	const char *path; /* points into the parsed line; "" for anonymous mappings */
};

/* Parse one line of /proc/PID/maps (newline stripped or not). Returns 0 or -EINVAL. */
int mt_procmaps_parse_line(char *line, struct mt_map_entry *e);

/*
 * Call fn for every executable file mapping of pid, in address order, until fn returns non-zero
 * (which is returned). Returns 0, fn's value, or a negative errno.
 */
int mt_procmaps_for_each_exec(pid_t pid, int (*fn)(const struct mt_map_entry *e, void *arg),
			      void *arg);
/* The same for every mapping of pid, anonymous and special ones ([uprobes], [vdso]) included. */
int mt_procmaps_for_each(pid_t pid, int (*fn)(const struct mt_map_entry *e, void *arg), void *arg);

/* The kernel's dev_t encoding (MAJOR << 20 | MINOR) of a user-space st_dev. */
uint64_t mt_procmaps_kdev(dev_t dev);

/* The path of e's file in /proc/PID/map_files/, which opens even a deleted or overlay file. */
void mt_procmaps_map_files_path(pid_t pid, const struct mt_map_entry *e, char *buf, size_t size);

/* The key of the file st describes, as the BPF side computes it. */
void mt_inode_key_from_stat(const struct stat *st, struct mt_inode_key *key);

/* The full key of e's file (with the ctime that /proc/PID/maps does not show). 0 or -errno. */
int mt_procmaps_entry_key(pid_t pid, const struct mt_map_entry *e, struct mt_inode_key *key);

/* Same file: same device, inode number and ctime. */
bool mt_inode_key_eq(const struct mt_inode_key *a, const struct mt_inode_key *b);

/* Same inode number on the same device: the same file, or one that reused a deleted one's. */
bool mt_inode_same_number(const struct mt_inode_key *a, const struct mt_inode_key *b);

#endif
