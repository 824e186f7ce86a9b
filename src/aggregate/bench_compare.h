/* SPDX-License-Identifier: GPL-2.0 */
/*
 * Two runs of memtrack bench compared benchmark by benchmark (docs/BENCH.md, "Comparing two
 * runs"): the base is an earlier run's --json document, matched by URI (by name for windows
 * without one), and limits on a metric's growth decide a CI gate.
 */
#ifndef MT_BENCH_COMPARE_H
#define MT_BENCH_COMPARE_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "aggregate/bench.h"

enum mt_bench_metric {
	MT_BM_ALLOCATIONS,
	MT_BM_BYTES_ALLOCATED,
	MT_BM_AVERAGE,
	MT_BM_PEAK,
	MT_BM_LIVE_AT_END,
	MT_BM_N,
};

/* The metric's name in the JSON document ("bytes_allocated"), NULL when out of range. */
const char *mt_bench_metric_name(enum mt_bench_metric m);
/* The metric named name: its number, or -EINVAL. */
int mt_bench_metric_parse(const char *name);
uint64_t mt_bench_metric_of(const struct mt_bench_window *w, enum mt_bench_metric m);

#define MT_BENCH_LIMITS 8
struct mt_bench_limits {
	int n;
	enum mt_bench_metric metric[MT_BENCH_LIMITS];
	double max_percent[MT_BENCH_LIMITS];
};

struct mt_bench_row {
	const char *uri, *name; /* the new run's, else the base's; owned by the comparison */
	bool in_base, in_new;
	uint64_t base[MT_BM_N], now[MT_BM_N];
	/* Per metric: a limit on it was exceeded (both runs have the benchmark). */
	bool exceeded[MT_BM_N];
};

struct mt_bench_cmp {
	size_t n;
	struct mt_bench_row *rows; /* the new run's order, then what only the base has */
	size_t n_exceeded;	   /* rows with an exceeded limit */
	char **strs;		   /* owned strings */
	size_t n_strs;
};

/*
 * Compare split with the --json document in text (len bytes, an earlier run's). 0 and *out, or
 * a negative errno with a sentence in err (-EINVAL: not such a document).
 */
int mt_bench_compare(const struct mt_bench_split *split, const char *text, size_t len,
		     const struct mt_bench_limits *limits, struct mt_bench_cmp **out, char *err,
		     size_t errlen);
void mt_bench_cmp_free(struct mt_bench_cmp *c);
/* The growth of row's metric in percent; +inf from 0 to more, 0 from 0 to 0. */
double mt_bench_growth(const struct mt_bench_row *r, enum mt_bench_metric m);

#endif
