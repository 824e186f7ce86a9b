// SPDX-License-Identifier: GPL-2.0
/*
 * Aggregation of an artifact: counting only, no printing (the outputs are output_text.c and
 * output_json.c). The stream is replayed over process images by images.c, which counts;
 * report_records.c and report_events.c add each item and what each event counted as to its file
 * and family, and the tree's totals are the sums of the images' (report_sums.c). This file reads
 * an artifact whole into a report; report_follow.c reads one as it is written.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "aggregate/report_int.h"

/* ---- loading --------------------------------------------------------------------------------- */

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

void report_fail(char *err, size_t errlen, const char *msg)
{
	if (err && errlen)
		snprintf(err, errlen, "%s", msg);
}

/* An empty report of r's artifact, ready to count the items read from it. 0 or -ENOMEM. */
int report_begin(struct mt_artifact_reader *r, unsigned int flags, struct mt_report **out)
{
	struct mt_report *rep = calloc(1, sizeof(*rep));

	*out = rep;
	if (!rep || !(rep->index = calloc(1, sizeof(*rep->index))) ||
	    !(rep->index->images = mt_images_new()) || !(rep->sites = mt_sites_new()) ||
	    ((flags & MT_REPORT_CELLS) && !(rep->cells = mt_cells_new())) ||
	    !(rep->leaks = mt_leaks_new()) || !(rep->rss = mt_rss_new()))
		return -ENOMEM;
	mt_images_on_release(rep->index->images, report_site_release, rep);
	mt_images_on_temporary(rep->index->images, report_site_temporary, rep);
	mt_images_on_live(rep->index->images, report_on_live, rep);
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
int report_feed(struct mt_report *rep, struct mt_artifact_reader *r, uint64_t deadline)
{
	struct mt_artifact_item it;
	int ret;

	while ((ret = mt_artifact_next(r, &it)) > 0) {
		ret = report_add_item(rep, &it);
		if (ret)
			return ret;
		if (deadline && mt_clock_now_ns() >= deadline)
			return 1;
	}
	return ret;
}

/* Why a reading failed: the reader's sentence, else the counting's one failure. */
const char *report_why_not(const struct mt_artifact_reader *r)
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
		report_fail(err, errlen, report_why_not(r));
		mt_report_free(rep);
		return ret;
	}
	*out = rep;
	return 0;
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
	free(rep->not_recorded);
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
	       !rep->footer.args_lost && !rep->n_unprobed && !rep->n_not_recorded &&
	       !mt_report_mapped_after_handoff(rep) && !mt_report_unrecorded_images(rep);
}
