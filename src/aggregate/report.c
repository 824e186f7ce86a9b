// SPDX-License-Identifier: GPL-2.0
/*
 * Aggregation of an artifact: counting only, no printing (the outputs are output_text.c and
 * output_json.c). The stream is replayed over process images by images.c, which counts; this
 * file adds what each event counted as to its file and family, and the tree's totals are the
 * sums of the images'.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/strv.h"
#include "base/grow.h"
#include "aggregate/report.h"

/* ---- lookup tables -------------------------------------------------------------------------- */

struct mt_report_index {
	struct mt_images *images;
	uint32_t file_idx1[65536]; /* file_id -> index + 1 of rep->files */
	size_t file_cap;
	int live_err; /* of the live hook, which cannot return it */
};

/* ---- entities ------------------------------------------------------------------------------- */

static struct mt_report_file *file_get(struct mt_report *rep, uint16_t id)
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

static int add_file(struct mt_report *rep, const struct mt_artifact_file *af)
{
	struct mt_report_file *f = file_get(rep, af->file_id);

	if (!f)
		return -ENOMEM;
	f->family = af->family;
	f->probes = af->probes;
	f->recorded = true;
	memcpy(f->build_id, af->build_id, sizeof(f->build_id));
	f->build_id[sizeof(f->build_id) - 1] = '\0';
	return mt_str_replace(&f->path, af->path);
}

static int add_unprobed(struct mt_report *rep, const struct mt_artifact_unprobed *au)
{
	struct mt_report_unprobed *u;

	u = realloc(rep->unprobed, (rep->n_unprobed + 1) * sizeof(*u));
	if (!u)
		return -ENOMEM;
	rep->unprobed = u;
	u += rep->n_unprobed;
	u->error = au->error;
	u->path = strdup(au->path);
	u->function = strdup(au->function);
	u->reason = strdup(au->reason);
	rep->n_unprobed++; /* counted even when a copy failed: freed with the rest */
	return u->path && u->function && u->reason ? 0 : -ENOMEM;
}

/* ---- events --------------------------------------------------------------------------------- */

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

/* A mapping record, in the address space it maps in: a vfork child's is its parent's. */
static int add_mapping(struct mt_report *rep, const struct mt_artifact_mapping *m)
{
	struct mt_images *im = rep->index->images;
	int64_t i = mt_images_running(im, m->pid);
	const struct mt_image *g;
	int err;

	if (i < 0)
		return (int)i;
	g = mt_images_get(im, (size_t)i);
	if (g->shared_memory && g->end == MT_IMAGE_RUNNING && g->parent >= 0)
		i = g->parent;
	err = mt_mapped_at(rep->mapped, m->ts_ns);
	return err ? err : mt_mapped_record(rep->mapped, (uint32_t)i, m);
}

/* What an event counted as, by the file whose function made it. */
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

/* An RSS sample: counted in the image its pid runs now (the stream puts it after its exec). */
static int add_rss(struct mt_report *rep, const struct mt_artifact_rss *s)
{
	const struct mt_image *g;
	int64_t i;
	int err;

	if (s->why != MT_RSS_TICK && s->why != MT_RSS_EXIT)
		return 0; /* a kind this version does not know */
	i = mt_images_running(rep->index->images, s->pid);
	if (i < 0)
		return (int)i;
	g = mt_images_get(rep->index->images, (size_t)i);
	err = mt_timeline_at(rep->timeline, s->ts_ns);
	if (!err)
		err = mt_rss_sample(rep->rss, (size_t)i, s, rep->timeline->last_ns,
				    !g->shared_memory);
	/* The image's line is its samples', its parent's memory or not. */
	if (!err)
		err = mt_timeline_rss(rep->timeline, (size_t)i, mt_rss_sum(s), rep->rss->tree_now);
	return err;
}

static int add_event(struct mt_report *rep, const struct mt_event *e)
{
	struct mt_report_file *f;
	struct mt_report_totals *ft;
	enum mt_effect eff;
	int64_t ending = -1;
	int err;

	rep->events++;
	if (e->ts_ns > rep->last_event_ns)
		rep->last_event_ns = e->ts_ns;
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
	f = file_get(rep, e->file_id);
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

static void site_release(void *arg, uint32_t stack_id, uint32_t image, uint64_t size, int sign)
{
	struct mt_report *rep = arg;

	mt_sites_release(rep->sites, stack_id, size, sign);
	if (rep->cells)
		mt_cells_release(rep->cells, stack_id, image, size, sign);
}

static void site_temporary(void *arg, uint32_t stack_id, uint32_t image)
{
	struct mt_report *rep = arg;

	mt_sites_temporary(rep->sites, stack_id);
	if (rep->cells)
		mt_cells_temporary(rep->cells, stack_id, image);
}

/* A block never freed: kept when it is among the largest (ties: the first seen stays). */
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

static void live_at_end(void *arg, const struct mt_live_change *c)
{
	largest_add(arg, c, true);
}

/* What is live changed: the heap over time and the sites' bytes at the peak follow it. */
static void on_live(void *arg, const struct mt_live_change *c)
{
	struct mt_report *rep = arg;
	int err = mt_timeline_live(rep->timeline, c);

	if (c->ended)
		largest_add(rep, c, false);

	/* Sites count blocks with a stack, and the peaks. */
	if (!err && (c->stack_id || c->new_peak))
		err = mt_sites_live(rep->sites, c->stack_id, c->size, c->add, c->new_peak);
	if (!err && rep->cells && (c->stack_id || c->new_peak))
		err =
		    mt_cells_live(rep->cells, c->stack_id, c->image, c->size, c->add, c->new_peak);
	if (err)
		rep->index->live_err = err;
}

/* ---- loading -------------------------------------------------------------------------------- */

static int copy_info(struct mt_report *rep, const struct mt_artifact_info *in)
{
	rep->version = in->version;
	memcpy(rep->watcher, in->watcher, sizeof(rep->watcher));
	rep->start_time_ns = in->start_time_ns;
	rep->start_mono_ns = in->start_mono_ns;
	rep->attached = in->flags & MT_ARTIFACT_ATTACHED;
	rep->argv = calloc((size_t)in->argc + 1, sizeof(*rep->argv));
	if (!rep->argv)
		return -ENOMEM;
	for (rep->argc = 0; rep->argc < in->argc; rep->argc++) {
		rep->argv[rep->argc] = strdup(in->argv[rep->argc]);
		if (!rep->argv[rep->argc])
			return -ENOMEM;
	}
	return 0;
}

static int add_item(struct mt_report *rep, const struct mt_artifact_item *it)
{
	size_t i;
	int err;

	switch (it->type) {
	case MT_ITEM_PROCESS:
		return mt_images_process(rep->index->images, it->process);
	case MT_ITEM_FILE:
		err = mt_sites_add_file(rep->sites, it->file);
		return err ? err : add_file(rep, it->file);
	case MT_ITEM_EVENTS:
		for (i = 0; i < it->n_events; i++) {
			err = add_event(rep, &it->events[i]);
			if (err)
				return err;
		}
		return 0;
	case MT_ITEM_FOOTER:
		rep->footer = *it->footer;
		rep->has_footer = true;
		/* The heap over time runs to the end of the run, not only to its last event. */
		if (!it->footer->end_mono_ns)
			return 0;
		return mt_timeline_at(rep->timeline, it->footer->end_mono_ns)
			   ?: mt_mapped_at(rep->mapped, it->footer->end_mono_ns);
	case MT_ITEM_UNPROBED:
		return add_unprobed(rep, it->unprobed);
	case MT_ITEM_STACK:
		return mt_sites_add_stack(rep->sites, it->stack);
	case MT_ITEM_HANDOFF:
		return mt_images_handoff(rep->index->images, it->handoff, rep->events);
	case MT_ITEM_MAPPING:
		return add_mapping(rep, it->mapping); /* apart from the heap's totals */
	case MT_ITEM_LEAKS: {
		int64_t i = mt_images_running(rep->index->images, it->leaks->pid);

		return i < 0 ? (int)i : mt_leaks_add(rep->leaks, (size_t)i, it->leaks);
	}
	case MT_ITEM_RSS:
		return add_rss(rep, it->rss);
	case MT_ITEM_BENCH:
		rep->bench_marks++; /* the windows are bench.c's split, not the tree's totals */
		return 0;
	}
	return 0;
}

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

static void report_fail(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

/* An empty report of r's artifact, ready to count the items read from it. 0 or -ENOMEM. */
static int report_begin(struct mt_artifact_reader *r, unsigned int flags, struct mt_report **out)
{
	struct mt_report *rep = calloc(1, sizeof(*rep));

	*out = rep;
	if (!rep || !(rep->index = calloc(1, sizeof(*rep->index))) ||
	    !(rep->index->images = mt_images_new()) || !(rep->sites = mt_sites_new()) ||
	    ((flags & MT_REPORT_CELLS) && !(rep->cells = mt_cells_new())) ||
	    !(rep->leaks = mt_leaks_new()) || !(rep->rss = mt_rss_new()))
		return -ENOMEM;
	mt_images_on_release(rep->index->images, site_release, rep);
	mt_images_on_temporary(rep->index->images, site_temporary, rep);
	mt_images_on_live(rep->index->images, on_live, rep);
	if (copy_info(rep, mt_artifact_info(r)) ||
	    !(rep->timeline = mt_timeline_new(rep->start_mono_ns)) ||
	    !(rep->mapped = mt_mapped_new(rep->start_mono_ns)))
		return -ENOMEM;
	return 0;
}

/*
 * Count the items r has, until its end (0), -EAGAIN when following and the writer has not written
 * more yet, deadline (CLOCK_MONOTONIC, 0: none) passed (1), or an error: -ENOMEM (counting), or
 * the reader's (its message says why).
 */
static int report_feed(struct mt_report *rep, struct mt_artifact_reader *r, uint64_t deadline)
{
	struct mt_artifact_item it;
	int ret;

	while ((ret = mt_artifact_next(r, &it)) > 0) {
		ret = add_item(rep, &it);
		if (ret)
			return ret;
		if (deadline && mt_clock_now_ns() >= deadline)
			return 1;
	}
	return ret;
}

/* The tree's, the processes' and the sites' figures from what was counted so far. */
static int report_sum(struct mt_report *rep)
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
static int report_end(struct mt_report *rep, struct mt_artifact_reader *r)
{
	rep->truncated = mt_artifact_truncated(r);
	rep->in_progress = mt_artifact_in_progress(r);
	if (report_sum(rep))
		return -ENOMEM;
	mt_images_live_blocks(rep->index->images, live_at_end, rep);
	if (mt_leaks_end(rep->leaks) || mt_timeline_end(rep->timeline) ||
	    mt_mapped_finish(rep->mapped))
		return -ENOMEM;
	if (rep->cells)
		mt_cells_end(rep->cells, rep->timeline);
	fold_families(rep);
	return 0;
}

/* Why a reading failed: the reader's sentence, else the counting's one failure. */
static const char *why_not(const struct mt_artifact_reader *r)
{
	return *mt_artifact_error(r) ? mt_artifact_error(r) : "out of memory";
}

/* Aggregate what remains of an open reader, with the counts of flags (MT_REPORT_*). */
static int from_reader(struct mt_artifact_reader *r, unsigned int flags, struct mt_report **out,
		       char *err, size_t errlen)
{
	struct mt_report *rep;
	int ret = report_begin(r, flags, &rep);

	*out = NULL;
	if (!ret)
		ret = report_feed(rep, r, 0);
	if (!ret)
		ret = report_end(rep, r);
	if (ret) {
		report_fail(err, errlen, why_not(r));
		mt_report_free(rep);
		return ret;
	}
	*out = rep;
	return 0;
}

/* ---- following an artifact being written ---------------------------------------------------- */

struct mt_report_follow {
	struct mt_artifact_reader *r;
	struct mt_report *rep;
	bool writer_gone; /* the reader reads to the end, as a plain reading does */
	bool ended;	  /* report_end ran: rep is whole */
};

int mt_report_follow_open(const char *path, unsigned int flags, struct mt_report_follow **out,
			  char *err, size_t errlen)
{
	struct mt_report_follow *f = calloc(1, sizeof(*f));
	int ret;

	*out = NULL;
	if (!f) {
		report_fail(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = mt_artifact_open(&f->r, path, err, errlen);
	if (!ret && mt_artifact_follow(f->r, true)) {
		report_fail(err, errlen, "not a regular file: only a file can be followed");
		ret = -ENOTSUP;
	}
	if (!ret && report_begin(f->r, flags, &f->rep)) {
		report_fail(err, errlen, "out of memory");
		ret = -ENOMEM;
	}
	if (ret) {
		mt_report_follow_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

int mt_report_follow_read(struct mt_report_follow *f, uint64_t budget_ns, char *err, size_t errlen)
{
	uint64_t deadline = budget_ns ? mt_clock_now_ns() + budget_ns : 0;
	int ret;

	if (f->ended)
		return 0;
	ret = report_feed(f->rep, f->r, deadline);
	/*
	 * Nothing more yet: a writer still holding the file will write more; one gone (ended, or
	 * killed) wrote all it will, which a plain reading takes to its footer or its cut. Its lock
	 * is looked at after the reading: whatever it wrote before letting go is in the file.
	 */
	if (ret == -EAGAIN && !mt_artifact_writer_alive(f->r)) {
		f->writer_gone = true;
		mt_artifact_follow(f->r, false);
		ret = report_feed(f->rep, f->r, 0);
	}
	if (ret == -EAGAIN || ret == 1) {
		f->rep->in_progress = true;
		return report_sum(f->rep) ? -ENOMEM : 1;
	}
	if (!ret)
		ret = report_end(f->rep, f->r);
	if (ret)
		report_fail(err, errlen, why_not(f->r));
	f->ended = !ret;
	return ret;
}

struct mt_report *mt_report_follow_now(const struct mt_report_follow *f)
{
	return f->rep;
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

bool mt_report_follow_writing(const struct mt_report_follow *f)
{
	return mt_artifact_writer_alive(f->r);
}

bool mt_report_follow_ended(const struct mt_report_follow *f)
{
	return f->ended;
}

struct mt_report *mt_report_follow_take(struct mt_report_follow *f)
{
	struct mt_report *rep = f->ended ? f->rep : NULL;

	if (rep)
		f->rep = NULL;
	return rep;
}

void mt_report_follow_free(struct mt_report_follow *f)
{
	if (!f)
		return;
	mt_report_free(f->rep);
	mt_artifact_close(f->r);
	free(f);
}

static int load_from(struct mt_artifact_reader *r, unsigned int flags, struct mt_report **rep,
		     char *err, size_t errlen)
{
	int ret = from_reader(r, flags, rep, err, errlen);

	mt_artifact_close(r);
	return ret;
}

int mt_report_load_with(const char *path, unsigned int flags, struct mt_report **rep, char *err,
			size_t errlen)
{
	struct mt_artifact_reader *r;
	int ret;

	*rep = NULL;
	ret = mt_artifact_open(&r, path, err, errlen);
	return ret ? ret : load_from(r, flags, rep, err, errlen);
}

int mt_report_load(const char *path, struct mt_report **rep, char *err, size_t errlen)
{
	return mt_report_load_with(path, 0, rep, err, errlen);
}

int mt_report_load_mem(const void *buf, size_t len, struct mt_report **rep, char *err,
		       size_t errlen)
{
	struct mt_artifact_reader *r;
	int ret;

	*rep = NULL;
	ret = mt_artifact_open_mem(&r, buf, len, err, errlen);
	return ret ? ret : load_from(r, MT_REPORT_CELLS, rep, err, errlen);
}

void mt_report_free(struct mt_report *rep)
{
	size_t i;

	if (!rep)
		return;
	for (i = 0; rep->argv && i < (size_t)rep->argc; i++)
		free(rep->argv[i]);
	free(rep->argv);
	free(rep->processes);
	for (i = 0; i < rep->n_files; i++)
		free(rep->files[i].path);
	for (i = 0; i < rep->n_unprobed; i++) {
		free(rep->unprobed[i].path);
		free(rep->unprobed[i].function);
		free(rep->unprobed[i].reason);
	}
	free(rep->unprobed);
	free(rep->files);
	if (rep->index) {
		mt_images_free(rep->index->images);
		free(rep->index);
	}
	mt_sites_free(rep->sites);
	mt_cells_free(rep->cells);
	mt_leaks_free(rep->leaks);
	mt_rss_free(rep->rss);
	mt_timeline_free(rep->timeline);
	mt_mapped_free(rep->mapped);
	free(rep);
}

int mt_report_totals_of(const char *path, struct mt_report_totals *t, char *err, size_t errlen)
{
	struct mt_report *rep;
	int ret = mt_report_load(path, &rep, err, errlen);

	if (ret)
		return ret;
	*t = rep->totals;
	mt_report_free(rep);
	return 0;
}

const char *mt_report_family_name(unsigned int family)
{
	return family < MT_FAM_MAX ? mt_family_name((enum mt_family)family) : "unknown";
}

size_t mt_report_unrecorded_images(const struct mt_report *rep)
{
	size_t n = 0;

	for (size_t i = 0; i < rep->n_images; i++)
		n += rep->images[i].unrecorded;
	return n;
}

bool mt_report_mapped_after_handoff(const struct mt_report *rep)
{
	for (size_t i = 0; i < rep->n_images; i++)
		if (rep->images[i].handoff && rep->images[i].handoff->n_late)
			return true;
	return false;
}

bool mt_report_complete(const struct mt_report *rep)
{
	return rep->has_footer && !rep->truncated && !rep->footer.events_dropped &&
	       !rep->footer.args_lost && !rep->n_unprobed && !mt_report_mapped_after_handoff(rep) &&
	       !mt_report_unrecorded_images(rep);
}
