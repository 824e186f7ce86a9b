// SPDX-License-Identifier: GPL-2.0
/*
 * The tables of a pprof profile being built (output_pprof.c): its strings, functions, mappings
 * (one per recorded file) and locations (one per caller's frame, with the functions inlined at
 * it), each entry made once and found again by its key.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "base/hashtab.h"
#include "bpf/unwind_row.h"
#include "base/printable.h"
#include "output/output_pprof_int.h"

/* ---- growing arrays and tables --------------------------------------------------------------- */

/* u64 key -> index + 1; a value of 0 is an empty slot. */
struct idmap_entry {
	uint64_t key;
	uint32_t val;
};

static bool idmap_empty(const void *e)
{
	return !((const struct idmap_entry *)e)->val;
}

static uint64_t idmap_hash(const void *ctx, const void *e)
{
	(void)ctx;
	return mt_hash_u64(((const struct idmap_entry *)e)->key);
}

static bool idmap_is(const void *ctx, const void *e, const void *key)
{
	(void)ctx;
	return ((const struct idmap_entry *)e)->key == *(const uint64_t *)key;
}

static const struct mt_hashtab_ops idmap_ops = {
    .entry = sizeof(struct idmap_entry),
    .max_load_pct = 50,
    .min_slots = 256,
    .hash = idmap_hash,
    .empty = idmap_empty,
};

/*
 * The value of key's slot: its index + 1, or 0 where it is to go (the caller sets it, and the
 * entry counts from then on). NULL without memory.
 */
static uint32_t *idmap_slot(struct idmap *m, uint64_t key)
{
	struct idmap_entry *e;

	if (mt_hashtab_reserve(&m->t, &idmap_ops, NULL, m->t.used + 1))
		return NULL;
	e = mt_hashtab_find(&m->t, &idmap_ops, mt_hash_u64(key), idmap_is, NULL, &key);
	if (!e->val) {
		e->key = key;
		mt_hashtab_added(&m->t);
	}
	return &e->val;
}

static void idmap_free(struct idmap *m)
{
	mt_hashtab_free(&m->t);
}

static const char *const pseudo_name[PSEUDO_MAX] = {"[truncated]", "[cut]", "[unknown]"};

/* The index of s (any bytes, stored as UTF-8) in the string table, added when new. 0 or -ENOMEM. */
int pprof_intern(struct mt_strtab *st, const char *s, int64_t *idx)
{
	char *u = mt_utf8_dup(s);
	int64_t k;

	if (!u)
		return -ENOMEM;
	k = mt_strtab_intern(st, u);
	free(u);
	if (k < 0)
		return -ENOMEM;
	*idx = k;
	return 0;
}

/* The function named name (any bytes): its id. 0 or -ENOMEM. */
static int function_id(struct builder *b, const char *name, uint64_t *id)
{
	int64_t idx;
	uint32_t *slot;
	MtPprof__Function *f;

	if (pprof_intern(&b->st, name, &idx))
		return -ENOMEM;
	slot = idmap_slot(&b->func_of_name, (uint64_t)idx);
	if (!slot)
		return -ENOMEM;
	if (!*slot) {
		if (MT_GROW(b->funcs, b->cap_funcs, b->n_funcs + 1, 64))
			return -ENOMEM;
		f = &b->funcs[b->n_funcs];
		mt_pprof__function__init(f);
		f->id = b->n_funcs + 1;
		/* Demangled by the symboliser; the mangled name is not kept. */
		f->name = f->system_name = idx;
		*slot = (uint32_t)++b->n_funcs;
	}
	*id = *slot;
	return 0;
}

/* The mapping of a recorded file: index + 1, or 0 when no record names the file. */
int pprof_mapping_of(struct builder *b, uint16_t file_id, uint32_t *out)
{
	const struct mt_report_file *rf;
	struct mapping *m;

	*out = b->map_of_file[file_id];
	if (*out || !b->file_of_id[file_id])
		return 0;
	rf = &b->rep->files[b->file_of_id[file_id] - 1];
	if (MT_GROW(b->maps, b->cap_maps, b->n_maps + 1, 64))
		return -ENOMEM;
	m = &b->maps[b->n_maps];
	memset(m, 0, sizeof(*m));
	mt_pprof__mapping__init(&m->m);
	m->m.id = b->n_maps + 1;
	m->m.has_functions = true; /* until a location in it has no function */
	if (pprof_intern(&b->st, rf->path, &m->m.filename) ||
	    pprof_intern(&b->st, rf->build_id, &m->m.build_id))
		return -ENOMEM;
	*out = b->map_of_file[file_id] = (uint32_t)++b->n_maps;
	return 0;
}

static struct loc *new_loc(struct builder *b, uint32_t *slot)
{
	struct loc *l;

	if (MT_GROW(b->locs, b->cap_locs, b->n_locs + 1, 64))
		return NULL;
	l = &b->locs[b->n_locs];
	memset(l, 0, sizeof(*l));
	mt_pprof__location__init(&l->m);
	mt_pprof__line__init(&l->line);
	l->m.id = b->n_locs + 1;
	*slot = (uint32_t)++b->n_locs;
	return l;
}

int pprof_pseudo_location(struct builder *b, enum pseudo p, uint64_t *id)
{
	struct loc *l;
	uint64_t fid;

	if (!b->pseudo_loc[p]) {
		if (function_id(b, pseudo_name[p], &fid))
			return -ENOMEM;
		l = new_loc(b, &b->pseudo_loc[p]);
		if (!l)
			return -ENOMEM;
		l->line.function_id = fid;
		l->m.n_line = 1;
	}
	*id = b->pseudo_loc[p];
	return 0;
}

/* A function's line in a location: its function's id (0: none) and line. */
static int set_line(struct builder *b, const struct mt_frame_info *sym, MtPprof__Line *line)
{
	uint64_t fid = 0;

	if (sym->function && function_id(b, sym->function, &fid))
		return -ENOMEM;
	/* A function's file is the first source line seen in it (pprof keeps one per function). */
	if (fid && sym->source && !b->funcs[fid - 1].filename &&
	    pprof_intern(&b->st, sym->source, &b->funcs[fid - 1].filename))
		return -ENOMEM;
	line->function_id = fid;
	line->line = fid ? sym->line : 0;
	return 0;
}

/* The functions inlined at a location (sym[0 .. n - 1]) as its first lines. */
static int inlined_lines(struct builder *b, struct loc *l, const struct mt_frame_info *sym,
			 size_t n)
{
	l->inlined = calloc(n, sizeof(*l->inlined));
	l->all = calloc(n + 1, sizeof(*l->all));
	if (!l->inlined || !l->all)
		return -ENOMEM;
	l->n_inlined = n;
	for (size_t i = 0; i < n; i++) {
		mt_pprof__line__init(&l->inlined[i]);
		if (set_line(b, &sym[i], &l->inlined[i]))
			return -ENOMEM;
	}
	return 0;
}

/*
 * The location of a caller's frame (a return address), at its call instruction: the byte
 * before the return address, where memtrack's symboliser looks too. sym[0 .. n - 2] are the
 * functions inlined there, sym[n - 1] its own.
 */
int pprof_frame_location(struct builder *b, uint64_t frame, const struct mt_frame_info *sym,
			 size_t n, uint64_t *id)
{
	uint32_t *slot = idmap_slot(&b->loc_of_frame, frame);
	uint64_t fid = 0, off;
	uint32_t map = 0;
	struct loc *l;

	if (!slot)
		return -ENOMEM;
	if (*slot) {
		*id = *slot;
		return 0;
	}
	off = MT_FRAME_IN_FILE(frame) ? MT_FRAME_OFFSET(frame) : frame;
	if (MT_FRAME_IN_FILE(frame) && pprof_mapping_of(b, (uint16_t)MT_FRAME_FILE(frame), &map))
		return -ENOMEM;
	l = new_loc(b, slot);
	if (!l || set_line(b, &sym[n - 1], &l->line) || (n > 1 && inlined_lines(b, l, sym, n - 1)))
		return -ENOMEM;
	fid = l->line.function_id;
	l->mapping = map;
	l->offset = off ? off - 1 : 0;
	/* Without its own function, its inlined ones still (line, last, left out). */
	l->m.n_line = l->n_inlined + (fid ? 1 : 0);
	if (map && !fid)
		b->maps[map - 1].m.has_functions = false;
	if (map && fid && sym[n - 1].line)
		b->maps[map - 1].m.has_filenames = b->maps[map - 1].m.has_line_numbers = true;
	if (map && (!b->maps[map - 1].end || l->offset < b->maps[map - 1].lo))
		b->maps[map - 1].lo = l->offset;
	if (map && l->offset + 1 > b->maps[map - 1].end)
		b->maps[map - 1].end = l->offset + 1;
	*id = *slot;
	return 0;
}

void pprof_builder_free(struct builder *b)
{
	for (size_t i = 0; i < b->n_samples; i++)
		free(b->samples[i].m.location_id);
	free(b->samples);
	for (size_t i = 0; i < b->n_locs; i++) {
		free(b->locs[i].inlined);
		free(b->locs[i].all);
	}
	free(b->locs);
	free(b->funcs);
	free(b->maps);
	free(b->comments);
	free(b->map_of_file);
	free(b->file_of_id);
	idmap_free(&b->loc_of_frame);
	idmap_free(&b->func_of_name);
	mt_strtab_free(&b->st);
}
