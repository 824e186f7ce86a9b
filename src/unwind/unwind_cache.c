// SPDX-License-Identifier: GPL-2.0
/*
 * The cache of unwind tables (src/unwind/unwind_cache.h). A run maps hundreds of files at most, and
 * a lookup happens once per mapping stop, so entries sit in an array searched linearly.
 */
#include <elfutils/libdwelf.h>
#include <errno.h>
#include <fcntl.h>
#include <libelf.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/regfile.h"
#include "base/grow.h"
#include "unwind/unwind_cache.h"

struct cache_key {
	uint8_t build_id[MT_BUILD_ID_MAX];
	size_t build_id_len; /* 0: keyed by the stat fields below */
	dev_t dev;
	ino_t ino;
	off_t size;
	struct timespec mtime;
};

struct cache_entry {
	struct cache_key key;
	int err; /* 0 or -ENODATA */
	struct mt_unwind_table table;
};

struct mt_unwind_cache {
	struct cache_entry **v; /* each entry on its own: the tables handed out must not move */
	size_t n, cap;
	size_t builds, hits;
};

struct mt_unwind_cache *mt_unwind_cache_new(void)
{
	return calloc(1, sizeof(struct mt_unwind_cache));
}

void mt_unwind_cache_free(struct mt_unwind_cache *c)
{
	if (!c)
		return;
	for (size_t i = 0; i < c->n; i++) {
		mt_unwind_table_free(&c->v[i]->table);
		free(c->v[i]);
	}
	free(c->v);
	free(c);
}

/* The key of the open file: its build id when it has one (read from the notes only). */
static int key_of(int fd, struct cache_key *k)
{
	struct stat st;
	Elf *elf;

	memset(k, 0, sizeof(*k));
	if (fstat(fd, &st))
		return -errno;
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -ENOSYS;
	elf = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (elf) {
		const void *id;
		ssize_t n = dwelf_elf_gnu_build_id(elf, &id);

		if (n > 0 && n <= MT_BUILD_ID_MAX) {
			memcpy(k->build_id, id, n);
			k->build_id_len = n;
		}
		elf_end(elf);
	}
	if (!k->build_id_len) {
		k->dev = st.st_dev;
		k->ino = st.st_ino;
		k->size = st.st_size;
		k->mtime = st.st_mtim;
	}
	return 0;
}

static bool key_eq(const struct cache_key *a, const struct cache_key *b)
{
	if (a->build_id_len || b->build_id_len)
		return a->build_id_len == b->build_id_len &&
		       !memcmp(a->build_id, b->build_id, a->build_id_len);
	return a->dev == b->dev && a->ino == b->ino && a->size == b->size &&
	       a->mtime.tv_sec == b->mtime.tv_sec && a->mtime.tv_nsec == b->mtime.tv_nsec;
}

static struct cache_entry *cache_add(struct mt_unwind_cache *c)
{
	struct cache_entry *e;

	if (MT_GROW(c->v, c->cap, c->n + 1, 32))
		return NULL;
	e = calloc(1, sizeof(*e));
	if (e)
		c->v[c->n++] = e;
	return e;
}

int mt_unwind_cache_get(struct mt_unwind_cache *c, const char *path,
			const struct mt_unwind_table **t)
{
	struct cache_entry *e;
	struct cache_key key;
	struct mt_unwind_table table;
	int fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);
	int err;

	if (fd < 0)
		return fd;
	err = key_of(fd, &key);
	if (err)
		goto out;
	for (size_t i = 0; i < c->n; i++) {
		if (key_eq(&c->v[i]->key, &key)) {
			c->hits++;
			*t = &c->v[i]->table;
			err = c->v[i]->err;
			goto out;
		}
	}
	err = mt_unwind_table_build_fd(fd, &table);
	if (err && err != -ENODATA)
		goto out;
	c->builds++;
	e = cache_add(c);
	if (!e) {
		mt_unwind_table_free(&table);
		err = -ENOMEM;
		goto out;
	}
	e->key = key;
	e->err = err;
	e->table = table;
	*t = &e->table;
out:
	close(fd);
	return err;
}

size_t mt_unwind_cache_builds(const struct mt_unwind_cache *c)
{
	return c->builds;
}

size_t mt_unwind_cache_hits(const struct mt_unwind_cache *c)
{
	return c->hits;
}
