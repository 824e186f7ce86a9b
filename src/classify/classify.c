// SPDX-License-Identifier: GPL-2.0
/*
 * Classification of an executable file by the allocator functions it defines.
 *
 * One table drives everything: a symbol the file defines either matches a row (and becomes a
 * probe point of that row's kind) or is ignored. The family is a label derived afterwards from
 * the rows that matched and a few marker symbols; the only thing it changes is whether
 * operator new/delete are probed (mt_classify_wants_row).
 *
 * This file opens the file and runs the passes in their order: its symbols scanned
 * (classify_symbols.c), the forwarders dropped and the family picked (classify_family.c), and the
 * points made or refused (classify_points.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "base/regfile.h"
#include "classify/classify.h"
#include "classify/classify_int.h"
#include "classify/placement.h"

static int classify_elf(Elf *e, int fd, enum mt_placement_mode mode, struct mt_classification *out)
{
	struct scan s = {0};
	GElf_Ehdr eh;
	int err;

	if (elf_kind(e) != ELF_K_ELF || !gelf_getehdr(e, &eh))
		return -ENOEXEC;
	/* The BPF side reads x86-64 argument registers; nothing else can be probed. */
	if (gelf_getclass(e) != ELFCLASS64 || eh.e_machine != EM_X86_64)
		return -EOPNOTSUPP;
	mt_classify_elf_build_id(e, out->build_id);
	err = mt_classify_scan_symbols(e, &s);
	if (!err && s.n_je_prefixes) {
		s.pass = PASS_PREFIXED;
		err = mt_classify_scan_symbols(e, &s);
	}
	if (err)
		goto out;
	mt_classify_drop_default_shims(&s, fd, e);
	mt_classify_drop_heap_wrappers(&s, fd, e);
	out->has_symbols = s.has_symbols;
	out->static_exec = mt_classify_elf_static_exec(e);
	out->family = mt_classify_pick_family(&s);
	/* Only without .symtab: with it, an allocator's own API names it (mt_classify_pick_family).
	 */
	if (!s.has_symtab)
		out->unnamed =
		    mt_classify_elf_allocator_text(e, out->family, s.markers & MK_THREAD_START);
	if (mt_classify_wants_any(out->family, &s)) {
		s.pass = PASS_FUNCS;
		err = mt_classify_scan_symbols(e, &s);
	}
	if (!err)
		err = mt_classify_build_points(out, fd, e, &s, mode);
out:
	free(s.cands);
	free(s.funcs);
	return err;
}

/*
 * Errors: -ENOEXEC (not ELF), -EOPNOTSUPP (ELF for another machine or class), -EIO (malformed
 * ELF), -ENOMEM. A file without symbol tables is not an error: has_symbols tells the caller.
 */
int mt_classify_fd(int fd, enum mt_placement_mode mode, struct mt_classification *out)
{
	Elf *e;
	int err;

	memset(out, 0, sizeof(*out));
	if (elf_version(EV_CURRENT) == EV_NONE)
		return -EIO;
	e = elf_begin(fd, ELF_C_READ_MMAP, NULL);
	if (!e)
		return -ENOEXEC;
	err = classify_elf(e, fd, mode, out);
	elf_end(e);
	if (err)
		mt_classification_free(out);
	return err;
}

int mt_classify_path(const char *path, enum mt_placement_mode mode, struct mt_classification *out)
{
	int fd = mt_regfile_open(path, MT_REGFILE_ONLY, NULL, 0);
	int err;

	if (fd < 0) {
		memset(out, 0, sizeof(*out));
		return fd;
	}
	err = mt_classify_fd(fd, mode, out);
	close(fd);
	return err;
}

void mt_classification_free(struct mt_classification *c)
{
	free(c->points);
	c->points = NULL;
	c->n_points = 0;
	free(c->refused);
	c->refused = NULL;
	c->n_refused = 0;
}
