/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The arithmetic of the benchmark harness, kept free of processes and clocks so that it can be
 * tested on fixed inputs: how many rounds to run (the round plan of CodSpeed's exec-harness) and
 * the statistics of the measured rounds (the walltime results schema).
 */
#ifndef MT_HARNESS_STATS_H
#define MT_HARNESS_STATS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define MT_DEFAULT_WARMUP_NS   1000000000ULL
#define MT_DEFAULT_MAX_TIME_NS 3000000000ULL

/* What the user asked for; a field counts only when its has_ flag is set. */
struct mt_bench_limits {
	bool has_warmup, has_max_time, has_min_time, has_max_rounds, has_min_rounds;
	uint64_t warmup_ns;
	uint64_t max_time_ns;
	uint64_t min_time_ns;
	uint64_t max_rounds;
	uint64_t min_rounds;
};

/*
 * The limits with CodSpeed's defaults applied (crates/exec-harness/src/walltime/config.rs,
 * ExecutionOptions): 0 is a valid count and a valid minimum time, so each has its flag.
 */
struct mt_bench_config {
	uint64_t warmup_ns;   /* 0: no warm-up */
	uint64_t max_time_ns; /* 0: no time limit */
	bool has_min_time, has_max_rounds, has_min_rounds;
	uint64_t min_time_ns;
	uint64_t max_rounds;
	uint64_t min_rounds;
};

/*
 * Apply the defaults (1 s of warm-up; 3 s of max_time unless min_time, min_rounds or max_rounds
 * is given) and validate as CodSpeed does: a minimum above the maximum of the same kind is an
 * error (min_time against a non-zero max_time). So is a benchmark that nothing bounds (only
 * --max-time 0), which CodSpeed refuses only once its warm-up has run. Returns 0, or -EINVAL
 * with one sentence in err.
 */
int mt_harness_stats_config(const struct mt_bench_limits *in, struct mt_bench_config *out,
			    char *err, size_t errlen);

/* What the warm-up measured. runs == 0: there was no warm-up. */
struct mt_warmup {
	uint64_t runs;
	uint64_t elapsed_ns; /* wall time of the whole warm-up loop, spawning included */
	uint64_t first_ns;   /* the first run's round time */
};

struct mt_round_plan {
	bool fixed;	       /* rounds is the count to run; else the loop stops on time */
	uint64_t rounds;       /* may be 0: the loop still runs one round, as CodSpeed's does */
	bool has_min, has_max; /* the bounds derived from the warm-up */
	uint64_t min_rounds, max_rounds;
	bool warmup_is_result; /* the single warm-up run reached max_time: it is the measurement */
	bool min_above_max;    /* the minimum exceeded the maximum; rounds is the maximum */
};

/*
 * The round count, as CodSpeed's benchmark loop computes it
 * (crates/exec-harness/src/walltime/benchmark_loop.rs): from the warm-up's average round when
 * there was one, else from the explicit counts alone. Returns 0, or -EINVAL when nothing
 * bounds the loop (mt_harness_stats_config rules that out).
 */
int mt_harness_stats_plan(const struct mt_bench_config *cfg, const struct mt_warmup *w,
			  struct mt_round_plan *plan);

/* Whether the measuring loop stops after done (>= 1) rounds that took elapsed_ns in all. */
bool mt_harness_stats_plan_done(const struct mt_bench_config *cfg, const struct mt_round_plan *plan,
				uint64_t done, uint64_t elapsed_ns);

struct mt_stats {
	double min_ns, max_ns, mean_ns, stdev_ns;
	double q1_ns, median_ns, q3_ns;
	uint64_t rounds;
	double total_time_s;
	uint64_t iqr_outlier_rounds;   /* outside [Q1 - 1.5 IQR, Q3 + 1.5 IQR] */
	uint64_t stdev_outlier_rounds; /* farther than 2 standard deviations from the mean */
};

/*
 * Statistics of n round times (any order; samples is not modified). n == 0 gives all zeros.
 * Returns 0 or -ENOMEM.
 */
int mt_harness_stats_compute(const uint64_t *samples, size_t n, struct mt_stats *out);

/*
 * Quantile p of sorted[0..n) as CodSpeed computes Q1 and Q3
 * (crates/runner-shared/src/walltime_results/stats.rs): one sample is itself; two are
 * interpolated linearly (a(1 - p) + bp); from three on, the "exclusive" method of Python's
 * statistics.quantiles at zero-based position p(n + 1) - 1, the last sample past the end.
 */
double mt_harness_stats_quantile(const double *sorted, size_t n, double p);

#endif
