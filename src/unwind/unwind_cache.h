/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unwind tables cached per file: a library mapped by many processes of the tree, or mapped again
 * after an exec, is read once. The key is the file's GNU build id; a file without one is keyed by
 * its device, inode, size and modification time. A file with no usable CFI is cached too (as
 * "unwind by frame pointer"), so that it is not read again either.
 */
#ifndef MT_UNWIND_CACHE_H
#define MT_UNWIND_CACHE_H

#include <stddef.h>

#include "unwind/unwind_table.h"

struct mt_unwind_cache;

struct mt_unwind_cache *mt_unwind_cache_new(void);
void mt_unwind_cache_free(struct mt_unwind_cache *c);

/*
 * The table of the file at path, built on first use. Returns 0 with *t (owned by the cache, valid
 * until it is freed), -ENODATA when the file has no usable CFI (cached: *t has no rows), or what
 * mt_unwind_table_build returns (not cached).
 */
int mt_unwind_cache_get(struct mt_unwind_cache *c, const char *path,
			const struct mt_unwind_table **t);

/* Tables built and lookups answered from the cache, for the tests and the run's statistics. */
size_t mt_unwind_cache_builds(const struct mt_unwind_cache *c);
size_t mt_unwind_cache_hits(const struct mt_unwind_cache *c);

#endif
