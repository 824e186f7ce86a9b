/* SPDX-License-Identifier: GPL-2.0 */
/*
 * What an unwind table's build shares between its files (unwind_table.c builds the rows,
 * unwind_fde.c finds where the FDEs start). Included by the unwind tables part only.
 */
#ifndef MT_UNWIND_TABLE_INT_H
#define MT_UNWIND_TABLE_INT_H

#include <elfutils/libdw.h>
#include <gelf.h>
#include <stdbool.h>
#include <stdint.h>

#include "unwind/unwind_table.h"

struct addr_vec {
	uint64_t *v;
	size_t n, cap;
};

/* What one build reads from: the ELF, its two CFI sources, the FDE starts found. */
struct cfi_source {
	Elf *elf;
	Dwarf *dwarf;		/* for .debug_frame; NULL without one */
	Dwarf_CFI *eh_cfi;	/* .eh_frame; NULL without one */
	Dwarf_CFI *debug_cfi;	/* .debug_frame; NULL without one */
	struct addr_vec starts; /* FDE initial locations, both sections */
};

/* unwind_fde.c: the section called name, its header in *shdr; NULL when the file has none. */
Elf_Scn *unwind_find_section(Elf *elf, const char *name, GElf_Shdr *shdr);
/* The FDE starts of .eh_frame from .eh_frame_hdr's search table into src->starts. 0 or -errno. */
int unwind_starts_from_eh_frame_hdr(struct cfi_source *src);
/* The FDE starts found by walking section name (.eh_frame when eh, else .debug_frame). */
int unwind_starts_from_section(struct cfi_source *src, const char *name, bool eh);

#endif
