// SPDX-License-Identifier: GPL-2.0
/* Round plan and statistics of the benchmark harness (see harness_stats.h). */
#include <errno.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "errbuf.h"
#include "harness_stats.h"

#define IQR_FACTOR   1.5
#define STDEV_FACTOR 2.0

static double secs(uint64_t ns)
{
	return (double)ns / 1e9;
}

static int check_limits(const struct mt_bench_limits *in, char *err, size_t errlen)
{
	if (in->has_max_rounds && in->max_rounds == 0)
		return mt_errbuf(err, errlen, "max_rounds must be at least 1");
	if (in->has_min_rounds && in->min_rounds == 0)
		return mt_errbuf(err, errlen, "min_rounds must be at least 1");
	if (in->has_min_rounds && in->has_max_rounds && in->min_rounds > in->max_rounds)
		return mt_errbuf(
		    err, errlen, "min_rounds (%llu) cannot be greater than max_rounds (%llu)",
		    (unsigned long long)in->min_rounds, (unsigned long long)in->max_rounds);
	/* max_time 0 means "no limit", so it cannot be below a minimum. */
	if (in->has_min_time && in->has_max_time && in->max_time_ns &&
	    in->min_time_ns > in->max_time_ns)
		return mt_errbuf(err, errlen,
				 "min_time (%gs) cannot be greater than max_time (%gs)",
				 secs(in->min_time_ns), secs(in->max_time_ns));
	return 0;
}

int mt_harness_stats_config(const struct mt_bench_limits *in, struct mt_bench_config *out,
			    char *err, size_t errlen)
{
	bool other_limit = in->has_min_time || in->has_min_rounds || in->has_max_rounds;
	int ret = check_limits(in, err, errlen);

	if (ret)
		return ret;
	memset(out, 0, sizeof(*out));
	out->warmup_ns = in->has_warmup ? in->warmup_ns : MT_DEFAULT_WARMUP_NS;
	/* Asking for rounds or a minimum time means the caller chose the length: no default cap. */
	if (in->has_max_time)
		out->max_time_ns = in->max_time_ns;
	else if (!other_limit)
		out->max_time_ns = MT_DEFAULT_MAX_TIME_NS;
	out->min_time_ns = in->has_min_time ? in->min_time_ns : 0;
	out->max_rounds = in->has_max_rounds ? in->max_rounds : 0;
	out->min_rounds = in->has_min_rounds ? in->min_rounds : 0;

	/* Without a warm-up the default max_time would be a guess nobody asked for. */
	if (!out->warmup_ns && !(in->has_max_time && in->max_time_ns) && !out->min_time_ns &&
	    !out->max_rounds && !out->min_rounds)
		return mt_errbuf(
		    err, errlen,
		    "without warm-up, give at least one of max_time, min_time, max_rounds "
		    "or min_rounds");
	if (!out->max_time_ns && !out->min_time_ns && !out->max_rounds && !out->min_rounds)
		return mt_errbuf(
		    err, errlen,
		    "nothing bounds the benchmark: max_time 0 needs min_time, max_rounds or "
		    "min_rounds");
	return 0;
}

/* Rounds of avg_ns that start within t_ns: (t + avg) / avg, written so it cannot overflow. */
static uint64_t rounds_within(uint64_t t_ns, uint64_t avg_ns)
{
	return t_ns / avg_ns + 1;
}

static int settle(struct mt_round_plan *plan, uint64_t min, uint64_t max)
{
	plan->min_rounds = min;
	plan->max_rounds = max;
	if (min && max && min > max) {
		plan->min_above_max = true;
		plan->rounds = max;
	} else if (min && max) {
		plan->rounds = min + (max - min) / 2;
	} else if (min || max) {
		plan->rounds = min ? min : max;
	} else {
		return -EINVAL;
	}
	return 0;
}

static uint64_t min_nonzero(uint64_t a, uint64_t b)
{
	if (!a)
		return b;
	if (!b)
		return a;
	return a < b ? a : b;
}

int mt_harness_stats_plan(const struct mt_bench_config *cfg, const struct mt_warmup *w,
			  struct mt_round_plan *plan)
{
	uint64_t avg, min, max;

	memset(plan, 0, sizeof(*plan));
	if (!w->runs) {
		/* Only explicit counts are known; with none, the loop runs on time alone. */
		if (cfg->min_rounds || cfg->max_rounds)
			return settle(plan, cfg->min_rounds, cfg->max_rounds);
		return cfg->max_time_ns || cfg->min_time_ns ? 0 : -EINVAL;
	}
	if (w->runs == 1 && cfg->max_time_ns && w->first_ns >= cfg->max_time_ns) {
		plan->warmup_is_result = true;
		plan->rounds = 1;
		return 0;
	}

	avg = w->elapsed_ns / w->runs;
	if (!avg)
		avg = 1;
	min = cfg->min_rounds;
	if (cfg->min_time_ns) {
		uint64_t r = rounds_within(cfg->min_time_ns, avg) + 1;

		min = r > min ? r : min;
	}
	max = cfg->max_rounds;
	if (cfg->max_time_ns)
		max = min_nonzero(max, rounds_within(cfg->max_time_ns, avg));
	return settle(plan, min, max);
}

bool mt_harness_stats_plan_done(const struct mt_bench_config *cfg, const struct mt_round_plan *plan,
				uint64_t done, uint64_t elapsed_ns)
{
	if (plan->warmup_is_result)
		return true;
	/* max_time bounds the measuring loop whatever the count, as in CodSpeed's harness. */
	if (cfg->max_time_ns && elapsed_ns >= cfg->max_time_ns)
		return true;
	if (plan->rounds)
		return done >= plan->rounds;
	return cfg->min_time_ns && elapsed_ns >= cfg->min_time_ns;
}

double mt_harness_stats_quantile(const double *sorted, size_t n, double p)
{
	double pos, frac;
	size_t i;

	if (!n)
		return 0.0;
	pos = p * (double)(n + 1) - 1.0;
	/* Python extrapolates beyond the ends for n < 3; a round time outside the data is not one.
	 */
	if (pos <= 0.0)
		return sorted[0];
	if (pos >= (double)(n - 1))
		return sorted[n - 1];
	i = (size_t)pos;
	frac = pos - (double)i;
	return sorted[i] + (sorted[i + 1] - sorted[i]) * frac;
}

/*
 * The memtrack binary is not linked with libm, and one square root per benchmark does not
 * justify adding it. Newton's iteration started above the root decreases monotonically and
 * stops within one ulp of it.
 */
static double sqrt_newton(double v)
{
	double x, y;

	if (!(v > 0.0))
		return 0.0;
	x = v >= 1.0 ? v : 1.0;
	for (;;) {
		y = 0.5 * (x + v / x);
		if (y >= x)
			return x;
		x = y;
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return (x > y) - (x < y);
}

static void moments(const double *v, size_t n, struct mt_stats *s)
{
	long double sum = 0.0L, sq = 0.0L;
	size_t i;

	for (i = 0; i < n; i++)
		sum += v[i];
	s->mean_ns = (double)(sum / n);
	s->total_time_s = (double)(sum / 1e9L);
	for (i = 0; i < n; i++)
		sq += (v[i] - (long double)s->mean_ns) * (v[i] - (long double)s->mean_ns);
	s->stdev_ns = n > 1 ? sqrt_newton((double)(sq / (n - 1))) : 0.0;
}

static void outliers(const double *v, size_t n, struct mt_stats *s)
{
	double iqr = s->q3_ns - s->q1_ns;
	double lo = s->q1_ns - IQR_FACTOR * iqr, hi = s->q3_ns + IQR_FACTOR * iqr;
	size_t i;

	for (i = 0; i < n; i++) {
		double dev = v[i] > s->mean_ns ? v[i] - s->mean_ns : s->mean_ns - v[i];

		if (v[i] < lo || v[i] > hi)
			s->iqr_outlier_rounds++;
		if (dev > STDEV_FACTOR * s->stdev_ns)
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
	out->q1_ns = mt_harness_stats_quantile(v, n, 0.25);
	out->median_ns = mt_harness_stats_quantile(v, n, 0.5);
	out->q3_ns = mt_harness_stats_quantile(v, n, 0.75);
	moments(v, n, out);
	outliers(v, n, out);
	free(v);
	return 0;
}
