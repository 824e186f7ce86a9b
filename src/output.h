/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The outputs of an aggregated run (report.h): the text report and the end-of-run summary
 * (output_text.c), one JSON document (output_json.c). They print what aggregation counted and
 * count nothing themselves.
 */
#ifndef MT_OUTPUT_H
#define MT_OUTPUT_H

#include <stddef.h>
#include <stdio.h>

#include "report.h"

/* Human report; top bounds the process and file tables (0: all). Returns 0 or -EIO. */
int mt_output_text(const struct mt_report *rep, FILE *out, size_t top);
/* One JSON document (json-c). Returns 0, -ENOMEM or -EIO. */
int mt_output_json(const struct mt_report *rep, FILE *out);

/* The top allocation sites (--stacks), symbolised (mt_sites_symbolize). 0, -ENOMEM or -EIO. */
int mt_output_sites(const struct mt_report *rep, FILE *out, size_t top);

/* What a folded stack's weight is. */
enum mt_folded_metric {
	MT_FOLDED_ALLOCATIONS = 0, /* allocations and reallocs made from it */
	MT_FOLDED_BYTES,	   /* their bytes */
	MT_FOLDED_LIVE,		   /* bytes of its blocks never freed */
};

/*
 * Folded stacks, one line per distinct symbolised stack: frames from the outermost to the
 * allocator's caller, ';'-separated, a space, the weight (flamegraph.pl, inferno). Stacks of
 * weight 0 are left out. 0, -ENOMEM or -EIO.
 */
int mt_output_folded(const struct mt_report *rep, enum mt_folded_metric metric, FILE *out);

/*
 * The allocation sites, symbolised, as a pprof profile (gzip'd profile.proto, src/output_pprof.c):
 * sample types alloc_objects, alloc_space, inuse_objects, inuse_space (blocks never freed). 0,
 * -ENOMEM or a negative errno of writing.
 */
int mt_output_pprof(const struct mt_report *rep, FILE *out);

/*
 * The few lines `memtrack run` prints when the command is done. Returns 0, or a negative errno
 * after printing "memtrack: PATH: REASON" on stderr.
 */
int mt_output_summary(const char *artifact_path, FILE *out);

#endif
