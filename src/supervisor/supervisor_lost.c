// SPDX-License-Identifier: GPL-2.0
/*
 * A file a handed-off process mapped and took with it (it ended before memtrack could open the
 * mapping through /proc/PID/map_files): found again by its inode, so that a file without an
 * allocator (a plugin, a library of plain code) is never named as missing calls. It is looked for
 * in the directories of the files memtrack knows (the process's program and libraries, every
 * file the tree mapped): a dlopen'd file sits next to its program or its libraries, as a rule.
 * The directory entries carry inode numbers, so only a matching entry is looked at.
 */

#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "classify/classify.h"
#include "inspect/procmaps.h"
#include "supervisor/supervisor_int.h"

/* The entry of dir that is the file key; 1 with its path in path, else 0. */
static int find_in_dir(const char *dir, const struct mt_inode_key *key, char *path, size_t len)
{
	struct mt_inode_key k;
	struct dirent *e;
	struct stat st;
	int found = 0;
	DIR *d = opendir(dir);

	if (!d)
		return 0;
	while (!found && (e = readdir(d))) {
		if (e->d_ino != key->ino || fstatat(dirfd(d), e->d_name, &st, 0))
			continue;
		mt_inode_key_from_stat(&st, &k);
		if (S_ISREG(st.st_mode) && mt_inode_same_number(&k, key)) {
			snprintf(path, len, "%s/%s", dir, e->d_name);
			found = 1;
		}
	}
	closedir(d);
	return found;
}

/* The directory of file (a path), in dir; false when it has none. */
static bool dir_of(const char *file, char *dir, size_t len)
{
	const char *slash = strrchr(file, '/');

	if (!slash || slash == file || (size_t)(slash - file) >= len)
		return false;
	memcpy(dir, file, slash - file);
	dir[slash - file] = '\0';
	return true;
}

/* Whether dir was looked in already: the directory of one of the first n files. */
static bool seen_dir(const char *const *files, size_t n, const char *dir)
{
	size_t k = strlen(dir);

	for (size_t i = 0; i < n; i++)
		if (strncmp(files[i], dir, k) == 0 && files[i][k] == '/' &&
		    !strchr(files[i] + k + 1, '/'))
			return true;
	return false;
}

/* The path of the file key in a directory of one of files; 1 when found. */
static int find_near(const char *const *files, size_t n, const struct mt_inode_key *key, char *path,
		     size_t len)
{
	char dir[4096];

	for (size_t i = 0; i < n; i++)
		if (dir_of(files[i], dir, sizeof(dir)) && !seen_dir(files, i, dir) &&
		    find_in_dir(dir, key, path, len))
			return 1;
	return 0;
}

/* The paths of the files the tracker handled (to free; *n of them), or NULL. */
static const char **tracked_paths(struct sup *s, size_t *n)
{
	const char **v;

	*n = s->tracker ? mt_tracker_file_count(s->tracker) : 0;
	v = calloc(*n + 1, sizeof(*v));
	for (size_t i = 0; v && i < *n; i++)
		v[i] = mt_tracker_file(s->tracker, i)->path;
	return v;
}

int sup_find_lost(struct sup *s, const struct handoff *h, const struct mt_inode_key *key,
		  char *path, size_t len, bool *allocator)
{
	struct mt_classification c = {0};
	size_t n = 0;
	const char **tracked = tracked_paths(s, &n);
	int found;

	if (!tracked)
		return -ENOMEM;
	found = find_near((const char *const *)h->known, h->n_known, key, path, len) ||
		find_near(tracked, n, key, path, len);
	free(tracked);
	if (!found)
		return 0;
	/* Unreadable or not ELF: nothing memtrack could have probed there. */
	*allocator = mt_classify_path(path, s->cfg->placement, &c) == 0 &&
		     c.family != MT_FAM_NONE && c.n_points;
	mt_classification_free(&c);
	return 1;
}
