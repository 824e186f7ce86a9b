// SPDX-License-Identifier: GPL-2.0
/*
 * The samples of a pprof profile (output_pprof.c): one per site, or per site and process image,
 * its values the site's counts and loss records, its labels the allocator and the image's pid and
 * program, its locations the stack's frames from the tables (output_pprof_tables.c).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/types.h>

#include "base/grow.h"
#include "bpf/unwind_row.h"
#include "output/output_pprof_int.h"

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
		err = pprof_pseudo_location(b, PSEUDO_UNKNOWN, &ids[0]);
	for (uint32_t k = 1, i = 0, len; !err && s->sym && k < s->n_frames; k += len, i++) {
		len = location_frames(s, k);
		err = pprof_frame_location(b, s->frames[k], &s->sym[k], len, &ids[i]);
	}
	if (!err && marker)
		err = pprof_pseudo_location(
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
	return pprof_intern(&b->st, base ? base + 1 : g->exe[0] ? g->exe : "?", &program->str);
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
		if (pprof_intern(&b->st, allocator, &smp->label[0].str))
			return -ENOMEM;
	}
	if (image != SIZE_MAX && image_labels(b, smp, image))
		return -ENOMEM;
	return site_locations(b, s, smp);
}

int pprof_add_site(struct builder *b, const struct mt_site *s)
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
int pprof_add_cells(struct builder *b)
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
