// SPDX-License-Identifier: GPL-2.0
/*
 * Source lines of recorded frames and the functions inlined there (unwind_lines.h). The
 * compilation unit of an address comes from .debug_aranges, which GCC writes by default; a file
 * without them is searched unit by unit, which only files built without aranges pay for.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "base/grow.h"
#include "base/regfile.h"
#include "unwind/unwind_lines.h"

/* An inlined instance (DW_TAG_inlined_subroutine) of a unit. */
struct inlined_node {
	Dwarf_Off off;	/* its DIE */
	int32_t parent; /* the node of the instance it is inlined in; -1: a function's own code */
};

/* One of an instance's address ranges. */
struct inlined_range {
	uint64_t lo, hi;
	uint32_t node;
	uint32_t depth; /* of its DIE in the unit's tree */
};

/* A unit's inlined instances, its ranges sorted by address. */
struct unit_inlines {
	Dwarf_Off cu;
	struct inlined_node *nodes;
	size_t n_nodes, cap_nodes;
	struct inlined_range *ranges;
	size_t n_ranges, cap_ranges;
};

struct mt_lines {
	int fd;
	Dwarf *dw;
	bool aranges; /* the file has .debug_aranges: an address they miss is in no unit */
	struct unit_inlines *units; /* indexed when an address is first looked up in them */
	size_t n_units, cap_units;
};

static void unit_inlines_free(struct unit_inlines *u)
{
	free(u->nodes);
	free(u->ranges);
}

static struct mt_lines *try_open(const char *path)
{
	struct mt_lines *l;
	int fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);
	Dwarf *dw;

	if (fd < 0)
		return NULL;
	dw = dwarf_begin(fd, DWARF_C_READ);
	if (!dw) {
		close(fd);
		return NULL;
	}
	l = calloc(1, sizeof(*l));
	if (!l) {
		dwarf_end(dw);
		close(fd);
		return NULL;
	}
	l->fd = fd;
	l->dw = dw;
	{
		Dwarf_Aranges *ar;
		size_t n = 0;

		l->aranges = !dwarf_getaranges(dw, &ar, &n) && n;
	}
	return l;
}

struct mt_lines *mt_lines_open(const char *path, const char *debug_path)
{
	struct mt_lines *l = try_open(path);

	return l || !debug_path ? l : try_open(debug_path);
}

void mt_lines_close(struct mt_lines *l)
{
	if (!l)
		return;
	for (size_t i = 0; i < l->n_units; i++)
		unit_inlines_free(&l->units[i]);
	free(l->units);
	dwarf_end(l->dw);
	close(l->fd);
	free(l);
}

/* A source path as the report shows it: glibc's units say "./malloc/malloc.c", relative to its
 * build directory. */
static const char *source_path(const char *src)
{
	return strncmp(src, "./", 2) ? src : src + 2;
}

/*
 * The unit that covers vaddr, through the aranges or, without them, unit by unit. With aranges,
 * an address they do not cover (a PLT stub, assembly without debug information) is in no unit:
 * looking through every unit for it would cost a large library seconds.
 */
static bool unit_of(const struct mt_lines *l, uint64_t vaddr, Dwarf_Die *cu)
{
	Dwarf_Off off = 0, next;
	size_t header;

	if (dwarf_addrdie(l->dw, vaddr, cu))
		return true;
	if (l->aranges)
		return false;
	while (!dwarf_nextcu(l->dw, off, &next, &header, NULL, NULL, NULL)) {
		if (dwarf_offdie(l->dw, off + header, cu) && dwarf_haspc(cu, vaddr) > 0)
			return true;
		off = next;
	}
	return false;
}

bool mt_lines_find(struct mt_lines *l, uint64_t vaddr, const char **source, unsigned int *line)
{
	Dwarf_Die cu;
	Dwarf_Line *row;
	const char *src;
	int n;

	if (!l || !unit_of(l, vaddr, &cu))
		return false;
	row = dwarf_getsrc_die(&cu, vaddr);
	if (!row || dwarf_lineno(row, &n) || n <= 0)
		return false;
	src = dwarf_linesrc(row, NULL, NULL);
	if (!src)
		return false;
	*source = source_path(src);
	*line = (unsigned int)n;
	return true;
}

/*
 * The inlined function of an inlined_subroutine scope: its linkage name when it is a mangled one
 * (C++, Rust), else its name. A C function's linkage name is an assembler name at most (glibc's
 * hidden aliases: __GI__IO_doallocbuf), not the name its callers write.
 */
static const char *inlined_name(Dwarf_Die *scope)
{
	Dwarf_Attribute mem, *a;
	const char *linkage, *name;

	/* Through its abstract origin, and a member function's specification in its class. */
	a = dwarf_attr_integrate(scope, DW_AT_linkage_name, &mem);
	if (!a)
		a = dwarf_attr_integrate(scope, DW_AT_MIPS_linkage_name, &mem);
	linkage = a ? dwarf_formstring(a) : NULL;
	if (linkage && (!strncmp(linkage, "_Z", 2) || !strncmp(linkage, "_R", 2)))
		return linkage;
	name = dwarf_diename(scope);
	return name ? name : linkage;
}

/* Where an inlined_subroutine scope is called from: DW_AT_call_file and DW_AT_call_line. */
static void call_site(Dwarf_Die *scope, Dwarf_Files *files, size_t n_files, struct mt_inlined *out)
{
	Dwarf_Attribute mem;
	Dwarf_Word file, line;
	const char *src;

	out->call_source = NULL;
	out->call_line = 0;
	if (!files || dwarf_formudata(dwarf_attr(scope, DW_AT_call_file, &mem), &file) ||
	    file >= n_files || dwarf_formudata(dwarf_attr(scope, DW_AT_call_line, &mem), &line) ||
	    !line || line > UINT32_MAX)
		return;
	src = dwarf_filesrc(files, file, NULL, NULL);
	if (!src)
		return;
	out->call_source = source_path(src);
	out->call_line = (unsigned int)line;
}

/* Levels of the DIE tree followed below a unit (a deeper DIE is left out). */
#define MAX_DIE_DEPTH 128

/* The tags whose children can hold code: the tree is followed only through them. */
static bool holds_code(int tag)
{
	switch (tag) {
	case DW_TAG_compile_unit:
	case DW_TAG_partial_unit:
	case DW_TAG_namespace:
	case DW_TAG_subprogram:
	case DW_TAG_lexical_block:
	case DW_TAG_inlined_subroutine:
		return true;
	default:
		return false;
	}
}

static int add_node(struct unit_inlines *u, Dwarf_Off off, int32_t parent, uint32_t *index)
{
	if (MT_GROW(u->nodes, u->cap_nodes, u->n_nodes + 1, 64))
		return -ENOMEM;
	u->nodes[u->n_nodes] = (struct inlined_node){off, parent};
	*index = (uint32_t)u->n_nodes++;
	return 0;
}

/* The address ranges of an inlined instance, each an entry of u pointing at its node. */
static int add_ranges(struct unit_inlines *u, Dwarf_Die *die, uint32_t node, uint32_t depth)
{
	Dwarf_Addr base, lo, hi;
	ptrdiff_t at = 0;

	while ((at = dwarf_ranges(die, at, &base, &lo, &hi)) > 0) {
		if (lo >= hi)
			continue;
		if (MT_GROW(u->ranges, u->cap_ranges, u->n_ranges + 1, 64))
			return -ENOMEM;
		u->ranges[u->n_ranges++] = (struct inlined_range){lo, hi, node, depth};
	}
	return 0;
}

/*
 * The inlined instances below die (its children and theirs), parent the node of the nearest
 * one around them (-1: none, in a function's own code). Iterative over siblings, recursive
 * down to MAX_DIE_DEPTH. Siblings must come at growing offsets: a file's DW_AT_sibling that
 * points back would make the walk go round for ever.
 */
static int walk(struct unit_inlines *u, Dwarf_Die *die, int32_t parent, uint32_t depth)
{
	Dwarf_Off last = 0;
	Dwarf_Die child;
	int err, more;

	if (depth >= MAX_DIE_DEPTH || dwarf_child(die, &child))
		return 0;
	for (more = 0; !more; more = dwarf_siblingof(&child, &child)) {
		int tag = dwarf_tag(&child);
		int32_t inside = parent;
		uint32_t node;

		if (dwarf_dieoffset(&child) <= last)
			break;
		last = dwarf_dieoffset(&child);
		if (!holds_code(tag))
			continue;
		/* A function's own code starts a chain of its own (a nested function). */
		if (tag == DW_TAG_subprogram)
			inside = -1;
		if (tag == DW_TAG_inlined_subroutine) {
			err = add_node(u, dwarf_dieoffset(&child), parent, &node);
			if (!err)
				err = add_ranges(u, &child, node, depth);
			if (err)
				return err;
			inside = (int32_t)node;
		}
		err = walk(u, &child, inside, depth + 1);
		if (err)
			return err;
	}
	return 0;
}

static int cmp_range(const void *a, const void *b)
{
	const struct inlined_range *x = a, *y = b;

	if (x->lo != y->lo)
		return x->lo < y->lo ? -1 : 1;
	/* Of ranges starting together, the outer one first: the last is the innermost. */
	return x->depth < y->depth ? -1 : x->depth > y->depth;
}

/* The inlined instances of the unit cu, indexed on its first lookup; NULL on -ENOMEM. */
static struct unit_inlines *unit_inlines(struct mt_lines *l, Dwarf_Die *cu)
{
	Dwarf_Off off = dwarf_dieoffset(cu);
	struct unit_inlines *u;

	for (size_t i = 0; i < l->n_units; i++)
		if (l->units[i].cu == off)
			return &l->units[i];
	if (MT_GROW(l->units, l->cap_units, l->n_units + 1, 16))
		return NULL;
	u = &l->units[l->n_units];
	memset(u, 0, sizeof(*u));
	u->cu = off;
	if (walk(u, cu, -1, 0)) {
		unit_inlines_free(u);
		return NULL;
	}
	if (u->n_ranges)
		qsort(u->ranges, u->n_ranges, sizeof(*u->ranges), cmp_range);
	l->n_units++;
	return u;
}

/*
 * The innermost inlined instance at vaddr: ranges nest as the DIEs do, so the last range that
 * starts at or before vaddr is that instance's or one inside it; the first of its node's
 * enclosing instances (itself included) that covers vaddr is the innermost. -1: none.
 */
static int32_t innermost(struct mt_lines *l, const struct unit_inlines *u, uint64_t vaddr)
{
	size_t lo = 0, hi = u->n_ranges;
	const struct inlined_range *r;
	int32_t node;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;

		if (u->ranges[mid].lo <= vaddr)
			lo = mid + 1;
		else
			hi = mid;
	}
	if (!lo)
		return -1;
	r = &u->ranges[lo - 1];
	if (vaddr < r->hi)
		return (int32_t)r->node;
	for (node = u->nodes[r->node].parent; node >= 0; node = u->nodes[node].parent) {
		Dwarf_Die die;

		if (dwarf_offdie(l->dw, u->nodes[node].off, &die) && dwarf_haspc(&die, vaddr) > 0)
			return node;
	}
	return -1;
}

/*
 * Each unit's inlined instances (DW_TAG_inlined_subroutine of its concrete functions) are
 * indexed once, by address: a lookup is a binary search, where libdw's dwarf_getscopes and
 * dwarf_getscopes_die walk the unit's DIE tree at every address (measured in docs/STACKS.md).
 */
size_t mt_lines_inlined(struct mt_lines *l, uint64_t vaddr, struct mt_inlined *out, size_t max)
{
	struct unit_inlines *u;
	Dwarf_Files *files = NULL;
	size_t n_files = 0, n = 0;
	Dwarf_Die cu;
	int32_t node;

	if (!l || !max || !unit_of(l, vaddr, &cu))
		return 0;
	u = unit_inlines(l, &cu);
	node = u ? innermost(l, u, vaddr) : -1;
	if (node >= 0 && dwarf_getsrcfiles(&cu, &files, &n_files))
		files = NULL;
	for (; node >= 0 && n < max; node = u->nodes[node].parent) {
		Dwarf_Die die;

		if (!dwarf_offdie(l->dw, u->nodes[node].off, &die))
			break;
		out[n].name = inlined_name(&die);
		if (!out[n].name)
			out[n].name = "??";
		call_site(&die, files, n_files, &out[n]);
		n++;
	}
	return n;
}