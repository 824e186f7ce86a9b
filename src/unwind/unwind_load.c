// SPDX-License-Identifier: GPL-2.0
/*
 * Unwind tables into the BPF unwinder's maps (src/unwind/unwind_load.h). One inner array per
 * distinct table: two files of one build id (a copy, a hard link elsewhere) share a slot.
 *
 * Putting an inner map into unwind_tables waits for an RCU grace period (the kernel makes every
 * update of a map of maps wait until no program can still see the old value): 7 ms a file on
 * a loaded 2-CPU machine, on the mapping stop's path. So the loader starts with a pool of empty
 * inner arrays, put into unwind_tables by a thread of their own in one batch (one grace period,
 * while memtrack loads its programs and spawns the command); a table that fits a pool array is
 * written into it, a plain array update that waits for nothing. A table too big for every array
 * left gets an array of exactly its size, as before.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/grow.h"
#include "unwind/unwind_cache.h"
#include "unwind/unwind_load.h"
#include "unwind/unwind_wrapper.h"

/*
 * The pool: rows of each array, small ones first. ld.so and most programs and libraries fit the
 * small ones (ld.so 2,397 rows, /bin/true 599), libc (28,274), libstdc++ (34,371) and python3.11
 * (64,578) the large ones; 3 MiB of kernel memory in all.
 */
static const uint32_t pool_rows[] = {
    8192, 8192, 8192, 8192, 8192, 8192, 8192,  8192,  8192,  8192,
    8192, 8192, 8192, 8192, 8192, 8192, 65536, 65536, 65536, 65536,
};
#define POOL_SIZE (sizeof(pool_rows) / sizeof(pool_rows[0]))

struct loaded {
	const struct mt_unwind_table *table; /* owned by the cache */
	uint32_t slot;
};

/* A program's table cut down to its operator new (unwind_wrapper.h), made once per table. */
struct cut {
	const struct mt_unwind_table *from; /* owned by the cache */
	struct mt_unwind_table table;
};

struct mt_unwind_loader {
	int tables_fd, files_fd;
	struct mt_unwind_cache *cache;
	struct loaded *v;
	size_t n, cap;
	size_t rows;
	/* The pool: slots 0 .. POOL_SIZE - 1 of unwind_tables once the thread is done. */
	pthread_t pool_thread;
	bool pool_started, pool_joined;
	int pool_err;		   /* the thread's: the pool is not used */
	int pool_fd[POOL_SIZE];	   /* each array's fd (-1: none), kept to write it later */
	bool pool_used[POOL_SIZE]; /* its slot holds a table */
	uint32_t next_slot;	   /* the next slot after the pool's */
	size_t pool_hits;
	bool no_tables; /* tables only for operator new's files (the caller only: no unwinding) */
	struct cut **cuts; /* each its own allocation: l->v holds their tables' addresses */
	size_t n_cuts, cap_cuts;
};

/* An array user space writes through a mapping (bpf/unwind.bpf.h: the template's flags). */
static int array_create(uint32_t rows)
{
	LIBBPF_OPTS(bpf_map_create_opts, opts, .map_flags = BPF_F_INNER_MAP | BPF_F_MMAPABLE);
	int fd = bpf_map_create(BPF_MAP_TYPE_ARRAY, "unwind_rows", sizeof(uint32_t),
				sizeof(struct mt_unwind_row), rows, &opts);

	return fd < 0 ? -errno : fd;
}

/* The pool's thread: its arrays made and put into unwind_tables with one grace period. */
static void *pool_fill(void *arg)
{
	struct mt_unwind_loader *l = arg;
	uint32_t keys[POOL_SIZE], count = POOL_SIZE;
	int fds[POOL_SIZE];

	for (uint32_t i = 0; i < POOL_SIZE; i++) {
		fds[i] = array_create(pool_rows[i]);
		if (fds[i] < 0) {
			l->pool_err = fds[i];
			return NULL;
		}
		l->pool_fd[i] = fds[i];
		keys[i] = i;
	}
	if (bpf_map_update_batch(l->tables_fd, keys, fds, &count, NULL))
		l->pool_err = -errno;
	return NULL;
}

/* Wait for the pool's thread, once; a pool that failed is no error: tables take new arrays. */
static void pool_join(struct mt_unwind_loader *l)
{
	if (!l->pool_started || l->pool_joined)
		return;
	pthread_join(l->pool_thread, NULL);
	l->pool_joined = true;
	if (!l->pool_err)
		l->next_slot = POOL_SIZE;
}

int mt_unwind_loader_new(struct mt_unwind_loader **out, int tables_fd, int files_fd, bool tables)
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
	for (size_t i = 0; i < POOL_SIZE; i++)
		l->pool_fd[i] = -1;
	l->no_tables = !tables;
	if (tables)
		l->pool_started = !pthread_create(&l->pool_thread, NULL, pool_fill, l);
	*out = l;
	return 0;
}

void mt_unwind_loader_free(struct mt_unwind_loader *l)
{
	if (!l)
		return;
	pool_join(l);
	for (size_t i = 0; i < POOL_SIZE; i++)
		if (l->pool_fd[i] >= 0)
			close(l->pool_fd[i]);
	mt_unwind_cache_free(l->cache);
	for (size_t i = 0; i < l->n_cuts; i++) {
		mt_unwind_table_free(&l->cuts[i]->table);
		free(l->cuts[i]);
	}
	free(l->cuts);
	free(l->v);
	free(l);
}

/* A free pool array that holds rows, smallest first: its index, or -1. */
static int pool_pick(const struct mt_unwind_loader *l, size_t rows)
{
	if (!l->pool_started || l->pool_err)
		return -1;
	for (size_t i = 0; i < POOL_SIZE; i++)
		if (!l->pool_used[i] && pool_rows[i] >= rows)
			return i;
	return -1;
}

/*
 * t's rows into the array fd, copied through a mapping of it: a batch update takes about half a
 * microsecond a row in the kernel (12.7 ms for libc's 28,274 on a loaded 2-CPU machine).
 */
static int rows_write(int fd, const struct mt_unwind_table *t)
{
	size_t len = t->n_rows * sizeof(*t->rows);
	void *p = mmap(NULL, len, PROT_READ | PROT_WRITE, MAP_SHARED, fd, 0);

	if (p == MAP_FAILED)
		return -errno;
	memcpy(p, t->rows, len);
	munmap(p, len);
	return 0;
}

/* An inner array holding exactly t's rows. */
static int rows_map(const struct mt_unwind_table *t)
{
	int fd = array_create(t->n_rows), err;

	if (fd < 0)
		return fd;
	err = rows_write(fd, t);
	if (err) {
		close(fd);
		return err;
	}
	return fd;
}

/* t into a new array of its own, in the next slot: one grace period. */
static int slot_new(struct mt_unwind_loader *l, const struct mt_unwind_table *t, uint32_t *slot)
{
	int fd, err = 0;

	if (l->next_slot == MT_UNWIND_MAX_FILES)
		return -ENOSPC;
	fd = rows_map(t);
	if (fd < 0)
		return fd;
	*slot = l->next_slot;
	/* The outer map holds the inner one from now on: its fd is not needed. */
	if (bpf_map_update_elem(l->tables_fd, slot, &fd, BPF_ANY))
		err = -errno;
	close(fd);
	if (!err)
		l->next_slot++;
	return err;
}

/* The slot of t in unwind_tables, loading it on first use. */
static int slot_of(struct mt_unwind_loader *l, const struct mt_unwind_table *t, uint32_t *slot)
{
	int pick, err;

	for (size_t i = 0; i < l->n; i++) {
		if (l->v[i].table == t) {
			*slot = l->v[i].slot;
			return 0;
		}
	}
	if (MT_GROW(l->v, l->cap, l->n + 1, 64))
		return -ENOMEM;
	pool_join(l);
	pick = pool_pick(l, t->n_rows);
	if (pick >= 0) {
		err = rows_write(l->pool_fd[pick], t);
		if (!err) {
			l->pool_used[pick] = true;
			l->pool_hits++;
			*slot = pick;
		}
	} else {
		err = slot_new(l, t, slot);
	}
	if (err)
		return err;
	l->v[l->n].table = t;
	l->v[l->n].slot = *slot;
	l->n++;
	l->rows += t->n_rows;
	return 0;
}

/* t cut down to w's operator new, made on the first call for t: *cut, owned by l. */
static int cut_of(struct mt_unwind_loader *l, const struct mt_unwind_table *t,
		  const struct mt_unwind_wrapper *w, const struct mt_unwind_table **cut)
{
	struct cut *c;
	int err;

	for (size_t i = 0; i < l->n_cuts; i++) {
		if (l->cuts[i]->from == t) {
			*cut = &l->cuts[i]->table;
			return 0;
		}
	}
	c = calloc(1, sizeof(*c));
	if (!c || MT_GROW(l->cuts, l->cap_cuts, l->n_cuts + 1, 4)) {
		free(c);
		return -ENOMEM;
	}
	err = mt_unwind_wrapper_table(t, w, &c->table);
	if (err) {
		free(c);
		return err;
	}
	c->from = t;
	l->cuts[l->n_cuts++] = c;
	*cut = &c->table;
	return 0;
}

int mt_unwind_load(struct mt_unwind_loader *l, uint64_t dev, uint64_t ino, int fd, uint16_t file_id,
		   struct mt_unwind_status *st)
{
	struct mt_unwind_file_key key = {.dev = dev, .ino = ino};
	struct mt_unwind_file file = {.file_id = file_id};
	const struct mt_unwind_table *t = NULL;
	struct mt_unwind_wrapper wrapper;
	char path[64];
	int err;

	memset(st, 0, sizeof(*st));
	if (l->no_tables) {
		mt_unwind_wrapper_find(fd, &wrapper);
		if (!wrapper.n)
			goto enter;
	}
	snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	err = mt_unwind_cache_get(l->cache, path, &t);
	if (!err && t->n_rows && l->no_tables && wrapper.program)
		err = cut_of(l, t, &wrapper, &t);
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
enter:
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

size_t mt_unwind_loaded_from_pool(const struct mt_unwind_loader *l)
{
	return l->pool_hits;
}
