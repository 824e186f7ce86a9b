/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unwind tables loaded into the BPF unwinder's maps (bpf/unwind.bpf.h, docs/STACKS.md): each
 * executable file of the tree gets its table, built once per build id (src/unwind/unwind_cache.h),
 * in an inner array of exactly its rows, and an entry of unwind_files that names it. A file whose
 * table cannot be built is entered with no rows: the unwinder walks it by frame pointer.
 */
#ifndef MT_UNWIND_LOAD_H
#define MT_UNWIND_LOAD_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_unwind_loader;

/* What a file's stacks are unwound with. */
struct mt_unwind_status {
	uint32_t rows; /* rows of its table; 0: by frame pointer */
	int err;       /* why there is no table: -ENODATA (no CFI), -ENOSPC (no slot left), ... */
};

/*
 * tables_fd, files_fd: the maps unwind_tables and unwind_files. Without tables (the allocator's
 * caller only, read at the entry), each file is entered with no table, none is built, but for
 * the files that define operator new (libstdc++), through which a stack goes on to its caller.
 */
int mt_unwind_loader_new(struct mt_unwind_loader **l, int tables_fd, int files_fd, bool tables);
void mt_unwind_loader_free(struct mt_unwind_loader *l);

/*
 * Load the table of the file open at fd (device dev in the kernel's encoding, inode ino), known
 * to memtrack as file_id, and fill *st. A table that cannot be built is no error: the file is
 * entered for frame pointers and st->err says why. Returns 0, or a negative errno when a map
 * refuses the file (it then ends every stack that reaches it).
 */
int mt_unwind_load(struct mt_unwind_loader *l, uint64_t dev, uint64_t ino, int fd, uint16_t file_id,
		   struct mt_unwind_status *st);

/* Why a file has no table, in a few words (st->err). */
const char *mt_unwind_status_reason(int err);

/* Tables loaded (distinct build ids) and their rows, for -v and docs/STACKS.md. */
size_t mt_unwind_loaded_tables(const struct mt_unwind_loader *l);
size_t mt_unwind_loaded_rows(const struct mt_unwind_loader *l);
/* Of the tables, those written into an array made ahead of time (unwind_load.c: the pool). */
size_t mt_unwind_loaded_from_pool(const struct mt_unwind_loader *l);

#endif
