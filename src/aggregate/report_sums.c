// SPDX-License-Identifier: GPL-2.0
/*
 * A report's figures from what was counted (report.c): the tree's and the processes' totals are
 * the sums of their images', the families' of their files'; and the end of the stream, with what
 * was live at it.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "aggregate/report_int.h"

static void add_counts(struct mt_report_totals *t, const struct mt_report_totals *c)
{
	t->allocations += c->allocations;
	t->frees += c->frees;
	t->reallocs += c->reallocs;
	t->realloc_null += c->realloc_null;
	t->realloc_zero += c->realloc_zero;
	t->unmatched_frees += c->unmatched_frees;
	t->failed += c->failed;
	t->bytes_allocated += c->bytes_allocated;
}

/* What an image adds to a process's or the tree's counts: its blocks never freed are live. */
static void add_image_counts(struct mt_report_totals *t, const struct mt_image *g)
{
	t->allocations += g->c.allocations;
	t->frees += g->c.frees;
	t->reallocs += g->c.reallocs;
	t->realloc_null += g->c.realloc_null;
	t->realloc_zero += g->c.realloc_zero;
	t->unmatched_frees += g->c.unmatched_frees;
	t->failed += g->c.failed;
	t->bytes_allocated += g->c.bytes_allocated;
	t->temporary += g->c.temporary;
	t->live_blocks += g->c.live_blocks + g->released.blocks;
	t->live_bytes += g->c.live_bytes + g->released.bytes;
}

/*
 * The tree's counts are the sums of its images'; its live blocks are every block never freed:
 * released by an exec or an exit, or live at the end of the stream.
 */
static void sum_images(struct mt_report *rep)
{
	struct mt_images *im = rep->index->images;
	struct mt_report_totals *t = &rep->totals;

	rep->n_images = mt_images_count(im);
	rep->images = rep->n_images ? mt_images_get(im, 0) : NULL;
	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_image *g = &rep->images[i];

		add_image_counts(t, g);
	}
	t->peak_bytes = mt_images_peak(im);
}

/* A process's row: the sums of its images, peak the largest of theirs. */
static void add_image(struct mt_report_process *p, const struct mt_report *rep,
		      const struct mt_image *g)
{
	struct mt_report_totals *t = &p->t;

	p->pid = g->pid;
	if (g->parent >= 0)
		p->parent = rep->images[g->parent].pid;
	p->exited = g->exited;
	p->exit_status = g->exit_status;
	p->exe = g->exe;
	p->position = g->position;
	add_image_counts(t, g);
	if (g->c.peak_bytes > t->peak_bytes)
		t->peak_bytes = g->c.peak_bytes;
}

static int sum_processes(struct mt_report *rep)
{
	size_t *row = calloc(rep->n_images ? rep->n_images : 1, sizeof(*row));

	if (!row)
		return -ENOMEM;
	rep->processes = calloc(rep->n_images ? rep->n_images : 1, sizeof(*rep->processes));
	if (!rep->processes) {
		free(row);
		return -ENOMEM;
	}
	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_image *g = &rep->images[i];

		if (g->first == i)
			row[i] = rep->n_processes++;
		else
			row[i] = row[g->first];
		add_image(&rep->processes[row[i]], rep, g);
	}
	free(row);
	return 0;
}

/* Families are known only once every file record is read: fold the per-file counts at the end. */
static void fold_families(struct mt_report *rep)
{
	size_t i;

	for (i = 0; i < rep->n_files; i++) {
		const struct mt_report_totals *ft = &rep->files[i].t;
		unsigned int fam = rep->files[i].family;

		add_counts(&rep->families[fam < MT_FAM_MAX ? fam : MT_FAM_MAX], ft);
	}
	if (rep->has_footer)
		rep->totals.dropped = rep->footer.requests_dropped + rep->footer.events_dropped +
				      rep->footer.args_lost;
}

/* The tree's, the processes' and the sites' figures from what was counted so far. */
int report_sum(struct mt_report *rep)
{
	memset(&rep->totals, 0, sizeof(rep->totals));
	free(rep->processes);
	rep->processes = NULL;
	rep->n_processes = 0;
	sum_images(rep);
	/* Zeroed allocations are counted per file only (images do not keep them): sum those. */
	for (size_t i = 0; i < rep->n_files; i++)
		rep->totals.zeroed_allocations += rep->files[i].t.zeroed_allocations;
	mt_sites_end(rep->sites);
	return sum_processes(rep);
}

/* The stream ended: what was live at its end, and the figures that need the whole stream. */
int report_end(struct mt_report *rep, struct mt_artifact_reader *r)
{
	rep->truncated = mt_artifact_truncated(r);
	rep->in_progress = mt_artifact_in_progress(r);
	if (report_sum(rep))
		return -ENOMEM;
	mt_images_live_blocks(rep->index->images, report_live_at_end, rep);
	if (mt_leaks_end(rep->leaks) || mt_timeline_end(rep->timeline) ||
	    mt_mapped_finish(rep->mapped))
		return -ENOMEM;
	if (rep->cells)
		mt_cells_end(rep->cells, rep->timeline);
	fold_families(rep);
	return 0;
}

uint64_t mt_report_live_now(const struct mt_report *rep, uint64_t *blocks)
{
	uint64_t bytes = 0;

	*blocks = 0;
	for (size_t i = 0; i < rep->n_images; i++) {
		bytes += rep->images[i].c.live_bytes;
		*blocks += rep->images[i].c.live_blocks;
	}
	return bytes;
}
