// SPDX-License-Identifier: GPL-2.0
/*
 * What allocator a file's candidates are: the functions that only forward to another candidate
 * dropped (Rust's shims into the default allocator, mimalloc's wrappers of its own functions),
 * the family picked from the rows that matched and the marker symbols, and which rows are probed
 * in a file of that family (operator new and delete: mt_classify_wants_row).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "base/grow.h"
#include "classify/classify.h"
#include "classify/classify_int.h"
#include "classify/placement.h"

static bool defines_kind(const struct scan *s, enum mt_kind kind)
{
	for (size_t i = 0; i < s->n; i++)
		if (mt_classify_row(s->cands[i].row)->kind == kind)
			return true;
	return false;
}

static bool has_hint(const struct scan *s, enum mt_family hint)
{
	for (size_t i = 0; i < s->n; i++)
		if (mt_classify_row(s->cands[i].row)->hint == hint)
			return true;
	return false;
}

/*
 * Whether the Rust shim c only jumps to one of the default allocator's functions: a program
 * without a #[global_allocator] of its own (rustc writes `jmp __rdl_alloc` at any opt-level),
 * whose calls reach malloc, probed where it is defined. Probing it would add a trap a call.
 */
static bool default_shim(const struct scan *s, int fd, Elf *e, const struct cand *c)
{
	uint8_t code[5];
	uint64_t off, avail, target;
	ssize_t got = 0;
	int32_t rel;

	if (s->n_rdl && mt_classify_elf_offset(e, c->vaddr, &off, &avail))
		got = pread(fd, code, avail < sizeof(code) ? (size_t)avail : sizeof(code),
			    (off_t)off);
	if (got >= 2 && code[0] == 0xeb) { /* jmp rel8 */
		target = c->vaddr + 2 + (uint64_t)(int64_t)(int8_t)code[1];
	} else if (got == 5 && code[0] == 0xe9) { /* jmp rel32 */
		memcpy(&rel, code + 1, sizeof(rel));
		target = c->vaddr + 5 + (uint64_t)(int64_t)rel;
	} else {
		return false;
	}
	for (size_t i = 0; i < s->n_rdl; i++)
		if (s->rdl[i] == target)
			return true;
	return false;
}

void mt_classify_drop_default_shims(struct scan *s, int fd, Elf *e)
{
	size_t kept = 0;

	for (size_t i = 0; i < s->n; i++)
		if (mt_classify_row(s->cands[i].row)->hint != MT_FAM_RUST ||
		    !default_shim(s, fd, e, &s->cands[i]))
			s->cands[kept++] = s->cands[i];
	s->n = kept;
}

/* The candidate named name, or NULL. */
static const struct cand *cand_named(const struct scan *s, const char *name)
{
	for (size_t i = 0; i < s->n; i++)
		if (!strcmp(s->cands[i].name, name))
			return &s->cands[i];
	return NULL;
}

/*
 * Whether w runs straight into a jmp to h: directly, or through h's PLT stub (libmimalloc's calls
 * between its own exported functions go through the PLT).
 */
static bool jumps_to(int fd, Elf *e, const struct cand *w, const struct cand *h)
{
	uint8_t code[MT_PLACE_MAX_BYTES];
	uint64_t off, avail, target;
	int64_t rel;
	ssize_t got;

	if (!mt_classify_elf_offset(e, w->vaddr, &off, &avail))
		return false;
	got = pread(fd, code, avail < sizeof(code) ? (size_t)avail : sizeof(code), (off_t)off);
	if (got <= 0 || !mt_tail_jump(code, (size_t)got, &rel))
		return false;
	target = w->vaddr + (uint64_t)rel;
	return target == h->vaddr || mt_classify_elf_plt_calls(fd, e, target, h->name);
}

/*
 * Whether every call of w is a call of the mimalloc function named name, recorded there as w's
 * would be: its row's but for the heap (heap: name takes one first, w does not) and w runs
 * straight into a jmp to it.
 */
static bool wraps(const struct scan *s, int fd, Elf *e, const struct cand *w, const char *name,
		  bool heap)
{
	const struct alloc_fn *row = mt_classify_row(w->row), *hrow;
	const struct cand *h = cand_named(s, name);

	if (!h)
		return false;
	hrow = mt_classify_row(h->row);
	if (hrow->kind != row->kind || hrow->layout != row->layout ||
	    (hrow->flags & ROW_ZERO) != (row->flags & ROW_ZERO) ||
	    !(hrow->flags & ROW_HEAP) != !((row->flags & ROW_HEAP) || heap))
		return false;
	return jumps_to(fd, e, w, h);
}

/*
 * Whether w is a mimalloc wrapper: mi_NAME(args) of mi_heap_NAME(default heap, args), or
 * NAME(args) of NAME_at(args, 0) (mi_heap_zalloc_aligned of mi_heap_zalloc_aligned_at).
 */
static bool mimalloc_wrapper(const struct scan *s, int fd, Elf *e, const struct cand *w)
{
	const struct alloc_fn *row = mt_classify_row(w->row);
	char name[sizeof(w->name) + 5];

	if (row->hint != MT_FAM_MIMALLOC || strncmp(w->name, "mi_", 3))
		return false;
	snprintf(name, sizeof(name), "mi_heap_%s", w->name + 3);
	if (!(row->flags & ROW_HEAP) && wraps(s, fd, e, w, name, true))
		return true;
	snprintf(name, sizeof(name), "%s_at", w->name);
	return wraps(s, fd, e, w, name, false);
}

/*
 * mimalloc's mi_NAME(args) is mi_heap_NAME(default heap, args), and NAME(args) NAME_at(args, 0),
 * each compiled as a jmp into the other where it is not inlined: probing both would cost every
 * such call two traps and two returns for one record. The wrapper goes, and any other name at its
 * address (the same code).
 */
void mt_classify_drop_heap_wrappers(struct scan *s, int fd, Elf *e)
{
	uint64_t *gone = NULL;
	size_t n_gone = 0, cap = 0, kept = 0;

	for (size_t i = 0; i < s->n; i++) {
		if (!mimalloc_wrapper(s, fd, e, &s->cands[i]))
			continue;
		if (MT_GROW(gone, cap, n_gone + 1, 16))
			break; /* kept: two traps a call, not a lost one */
		gone[n_gone++] = s->cands[i].vaddr;
	}
	for (size_t i = 0; i < s->n; i++) {
		bool drop = false;

		for (size_t j = 0; j < n_gone && !drop; j++)
			drop = s->cands[i].vaddr == gone[j];
		if (!drop)
			s->cands[kept++] = s->cands[i];
	}
	s->n = kept;
	free(gone);
}

/*
 * Allocator libraries first (they also export the standard names), each by any of its own entry
 * points (a static link keeps only those the program calls: Rust's mimalloc crate calls
 * mi_malloc_aligned and mi_free, never mi_malloc), then the libc markers.
 * musl: __libc_start_main with __dls3 (libc.so) or __init_libc (static .symtab); glibc:
 * gnu_get_libc_version (libc.so.6) or __libc_start_main with __libc_malloc (static), checked
 * after musl because a static musl binary has __libc_malloc too.
 */
enum mt_family mt_classify_pick_family(const struct scan *s)
{
	unsigned int m = s->markers;

	if (defines_kind(s, MT_K_MALLOCX) || s->n_je_prefixes)
		return MT_FAM_JEMALLOC;
	if (has_hint(s, MT_FAM_MIMALLOC))
		return MT_FAM_MIMALLOC;
	if (has_hint(s, MT_FAM_TCMALLOC))
		return MT_FAM_TCMALLOC;
	if (has_hint(s, MT_FAM_SNMALLOC))
		return MT_FAM_SNMALLOC;
	if (has_hint(s, MT_FAM_RPMALLOC))
		return MT_FAM_RPMALLOC;
	if (has_hint(s, MT_FAM_LIBC)) {
		if ((m & MK_START_MAIN) && (m & (MK_MUSL_DLS | MK_MUSL_INIT)))
			return MT_FAM_MUSL;
		if ((m & MK_GLIBC_VERSION) || ((m & MK_START_MAIN) && (m & MK_LIBC_MALLOC)))
			return MT_FAM_GLIBC;
		return MT_FAM_LIBC;
	}
	if (has_hint(s, MT_FAM_CXX) && !s->imports_alloc)
		return MT_FAM_CXX;
	if (has_hint(s, MT_FAM_RUST))
		return MT_FAM_RUST;
	if (has_hint(s, MT_FAM_GO))
		return MT_FAM_GO;
	return MT_FAM_NONE;
}

/*
 * operator new/delete are probed where the file has an allocator of its own (then they are that
 * allocator's entry points, and the depth guard counts a new that calls malloc once), or where
 * it implements them without referencing any allocator function. A file that defines them but
 * imports malloc (libstdc++, or a program replacing operator new on top of malloc) forwards to
 * an allocator that is probed where it is defined.
 */
bool mt_classify_wants_row(enum mt_family fam, const struct alloc_fn *row)
{
	return row->hint != MT_FAM_CXX || fam != MT_FAM_NONE;
}

/* Whether any candidate will be a point (or refused as one): only then are functions needed. */
bool mt_classify_wants_any(enum mt_family fam, const struct scan *s)
{
	for (size_t i = 0; i < s->n; i++)
		if (mt_classify_wants_row(fam, mt_classify_row(s->cands[i].row)))
			return true;
	return false;
}
