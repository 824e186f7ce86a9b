// SPDX-License-Identifier: GPL-2.0
/*
 * The size and build time of unwind tables (docs/STACKS.md): for each file, its FDEs, rows, table
 * bytes, rows memtrack cannot express, wide rows (frames of 64 KiB and more), and the wall time
 * of mt_unwind_table_build.
 *
 * Usage: unwind_size FILE...
 */
#include <errno.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

#include "unwind/unwind_table.h"

static double now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

int main(int argc, char **argv)
{
	int status = 0;

	printf("%-60s %8s %9s %10s %7s %5s %8s\n", "file", "fdes", "rows", "bytes", "unknown",
	       "wide", "seconds");
	for (int i = 1; i < argc; i++) {
		struct mt_unwind_table t;
		double t0 = now();
		int err = mt_unwind_table_build(argv[i], &t);

		if (err && err != -ENODATA) {
			fprintf(stderr, "unwind_size: %s: %s\n", argv[i], strerror(-err));
			status = 1;
			continue;
		}
		printf("%-60s %8zu %9zu %10zu %7zu %5zu %8.3f\n", argv[i], t.n_fdes, t.n_rows,
		       t.n_rows * sizeof(*t.rows), t.n_unknown, t.n_wide, now() - t0);
		mt_unwind_table_free(&t);
	}
	return status;
}
