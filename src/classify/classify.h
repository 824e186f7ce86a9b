/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Classification of an executable file by the allocator functions it defines, and the probe
 * points (with their placement) that memtrack attaches to it. One table in classify.c drives
 * both what a file is and what gets probed.
 */
#ifndef MT_CLASSIFY_H
#define MT_CLASSIFY_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "bpf/memtrack.h"
#include "base/family.h"
#include "classify/placement.h"

/* An allocator function that matched but is not probed, and why (recorded as not probed). */
struct mt_refused_point {
	char symbol[64];
	char reason[128];
};

struct mt_classification {
	enum mt_family family;
	char build_id[41]; /* hex, "" when the file has no NT_GNU_BUILD_ID */
	bool has_symbols;  /* false: neither .dynsym nor .symtab: reported, not silently skipped */
	/* A static executable (no PT_INTERP): with no allocator found, it may hide one (reported)
	 */
	bool static_exec;
	/*
	 * An allocator whose code the file holds but whose functions it does not name (.symtab
	 * stripped from a static link), recognised by its messages: MT_FAM_NONE when there is none
	 * but the family's own. Its calls are not recorded (reported).
	 */
	enum mt_family unnamed;
	size_t n_points;
	struct mt_probe_point *points;
	size_t n_refused;
	struct mt_refused_point *refused;
};

/* Classify an open ELF file. Returns 0 or a negative errno (-ENOEXEC: not ELF). */
int mt_classify_fd(int fd, enum mt_placement_mode mode, struct mt_classification *out);
int mt_classify_path(const char *path, enum mt_placement_mode mode, struct mt_classification *out);
void mt_classification_free(struct mt_classification *c);

struct Elf; /* libelf's Elf */

/*
 * For classify.c (classify_returns.c): give each point of c that may throw (operator new and its
 * kin) uprobes on its returns instead of a uretprobe, where they can all be found. 0 or -ENOMEM.
 */
int mt_classify_return_points(struct mt_classification *c, int fd, struct Elf *e);

/*
 * For classification (classify_elf.c): the file offset of vaddr in an executable PT_LOAD and how
 * many file bytes follow it there; the executable segment holding file offset off, in file
 * offsets; the NT_GNU_BUILD_ID in hex ("" when there is none). The first two return false when
 * no executable segment holds the address.
 */
bool mt_classify_elf_offset(struct Elf *e, uint64_t vaddr, uint64_t *off, uint64_t *avail);
bool mt_classify_elf_exec_segment(struct Elf *e, uint64_t off, uint64_t *start, uint64_t *end);
void mt_classify_elf_build_id(struct Elf *e, char out[41]);
/*
 * For classification: whether the code at vaddr in e (open as fd) is a PLT stub that jumps to the
 * function named name: the GOT slot it jumps through is relocated to that symbol.
 */
bool mt_classify_elf_plt_calls(int fd, struct Elf *e, uint64_t vaddr, const char *name);
/* For classification: whether e is a static executable (mt_classification's static_exec). */
bool mt_classify_elf_static_exec(struct Elf *e);
/*
 * For classification: the allocator, other than except, whose messages e's .rodata holds
 * (mt_classification's unnamed), or MT_FAM_NONE. starts_threads: e defines pthread_create,
 * which with the text of its huge page probe tells rpmalloc, which has no message of its own.
 */
enum mt_family mt_classify_elf_allocator_text(struct Elf *e, enum mt_family except,
					      bool starts_threads);

/*
 * For classification: whether e's Go build info says Go 1.18 or later, whose amd64 code passes
 * mallocgc's size in RAX (the register ABI); false without build info, or for an older Go.
 */
bool mt_classify_elf_go_register_abi(struct Elf *e);

const char *mt_kind_name(enum mt_kind k);

#endif
