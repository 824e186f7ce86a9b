// SPDX-License-Identifier: GPL-2.0
/*
 * operator new's functions in a file, and a program's table cut down to them
 * (src/unwind/unwind_wrapper.h).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include <gelf.h>
#include <libelf.h>

#include "base/grow.h"
#include "unwind/unwind_wrapper.h"

/* operator new and new[] in every form (nothrow, aligned, sized): _Znw and _Zna. */
static bool is_operator_new(const char *name)
{
	return name && (!strncmp(name, "_Znw", 4) || !strncmp(name, "_Zna", 4));
}

/* Add [lo, hi) to w, merged with a range it overlaps or touches (aliases of one function). */
static void range_add(struct mt_unwind_wrapper *w, uint64_t lo, uint64_t hi)
{
	for (size_t i = 0; i < w->n; i++) {
		if (lo <= w->hi[i] && w->lo[i] <= hi) {
			w->lo[i] = lo < w->lo[i] ? lo : w->lo[i];
			w->hi[i] = hi > w->hi[i] ? hi : w->hi[i];
			return;
		}
	}
	if (w->n == MT_UNWIND_WRAPPER_RANGES)
		return;
	w->lo[w->n] = lo;
	w->hi[w->n] = hi;
	w->n++;
}

static void dynsym_scan(Elf *e, Elf_Scn *scn, const GElf_Shdr *sh, struct mt_unwind_wrapper *w)
{
	Elf_Data *d = elf_getdata(scn, NULL);

	for (size_t i = 0; d && i < sh->sh_size / sh->sh_entsize; i++) {
		GElf_Sym sym;

		if (!gelf_getsym(d, i, &sym) || sym.st_shndx == SHN_UNDEF ||
		    GELF_ST_TYPE(sym.st_info) != STT_FUNC ||
		    !is_operator_new(elf_strptr(e, sh->sh_link, sym.st_name)))
			continue;
		/* A function of unknown size: its first byte, which a return address is past. */
		range_add(w, sym.st_value, sym.st_value + (sym.st_size ? sym.st_size : 1));
	}
}

static bool is_program(Elf *e)
{
	GElf_Ehdr eh;
	size_t n;

	if (!gelf_getehdr(e, &eh))
		return false;
	if (eh.e_type == ET_EXEC)
		return true;
	if (elf_getphdrnum(e, &n))
		return false;
	for (size_t i = 0; i < n; i++) {
		GElf_Phdr ph;

		if (gelf_getphdr(e, i, &ph) && ph.p_type == PT_INTERP)
			return true;
	}
	return false;
}

void mt_unwind_wrapper_find(int fd, struct mt_unwind_wrapper *w)
{
	Elf *e = elf_version(EV_CURRENT) == EV_NONE ? NULL : elf_begin(fd, ELF_C_READ_MMAP, NULL);
	Elf_Scn *scn = NULL;

	memset(w, 0, sizeof(*w));
	while (e && (scn = elf_nextscn(e, scn))) {
		GElf_Shdr sh;

		if (gelf_getshdr(scn, &sh) && sh.sh_type == SHT_DYNSYM && sh.sh_entsize)
			dynsym_scan(e, scn, &sh, w);
	}
	if (e && w->n)
		w->program = is_program(e);
	if (e)
		elf_end(e);
}

struct rows {
	struct mt_unwind_row *v;
	size_t n, cap;
};

static int rows_push(struct rows *r, struct mt_unwind_row row)
{
	if (MT_GROW(r->v, r->cap, r->n + 1, 64))
		return -ENOMEM;
	r->v[r->n++] = row;
	return 0;
}

static struct mt_unwind_row caller_row(uint64_t addr)
{
	return (struct mt_unwind_row){.addr = (uint32_t)addr,
				      .rules = MT_UNW_RULES(MT_CFA_CALLER, MT_RBP_SAME)};
}

/* t's rows over [lo, hi): the rule in force at lo (both rows of a wide one), then t's own. */
static int range_rows(const struct mt_unwind_table *t, uint64_t lo, uint64_t hi, struct rows *r)
{
	const struct mt_unwind_row *rule = mt_unwind_table_find(t, lo);
	struct mt_unwind_row first = {.addr = (uint32_t)lo};
	size_t k = 0;
	int err = 0;

	if (rule) {
		/* The rule, and the wide row after it at the same addr. */
		k = (size_t)(rule - t->rows);
		do {
			first = t->rows[k++];
			first.addr = (uint32_t)lo;
			err = rows_push(r, first);
		} while (!err && k < t->n_rows && MT_UNW_CFA(&t->rows[k]) == MT_CFA_WIDE);
	} else {
		err = rows_push(r, first);
	}
	for (; !err && k < t->n_rows && t->rows[k].addr < hi; k++)
		if (t->rows[k].addr > lo)
			err = rows_push(r, t->rows[k]);
	return err;
}

static int range_cmp(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;

	return *x < *y ? -1 : *x > *y;
}

int mt_unwind_wrapper_table(const struct mt_unwind_table *t, const struct mt_unwind_wrapper *w,
			    struct mt_unwind_table *out)
{
	uint64_t sorted[MT_UNWIND_WRAPPER_RANGES][2];
	struct rows r = {0};
	int err;

	for (size_t i = 0; i < w->n; i++) {
		sorted[i][0] = w->lo[i];
		sorted[i][1] = w->hi[i];
	}
	qsort(sorted, w->n, sizeof(sorted[0]), range_cmp);
	err = rows_push(&r, caller_row(0));
	for (size_t i = 0; !err && i < w->n; i++) {
		uint64_t lo = sorted[i][0], hi = sorted[i][1];

		/* Ranges that a later one joined: one run of rows. */
		while (i + 1 < w->n && sorted[i + 1][0] <= hi) {
			i++;
			hi = sorted[i][1] > hi ? sorted[i][1] : hi;
		}
		err = range_rows(t, lo, hi, &r);
		if (!err)
			err = rows_push(&r, caller_row(hi));
	}
	if (err) {
		free(r.v);
		return err;
	}
	*out = *t;
	out->rows = r.v;
	out->n_rows = r.n;
	return 0;
}
