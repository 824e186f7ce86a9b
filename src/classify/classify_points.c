// SPDX-License-Identifier: GPL-2.0
/*
 * The probe points of a classified file: one per address of the candidates its family probes,
 * each proven to start an instruction and placed (placement.c), or recorded as not probed with
 * the reason why.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include <gelf.h>
#include <libelf.h>

#include "classify/classify.h"
#include "classify/classify_int.h"
#include "classify/placement.h"

static int cand_cmp(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	if (x->vaddr != y->vaddr)
		return x->vaddr < y->vaddr ? -1 : 1;
	return x->row - y->row;
}

static void refuse(struct mt_classification *out, const char *name, const char *why)
{
	struct mt_refused_point *r = &out->refused[out->n_refused++];

	snprintf(r->symbol, sizeof(r->symbol), "%s", name);
	snprintf(r->reason, sizeof(r->reason), "%s", why);
}

/* The sized function that vaddr lies strictly inside of, if any. */
static const struct func *enclosing(const struct scan *s, uint64_t vaddr)
{
	for (size_t i = 0; i < s->n_funcs; i++)
		if (s->funcs[i].vaddr < vaddr && vaddr - s->funcs[i].vaddr < s->funcs[i].size)
			return &s->funcs[i];
	return NULL;
}

/*
 * A uprobe writes a breakpoint byte at its address: anywhere but the first byte of an
 * instruction it corrupts the code. Decode from the start of the function the point lies in
 * (itself when it lies in none) and refuse the point unless an instruction starts exactly there.
 * Returns 1 and why when refused, 0 when proven, or a negative errno.
 */
static int check_boundary(int fd, Elf *e, const struct scan *s, const struct cand *c, char *why,
			  size_t n)
{
	const struct func *f = enclosing(s, c->vaddr);
	uint64_t start = f ? f->vaddr : c->vaddr, off, avail, target = c->vaddr - start;
	size_t len = (size_t)target + 16;
	uint8_t *code;
	ssize_t got;
	bool ok;

	if (f && !mt_classify_elf_offset(e, start, &off, &avail)) {
		snprintf(why, n, "inside %s, which is not in an executable segment", f->name);
		return 1;
	}
	if (!f)
		mt_classify_elf_offset(e, start, &off, &avail);
	if (len > avail)
		len = (size_t)avail;
	code = malloc(len ? len : 1);
	if (!code)
		return -ENOMEM;
	got = pread(fd, code, len, (off_t)off);
	ok = got > 0 && mt_insn_boundary(code, (size_t)got, target);
	free(code);
	if (ok)
		return 0;
	if (f)
		snprintf(why, n,
			 "not an instruction boundary: +%" PRIu64
			 " falls inside an instruction of %s",
			 target, f->name);
	else
		snprintf(why, n, "its first instruction cannot be decoded");
	return 1;
}

static int add_point(struct mt_classification *out, int fd, Elf *e, const struct scan *s,
		     const struct cand *c, enum mt_placement_mode mode,
		     const struct mt_uprobe_caps *caps)
{
	const struct alloc_fn *row = mt_classify_row(c->row);
	struct mt_probe_point *pt;
	uint64_t off, avail;
	char why[128];
	int err;

	if (!mt_classify_elf_offset(e, c->vaddr, &off, &avail)) {
		refuse(out, c->name, "not in an executable segment");
		return 0;
	}
	if (!c->size) {
		refuse(out, c->name, "its symbol has size 0: its code cannot be checked");
		return 0;
	}
	if (row->hint == MT_FAM_GO && !mt_classify_elf_go_register_abi(e)) {
		refuse(out, c->name,
		       "no Go 1.18+ build info: the size may not be in RAX (register ABI), so Go's "
		       "heap is not recorded");
		return 0;
	}
	err = check_boundary(fd, e, s, c, why, sizeof(why));
	if (err < 0)
		return err;
	if (err) {
		refuse(out, c->name, why);
		return 0;
	}
	pt = &out->points[out->n_points];
	memset(pt, 0, sizeof(*pt));
	snprintf(pt->symbol, sizeof(pt->symbol), "%s", c->name);
	pt->func_offset = off;
	pt->kind = row->kind;
	pt->ret = row->ret;
	pt->layout = row->layout;
	pt->heap_first = row->flags & ROW_HEAP;
	pt->zeroes = row->flags & ROW_ZERO;
	pt->unrecorded = row->unrecorded;
	out->n_points++;
	err = mt_place_point(fd, pt, c->size, avail, mode, caps);
	/* Go's mallocgc is counted at its stack check only (placement.c): none, no point. */
	if (!err && pt->kind == MT_K_GO_MALLOC && !strcmp(pt->reason, MT_PLACE_GO_REFUSED)) {
		out->n_points--;
		refuse(out, c->name, MT_PLACE_GO_REFUSED ": its heap is not recorded");
	}
	return err;
}

/* One point per address, named by the earliest row; the largest alias size bounds the body. */
int mt_classify_build_points(struct mt_classification *out, int fd, Elf *e, struct scan *s,
			     enum mt_placement_mode mode)
{
	struct mt_uprobe_caps caps;
	int err;

	if (!s->n)
		return 0;
	mt_uprobe_caps_detect(&caps);
	qsort(s->cands, s->n, sizeof(*s->cands), cand_cmp);
	out->points = calloc(s->n, sizeof(*out->points));
	out->refused = calloc(s->n, sizeof(*out->refused));
	if (!out->points || !out->refused)
		return -ENOMEM;
	for (size_t i = 0; i < s->n; i++) {
		struct cand c = s->cands[i];

		if (i > 0 && s->cands[i - 1].vaddr == c.vaddr)
			continue;
		for (size_t j = i + 1; j < s->n && s->cands[j].vaddr == c.vaddr; j++)
			if (s->cands[j].size > c.size)
				c.size = s->cands[j].size;
		if (!mt_classify_wants_row(out->family, mt_classify_row(c.row)))
			continue;
		err = add_point(out, fd, e, s, &c, mode, &caps);
		if (err)
			return err;
	}
	err = mt_classify_return_points(out, fd, e);
	if (err)
		return err;
	if (!out->n_points) {
		free(out->points); /* points is NULL whenever there are none */
		out->points = NULL;
	}
	if (!out->n_refused) {
		free(out->refused);
		out->refused = NULL;
	}
	return 0;
}
