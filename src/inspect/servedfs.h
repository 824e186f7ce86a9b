/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Files that a server serves: FUSE and network filesystems, whose page faults may wait for a
 * process or a server that never answers (a FUSE server stopped by memtrack, or the traced
 * process itself). What a root tool that reads another process's memory must not fault in: which
 * mounts of a process are served, and which pages of a mapping are the process's own (written or
 * swapped: never read from the file).
 */
#ifndef MT_SERVEDFS_H
#define MT_SERVEDFS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* Pages mt_served_own_pages() answers for at most, at a time. */
#define MT_SERVED_PAGES 512u

/* Whether a filesystem of type fstype (as /proc/PID/mountinfo names it) is served. */
bool mt_served_fs_type(const char *fstype);

/* A line of /proc/PID/mountinfo: its device (the kernel's encoding) and filesystem type. */
int mt_served_mountinfo_line(const char *line, uint64_t *kdev, char *fstype, size_t size);

/*
 * The devices (the kernel's encoding) of pid's served mounts, from /proc/PID/mountinfo (the
 * kernel answers it, no filesystem does; a statfs of the file would ask the server): *devs
 * (malloc'd) and *n. Returns 0 or -errno.
 */
int mt_served_devs(pid_t pid, uint64_t **devs, size_t *n);

struct mt_map_entry;

/* Whether e maps a file of one of the served devices devs (n of them, mt_served_devs()). */
bool mt_served_file(const uint64_t *devs, size_t n, const struct mt_map_entry *e);

/* /proc/PID/pagemap, opened at the first need (*fd -1: not yet); negative when it cannot be. */
int mt_served_pagemap(pid_t pid, int *fd);

/*
 * Whether each of the pages pages (at most MT_SERVED_PAGES) from addr is the process's own,
 * into own[]: read from pagemap (mt_served_pagemap(); negative: none is). Returns how many of
 * them pagemap answered for; the rest are not own.
 */
size_t mt_served_own_pages(int pagemap, uint64_t addr, size_t pages, bool *own);

#endif
