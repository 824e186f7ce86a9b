/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The classification's own: its table of allocator rows and markers (classify_rows.c), and the
 * scan of a file's symbols that its files share (classify.c runs it).
 */
#ifndef MT_CLASSIFY_INT_H
#define MT_CLASSIFY_INT_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

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
	/* enum mt_unrecorded: its calls are counted, not recorded (kind MT_K_NONE), else 0 */
	unsigned char unrecorded;
};

/* Marker symbols, of any type, that tell one libc from another. */
enum {
	MK_GLIBC_VERSION = 1 << 0, /* gnu_get_libc_version: glibc only */
	MK_START_MAIN = 1 << 1,	   /* __libc_start_main: any libc */
	MK_LIBC_MALLOC = 1 << 2,   /* __libc_malloc: glibc, musl, and drop-in allocators */
	MK_MUSL_DLS = 1 << 3,	   /* __dls3: musl's dynamic linker stage, exported by libc.so */
	MK_MUSL_INIT = 1 << 4,	   /* __init_libc: musl's start-up, kept in a static .symtab */
	/* pthread_create: a libc, or an allocator that sets up each thread it starts (rpmalloc) */
	MK_THREAD_START = 1 << 5,
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

/* A defined function that matched a row. */
struct cand {
	uint64_t vaddr;
	uint64_t size;
	int row;
	char name[64];
};

/* A defined function with a size: what a probe point may lie inside of. */
struct func {
	uint64_t vaddr;
	uint64_t size;
	char name[64];
};

/*
 * The passes over a file's symbols (mt_classify_scan_symbols), each only where the one before calls
 * for it.
 */
enum scan_pass {
	PASS_ROWS,     /* every symbol against the table, and jemalloc's prefixes */
	PASS_PREFIXED, /* the names under a prefixed jemalloc's prefixes */
	PASS_FUNCS,    /* every sized function */
};

/* jemalloc builds in one file: a static one seldom has more than its own. */
#define MAX_JE_PREFIXES 4
#define JE_PREFIX_MAX	32
/* __rdl_alloc, __rdl_alloc_zeroed, __rdl_realloc, __rdl_dealloc, in .symtab and .dynsym */
#define MAX_RDL		8

/* What the passes over one file found (mt_classify_scan_symbols), and the pass under way. */
struct scan {
	struct cand *cands;
	size_t n, cap;
	struct func *funcs;
	size_t n_funcs, cap_funcs;
	unsigned int markers;
	bool imports_alloc; /* references an allocator function it does not define */
	bool has_symbols;
	bool has_symtab; /* .symtab: without it, a static allocator's functions have no names */
	/*
	 * The pass under way. PASS_FUNCS only where the rows found candidates: most files have
	 * none, and tens of thousands of functions.
	 */
	enum scan_pass pass;
	/* The addresses of Rust's default allocator functions (__rdl_alloc, ...). */
	uint64_t rdl[MAX_RDL];
	size_t n_rdl;
	/* The non-empty prefixes P for which P + mallocx (or another of its API) is defined. */
	char je_prefixes[MAX_JE_PREFIXES][JE_PREFIX_MAX];
	size_t n_je_prefixes;
};

/* A file's symbols, read (classify_symbols.c): 0, -EIO (malformed ELF) or -ENOMEM. */
int mt_classify_scan_symbols(struct Elf *e, struct scan *s);

/*
 * What allocator the candidates are (classify_family.c): the Rust shims that only jump to the
 * default allocator dropped, and mimalloc's wrappers of its own functions; the family picked;
 * whether a row is probed in a file of family fam, and whether any candidate is.
 */
void mt_classify_drop_default_shims(struct scan *s, int fd, struct Elf *e);
void mt_classify_drop_heap_wrappers(struct scan *s, int fd, struct Elf *e);
enum mt_family mt_classify_pick_family(const struct scan *s);
bool mt_classify_wants_row(enum mt_family fam, const struct alloc_fn *row);
bool mt_classify_wants_any(enum mt_family fam, const struct scan *s);

/*
 * The candidates made points of out, one per address, placed by mode, or refused with why
 * (classify_points.c): 0 or a negative errno.
 */
int mt_classify_build_points(struct mt_classification *out, int fd, struct Elf *e, struct scan *s,
			     enum mt_placement_mode mode);

#endif
