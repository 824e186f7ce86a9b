// SPDX-License-Identifier: GPL-2.0
/*
 * An event of the stream added to a report (report.c): replayed over process images by images.c,
 * which counts, and what it counted as added to its file, its site and cell, the histogram, the
 * heap over time and mapped memory; and the replay's hooks, which follow what is live (the sites'
 * bytes, the largest blocks never freed).
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/grow.h"
#include "aggregate/report_int.h"

/* ---- entities -------------------------------------------------------------------------------- */

struct mt_report_file *report_file_get(struct mt_report *rep, uint16_t id)
{
	struct mt_report_index *ix = rep->index;
	struct mt_report_file *f;

	if (ix->file_idx1[id])
		return &rep->files[ix->file_idx1[id] - 1];
	if (MT_GROW(rep->files, ix->file_cap, rep->n_files + 1, 16))
		return NULL;
	f = &rep->files[rep->n_files];
	memset(f, 0, sizeof(*f));
	f->file_id = id;
	f->family = MT_FAM_MAX; /* unknown until a record describes it */
	f->path = strdup("");
	if (!f->path)
		return NULL;
	ix->file_idx1[id] = (uint32_t)++rep->n_files;
	return f;
}

/* ---- events ---------------------------------------------------------------------------------- */

unsigned int mt_report_bucket(uint64_t size)
{
	return size ? 64u - (unsigned int)__builtin_clzll(size) : 0;
}

uint64_t mt_report_bucket_min(unsigned int b)
{
	return b ? 1ULL << (b - 1) : 0;
}

/* The allocation of e in its site's cell: the image it counted in, at the timeline's time. */
static int cell_alloc(struct mt_report *rep, const struct mt_event *e)
{
	int64_t image;

	if (!rep->cells)
		return 0;
	image = mt_images_latest(rep->index->images, e->pid);
	if (image < 0)
		return image == -ENOMEM ? -ENOMEM : 0;
	return mt_cells_alloc(rep->cells, e->stack_id, (uint32_t)image, e->size, e->addr != 0,
			      rep->timeline);
}

/*
 * A fork, exec or exit, replayed, and what it does to mapped memory: a child's break starts at its
 * parent's; an exec or an exit ends the address space of the image it ends.
 */
static int mapped_lifecycle(struct mt_report *rep, const struct mt_event *e, enum mt_effect *eff)
{
	struct mt_images *im = rep->index->images;
	int64_t before = mt_images_latest(im, e->pid), parent, child;
	int err = mt_mapped_at(rep->mapped, e->ts_ns);

	if (!err)
		err = mt_images_event(im, e, eff);
	if (err || before == -ENOMEM)
		return err ? err : -ENOMEM;
	if (e->kind != MT_K_FORK)
		return before >= 0 ? mt_mapped_end(rep->mapped, (uint32_t)before) : 0;
	parent = mt_images_latest(im, e->pid);
	child = mt_images_latest(im, (uint32_t)e->addr);
	if (parent == -ENOMEM || child == -ENOMEM)
		return -ENOMEM;
	return parent >= 0 && child >= 0
		   ? mt_mapped_fork(rep->mapped, (uint32_t)parent, (uint32_t)child)
		   : 0;
}

/*
 * The image an exec or exit (of e's pid), or a fork (reusing the pid of an ended process), may
 * end: -1 for other events and none known, -ENOMEM.
 */
static int64_t image_ended_by(struct mt_report *rep, const struct mt_event *e)
{
	if (e->kind == MT_K_FORK)
		return mt_images_latest(rep->index->images, (uint32_t)e->addr);
	if (e->kind == MT_K_EXEC || e->kind == MT_K_EXIT)
		return mt_images_latest(rep->index->images, e->pid);
	return -1;
}

/* After the event's replay: an image img that ended no longer counts in the tree's RSS. */
static int rss_ended(struct mt_report *rep, int64_t img)
{
	if (img < 0 || !mt_rss_of(rep->rss, (size_t)img) ||
	    mt_images_get(rep->index->images, (size_t)img)->end == MT_IMAGE_RUNNING)
		return 0;
	mt_rss_ended(rep->rss, (size_t)img);
	return mt_timeline_rss(rep->timeline, (size_t)img, 0, rep->rss->tree_now);
}

/* A call of a function the run counts but does not record: counted per file and function. */
static int add_not_recorded(struct mt_report *rep, const struct mt_event *e)
{
	struct mt_report_not_recorded *u;

	for (size_t i = 0; i < rep->n_not_recorded; i++) {
		u = &rep->not_recorded[i];
		if (u->file_id == e->file_id && u->function == e->size) {
			u->calls++;
			return 0;
		}
	}
	u = realloc(rep->not_recorded, (rep->n_not_recorded + 1) * sizeof(*u));
	if (!u)
		return -ENOMEM;
	rep->not_recorded = u;
	u[rep->n_not_recorded++] = (struct mt_report_not_recorded){e->file_id, e->size, 1};
	return 0;
}

/* What an event counted as, by the file whose function made it. */
int report_add_event(struct mt_report *rep, const struct mt_event *e)
{
	struct mt_report_file *f;
	struct mt_report_totals *ft;
	enum mt_effect eff;
	int64_t ending = -1;
	int err;

	rep->events++;
	if (e->ts_ns > rep->last_event_ns)
		rep->last_event_ns = e->ts_ns;
	if (e->kind == MT_K_UNRECORDED)
		return add_not_recorded(rep, e);
	err = mt_timeline_at(rep->timeline, e->ts_ns);
	if (!err && (ending = image_ended_by(rep, e)) == -ENOMEM)
		err = -ENOMEM;
	if (!err && e->kind >= MT_K_FORK && e->kind <= MT_K_EXIT)
		err = mapped_lifecycle(rep, e, &eff);
	else if (!err)
		err = mt_images_event(rep->index->images, e, &eff);
	if (!err)
		err = rss_ended(rep, ending);
	if (!err)
		err = rep->index->live_err;
	if (err)
		return err;
	if (eff == MT_EFF_UNKNOWN)
		rep->unknown_events++;
	if (eff == MT_EFF_NONE || eff == MT_EFF_STREAM || eff == MT_EFF_UNKNOWN)
		return 0;
	f = report_file_get(rep, e->file_id);
	if (!f)
		return -ENOMEM;
	ft = &f->t;
	switch (eff) {
	case MT_EFF_ALLOC:
		ft->allocations++;
		/* Before version 6 no event says it zeroed: there a calloc is the one that did. */
		ft->zeroed_allocations +=
		    (e->flags & MT_EV_ZEROED) ||
		    (rep->version < MT_ARTIFACT_VERSION_ZEROED && e->kind == MT_K_CALLOC);
		break;
	case MT_EFF_REALLOC:
		ft->reallocs++;
		ft->realloc_null += mt_realloc_of_null(e);
		ft->realloc_zero += mt_realloc_to_zero(e);
		break;
	case MT_EFF_FREE:
		ft->frees++;
		return 0;
	case MT_EFF_UNMATCHED:
		ft->unmatched_frees++;
		return 0;
	default:
		ft->failed++;
		return 0;
	}
	ft->bytes_allocated += e->size;
	mt_timeline_allocated(rep->timeline, e->size);
	rep->histogram[mt_report_bucket(e->size)]++;
	if (!e->stack_id)
		return 0;
	err = mt_sites_alloc(rep->sites, e->stack_id, e->size, e->addr != 0);
	return err ? err : cell_alloc(rep, e);
}

void report_site_release(void *arg, uint32_t stack_id, uint32_t image, uint64_t size, int sign)
{
	struct mt_report *rep = arg;

	mt_sites_release(rep->sites, stack_id, size, sign);
	if (rep->cells)
		mt_cells_release(rep->cells, stack_id, image, size, sign);
}

void report_site_temporary(void *arg, uint32_t stack_id, uint32_t image)
{
	struct mt_report *rep = arg;

	mt_sites_temporary(rep->sites, stack_id);
	if (rep->cells)
		mt_cells_temporary(rep->cells, stack_id, image);
}

/*
 * Whether block c comes before b in the largest: the larger first, and of two alike the lower
 * address (then image), so that the list does not depend on the order the replay met them in.
 */
static bool largest_before(const struct mt_live_change *c, const struct mt_report_block *b)
{
	if (c->size != b->size)
		return c->size > b->size;
	if (c->addr != b->addr)
		return c->addr < b->addr;
	return c->image < b->image;
}

/* A block never freed: kept when it is among the largest (ties: the first seen stays). */
static void largest_add(struct mt_report *rep, const struct mt_live_change *c, bool at_end)
{
	size_t i = rep->n_largest;

	if (i == MT_REPORT_LARGEST && !largest_before(c, &rep->largest[i - 1]))
		return;
	if (i == MT_REPORT_LARGEST)
		i--;
	else
		rep->n_largest++;
	for (; i > 0 && largest_before(c, &rep->largest[i - 1]); i--)
		rep->largest[i] = rep->largest[i - 1];
	rep->largest[i] = (struct mt_report_block){.addr = c->addr,
						   .size = c->size,
						   .stack_id = c->stack_id,
						   .image = c->image,
						   .at_end = at_end};
	/* Its image's scan at exit, when there was one, came before the exit released it. */
	if (!at_end)
		rep->largest[i].leak_class = mt_leaks_block_class(rep->leaks, c->image, c->addr);
}

void report_live_at_end(void *arg, const struct mt_live_change *c)
{
	largest_add(arg, c, true);
}

/*
 * What is live changed: the heap over time and the sites' bytes at the peak follow it. A block
 * an ending released is a candidate for the largest never freed; when it is counted apart, that
 * is all it is here. A class's summed change moves the lines only down, so that its one point
 * leaves them as its blocks' points one by one did.
 */
void report_on_live(void *arg, const struct mt_live_change *c)
{
	struct mt_report *rep = arg;
	int err;

	if (c->ended && !c->summed)
		largest_add(rep, c, false);
	if (c->counted_apart)
		return;
	err = mt_timeline_live(rep->timeline, c);

	/* Sites count blocks with a stack, and the peaks. */
	if (!err && (c->stack_id || c->new_peak))
		err =
		    mt_sites_live(rep->sites, c->stack_id, c->size, c->blocks, c->add, c->new_peak);
	if (!err && rep->cells && (c->stack_id || c->new_peak))
		err = mt_cells_live(rep->cells, c->stack_id, c->image, c->size, c->blocks, c->add,
				    c->new_peak);
	if (err)
		rep->index->live_err = err;
}
