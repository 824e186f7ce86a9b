// SPDX-License-Identifier: GPL-2.0
/*
 * Round plan and statistics of the benchmark harness (see harness_stats.h), each computed as
 * CodSpeed computes it: the same integer arithmetic for the plan, the same floating point
 * operations in the same order for the statistics, so that the same rounds give the same bits.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/errbuf.h"
#include "harness/harness_stats.h"

#define IQR_FACTOR   1.5
#define STDEV_FACTOR 2.0

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static int check_limits(const struct mt_bench_limits *in, uint64_t max_time_ns, char *err,
			size_t errlen)
{
	/* max_time 0 means "no limit", so it cannot be below a minimum. */
	if (in->has_min_time && max_time_ns && in->min_time_ns > max_time_ns)
		return mt_errbuf(err, errlen,
				 "min_time (%.2fs) cannot be greater than max_time (%.2fs)",
				 secs(in->min_time_ns), secs(max_time_ns));
	if (in->has_min_rounds && in->has_max_rounds && in->min_rounds > in->max_rounds)
		return mt_errbuf(
		    err, errlen, "min_rounds (%llu) cannot be greater than max_rounds (%llu)",
		    (unsigned long long)in->min_rounds, (unsigned long long)in->max_rounds);
	return 0;
}

int mt_harness_stats_config(const struct mt_bench_limits *in, struct mt_bench_config *out,
			    char *err, size_t errlen)
{
	bool other_limit = in->has_min_time || in->has_min_rounds || in->has_max_rounds;
	int ret;

	memset(out, 0, sizeof(*out));
	out->warmup_ns = in->has_warmup ? in->warmup_ns : MT_DEFAULT_WARMUP_NS;
	/* Asking for rounds or a minimum time means the caller chose the length: no default cap. */
	if (in->has_max_time)
		out->max_time_ns = in->max_time_ns;
	else if (!other_limit)
		out->max_time_ns = MT_DEFAULT_MAX_TIME_NS;
	ret = check_limits(in, out->max_time_ns, err, errlen);
	if (ret)
		return ret;
	out->has_min_time = in->has_min_time;
	out->min_time_ns = in->has_min_time ? in->min_time_ns : 0;
	out->has_max_rounds = in->has_max_rounds;
	out->max_rounds = in->has_max_rounds ? in->max_rounds : 0;
	out->has_min_rounds = in->has_min_rounds;
	out->min_rounds = in->has_min_rounds ? in->min_rounds : 0;

	/*
	 * Only --max-time 0: CodSpeed finds no round count after its warm-up ("Unable to determine
	 * number of rounds to perform"), or none before its loop without one. Nothing has run yet
	 * here, so say it now.
	 */
	if (!out->max_time_ns && !other_limit)
		return mt_errbuf(
		    err, errlen,
		    out->warmup_ns
			? "unable to determine the number of rounds to perform: "
			  "max_time 0 needs min_time, max_rounds or min_rounds"
			: "when warmup is disabled, at least one constraint (min_rounds, "
			  "max_rounds, min_time, or max_time) must be specified");
	return 0;
}

/*
 * Rounds of avg that fit in t, as CodSpeed writes it: (t + avg) / avg in u64 arithmetic, whose
 * wrap-around on absurd durations is that of CodSpeed's release build.
 */
static uint64_t rounds_in(uint64_t t_ns, uint64_t avg_ns)
{
	return (t_ns + avg_ns) / avg_ns;
}

/* compute_min_rounds: the larger of min_rounds and the rounds min_time needs (one more). */
static void plan_min(const struct mt_bench_config *cfg, uint64_t avg, struct mt_round_plan *p)
{
	uint64_t from_time = rounds_in(cfg->min_time_ns, avg) + 1;

	p->has_min = cfg->has_min_rounds || cfg->has_min_time;
	if (cfg->has_min_rounds && cfg->has_min_time)
		p->min_rounds = cfg->min_rounds > from_time ? cfg->min_rounds : from_time;
	else
		p->min_rounds = cfg->has_min_rounds ? cfg->min_rounds : from_time;
}

/* compute_max_rounds: the smaller of max_rounds and the rounds max_time allows. */
static void plan_max(const struct mt_bench_config *cfg, uint64_t avg, struct mt_round_plan *p)
{
	uint64_t from_time = rounds_in(cfg->max_time_ns, avg);

	p->has_max = cfg->has_max_rounds || cfg->max_time_ns;
	if (cfg->has_max_rounds && cfg->max_time_ns)
		p->max_rounds = cfg->max_rounds < from_time ? cfg->max_rounds : from_time;
	else
		p->max_rounds = cfg->has_max_rounds ? cfg->max_rounds : from_time;
}

/*
 * Without a warm-up CodSpeed takes one explicit count, in this order: max_rounds alone on its
 * side, min_rounds alone on its side, max_rounds next to max_time, min_rounds next to min_time
 * (extract_rounds_from_config). With none, the loop runs on time alone.
 */
static void plan_without_warmup(const struct mt_bench_config *cfg, struct mt_round_plan *p)
{
	p->fixed = true;
	if (cfg->has_max_rounds && !cfg->max_time_ns)
		p->rounds = cfg->max_rounds;
	else if (cfg->has_min_rounds && !cfg->has_min_time)
		p->rounds = cfg->min_rounds;
	else if (cfg->has_max_rounds)
		p->rounds = cfg->max_rounds;
	else if (cfg->has_min_rounds)
		p->rounds = cfg->min_rounds;
	else
		p->fixed = false;
}

int mt_harness_stats_plan(const struct mt_bench_config *cfg, const struct mt_warmup *w,
			  struct mt_round_plan *plan)
{
	uint64_t avg;

	memset(plan, 0, sizeof(*plan));
	if (!w->runs) {
		plan_without_warmup(cfg, plan);
		return plan->fixed || cfg->max_time_ns || cfg->has_min_time ? 0 : -EINVAL;
	}
	if (w->runs == 1 && cfg->max_time_ns && cfg->max_time_ns <= w->first_ns) {
		plan->warmup_is_result = true;
		plan->fixed = true;
		plan->rounds = 1;
		return 0;
	}
	/* CodSpeed divides by this average; a warm-up faster than 1 ns per run cannot happen. */
	avg = w->elapsed_ns / w->runs;
	if (!avg)
		avg = 1;
	plan_min(cfg, avg, plan);
	plan_max(cfg, avg, plan);
	plan->fixed = true;
	if (plan->has_min && plan->has_max && plan->min_rounds > plan->max_rounds) {
		plan->min_above_max = true;
		plan->rounds = plan->max_rounds;
	} else if (plan->has_min && plan->has_max) {
		/* The midpoint, the sum wrapping as in CodSpeed's release build. */
		plan->rounds = (plan->min_rounds + plan->max_rounds) / 2;
	} else if (plan->has_min || plan->has_max) {
		plan->rounds = plan->has_min ? plan->min_rounds : plan->max_rounds;
	} else {
		return -EINVAL;
	}
	return 0;
}

bool mt_harness_stats_plan_done(const struct mt_bench_config *cfg, const struct mt_round_plan *plan,
				uint64_t done, uint64_t elapsed_ns)
{
	if (plan->warmup_is_result)
		return true;
	/* max_time bounds the measuring loop whatever the count. */
	if (cfg->max_time_ns && elapsed_ns >= cfg->max_time_ns)
		return true;
	if (plan->fixed)
		return done >= plan->rounds;
	return cfg->has_min_time && elapsed_ns >= cfg->min_time_ns;
}

double mt_harness_stats_quantile(const double *sorted, size_t n, double p)
{
	double pos, frac;
	size_t i;

	if (!n)
		return 0.0;
	if (n == 1)
		return sorted[0];
	if (n == 2)
		return sorted[0] * (1.0 - p) + sorted[1] * p;
	pos = p * ((double)n + 1.0) - 1.0;
	i = (size_t)floor(pos);
	frac = pos - floor(pos);
	if (i + 1 < n)
		return sorted[i] * (1.0 - frac) + sorted[i + 1] * frac;
	return sorted[i < n - 1 ? i : n - 1];
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

/* In CodSpeed's order: sums over the sorted samples, in double precision. */
static void moments(const double *v, const uint64_t *samples, size_t n, struct mt_stats *s)
{
	unsigned __int128 total = 0;
	double sum = 0.0, sq = 0.0;
	size_t i;

	for (i = 0; i < n; i++) {
		sum += v[i];
		total += samples[i];
	}
	s->mean_ns = sum / (double)n;
	/* The integer sum of the rounds, converted once, then divided: total_time is seconds. */
	s->total_time_s = (double)total / 1e9;
	for (i = 0; i < n; i++)
		sq += (v[i] - s->mean_ns) * (v[i] - s->mean_ns);
	s->stdev_ns = n > 1 ? sqrt(sq / (double)(n - 1)) : 0.0;
}

/* The median of the sorted samples: the middle one, or the mean of the two middle ones. */
static double median(const double *v, size_t n)
{
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2.0;
}

static void outliers(const double *v, size_t n, struct mt_stats *s)
{
	double iqr = s->q3_ns - s->q1_ns;
	double lo = s->q1_ns - IQR_FACTOR * iqr, hi = s->q3_ns + IQR_FACTOR * iqr;
	size_t i;

	for (i = 0; i < n; i++) {
		if (v[i] < lo || v[i] > hi)
			s->iqr_outlier_rounds++;
		if (fabs(v[i] - s->mean_ns) > STDEV_FACTOR * s->stdev_ns)
			s->stdev_outlier_rounds++;
	}
}

int mt_harness_stats_compute(const uint64_t *samples, size_t n, struct mt_stats *out)
{
	double *v;
	size_t i;

	memset(out, 0, sizeof(*out));
	if (!n)
		return 0;
	v = malloc(n * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (i = 0; i < n; i++)
		v[i] = (double)samples[i];
	qsort(v, n, sizeof(*v), cmp_double);

	out->rounds = n;
	out->min_ns = v[0];
	out->max_ns = v[n - 1];
	out->median_ns = median(v, n);
	out->q1_ns = mt_harness_stats_quantile(v, n, 0.25);
	out->q3_ns = mt_harness_stats_quantile(v, n, 0.75);
	moments(v, samples, n, out);
	outliers(v, n, out);
	free(v);
	return 0;
}
