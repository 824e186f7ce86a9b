/* SPDX-License-Identifier: GPL-2.0 */
/* The classification's own: its table of allocator rows and markers (classify_rows.c). */
#ifndef MT_CLASSIFY_INT_H
#define MT_CLASSIFY_INT_H

#include <stdbool.h>
#include <stddef.h>

#include "classify/classify.h"

#define ROW_JE	 0x1 /* also matches with the prefix of a prefixed jemalloc build */
#define ROW_ZERO 0x2 /* hands out zeroed memory (its events are flagged MT_EV_ZEROED) */
#define ROW_HEAP 0x4 /* takes a heap first, then its kind's (or layout's) arguments */

struct alloc_fn {
	const char *name;
	enum mt_kind kind; /* what its events record */
	bool ret;	   /* the result matters: every kind that hands out a block */
	enum mt_family hint;
	unsigned int flags;
	/* enum mt_call_layout when its arguments are not in its kind's order, else 0 */
	unsigned char layout;
};

/* Marker symbols, of any type, that tell one libc from another. */
enum {
	MK_GLIBC_VERSION = 1 << 0, /* gnu_get_libc_version: glibc only */
	MK_START_MAIN = 1 << 1,	   /* __libc_start_main: any libc */
	MK_LIBC_MALLOC = 1 << 2,   /* __libc_malloc: glibc, musl, and drop-in allocators */
	MK_MUSL_DLS = 1 << 3,	   /* __dls3: musl's dynamic linker stage, exported by libc.so */
	MK_MUSL_INIT = 1 << 4,	   /* __init_libc: musl's start-up, kept in a static .symtab */
};

/* Row row of the table (0 <= row < the number mt_classify_find_row can return). */
const struct alloc_fn *mt_classify_row(int row);
/* The row named name, or -1. */
int mt_classify_find_row(const char *name);
/* The row named name where a prefixed jemalloc defines it too (ROW_JE), or -1. */
int mt_classify_find_je_row(const char *name);
/*
 * The length of the prefix P when name (of length len) is P followed by a name of jemalloc's own
 * API (mallocx, rallocx, xallocx, dallocx, sdallocx): a jemalloc built with
 * --with-jemalloc-prefix=P. Else -1.
 */
int mt_classify_je_prefix_len(const char *name, size_t len);
/* The MK_ bit of a marker symbol's name, or 0. */
unsigned int mt_classify_find_marker(const char *name);

#endif
