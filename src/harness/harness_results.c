// SPDX-License-Identifier: GPL-2.0
/*
 * The results of exec-harness (harness.h): DIR/results/PID.json in the walltime results schema
 * that CodSpeed's tools read, and the table on stderr.
 */
#include <errno.h>
#include <json-c/json.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/bytesize.h"
#include "base/duration.h"
#include "base/outfile.h"
#include "harness/harness.h"

#ifndef MT_VERSION
#define MT_VERSION "0.0.0"
#endif

static int mkdir_p(const char *path)
{
	char buf[PATH_MAX], *p;

	if (snprintf(buf, sizeof(buf), "%s", path) >= (int)sizeof(buf))
		return -ENAMETOOLONG;
	for (p = buf + 1; *p; p++) {
		if (*p != '/')
			continue;
		*p = '\0';
		if (mkdir(buf, 0755) && errno != EEXIST)
			return -errno;
		*p = '/';
	}
	if (mkdir(buf, 0755) && errno != EEXIST)
		return -errno;
	return 0;
}

static int make_dir(char *buf, size_t len, const char *dir, const char *sub)
{
	int ret;

	if (snprintf(buf, len, "%s/%s", dir, sub) >= (int)len)
		ret = -ENAMETOOLONG;
	else
		ret = mkdir_p(buf);
	if (ret)
		fprintf(stderr, MT_HARNESS_PROG ": cannot create '%s': %s\n", buf, strerror(-ret));
	return ret;
}

int mt_harness_prepare_output(struct mt_harness *h)
{
	const char *dir = h->output, *env = getenv("CODSPEED_PROFILE_FOLDER");
	int ret;

	if (!dir)
		dir = env && *env ? env : ".codspeed";
	ret = make_dir(h->results_dir, sizeof(h->results_dir), dir, "results");
	/* Not in results/: whatever reads results/ expects nothing but results JSON there. */
	if (!ret && h->memory)
		ret = make_dir(h->artifact_dir, sizeof(h->artifact_dir), dir, "memtrack");
	return ret;
}

/* json-c objects: a NULL from an allocation failure makes the add fail, checked at the end. */
static void put(struct json_object *o, const char *key, struct json_object *v)
{
	if (o && v && json_object_object_add(o, key, v))
		json_object_put(v);
}

/* An absent limit is JSON null, as in the schema's optional fields. */
static void put_null(struct json_object *o, const char *key)
{
	if (o)
		json_object_object_add(o, key, NULL);
}

static struct json_object *config_json(const struct mt_bench_config *c)
{
	struct json_object *o = json_object_new_object();

	put(o, "warmup_time_ns", json_object_new_double((double)c->warmup_ns));
	/* One command run per round: there is no minimum round time to calibrate towards. */
	put_null(o, "min_round_time_ns");
	if (c->max_time_ns)
		put(o, "max_time_ns", json_object_new_double((double)c->max_time_ns));
	else
		put_null(o, "max_time_ns");
	if (c->has_max_rounds)
		put(o, "max_rounds", json_object_new_uint64(c->max_rounds));
	else
		put_null(o, "max_rounds");
	return o;
}

static struct json_object *stats_json(const struct mt_bench_result *r)
{
	const struct mt_stats *s = &r->stats;
	struct json_object *o = json_object_new_object();

	put(o, "min_ns", json_object_new_double(s->min_ns));
	put(o, "max_ns", json_object_new_double(s->max_ns));
	put(o, "mean_ns", json_object_new_double(s->mean_ns));
	put(o, "stdev_ns", json_object_new_double(s->stdev_ns));
	put(o, "q1_ns", json_object_new_double(s->q1_ns));
	put(o, "median_ns", json_object_new_double(s->median_ns));
	put(o, "q3_ns", json_object_new_double(s->q3_ns));
	put(o, "rounds", json_object_new_uint64(s->rounds));
	put(o, "total_time", json_object_new_double(s->total_time_s));
	put(o, "iqr_outlier_rounds", json_object_new_uint64(s->iqr_outlier_rounds));
	put(o, "stdev_outlier_rounds", json_object_new_uint64(s->stdev_outlier_rounds));
	put(o, "iter_per_round", json_object_new_uint64(1));
	put(o, "warmup_iters", json_object_new_uint64(r->warmup_runs));
	return o;
}

static struct json_object *memory_json(const struct mt_bench_result *r)
{
	struct json_object *o = json_object_new_object();

	put(o, "artifact", json_object_new_string(r->artifact));
	if (!r->memory_ok)
		return o;
	put(o, "peak_bytes", json_object_new_uint64(r->mem.peak_bytes));
	put(o, "allocations", json_object_new_uint64(r->mem.allocations));
	put(o, "allocated_bytes", json_object_new_uint64(r->mem.bytes_allocated));
	put(o, "live_bytes_at_exit", json_object_new_uint64(r->mem.live_bytes));
	put(o, "frees", json_object_new_uint64(r->mem.frees));
	put(o, "reallocs", json_object_new_uint64(r->mem.reallocs));
	put(o, "dropped", json_object_new_uint64(r->mem.dropped));
	return o;
}

static struct json_object *bench_json(const struct mt_bench_result *r)
{
	struct json_object *o = json_object_new_object();

	put(o, "name", json_object_new_string(r->name));
	put(o, "uri", json_object_new_string(r->uri));
	put(o, "config", config_json(&r->cfg));
	put(o, "stats", stats_json(r));
	if (r->has_memory)
		put(o, "memory", memory_json(r));
	return o;
}

static struct json_object *results_json(const struct mt_bench_result *res, size_t n)
{
	struct json_object *root = json_object_new_object();
	struct json_object *creator = json_object_new_object();
	struct json_object *instrument = json_object_new_object();
	struct json_object *benches = json_object_new_array();
	size_t i;

	put(creator, "name", json_object_new_string("memtrack"));
	put(creator, "version", json_object_new_string(MT_VERSION));
	put(creator, "pid", json_object_new_int((int)getpid()));
	put(instrument, "type", json_object_new_string("walltime"));
	for (i = 0; i < n && benches; i++) {
		struct json_object *b = bench_json(&res[i]);

		if (b && json_object_array_add(benches, b))
			json_object_put(b);
	}
	put(root, "creator", creator);
	put(root, "instrument", instrument);
	put(root, "benchmarks", benches);
	return root;
}

/* path written with text, as memtrack writes any file (base/outfile.h); why says a refusal. */
static int write_file(const struct mt_harness *h, const char *path, const char *text, char *why,
		      size_t whylen)
{
	int ret = 0, fd = mt_outfile_open(path, MT_OUTFILE_REPLACE, &h->base.identity, why, whylen);
	FILE *f = fd < 0 ? NULL : fdopen(fd, "w");

	if (fd < 0)
		return fd;
	if (!f) {
		ret = -errno;
		close(fd);
		return ret;
	}
	if (fputs(text, f) == EOF || fputc('\n', f) == EOF)
		ret = -errno;
	if (fclose(f) && !ret)
		ret = -errno;
	return ret;
}

int mt_harness_write_results(const struct mt_harness *h, const struct mt_bench_result *res,
			     size_t n)
{
	char path[PATH_MAX + 32], tmp[PATH_MAX + 48];
	struct json_object *root = results_json(res, n);
	struct json_object *benches;
	const char *text;
	char why[256] = "";
	int ret;

	/* Any allocation failure above left a key out: never write a partial results file. */
	if (!root || !json_object_object_get_ex(root, "benchmarks", &benches) ||
	    json_object_array_length(benches) != n) {
		ret = -ENOMEM;
		goto cleanup;
	}
	snprintf(path, sizeof(path), "%s/%d.json", h->results_dir, (int)getpid());
	snprintf(tmp, sizeof(tmp), "%s.tmp", path);
	text =
	    json_object_to_json_string_ext(root, JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_SPACED |
						     JSON_C_TO_STRING_NOSLASHESCAPE);
	ret = text ? write_file(h, tmp, text, why, sizeof(why)) : -ENOMEM;
	/* Readers pick up every results/PID.json: they must never see a half-written one. */
	if (!ret && rename(tmp, path))
		ret = -errno;
	if (ret)
		unlink(tmp);
cleanup:
	if (ret)
		fprintf(stderr, MT_HARNESS_PROG ": cannot write the results to '%s': %s\n",
			h->results_dir, why[0] ? why : strerror(-ret));
	else if (!h->quiet)
		fprintf(stderr, "memtrack: results written to %s\n", path);
	json_object_put(root);
	return ret;
}

/* ---- Human output ------------------------------------------------------------------------ */

static void print_row(const struct mt_bench_result *r, int w)
{
	const struct mt_stats *s = &r->stats;
	char mean[32], med[32], sd[32], lo[32], hi[32], out[48];

	snprintf(out, sizeof(out), "%llu/%llu", (unsigned long long)s->iqr_outlier_rounds,
		 (unsigned long long)s->stdev_outlier_rounds);
	fprintf(stderr, "%-*s %7llu %10s %10s %10s %10s %10s %9s\n", w, r->name,
		(unsigned long long)s->rounds, mt_format_duration(s->mean_ns, mean, sizeof(mean)),
		mt_format_duration(s->median_ns, med, sizeof(med)),
		mt_format_duration(s->stdev_ns, sd, sizeof(sd)),
		mt_format_duration(s->min_ns, lo, sizeof(lo)),
		mt_format_duration(s->max_ns, hi, sizeof(hi)), out);
}

static void print_memory(const struct mt_bench_result *r)
{
	char peak[32], total[32], live[32];

	if (!r->memory_ok)
		return;
	fprintf(stderr, "%s: peak %s, %llu allocations (%s), %s live at exit\n", r->name,
		mt_bytesize_human(peak, sizeof(peak), r->mem.peak_bytes),
		(unsigned long long)r->mem.allocations,
		mt_bytesize_human(total, sizeof(total), r->mem.bytes_allocated),
		mt_bytesize_human(live, sizeof(live), r->mem.live_bytes));
	/* Nothing is lost silently (DESIGN.md): a figure built on dropped records says so. */
	if (r->mem.dropped)
		fprintf(stderr, "%s: %llu records dropped: the figures above are incomplete\n",
			r->name, (unsigned long long)r->mem.dropped);
}

void mt_harness_print_table(const struct mt_bench_result *res, size_t n)
{
	int w = 4;
	size_t i;

	for (i = 0; i < n; i++) {
		if ((int)strlen(res[i].name) > w)
			w = (int)strlen(res[i].name);
	}
	/* Outliers: by the IQR rule / beyond two standard deviations. */
	fprintf(stderr, "%-*s %7s %10s %10s %10s %10s %10s %9s\n", w, "name", "rounds", "mean",
		"median", "stdev", "min", "max", "outliers");
	for (i = 0; i < n; i++)
		print_row(&res[i], w);
	for (i = 0; i < n; i++)
		print_memory(&res[i]);
}
