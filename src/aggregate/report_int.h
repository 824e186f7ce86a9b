/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The aggregation's private state while it counts (report.c, the reading), shared with the
 * following reading (report_follow.c), the items and events added (report_records.c,
 * report_events.c) and the sums (report_sums.c). Included by the aggregation part only.
 */
#ifndef MT_REPORT_INT_H
#define MT_REPORT_INT_H

#include <stddef.h>
#include <stdint.h>

#include "aggregate/report.h"

/* ---- lookup tables --------------------------------------------------------------------------- */

struct mt_report_index {
	struct mt_images *images;
	uint32_t file_idx1[65536]; /* file_id -> index + 1 of rep->files */
	size_t file_cap;
	int live_err; /* of the live hook, which cannot return it */
};

/* ---- the reading (report.c) ------------------------------------------------------------------ */

/* msg into err, when there is room for it. */
void report_fail(char *err, size_t errlen, const char *msg);
/* An empty report of r's artifact, ready to count the items read from it. 0 or -ENOMEM. */
int report_begin(struct mt_artifact_reader *r, unsigned int flags, struct mt_report **out);
/*
 * Count the items r has, until its end (0), -EAGAIN when following and the writer has not written
 * more yet, deadline (CLOCK_MONOTONIC, 0: none) passed (1), or an error: -ENOMEM (counting), or
 * the reader's (its message says why).
 */
int report_feed(struct mt_report *rep, struct mt_artifact_reader *r, uint64_t deadline);
/* Why a reading failed: the reader's sentence, else the counting's one failure. */
const char *report_why_not(const struct mt_artifact_reader *r);

/* ---- items and events added (report_records.c, report_events.c) ------------------------------ */

/* An item of the stream counted. 0 or a negative errno. */
int report_add_item(struct mt_report *rep, const struct mt_artifact_item *it);
/* What an event counted as, by the file whose function made it. 0 or a negative errno. */
int report_add_event(struct mt_report *rep, const struct mt_event *e);
/* The file of id, added (unknown: no record described it yet) when new; NULL without memory. */
struct mt_report_file *report_file_get(struct mt_report *rep, uint16_t id);
/* The replay's hooks (mt_images_on_release, _on_temporary, _on_live), arg the report. */
void report_site_release(void *arg, uint32_t stack_id, uint32_t image, uint64_t size, int sign);
void report_site_temporary(void *arg, uint32_t stack_id, uint32_t image);
void report_on_live(void *arg, const struct mt_live_change *c);
/* A block live at the end of the stream (mt_images_live_blocks), arg the report. */
void report_live_at_end(void *arg, const struct mt_live_change *c);

/* ---- the sums (report_sums.c) ---------------------------------------------------------------- */

/* The tree's, the processes' and the sites' figures from what was counted so far. */
int report_sum(struct mt_report *rep);
/* The stream ended: what was live at its end, and the figures that need the whole stream. */
int report_end(struct mt_report *rep, struct mt_artifact_reader *r);

#endif
