// SPDX-License-Identifier: GPL-2.0
/*
 * The allocation sites of a run recorded with --stacks (sites.h) as a pprof profile: one gzip'd
 * profile.proto message (`memtrack report --pprof OUT.pb.gz`), which go tool pprof, Pyroscope
 * and Speedscope read. protobuf-c encodes it from proto/profile.proto; zlib compresses it.
 *
 * One sample per site and process image (per site for a report loaded without its cells), its
 * locations leaf first from the allocator's caller outward, as folded stacks name them
 * (output_sites.c); the image's "pid" and "program" are labels of the sample, so that a tree's
 * profile splits by process. The allocator is the sample's "allocator" label, not a frame, so that
 * the flat top of a profile is the code that asked for memory. A frame is a file and an offset in
 * it, not an address in one process (docs/FORMAT.md): each file becomes one mapping placed in an
 * address range of its own, where address - memory_start + file_offset is the frame's file offset,
 * as pprof's symbolisers (by path or build id) expect.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include <zlib.h>

#include "base/grow.h"
#include "base/hashtab.h"
#include "bpf/unwind_row.h"
#include "output/output.h"
#include "output/output_strtab.h"
#include "base/printable.h"
#include "proto/profile.pb-c.h"

#ifndef MT_VERSION
#define MT_VERSION "0.0.0"
#endif

/* Where the first file's range starts: not 0, which reads as "no address". */
#define MAPPING_BASE  0x10000ULL
#define MAPPING_ALIGN 0x1000ULL

/* ---- growing arrays and tables --------------------------------------------------------------- */

/* u64 key -> index + 1; a value of 0 is an empty slot. */
struct idmap_entry {
	uint64_t key;
	uint32_t val;
};

struct idmap {
	struct mt_hashtab t;
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

/* ---- the profile being built ----------------------------------------------------------------- */

/* A location and what it points to, fixed up when every one is known (the arrays move). */
struct loc {
	MtPprof__Location m;
	MtPprof__Line line;
	MtPprof__Line *lines[1];
	/* Functions inlined at it, innermost first, before line (pprof's order); all: m.line. */
	MtPprof__Line *inlined, **all;
	size_t n_inlined;
	uint32_t mapping; /* index + 1 of the mapping, 0: none */
	uint64_t offset;  /* in the mapping's file, or the address when in no mapping */
};

/* The sample types: four, and four more of the two lost classes for a run with --leaks. */
#define TYPES	    4
#define TYPES_LEAKS 8

/* A sample's labels: its allocator, and the pid and program of its process image. */
#define LABELS 3

struct sample {
	MtPprof__Sample m;
	int64_t values[TYPES_LEAKS];
	MtPprof__Label label[LABELS];
	MtPprof__Label *labels[LABELS];
};

struct mapping {
	MtPprof__Mapping m;
	uint64_t lo, end; /* the lowest offset a location has in it, and past the highest */
};

/* The pseudo-frames of folded stacks, where a stack has no frame or ends early. */
enum pseudo { PSEUDO_TRUNCATED, PSEUDO_CUT, PSEUDO_UNKNOWN, PSEUDO_MAX };
static const char *const pseudo_name[PSEUDO_MAX] = {"[truncated]", "[cut]", "[unknown]"};

struct builder {
	const struct mt_report *rep;
	struct mt_strtab st; /* each string once, as valid UTF-8 (proto3 strings must be) */
	struct loc *locs;
	size_t n_locs, cap_locs;
	struct idmap loc_of_frame;
	uint32_t pseudo_loc[PSEUDO_MAX]; /* index + 1 of locs */
	MtPprof__Function *funcs;
	size_t n_funcs, cap_funcs;
	struct idmap func_of_name; /* string index -> funcs */
	struct mapping *maps;
	size_t n_maps, cap_maps;
	uint32_t *map_of_file; /* [65536]: file_id -> index + 1 of maps */
	uint32_t *file_of_id;  /* [65536]: file_id -> index + 1 of rep->files */
	struct sample *samples;
	size_t n_samples, cap_samples;
	int64_t *comments;
	size_t n_comments, cap_comments;
	int64_t allocator_key, pid_key, program_key;
};

/* The index of s (any bytes, stored as UTF-8) in the string table, added when new. 0 or -ENOMEM. */
static int intern(struct mt_strtab *st, const char *s, int64_t *idx)
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

static int add_comment(struct builder *b, const char *text)
{
	int64_t idx;

	if (intern(&b->st, text, &idx) ||
	    MT_GROW(b->comments, b->cap_comments, b->n_comments + 1, 64))
		return -ENOMEM;
	b->comments[b->n_comments++] = idx;
	return 0;
}

/* The function named name (any bytes): its id. 0 or -ENOMEM. */
static int function_id(struct builder *b, const char *name, uint64_t *id)
{
	int64_t idx;
	uint32_t *slot;
	MtPprof__Function *f;

	if (intern(&b->st, name, &idx))
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
static int mapping_of(struct builder *b, uint16_t file_id, uint32_t *out)
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
	if (intern(&b->st, rf->path, &m->m.filename) ||
	    intern(&b->st, rf->build_id, &m->m.build_id))
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

static int pseudo_location(struct builder *b, enum pseudo p, uint64_t *id)
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
	    intern(&b->st, sym->source, &b->funcs[fid - 1].filename))
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
static int frame_location(struct builder *b, uint64_t frame, const struct mt_frame_info *sym,
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
	if (MT_FRAME_IN_FILE(frame) && mapping_of(b, (uint16_t)MT_FRAME_FILE(frame), &map))
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

/* The frames from k that are one location: the functions inlined at it, then its own. */
static uint32_t location_frames(const struct mt_site *s, uint32_t k)
{
	uint32_t n = 1;

	while (k + n < s->n_frames && s->sym[k + n - 1].inlined)
		n++;
	return n;
}

/* A site's locations, leaf first: the allocator's caller out, then the folded stack's marker. */
static int site_locations(struct builder *b, const struct mt_site *s, struct sample *out)
{
	uint32_t n = 0;
	bool marker = s->n_frames && s->stop != MT_UNWIND_COMPLETE;
	uint64_t *ids;
	int err = 0;

	for (uint32_t k = 1; s->sym && k < s->n_frames; k += location_frames(s, k))
		n++;
	n = n ? n : 1;
	ids = calloc(n + marker, sizeof(*ids));
	if (!ids)
		return -ENOMEM;
	out->m.location_id = ids;
	out->m.n_location_id = n + marker;
	if (s->n_frames <= 1 || !s->sym)
		err = pseudo_location(b, PSEUDO_UNKNOWN, &ids[0]);
	for (uint32_t k = 1, i = 0, len; !err && s->sym && k < s->n_frames; k += len, i++) {
		len = location_frames(s, k);
		err = frame_location(b, s->frames[k], &s->sym[k], len, &ids[i]);
	}
	if (!err && marker)
		err = pseudo_location(
		    b, s->stop == MT_UNWIND_TRUNCATED ? PSEUDO_TRUNCATED : PSEUDO_CUT, &ids[n]);
	return err;
}

/* The pid and program labels of a sample of image i. 0 or -ENOMEM. */
static int image_labels(struct builder *b, struct sample *smp, size_t i)
{
	const struct mt_image *g = &b->rep->images[i];
	const char *base = strrchr(g->exe, '/');
	MtPprof__Label *pid = &smp->label[smp->m.n_label++];
	MtPprof__Label *program = &smp->label[smp->m.n_label++];

	mt_pprof__label__init(pid);
	mt_pprof__label__init(program);
	pid->key = b->pid_key;
	pid->num = g->pid;
	program->key = b->program_key;
	return intern(&b->st, base ? base + 1 : g->exe[0] ? g->exe : "?", &program->str);
}

/*
 * A sample of site s: its counts (the site's, or a cell's: the site in one image), and its loss
 * records' in image (SIZE_MAX: in every image's), labelled with the allocator and, for one
 * image, its pid and program.
 */
static int add_sample(struct builder *b, const struct mt_site *s, const struct mt_site *count,
		      size_t image)
{
	const char *allocator = s->sym && s->n_frames ? s->sym[0].function : NULL;
	struct sample *smp;

	if (MT_GROW(b->samples, b->cap_samples, b->n_samples + 1, 64))
		return -ENOMEM;
	smp = &b->samples[b->n_samples++];
	memset(smp, 0, sizeof(*smp));
	mt_pprof__sample__init(&smp->m);
	if (count) {
		smp->values[0] = (int64_t)count->allocations;
		smp->values[1] = (int64_t)count->bytes;
		smp->values[2] = (int64_t)count->live_blocks;
		smp->values[3] = (int64_t)count->live_bytes;
	}
	if (mt_leaks_any(b->rep->leaks)) {
		const struct mt_leaks *lk = b->rep->leaks;
		struct mt_leak_weight d =
		    mt_leaks_of_stack(lk, s->stack_id, image, MT_LEAK_DEFINITE);
		struct mt_leak_weight i =
		    mt_leaks_of_stack(lk, s->stack_id, image, MT_LEAK_INDIRECT);

		smp->values[4] = (int64_t)d.blocks;
		smp->values[5] = (int64_t)d.bytes;
		smp->values[6] = (int64_t)i.blocks;
		smp->values[7] = (int64_t)i.bytes;
	}
	if (allocator) {
		mt_pprof__label__init(&smp->label[0]);
		smp->label[0].key = b->allocator_key;
		smp->m.n_label = 1;
		if (intern(&b->st, allocator, &smp->label[0].str))
			return -ENOMEM;
	}
	if (image != SIZE_MAX && image_labels(b, smp, image))
		return -ENOMEM;
	return site_locations(b, s, smp);
}

static int add_site(struct builder *b, const struct mt_site *s)
{
	/* A stack record no allocation came from. */
	if (!s->allocations && !s->live_blocks)
		return 0;
	return add_sample(b, s, s, SIZE_MAX);
}

/* A site in one image, as a key that sorts: its stack id, then the image. */
static uint64_t cell_key(uint32_t stack, size_t image)
{
	return (uint64_t)stack << 32 | (uint32_t)image;
}

static int by_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;

	return x < y ? -1 : x > y;
}

/*
 * The loss records of the lost classes whose site made no allocation in their image (a block a
 * fork child inherited is scanned in the child): samples of their own, sorted keys in *out (to
 * free). Their number, or -ENOMEM.
 */
static ssize_t leaks_without_cell(const struct mt_report *rep, const uint64_t *cells, size_t n,
				  uint64_t **out)
{
	const struct mt_loss_record *v;
	size_t nr = mt_leaks_records(rep->leaks, &v), k = 0;
	uint64_t *keys = malloc((nr ? nr : 1) * sizeof(*keys));

	if (!keys)
		return -ENOMEM;
	for (size_t i = 0; i < nr; i++) {
		uint64_t key = cell_key(v[i].stack, v[i].image);

		if ((v[i].cls == MT_LEAK_DEFINITE || v[i].cls == MT_LEAK_INDIRECT) && v[i].stack &&
		    !bsearch(&key, cells, n, sizeof(*cells), by_u64))
			keys[k++] = key;
	}
	qsort(keys, k, sizeof(*keys), by_u64);
	*out = keys;
	return (ssize_t)k;
}

/*
 * One sample per site and process image (the report's cells), labelled with the image's pid and
 * program, so that pprof's -tagfocus and Pyroscope's labels split a tree by process.
 */
static int add_cells(struct builder *b)
{
	const struct mt_report *rep = b->rep;
	size_t n = mt_cells_count(rep->cells);
	uint64_t *keys = malloc((n ? n : 1) * sizeof(*keys)), *lost = NULL;
	ssize_t n_lost = 0;
	int err = keys ? 0 : -ENOMEM;

	for (size_t i = 0; !err && i < n; i++) {
		struct mt_cell c = mt_cells_get(rep->cells, i);
		const struct mt_site *s = mt_sites_of(rep->sites, c.stack_id);

		keys[i] = cell_key(c.stack_id, c.image);
		if (s && c.count &&
		    (c.count->allocations || c.count->live_blocks ||
		     mt_leaks_of_stack(rep->leaks, c.stack_id, c.image, MT_LEAK_DEFINITE).blocks ||
		     mt_leaks_of_stack(rep->leaks, c.stack_id, c.image, MT_LEAK_INDIRECT).blocks))
			err = add_sample(b, s, c.count, c.image);
	}
	if (!err && keys) {
		qsort(keys, n, sizeof(*keys), by_u64);
		n_lost = leaks_without_cell(rep, keys, n, &lost);
		err = n_lost < 0 ? (int)n_lost : 0;
	}
	for (ssize_t i = 0; !err && i < n_lost; i++) {
		const struct mt_site *s = mt_sites_of(rep->sites, (uint32_t)(lost[i] >> 32));

		if (s && (!i || lost[i] != lost[i - 1]))
			err = add_sample(b, s, NULL, (size_t)(uint32_t)lost[i]);
	}
	free(lost);
	free(keys);
	return err;
}

/* ---- the profile's header: what the values are, when, and notes ------------------------------ */

static const char *const sample_types[TYPES_LEAKS][2] = {
    {"alloc_objects", "count"},
    {"alloc_space", "bytes"},
    {"inuse_objects", "count"},
    {"inuse_space", "bytes"},
    /* The loss records' (aggregate/leaks.h), suppressed ones left out. */
    {"definitely_lost_objects", "count"},
    {"definitely_lost_space", "bytes"},
    {"indirectly_lost_objects", "count"},
    {"indirectly_lost_space", "bytes"},
};

/* How many sample types the profile has. */
static size_t n_types(const struct mt_report *rep)
{
	return mt_leaks_any(rep->leaks) ? TYPES_LEAKS : TYPES;
}

static int add_comments(struct builder *b)
{
	const struct mt_report *rep = b->rep;
	char line[512];
	size_t at;
	int err;

	at = (size_t)snprintf(line, sizeof(line), "memtrack %s:", MT_VERSION);
	for (int i = 0; i < rep->argc && at < sizeof(line); i++)
		at += (size_t)snprintf(line + at, sizeof(line) - at, " %s", rep->argv[i]);
	err = add_comment(b, line);
	if (!err)
		err = add_comment(b, "every allocation is counted, none sampled; inuse_* are the "
				     "blocks never freed (live at exit)");
	if (!err && mt_leaks_any(rep->leaks))
		err = add_comment(b, "definitely_lost_* and indirectly_lost_* are the leak scans' "
				     "loss records (memtrack run --leaks; docs/LEAKS.md)");
	if (!err && rep->footer.stacks_lost) {
		snprintf(line, sizeof(line),
			 "allocations recorded without their stack, not in this profile: %" PRIu64,
			 rep->footer.stacks_lost);
		err = add_comment(b, line);
	}
	if (!err && !mt_report_complete(rep))
		err = add_comment(b, "the recording is incomplete: memtrack report says why");
	return err;
}

/* ---- assembling and writing ------------------------------------------------------------------ */

/*
 * Once every location is known: the mappings' ranges, the addresses, the pointers. A file's range
 * covers the pages of its locations, as the mapping of its code would: pprof matches a mapping's
 * file offset and size with the file's executable segment before it names anything in it.
 */
static void place(struct builder *b)
{
	uint64_t start = MAPPING_BASE;

	for (size_t i = 0; i < b->n_maps; i++) {
		struct mapping *m = &b->maps[i];
		uint64_t first = m->lo / MAPPING_ALIGN * MAPPING_ALIGN;
		uint64_t past = (m->end + MAPPING_ALIGN - 1) / MAPPING_ALIGN * MAPPING_ALIGN;

		m->m.memory_start = start;
		m->m.memory_limit = start + (past > first ? past - first : MAPPING_ALIGN);
		m->m.file_offset = first;
		start = m->m.memory_limit;
	}
	for (size_t i = 0; i < b->n_locs; i++) {
		struct loc *l = &b->locs[i];

		l->lines[0] = &l->line;
		l->m.line = l->lines;
		if (l->n_inlined) {
			for (size_t k = 0; k < l->n_inlined; k++)
				l->all[k] = &l->inlined[k];
			l->all[l->n_inlined] = &l->line;
			l->m.line = l->all;
		}
		l->m.mapping_id = l->mapping;
		if (l->mapping) {
			const MtPprof__Mapping *m = &b->maps[l->mapping - 1].m;

			l->m.address = m->memory_start + l->offset - m->file_offset;
		} else {
			l->m.address = l->offset;
		}
	}
	for (size_t i = 0; i < b->n_samples; i++) {
		struct sample *s = &b->samples[i];

		for (size_t k = 0; k < s->m.n_label; k++)
			s->labels[k] = &s->label[k];
		s->m.label = s->labels;
		s->m.value = s->values;
		s->m.n_value = n_types(b->rep);
	}
}

/* protobuf-c's output sink: the bytes deflated into a gzip stream on a FILE. */
struct gz_sink {
	ProtobufCBuffer base;
	z_stream z;
	FILE *out;
	int err;
};

static void gz_deflate(struct gz_sink *g, int flush)
{
	unsigned char chunk[16384];
	int zr;

	do {
		size_t have;

		g->z.next_out = chunk;
		g->z.avail_out = sizeof(chunk);
		zr = deflate(&g->z, flush);
		if (zr == Z_STREAM_ERROR) {
			g->err = -EIO;
			return;
		}
		have = sizeof(chunk) - g->z.avail_out;
		errno = 0;
		if (have && fwrite(chunk, 1, have, g->out) != have) {
			g->err = errno ? -errno : -EIO;
			return;
		}
	} while (flush == Z_FINISH ? zr != Z_STREAM_END : !g->z.avail_out);
}

static void gz_append(ProtobufCBuffer *buf, size_t len, const uint8_t *data)
{
	struct gz_sink *g = (struct gz_sink *)buf;

	while (len && !g->err) {
		uInt n = len > (1u << 30) ? 1u << 30 : (uInt)len;

		g->z.next_in = (Bytef *)data;
		g->z.avail_in = n;
		gz_deflate(g, Z_NO_FLUSH);
		data += n;
		len -= n;
	}
}

static int write_gzip(const MtPprof__Profile *p, FILE *out)
{
	struct gz_sink g = {.base = {.append = gz_append}, .out = out};

	/* windowBits 15 + 16: a gzip header and trailer around the deflate stream. */
	if (deflateInit2(&g.z, Z_DEFAULT_COMPRESSION, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY) !=
	    Z_OK)
		return -ENOMEM;
	mt_pprof__profile__pack_to_buffer(p, &g.base);
	if (!g.err)
		gz_deflate(&g, Z_FINISH);
	deflateEnd(&g.z);
	if (g.err)
		return g.err;
	return ferror(out) ? -EIO : 0;
}

/* The message over the builder's arrays (pointers into them, freed with it). */
static int encode(struct builder *b, FILE *out)
{
	MtPprof__Profile p = MT_PPROF__PROFILE__INIT;
	MtPprof__ValueType types[TYPES_LEAKS], period = MT_PPROF__VALUE_TYPE__INIT;
	MtPprof__ValueType *type_ptrs[TYPES_LEAKS];
	size_t nt = n_types(b->rep);
	void **ptrs = calloc(b->n_samples + b->n_maps + b->n_locs + b->n_funcs + 1, sizeof(*ptrs));
	size_t k = 0;
	int err = 0;

	if (!ptrs)
		return -ENOMEM;
	for (size_t i = 0; i < nt && !err; i++) {
		mt_pprof__value_type__init(&types[i]);
		type_ptrs[i] = &types[i];
		err = intern(&b->st, sample_types[i][0], &types[i].type) ||
		      intern(&b->st, sample_types[i][1], &types[i].unit);
	}
	if (err || intern(&b->st, "space", &period.type) || intern(&b->st, "bytes", &period.unit) ||
	    intern(&b->st, "alloc_space", &p.default_sample_type)) {
		free(ptrs);
		return -ENOMEM;
	}
	place(b);
	p.n_sample_type = nt;
	p.sample_type = type_ptrs;
	p.sample = (MtPprof__Sample **)&ptrs[k];
	for (size_t i = 0; i < b->n_samples; i++)
		ptrs[k + p.n_sample++] = &b->samples[i].m;
	k += p.n_sample;
	p.mapping = (MtPprof__Mapping **)&ptrs[k];
	for (size_t i = 0; i < b->n_maps; i++)
		ptrs[k + p.n_mapping++] = &b->maps[i].m;
	k += p.n_mapping;
	p.location = (MtPprof__Location **)&ptrs[k];
	for (size_t i = 0; i < b->n_locs; i++)
		ptrs[k + p.n_location++] = &b->locs[i].m;
	k += p.n_location;
	p.function = (MtPprof__Function **)&ptrs[k];
	for (size_t i = 0; i < b->n_funcs; i++)
		ptrs[k + p.n_function++] = &b->funcs[i];
	p.n_string_table = b->st.n;
	p.string_table = b->st.v;
	p.time_nanos = (int64_t)b->rep->start_time_ns;
	if (b->rep->has_footer && b->rep->footer.end_mono_ns > b->rep->start_mono_ns)
		p.duration_nanos = (int64_t)(b->rep->footer.end_mono_ns - b->rep->start_mono_ns);
	p.period_type = &period;
	p.period = 1; /* every allocation: nothing is sampled */
	p.n_comment = b->n_comments;
	p.comment = b->comments;
	err = write_gzip(&p, out);
	free(ptrs);
	return err;
}

static void builder_free(struct builder *b)
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

/*
 * pprof takes the first mapping for the program the profile is of ("File:"): the command's
 * executable, when a file record names it, even if no frame lies in it.
 */
static int command_mapping_first(struct builder *b)
{
	const struct mt_report *rep = b->rep;
	uint32_t map;

	if (!rep->n_processes)
		return 0;
	for (size_t i = 0; i < rep->n_files; i++)
		if (rep->files[i].recorded && !strcmp(rep->files[i].path, rep->processes[0].exe))
			return mapping_of(b, rep->files[i].file_id, &map);
	return 0;
}

static int build(struct builder *b)
{
	const struct mt_report *rep = b->rep;
	int64_t empty;
	int err;

	b->map_of_file = calloc(65536, sizeof(*b->map_of_file));
	b->file_of_id = calloc(65536, sizeof(*b->file_of_id));
	/* The string table starts with "", as pprof requires. */
	if (!b->map_of_file || !b->file_of_id || intern(&b->st, "", &empty) ||
	    intern(&b->st, "allocator", &b->allocator_key) || intern(&b->st, "pid", &b->pid_key) ||
	    intern(&b->st, "program", &b->program_key))
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_files; i++)
		if (rep->files[i].recorded)
			b->file_of_id[rep->files[i].file_id] = (uint32_t)i + 1;
	err = add_comments(b);
	if (!err)
		err = command_mapping_first(b);
	if (!err && rep->cells)
		return add_cells(b);
	for (size_t i = 0; !err && i < mt_sites_count(rep->sites); i++)
		err = add_site(b, mt_sites_get(rep->sites, i));
	return err;
}

int mt_output_pprof(const struct mt_report *rep, FILE *out)
{
	struct builder b = {.rep = rep};
	int err = build(&b);

	if (!err)
		err = encode(&b, out);
	builder_free(&b);
	return err;
}
