// SPDX-License-Identifier: GPL-2.0
/* Stop points: parsing --stop-at and matching a program or a mapped file against it. */
#include <errno.h>
#include <fcntl.h>
#include <fnmatch.h>
#include <gelf.h>
#include <libelf.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "inspect/stoppoint.h"

static int take(char **dst, const char *src, size_t len)
{
	*dst = strndup(src, len);
	return *dst ? 0 : -ENOMEM;
}

/* A position: "0", "0.1", "0.1.0": numbers separated by dots, starting with the root's 0. */
static bool valid_pos(const char *pos, size_t len)
{
	bool digit = false;

	if (len == 0 || pos[0] != '0' || (len > 1 && pos[1] != '.'))
		return false;
	for (size_t i = 0; i < len; i++) {
		if (pos[i] == '.' && !digit)
			return false;
		if (pos[i] != '.' && (pos[i] < '0' || pos[i] > '9'))
			return false;
		digit = pos[i] != '.';
	}
	return digit;
}

int mt_stop_point_parse(const char *arg, struct mt_stop_point *sp)
{
	const char *p = arg, *comma;
	int err = 0;

	*sp = (struct mt_stop_point){.text = arg};
	if (strncmp(p, "proc:", 5) == 0) {
		p += 5;
		comma = strchrnul(p, ',');
		if (!valid_pos(p, comma - p))
			goto invalid;
		err = take(&sp->proc, p, comma - p);
		p = *comma ? comma + 1 : comma;
		if (!*p && !*comma)
			return err; /* proc:POS alone: its exec */
	}
	if (strcmp(p, "exec") == 0)
		return err;
	if (strncmp(p, "exec:", 5) == 0 && p[5])
		return err ?: take(&sp->glob, p + 5, strlen(p + 5));
	if (strncmp(p, "map:", 4) == 0 && p[4]) {
		sp->map = true;
		return err ?: take(&sp->glob, p + 4, strlen(p + 4));
	}
invalid:
	mt_stop_point_free(sp);
	return err ?: -EINVAL;
}

void mt_stop_point_free(struct mt_stop_point *sp)
{
	free(sp->glob);
	free(sp->proc);
	*sp = (struct mt_stop_point){0};
}

bool mt_stop_point_aims_at(const struct mt_stop_point *sp, const char *pos, bool root)
{
	if (!sp->text)
		return false;
	if (sp->proc)
		return strcmp(sp->proc, pos) == 0;
	return sp->glob || root;
}

/* The DT_SONAME of the ELF file at path, copied into buf; false when it has none. */
static bool read_soname(const char *path, char *buf, size_t len)
{
	Elf_Scn *scn = NULL;
	bool found = false;
	GElf_Shdr sh;
	GElf_Dyn dyn;
	Elf_Data *data;
	Elf *elf;
	int fd;

	if (elf_version(EV_CURRENT) == EV_NONE)
		return false;
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return false;
	elf = elf_begin(fd, ELF_C_READ, NULL);
	while (elf && !found && (scn = elf_nextscn(elf, scn))) {
		if (!gelf_getshdr(scn, &sh) || sh.sh_type != SHT_DYNAMIC)
			continue;
		data = elf_getdata(scn, NULL);
		for (size_t i = 0; data && sh.sh_entsize && i < sh.sh_size / sh.sh_entsize; i++) {
			const char *name;

			if (!gelf_getdyn(data, i, &dyn) || dyn.d_tag != DT_SONAME)
				continue;
			name = elf_strptr(elf, sh.sh_link, dyn.d_un.d_val);
			if (name && strlen(name) < len) {
				strcpy(buf, name);
				found = true;
			}
			break;
		}
	}
	elf_end(elf);
	close(fd);
	return found;
}

bool mt_stop_point_matches(const struct mt_stop_point *sp, const char *path)
{
	const char *base = strrchr(path, '/');
	char soname[256];

	if (!sp->glob)
		return true;
	if (fnmatch(sp->glob, path, 0) == 0 || (base && fnmatch(sp->glob, base + 1, 0) == 0))
		return true;
	return read_soname(path, soname, sizeof(soname)) && fnmatch(sp->glob, soname, 0) == 0;
}
