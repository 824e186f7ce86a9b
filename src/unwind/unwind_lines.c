// SPDX-License-Identifier: GPL-2.0
/*
 * Source lines of recorded frames (unwind_lines.h). The compilation unit of an address comes
 * from .debug_aranges, which GCC writes by default; a file without them is searched unit by
 * unit, which only files built without aranges pay for.
 */
#include <fcntl.h>
#include <stdbool.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

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
	/* glibc's units say "./malloc/malloc.c", relative to its build directory. */
	*source = strncmp(src, "./", 2) ? src : src + 2;
	*line = (unsigned int)n;
	return true;
}
