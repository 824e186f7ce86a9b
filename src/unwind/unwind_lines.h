/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Source lines of recorded frames: a file's DWARF line table (its own .debug_line, else that of
 * its separate debug file found by build id), read with libdw when its first frame asks, kept
 * open until the symboliser is freed; and the functions inlined at an address, from the same
 * DWARF's scopes. Used by unwind_symbols.c only.
 */
#ifndef MT_UNWIND_LINES_H
#define MT_UNWIND_LINES_H

#include <stdbool.h>
#include <stdint.h>

struct mt_lines;

/*
 * The line table of path, else of debug_path (NULL: none); NULL when neither has one (no DWARF
 * is no error: most installed files have none).
 */
struct mt_lines *mt_lines_open(const char *path, const char *debug_path);
void mt_lines_close(struct mt_lines *l);

/*
 * The source file and line of the instruction at vaddr (a link-time address of the file): true
 * and *source (owned by l) and *line, or false when no line table row covers it.
 */
bool mt_lines_find(struct mt_lines *l, uint64_t vaddr, const char **source, unsigned int *line);

/* A function the compiler inlined at an address: what it is, and where its caller calls it. */
struct mt_inlined {
	const char *name;	 /* its linkage (mangled) name when it has one, else its name */
	const char *call_source; /* the call's source file, NULL when unknown */
	unsigned int call_line;	 /* its line, 0 when unknown */
};

/*
 * The functions inlined at vaddr (DW_TAG_inlined_subroutine scopes of the unit's DIE tree),
 * innermost first, the last one inlined into the function the symbol table names: how many
 * were put in out (at most max; 0 when none, or no DWARF). Strings are owned by l.
 */
size_t mt_lines_inlined(struct mt_lines *l, uint64_t vaddr, struct mt_inlined *out, size_t max);

#endif
