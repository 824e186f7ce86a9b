/* SPDX-License-Identifier: GPL-2.0 */
/*
 * An artifact split by benchmark (memtrack bench, docs/BENCH.md): the runner FIFO's marks
 * (docs/FORMAT.md, type 12) make windows, StartProfiler to StopProfiler, each named by the
 * CurrentBenchmark {pid, uri} that follows it, and each window counts the allocator calls made
 * in it by the benchmark's process: that process, its threads, and the processes it creates
 * (its descendants), replayed by images.h's rules.
 *
 * Pairing, as CodSpeed's runner pairs them: a StartProfiler while a window is open is ignored
 * (the open window is flagged nested), a StopProfiler with none open too (counted); a
 * CurrentBenchmark names the earliest closed window not yet named, else the open one; one with
 * no window to name is counted. A window still open when the artifact ends closes there,
 * flagged not closed. A window that no CurrentBenchmark names counts the whole tree.
 */
#ifndef MT_BENCH_H
#define MT_BENCH_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_sites;

/* Sites kept per benchmark (with --stacks), largest bytes first. */
#define MT_BENCH_TOP_SITES 5

/*
 * Points kept per benchmark of its heap over time: the window is cut into at most this many
 * buckets (MT_BENCH_TIMELINE_FIRST_NS wide at first, widths doubling as neighbours merge), each
 * holding the largest live byte count reached in it, so that the peak is a point of the line.
 */
#define MT_BENCH_TIMELINE_MAX	   200
#define MT_BENCH_TIMELINE_FIRST_NS 1000

/* A point of a benchmark's heap over time: ns from the window's start, its processes' bytes. */
struct mt_bench_point {
	uint64_t t_ns;
	uint64_t live_bytes;
};

struct mt_bench_site {
	uint32_t stack_id;
	uint64_t allocations; /* allocations and reallocs made from it in the window */
	uint64_t bytes;
};

struct mt_bench_window {
	char *uri;  /* "" when no CurrentBenchmark named it; never NULL */
	char *name; /* the URI's last "::" part, or "window N" */
	int32_t pid;
	uint64_t start_ns, stop_ns; /* CLOCK_MONOTONIC */
	bool not_closed;	    /* still open at the artifact's end: closed there */
	unsigned int nested;	    /* StartProfiler messages that came while it was open */
	uint64_t allocations;	    /* new blocks (images.h), reallocs apart */
	uint64_t reallocs;
	uint64_t frees;
	uint64_t bytes_allocated; /* allocations' and reallocs' requested bytes */
	uint64_t heap_at_start;	  /* live bytes of its processes when it opened */
	uint64_t peak_bytes;	  /* their largest live bytes in it, above heap_at_start */
	uint64_t live_at_end;	  /* bytes it allocated still live when it closed */
	uint64_t live_blocks_at_end;
	size_t n_sites;
	struct mt_bench_site sites[MT_BENCH_TOP_SITES];
	/*
	 * The live bytes of its processes over the window, time order: the start (heap_at_start
	 * at 0), each bucket in which they changed (their largest value there, at the bucket's
	 * start) and the stop (their value then, at stop - start). At most MT_BENCH_TIMELINE_MAX
	 * + 2 points; the largest value is heap_at_start + peak_bytes.
	 */
	struct mt_bench_point *timeline;
	size_t n_timeline;
};

struct mt_bench_split {
	size_t n;
	struct mt_bench_window *w;
	uint64_t stray_stops;	 /* StopProfiler with no window open */
	uint64_t stray_uris;	 /* CurrentBenchmark with no window to name */
	uint64_t outside;	 /* allocator calls outside every window (the tree's) */
	bool truncated;		 /* the artifact has no footer */
	bool has_stacks;	 /* events carry stacks (--stacks) */
	struct mt_sites *stacks; /* the artifact's stacks and files, for the sites' frames */
};

/* bytes_allocated over the calls that made a block (allocations and reallocs), 0 for none. */
uint64_t mt_bench_average(const struct mt_bench_window *w);

/*
 * Split the artifact at path (read twice: the marks, then the replay). 0 and *out, or a
 * negative errno with a sentence in err.
 */
int mt_bench_split_load(const char *path, struct mt_bench_split **out, char *err, size_t errlen);
void mt_bench_split_free(struct mt_bench_split *s);

#endif
