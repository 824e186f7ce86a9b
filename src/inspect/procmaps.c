// SPDX-License-Identifier: GPL-2.0
/* Reading /proc/PID/maps. */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/sysmacros.h>

#include "inspect/procmaps.h"

uint64_t mt_procmaps_kdev(dev_t dev)
{
	return ((uint64_t)major(dev) << 20) | minor(dev);
}

void mt_procmaps_map_files_path(pid_t pid, const struct mt_map_entry *e, char *buf, size_t size)
{
	snprintf(buf, size, "/proc/%d/map_files/%" PRIx64 "-%" PRIx64, pid, e->start, e->end);
}

void mt_inode_key_from_stat(const struct stat *st, struct mt_inode_key *key)
{
	*key = (struct mt_inode_key){
	    .dev = mt_procmaps_kdev(st->st_dev),
	    .ino = st->st_ino,
	    .ctime_sec = st->st_ctim.tv_sec,
	    .ctime_nsec = st->st_ctim.tv_nsec,
	};
}

int mt_procmaps_entry_key(pid_t pid, const struct mt_map_entry *e, struct mt_inode_key *key)
{
	char path[96];
	struct stat st;

	mt_procmaps_map_files_path(pid, e, path, sizeof(path));
	if (stat(path, &st))
		return -errno;
	mt_inode_key_from_stat(&st, key);
	/* A different file now at that address: the mapping changed since maps was read. */
	return mt_inode_same_number(key, &e->key) ? 0 : -ESTALE;
}

bool mt_inode_key_eq(const struct mt_inode_key *a, const struct mt_inode_key *b)
{
	return mt_inode_same_number(a, b) && a->ctime_sec == b->ctime_sec &&
	       a->ctime_nsec == b->ctime_nsec;
}

bool mt_inode_same_number(const struct mt_inode_key *a, const struct mt_inode_key *b)
{
	return a->dev == b->dev && a->ino == b->ino;
}

/* Parse one line of /proc/PID/maps (newline stripped or not). Returns 0 or -EINVAL. */
int mt_procmaps_parse_line(char *line, struct mt_map_entry *e)
{
	unsigned int maj, min;
	char perms[5];
	uint64_t ino;
	int consumed = 0;
	char *nl;

	if (sscanf(line, "%" SCNx64 "-%" SCNx64 " %4s %" SCNx64 " %x:%x %" SCNu64 " %n", &e->start,
		   &e->end, perms, &e->offset, &maj, &min, &ino, &consumed) != 7 ||
	    consumed == 0 || strlen(perms) != 4)
		return -EINVAL;
	nl = strchr(line, '\n');
	if (nl)
		*nl = '\0';
	e->exec = perms[2] == 'x';
	e->read = perms[0] == 'r';
	e->write = perms[1] == 'w';
	e->shared = perms[3] == 's';
	e->key = (struct mt_inode_key){.dev = ((uint64_t)maj << 20) | min, .ino = ino};
	e->path = line + consumed;
	return 0;
}

int mt_procmaps_for_each(pid_t pid, int (*fn)(const struct mt_map_entry *e, void *arg), void *arg)
{
	char path[64], *line = NULL, buf[16384];
	struct mt_map_entry e;
	size_t cap = 0;
	int ret = 0;
	FILE *f;

	snprintf(path, sizeof(path), "/proc/%d/maps", pid);
	f = fopen(path, "re");
	if (!f)
		return -errno;
	/*
	 * stdio would read /proc in its block size, 1 KiB: a read system call, and the mm's lock
	 * taken again, for every dozen lines (and an fstat to learn the size). A whole small maps
	 * comes in one read.
	 */
	setvbuf(f, buf, _IOFBF, sizeof(buf));
	while (getline(&line, &cap, f) > 0) {
		if (mt_procmaps_parse_line(line, &e) < 0) {
			ret = -EINVAL;
			break;
		}
		ret = fn(&e, arg);
		if (ret)
			break;
	}
	free(line);
	fclose(f);
	return ret;
}

struct exec_filter {
	int (*fn)(const struct mt_map_entry *e, void *arg);
	void *arg;
};

static int only_exec_files(const struct mt_map_entry *e, void *arg)
{
	const struct exec_filter *f = arg;

	/* Anonymous and special mappings ([vdso], [stack]) have no file to classify. */
	if (!e->exec || e->key.ino == 0 || e->path[0] != '/')
		return 0;
	return f->fn(e, f->arg);
}

int mt_procmaps_for_each_exec(pid_t pid, int (*fn)(const struct mt_map_entry *e, void *arg),
			      void *arg)
{
	struct exec_filter f = {fn, arg};

	return mt_procmaps_for_each(pid, only_exec_files, &f);
}
