/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two runs compared (memtrack report --diff BASE NEW): what each level of the base report
 * matches in the new one, with both sides' counts. The tree is one row; process images are
 * matched by program name (the executable's last component: two builds of a program at two paths
 * match), then among those of one name by the command's arguments, their place in the tree
 * (position and execs before, as --trace-stops names a process), and their order; files by name
 * (by path where a run has two files of one name);
 * families by name; allocation sites by their symbolised stack, function names from the outermost
 * frame to the allocator, so that two builds of one program (other addresses, the same functions)
 * match. Rows with the same key on one side (two stacks that differ only in offsets) are added
 * together.
 */
#ifndef MT_DIFF_H
#define MT_DIFF_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate/report.h"

enum mt_diff_metric {
	MT_DIFF_ALLOCATIONS = 0, /* allocation and realloc calls */
	MT_DIFF_BYTES,		 /* bytes allocated */
	MT_DIFF_PEAK,		 /* peak live bytes (the tree, an image; a site: at the peak) */
	MT_DIFF_LIVE,		 /* bytes never freed (live at exit or exec, or at the end) */
	MT_DIFF_TEMPORARY,	 /* temporary allocations (images.h) */
	MT_DIFF_METRICS,
};

/* Which metrics a level keeps: files and families have no peak, live or temporary count. */
#define MT_DIFF_ALL	   ((1u << MT_DIFF_METRICS) - 1)
#define MT_DIFF_CALLS_ONLY ((1u << MT_DIFF_ALLOCATIONS) | (1u << MT_DIFF_BYTES))

enum mt_diff_in {
	MT_DIFF_IN_BOTH = 0,
	MT_DIFF_IN_BASE, /* only in the base run */
	MT_DIFF_IN_NEW,	 /* only in the new run */
};

struct mt_diff_row {
	char *key;    /* what matched the row; never NULL */
	char *exe[2]; /* the executables of an image in each run, the paths of a file matched by
			 name */
	enum mt_diff_in in;
	uint64_t base[MT_DIFF_METRICS];
	uint64_t new[MT_DIFF_METRICS];
};

struct mt_diff_level {
	const char *name;     /* "tree", "images", "files", "families", "sites" */
	unsigned int metrics; /* the MT_DIFF_* bits it keeps */
	size_t n;
	struct mt_diff_row *rows; /* in key order */
};

enum mt_diff_levels {
	MT_DIFF_TREE = 0,
	MT_DIFF_IMAGES,
	MT_DIFF_FILES,
	MT_DIFF_FAMILIES,
	MT_DIFF_SITES,
	MT_DIFF_LEVELS
};

struct mt_diff {
	struct mt_diff_level level[MT_DIFF_LEVELS];
};

/*
 * Compare base with new. Their sites must be symbolised (mt_sites_symbolize). Returns 0 and
 * *out (to mt_diff_free), or -ENOMEM.
 */
int mt_diff_build(const struct mt_report *base, const struct mt_report *new, struct mt_diff **out);
void mt_diff_free(struct mt_diff *d);

/* A metric's name as the command line and the JSON write it ("peak"), and back (-1: none). */
const char *mt_diff_metric_name(enum mt_diff_metric m);
int mt_diff_metric_of(const char *name);

/*
 * new's value relative to base's, in percent: +100 for a double; 0 when both are 0; INFINITY
 * when only new is not 0.
 */
double mt_diff_percent(uint64_t base, uint64_t new);

#endif
