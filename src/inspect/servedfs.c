// SPDX-License-Identifier: GPL-2.0
/*
 * Served files: which filesystems, which of a process's mounts, which pages of a mapping are
 * the process's own (src/inspect/servedfs.h).
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>
#include <unistd.h>

#include "base/grow.h"
#include "inspect/procmaps.h"
#include "inspect/servedfs.h"

/* /proc/PID/pagemap's bits of a page (the kernel's Documentation/admin-guide/mm/pagemap.rst). */
#define PM_PRESENT (1ull << 63)
#define PM_SWAPPED (1ull << 62)
#define PM_FILE	   (1ull << 61) /* a page of a file (or shared anonymous memory) */
#define PAGE	   4096u

bool mt_served_fs_type(const char *fstype)
{
	static const char *const served[] = {"fuse", "fuseblk", "nfs",	"nfs4", "cifs",
					     "smb3", "9p",	"ceph", "afs",	"ncpfs"};

	if (!strncmp(fstype, "fuse.", 5) || !strncmp(fstype, "fuseblk.", 8))
		return true;
	for (size_t i = 0; i < sizeof(served) / sizeof(served[0]); i++)
		if (!strcmp(fstype, served[i]))
			return true;
	return false;
}

int mt_served_mountinfo_line(const char *line, uint64_t *kdev, char *fstype, size_t size)
{
	unsigned int major, minor;
	const char *sep = strstr(line, " - ");
	size_t len;

	if (sscanf(line, "%*u %*u %u:%u ", &major, &minor) != 2 || !sep || !size)
		return -EINVAL;
	sep += 3;
	len = strcspn(sep, " \n");
	if (!len || len >= size)
		return -EINVAL;
	memcpy(fstype, sep, len);
	fstype[len] = '\0';
	*kdev = mt_procmaps_kdev(makedev(major, minor));
	return 0;
}

int mt_served_devs(pid_t pid, uint64_t **devs, size_t *n)
{
	char path[64], fstype[64], *line = NULL;
	size_t len = 0, cap = 0;
	uint64_t kdev;
	int err = 0;
	FILE *f;

	*devs = NULL;
	*n = 0;
	snprintf(path, sizeof(path), "/proc/%d/mountinfo", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	while (!err && getline(&line, &len, f) > 0) {
		if (mt_served_mountinfo_line(line, &kdev, fstype, sizeof(fstype)) ||
		    !mt_served_fs_type(fstype))
			continue;
		err = MT_GROW(*devs, cap, *n + 1, 4);
		if (!err)
			(*devs)[(*n)++] = kdev;
	}
	free(line);
	fclose(f);
	return err;
}

bool mt_served_file(const uint64_t *devs, size_t n, const struct mt_map_entry *e)
{
	if (e->path[0] != '/')
		return false;
	for (size_t i = 0; i < n; i++)
		if (devs[i] == e->key.dev)
			return true;
	return false;
}

int mt_served_pagemap(pid_t pid, int *fd)
{
	char path[64];

	if (*fd == -1) {
		snprintf(path, sizeof(path), "/proc/%d/pagemap", pid);
		*fd = open(path, O_RDONLY | O_CLOEXEC);
		*fd = *fd < 0 ? -2 : *fd;
	}
	return *fd;
}

/* A page is the process's own when written (a private copy, in memory) or swapped out. */
size_t mt_served_own_pages(int pagemap, uint64_t addr, size_t pages, bool *own)
{
	uint64_t pm[MT_SERVED_PAGES];
	ssize_t got;
	size_t n;

	if (pagemap < 0 || pages > MT_SERVED_PAGES)
		return 0;
	got = pread(pagemap, pm, pages * sizeof(pm[0]), (off_t)(addr / PAGE * sizeof(pm[0])));
	n = got > 0 ? (size_t)got / sizeof(pm[0]) : 0;
	for (size_t k = 0; k < n; k++)
		own[k] = (pm[k] & PM_SWAPPED) || ((pm[k] & PM_PRESENT) && !(pm[k] & PM_FILE));
	return n;
}
