// SPDX-License-Identifier: GPL-2.0
/*
 * Unwind tables into the BPF unwinder's maps (src/unwind/unwind_load.h). One inner array per
 * distinct table: two files of one build id (a copy, a hard link elsewhere) share a slot.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/grow.h"
#include "unwind/unwind_cache.h"
#include "unwind/unwind_load.h"

struct loaded {
	const struct mt_unwind_table *table; /* owned by the cache */
	uint32_t slot;
};

struct mt_unwind_loader {
	int tables_fd, files_fd;
	struct mt_unwind_cache *cache;
	struct loaded *v;
	size_t n, cap;
	size_t rows;
};

int mt_unwind_loader_new(struct mt_unwind_loader **out, int tables_fd, int files_fd)
{
	struct mt_unwind_loader *l = calloc(1, sizeof(*l));

	if (!l)
		return -ENOMEM;
	l->cache = mt_unwind_cache_new();
	if (!l->cache) {
		free(l);
		return -ENOMEM;
	}
	l->tables_fd = tables_fd;
	l->files_fd = files_fd;
	*out = l;
	return 0;
}

void mt_unwind_loader_free(struct mt_unwind_loader *l)
{
	if (!l)
		return;
	mt_unwind_cache_free(l->cache);
	free(l->v);
	free(l);
}

/* An inner array holding exactly t's rows, filled with one batch update. */
static int rows_map(const struct mt_unwind_table *t)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP);
	__u32 count = t->n_rows, *keys;
	int fd, err = 0;

	keys = malloc(t->n_rows * sizeof(*keys));
	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < t->n_rows; i++)
		keys[i] = i;
	fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows", sizeof(*keys), sizeof(*t->rows),
			    t->n_rows, &opts);
	if (fd < 0)
		err = -errno;
	else if (bpf_map_update_batch(fd, keys, t->rows, &count, NULL))
		err = -errno;
	free(keys);
	if (err && fd >= 0)
		close(fd);
	return err ? err : fd;
}

/* The slot of t in unwind_tables, loading it on first use. */
static int slot_of(struct mt_unwind_loader *l, const struct mt_unwind_table *t, uint32_t *slot)
{
	int fd, err = 0;

	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].table == t) {
			*slot = l->v[i].slot;
			return 0;
		}
	}
	if (l->n == MT_UNWIND_MAX_FILES)
		return -ENOSPC;
	if (MT_GROW(l->v, l->cap, l->n + 1, 64))
		return -ENOMEM;
	fd = rows_map(t);
	if (fd < 0)
		return fd;
	*slot = l->n;
	/* The outer map holds the inner one from now on: its fd is not needed. */
	if (bpf_map_update_elem(l->tables_fd, slot, &fd, BPF_ANY))
		err = -errno;
	close(fd);
	if (err)
		return err;
	l->v[l->n].table = t;
	l->v[l->n].slot = *slot;
	l->n++;
	l->rows += t->n_rows;
	return 0;
}

int mt_unwind_load(struct mt_unwind_loader *l, uint64_t dev, uint64_t ino, int fd, uint16_t file_id,
		   struct mt_unwind_status *st)
{
	struct mt_unwind_file_key key = {.dev = dev, .ino = ino};
	struct mt_unwind_file file = {.file_id = file_id};
	const struct mt_unwind_table *t = NULL;
	char path[64];
	int err;

	memset(st, 0, sizeof(*st));
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = mt_unwind_cache_get(l->cache, path, &t);
	if (!err && t->n_rows)
		err = slot_of(l, t, &file.slot);
	else if (!err)
		err = -ENODATA;
	if (err == -ENOMEM)
		return err;
	if (!err) {
		file.n_rows = t->n_rows;
		file.vaddr_minus_offset = (int64_t)(t->exec_vaddr - t->exec_offset);
		st->rows = t->n_rows;
	}
	st->err = err;
	if (bpf_map_update_elem(l->files_fd, &key, &file, BPF_ANY))
		return -errno;
	return 0;
}

const char *mt_unwind_status_reason(int err)
{
	switch (err) {
	case 0:
		return "unwind table";
	case -ENODATA:
		return "no call frame information (.eh_frame, .debug_frame)";
	case -ENOEXEC:
		return "not an x86-64 ELF file";
	case -E2BIG:
		return "addresses too large for a table row";
	case -ENOSPC:
		return "every table slot is taken";
	default:
		return strerror(-err);
	}
}

size_t mt_unwind_loaded_tables(const struct mt_unwind_loader *l)
{
	return l->n;
}

size_t mt_unwind_loaded_rows(const struct mt_unwind_loader *l)
{
	return l->rows;
}
