/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Unwind tables: a file's DWARF call frame information (.eh_frame, found through .eh_frame_hdr,
 * and .debug_frame where present) evaluated once, in user space, into sorted fixed-size rows
 * (bpf/unwind_row.h) that a BPF program can binary-search. docs/STACKS.md has the design.
 *
 * The CFI is read with libdw (elfutils): dwarf_cfi_addrframe runs the CIE and FDE programs for an
 * address and says how far the result holds, which is exactly a row. memtrack only enumerates
 * the FDEs (from the .eh_frame_hdr search table, or by walking the section with
 * dwarf_next_cfi) and translates libdw's rules into the row's few shapes.
 */
#ifndef MT_UNWIND_TABLE_H
#define MT_UNWIND_TABLE_H

#include <stddef.h>
#include <stdint.h>

#include "bpf/unwind_row.h"

#define MT_BUILD_ID_MAX 64

struct mt_unwind_table {
	/* Sorted by addr; adjacent rules differ; a rule with a wide CFA offset is two rows. */
	struct mt_unwind_row *rows;
	size_t n_rows;
	uint8_t build_id[MT_BUILD_ID_MAX];
	size_t build_id_len; /* 0: the file has no GNU build id note */
	/* The first executable PT_LOAD: a mapping at file offset o holds vaddr o - offset + vaddr.
	 */
	uint64_t exec_vaddr;
	uint64_t exec_offset;
	/* What went in, for the report and the tests. */
	size_t n_fdes;	     /* distinct FDE start addresses (both sections) */
	size_t n_unknown;    /* rows whose CFA rule the row cannot express */
	size_t n_rbp_lost;   /* rows whose caller's rbp cannot be recovered */
	size_t n_wide;	     /* MT_CFA_WIDE rows: rules of frames of 64 KiB and more */
	int has_eh_frame;    /* rows come from .eh_frame */
	int has_debug_frame; /* rows come from .debug_frame (where .eh_frame has none) */
};

/*
 * Build the table of the ELF file at path. Returns 0; -ENODATA when the file has no usable CFI
 * (no rows: it is unwound by frame pointer); -ENOEXEC when it is not an x86-64 ELF file;
 * -E2BIG when its addresses do not fit a row; another negative errno when it cannot be read.
 */
int mt_unwind_table_build(const char *path, struct mt_unwind_table *t);

/* The same for an open file (the descriptor stays open and its offset is unspecified). */
int mt_unwind_table_build_fd(int fd, struct mt_unwind_table *t);

void mt_unwind_table_free(struct mt_unwind_table *t);

/*
 * The rule row that covers addr (a link-time virtual address): the last row whose addr <= addr,
 * the search the BPF unwinder does, or the row before it when that one is MT_CFA_WIDE. NULL
 * when addr is below the first row.
 */
const struct mt_unwind_row *mt_unwind_table_find(const struct mt_unwind_table *t, uint64_t addr);

/* The CFA offset of t's rule row r (one mt_unwind_table_find returned), wide or not. */
uint32_t mt_unwind_table_cfa_off(const struct mt_unwind_table *t, const struct mt_unwind_row *r);

/* A rule row of t as text ("rsp+8 rbp=c-16"), for tests and diagnostics. buf holds 48 bytes. */
const char *mt_unwind_row_str(const struct mt_unwind_table *t, const struct mt_unwind_row *r,
			      char *buf, size_t size);

#endif
