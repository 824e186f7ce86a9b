/* SPDX-License-Identifier: GPL-2.0 */
/*
 * memtrack exec-harness: runs a command (or a JSON list of them) through the supervisor for a
 * warm-up and measured rounds, and writes wall-time statistics in the walltime results schema
 * that CodSpeed's tools read (docs/HARNESS.md).
 */
#ifndef MT_HARNESS_H
#define MT_HARNESS_H

#include <stddef.h>

#include "harness_stats.h"

/* argv[0] is "exec-harness". Returns the exit status for memtrack. */
int mt_harness_main(int argc, char **argv);

struct mt_bench {
	char *name;  /* NULL: the command line joined with spaces */
	char **argv; /* NULL-terminated */
	struct mt_bench_limits limits;
};

struct mt_bench_list {
	struct mt_bench *v;
	size_t n;
};

/*
 * Read the benchmarks of `memtrack exec-harness -` from JSON text. Limits start from defaults
 * (the command-line options) and non-null walltime_args fields override them. Returns 0, or
 * -EINVAL with one sentence in err (-ENOMEM without one). out is empty on error.
 */
int mt_harness_parse_json(const char *text, size_t len, const struct mt_bench_limits *defaults,
			  struct mt_bench_list *out, char *err, size_t errlen);
void mt_bench_list_free(struct mt_bench_list *l);

#endif
