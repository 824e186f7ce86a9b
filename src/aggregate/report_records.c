// SPDX-License-Identifier: GPL-2.0
/*
 * An item read from an artifact added to a report (report.c): the records beside the events
 * (processes, files, stacks, mappings, RSS samples, leak scans, the footer) each to what counts
 * it, the events to report_events.c.
 */
#include <errno.h>
#include <stdlib.h>
#include <string.h>

#include "base/strv.h"
#include "aggregate/report_int.h"

static int add_file(struct mt_report *rep, const struct mt_artifact_file *af)
{
	struct mt_report_file *f = report_file_get(rep, af->file_id);

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

/*
 * Events ahead of the one replayed whose block slots are fetched meanwhile: enough to cover a
 * miss to memory at the time an event takes (docs/PERFORMANCE.md, "Memory at scale").
 */
#define PREFETCH_AHEAD 16

int report_add_item(struct mt_report *rep, const struct mt_artifact_item *it)
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
			if (i + PREFETCH_AHEAD < it->n_events)
				mt_images_prefetch(rep->index->images,
						   &it->events[i + PREFETCH_AHEAD]);
			err = report_add_event(rep, &it->events[i]);
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
