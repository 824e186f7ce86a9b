// SPDX-License-Identifier: GPL-2.0
/*
 * RSS over time (aggregate/rss.h), for people and for programs: the peak resident
 * memory of the tree and of each process image, split anonymous, file and shared, with the
 * kernel's own high-water mark and the image's RSS at its exit; the JSON objects of the same.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "base/bytesize.h"
#include "base/printable.h"
#include "output/output.h"

static const char *human(char *buf, size_t n, uint64_t v)
{
	return mt_bytesize_human(buf, n, v);
}

/* Images with samples, by peak RSS, largest first; ties in order of appearance. */
static const struct mt_report *sort_rep;

static int by_peak(const void *a, const void *b)
{
	size_t x = *(const size_t *)a, y = *(const size_t *)b;
	uint64_t px = mt_rss_image_peak(mt_rss_of(sort_rep->rss, x));
	uint64_t py = mt_rss_image_peak(mt_rss_of(sort_rep->rss, y));

	if (px != py)
		return px < py ? 1 : -1;
	return (x > y) - (x < y);
}

static void print_image(const struct mt_report *rep, FILE *out, size_t i)
{
	const struct mt_image *g = &rep->images[i];
	const struct mt_rss_image *r = mt_rss_of(rep->rss, i);
	char b[6][32], sx[MT_PRINTABLE_MAX];

	fprintf(out, "  %8" PRIu32 " %9s %9s %9s %9s %9s %9s %8" PRIu64 "  %s\n", g->pid,
		human(b[0], sizeof(b[0]), mt_rss_image_peak(r)),
		human(b[1], sizeof(b[1]), r->peak_anon), human(b[2], sizeof(b[2]), r->peak_file),
		human(b[3], sizeof(b[3]), r->peak_shmem), human(b[4], sizeof(b[4]), r->hwm),
		r->has_exit ? human(b[5], sizeof(b[5]), r->exit_anon + r->exit_file + r->exit_shmem)
			    : "-",
		r->samples, g->exe[0] ? mt_printable(sx, sizeof(sx), g->exe) : "?");
}

int mt_output_rss(const struct mt_report *rep, FILE *out, size_t top)
{
	size_t *v = malloc((rep->n_images ? rep->n_images : 1) * sizeof(*v)), n = 0, shown;
	char b[32];

	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_images; i++)
		if (mt_rss_of(rep->rss, i))
			v[n++] = i;
	if (!n) {
		free(v);
		return 0;
	}
	sort_rep = rep;
	qsort(v, n, sizeof(*v), by_peak);
	fprintf(out,
		"\nResident memory (RSS, /proc/PID/status every 20 ms and at exit; %" PRIu64
		" samples)\n",
		rep->rss->samples);
	fprintf(out, "  peak RSS of the tree  %s (%" PRIu64 " bytes) at %.3f s\n",
		human(b, sizeof(b), rep->rss->tree_peak), rep->rss->tree_peak,
		(double)rep->rss->tree_peak_ns / 1e9);
	fprintf(out, "  %8s %9s %9s %9s %9s %9s %9s %8s  %s\n", "PID", "PEAK", "ANON", "FILE",
		"SHMEM", "HWM", "AT EXIT", "SAMPLES", "EXE");
	shown = top && top < n ? top : n;
	for (size_t k = 0; k < shown; k++)
		print_image(rep, out, v[k]);
	if (shown < n)
		fprintf(out, "  ... %zu more (--top 0 shows all)\n", n - shown);
	free(v);
	return ferror(out) ? -EIO : 0;
}

void mt_output_rss_summary(const struct mt_report *rep, FILE *out)
{
	char b[32];

	if (!rep->rss->samples)
		return;
	fprintf(out, "memtrack: peak RSS of the tree %s (sampled every 20 ms and at exit)\n",
		human(b, sizeof(b), rep->rss->tree_peak));
}

static void put_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

static struct json_object *split(uint64_t anon, uint64_t file, uint64_t shmem)
{
	struct json_object *o = json_object_new_object();

	put_u64(o, "bytes", anon + file + shmem);
	put_u64(o, "anon", anon);
	put_u64(o, "file", file);
	put_u64(o, "shmem", shmem);
	return o;
}

struct json_object *mt_output_json_rss_image(const struct mt_report *rep, size_t image)
{
	const struct mt_rss_image *r = mt_rss_of(rep->rss, image);
	struct json_object *o;

	if (!r)
		return NULL;
	o = json_object_new_object();
	put_u64(o, "samples", r->samples);
	put_u64(o, "peak_bytes", mt_rss_image_peak(r));
	json_object_object_add(o, "peak_sample", split(r->peak_anon, r->peak_file, r->peak_shmem));
	put_u64(o, "peak_sample_ns", r->peak_ns);
	put_u64(o, "hwm_bytes", r->hwm);
	json_object_object_add(
	    o, "at_exit", r->has_exit ? split(r->exit_anon, r->exit_file, r->exit_shmem) : NULL);
	return o;
}

struct json_object *mt_output_json_rss(const struct mt_report *rep)
{
	struct json_object *o;

	if (!rep->rss->samples)
		return NULL;
	o = json_object_new_object();
	put_u64(o, "samples", rep->rss->samples);
	put_u64(o, "period_ns", 20 * 1000000ull);
	put_u64(o, "tree_peak_bytes", rep->rss->tree_peak);
	put_u64(o, "tree_peak_ns", rep->rss->tree_peak_ns);
	return o;
}
