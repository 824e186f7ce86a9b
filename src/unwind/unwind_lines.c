// SPDX-License-Identifier: GPL-2.0
/*
 * Source lines of recorded frames and the functions inlined there (unwind_lines.h). The
 * compilation unit of an address comes from .debug_aranges, which GCC writes by default; a file
 * without them is searched unit by unit, which only files built without aranges pay for.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <dwarf.h>
#include <elfutils/libdw.h>

#include "base/regfile.h"
#include "unwind/unwind_lines.h"

struct mt_lines {
	int fd;
	Dwarf *dw;
	bool aranges; /* the file has .debug_aranges: an address they miss is in no unit */
};

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
	l = malloc(sizeof(*l));
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

/* The inlined function of an inlined_subroutine scope: its linkage name, else its name. */
static const char *inlined_name(Dwarf_Die *scope)
{
	Dwarf_Attribute mem, *a;
	const char *name;

	/* Through its abstract origin, and a member function's specification in its class. */
	a = dwarf_attr_integrate(scope, DW_AT_linkage_name, &mem);
	if (!a)
		a = dwarf_attr_integrate(scope, DW_AT_MIPS_linkage_name, &mem);
	name = a ? dwarf_formstring(a) : NULL;
	return name ? name : dwarf_diename(scope);
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

/*
 * dwarf_getscopes gives the innermost scope at vaddr, but past an inlined instance it goes on
 * with the scopes of the inlined function's abstract definition, not with the function it was
 * inlined into; dwarf_getscopes_die of that innermost scope gives its parents in the unit's
 * tree: the inlined instances, then the real function.
 */
size_t mt_lines_inlined(struct mt_lines *l, uint64_t vaddr, struct mt_inlined *out, size_t max)
{
	Dwarf_Die cu, *pc_scopes = NULL, *scopes = NULL;
	Dwarf_Files *files = NULL;
	size_t n_files = 0, n = 0;
	int n_scopes;

	if (!l || !max || !unit_of(l, vaddr, &cu))
		return 0;
	if (dwarf_getscopes(&cu, vaddr, &pc_scopes) <= 0)
		goto out;
	n_scopes = dwarf_getscopes_die(&pc_scopes[0], &scopes);
	if (n_scopes <= 0)
		goto out;
	if (dwarf_getsrcfiles(&cu, &files, &n_files))
		files = NULL;
	for (int i = 0; i < n_scopes && n < max; i++) {
		if (dwarf_tag(&scopes[i]) == DW_TAG_subprogram)
			break;
		if (dwarf_tag(&scopes[i]) != DW_TAG_inlined_subroutine)
			continue;
		out[n].name = inlined_name(&scopes[i]);
		if (!out[n].name)
			out[n].name = "??";
		call_site(&scopes[i], files, n_files, &out[n]);
		n++;
	}
out:
	free(scopes);
	free(pc_scopes);
	return n;
}
