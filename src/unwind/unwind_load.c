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
#include <gelf.h>
#include <libelf.h>

#include "base/grow.h"
#include "unwind/unwind_cache.h"
#include "unwind/unwind_load.h"

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

/*
 * Whether the ELF file open at fd defines operator new (_Znwm, _Znam) in its dynamic symbols:
 * libstdc++ and libc++, whose operator new calls malloc, which is probed. Without tables, such a
 * file still gets one, so that a stack goes through operator new to the code that called it.
 */
static bool wraps_the_allocator(int fd)
{
	Elf *e = elf_version(EV_CURRENT) == EV_NONE ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;
	bool found = false;

	while (e && !found && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;
		Elf_Data *d;

		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNSYM || !sh.sh_entsize)
			continue;
		d = elf_getdata(scn, NULL);
		for (size_t i = 0; d && i < sh.sh_size / sh.sh_entsize && !found; i++) {
			GElf_Sym sym;
			const char *name;

			if (!gelf_getsym(d, i, &sym) || sym.st_shndx == SHN_UNDEF)
				continue;
			name = elf_strptr(e, sh.sh_link, sym.st_name);
			found = name && (!strcmp(name, "_Znwm") || !strcmp(name, "_Znam"));
		}
	}
	if (e)
		elf_end(e);
	return found;
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

int mt_unwind_load(struct mt_unwind_loader *l, uint64_t dev, uint64_t ino, int fd, uint16_t file_id,
		   struct mt_unwind_status *st)
{
	struct mt_unwind_file_key key = {.dev = dev, .ino = ino};
	struct mt_unwind_file file = {.file_id = file_id};
	const struct mt_unwind_table *t = NULL;
	char path[64];
	int err;

	memset(st, 0, sizeof(*st));
	if (l->no_tables && !wraps_the_allocator(fd))
		goto enter;
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
