// SPDX-License-Identifier: GPL-2.0
/*
 * Mapped memory of a run (--mappings, src/aggregate/mapped.h), for people and for programs: the
 * tree's peaks and a table of the process images that mapped anything, the allocator's own and
 * the break apart from what the program mapped; the summary's line; the JSON objects.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>

#include <json-c/json.h>

#include "base/bytesize.h"
#include "base/printable.h"
#include "output/output.h"

static const char *const class_keys[MT_MAPPED_CLASSES] = {
    "anon_private", "anon_shared",    "file_private",  "file_shared",
    "brk",	    "allocator_mmap", "allocator_brk",
};

static const char *human(char *buf, size_t n, uint64_t v)
{
	return mt_bytesize_human(buf, n, v);
}

static uint64_t allocator(const uint64_t *v)
{
	return v[MT_MAPPED_ALLOC_MMAP] + v[MT_MAPPED_ALLOC_BRK];
}

static void print_tree(const struct mt_report *rep, FILE *out)
{
	const struct mt_mapped_counts *t = mt_mapped_tree(rep->mapped);
	char b[6][32];

	fprintf(out, "\nMapped memory (mmap, mremap, brk; pages; the allocator's own apart)\n");
	fprintf(out, "  peak beyond heap  %s (mapped and the program's break, at one moment)\n",
		human(b[0], sizeof(b[0]), t->peak_beyond));
	fprintf(out,
		"  peak mapped       %s (anonymous private %s, shared %s; file private %s, shared "
		"%s: each its own peak)\n",
		human(b[0], sizeof(b[0]), t->peak_mapped),
		human(b[1], sizeof(b[1]), t->peak[MT_MAPPED_ANON_PRIVATE]),
		human(b[2], sizeof(b[2]), t->peak[MT_MAPPED_ANON_SHARED]),
		human(b[3], sizeof(b[3]), t->peak[MT_MAPPED_FILE_PRIVATE]),
		human(b[4], sizeof(b[4]), t->peak[MT_MAPPED_FILE_SHARED]));
	fprintf(out, "  peak brk          %s (the break the program moved itself)\n",
		human(b[0], sizeof(b[0]), t->peak[MT_MAPPED_BRK]));
	fprintf(out,
		"  allocator's own   peak mmap %s, peak brk %s (counted in the heap, not here)\n",
		human(b[0], sizeof(b[0]), t->peak[MT_MAPPED_ALLOC_MMAP]),
		human(b[1], sizeof(b[1]), t->peak[MT_MAPPED_ALLOC_BRK]));
	fprintf(out, "  at the end        mapped %s, brk %s, allocator's %s\n",
		human(b[0], sizeof(b[0]), t->mapped),
		human(b[1], sizeof(b[1]), t->now[MT_MAPPED_BRK]),
		human(b[2], sizeof(b[2]), allocator(t->now)));
	fprintf(out,
		"  calls             %" PRIu64 " mmap, %" PRIu64 " munmap, %" PRIu64
		" mremap, %" PRIu64 " brk\n",
		t->calls[MT_MAP_MMAP], t->calls[MT_MAP_MUNMAP], t->calls[MT_MAP_MREMAP],
		t->calls[MT_MAP_BRK]);
}

static void print_image(FILE *out, const struct mt_image *g, const struct mt_mapped_counts *c)
{
	char b[8][32], pos[MT_PRINTABLE_MAX], sx[MT_PRINTABLE_MAX];

	fprintf(
	    out, "  %-10s %8" PRIu32 " %9s %9s %9s %9s %9s %9s %9s %9s  %s\n",
	    mt_printable(pos, sizeof(pos), g->position[0] ? g->position : "?"), g->pid,
	    human(b[0], sizeof(b[0]), c->peak_beyond), human(b[1], sizeof(b[1]), c->peak_mapped),
	    human(b[2], sizeof(b[2]), c->mapped),
	    human(b[3], sizeof(b[3]),
		  c->now[MT_MAPPED_ANON_PRIVATE] + c->now[MT_MAPPED_ANON_SHARED]),
	    human(b[4], sizeof(b[4]),
		  c->now[MT_MAPPED_FILE_PRIVATE] + c->now[MT_MAPPED_FILE_SHARED]),
	    human(b[5], sizeof(b[5]), c->peak[MT_MAPPED_BRK]),
	    human(b[6], sizeof(b[6]), c->now[MT_MAPPED_BRK]),
	    human(b[7], sizeof(b[7]), c->peak[MT_MAPPED_ALLOC_MMAP] + c->peak[MT_MAPPED_ALLOC_BRK]),
	    g->exe[0] ? mt_printable(sx, sizeof(sx), g->exe) : "?");
}

static int by_peak(const void *a, const void *b, void *arg)
{
	const struct mt_mapped *mp = arg;
	uint64_t x = mt_mapped_image(mp, *(const size_t *)a)->peak_beyond;
	uint64_t y = mt_mapped_image(mp, *(const size_t *)b)->peak_beyond;

	if (x != y)
		return x < y ? 1 : -1;
	return *(const size_t *)a < *(const size_t *)b ? -1 : 1;
}

int mt_output_mapped(const struct mt_report *rep, FILE *out, size_t top)
{
	size_t *v, n = 0;

	if (!mt_mapped_any(rep->mapped))
		return 0;
	print_tree(rep, out);
	v = malloc((rep->n_images ? rep->n_images : 1) * sizeof(*v));
	if (!v)
		return -ENOMEM;
	for (size_t i = 0; i < rep->n_images; i++)
		if (mt_mapped_image(rep->mapped, i)->peak_beyond ||
		    allocator(mt_mapped_image(rep->mapped, i)->peak))
			v[n++] = i;
	qsort_r(v, n, sizeof(*v), by_peak, rep->mapped);
	fprintf(out,
		"\n  Per image (%zu that mapped memory; AT EXIT: at exec or exit, or at the end)\n",
		n);
	fprintf(out, "  %-10s %8s %9s %9s %9s %9s %9s %9s %9s %9s  %s\n", "POS", "PID", "PEAK+BRK",
		"PEAK", "AT EXIT", "ANON", "FILE", "BRK PEAK", "BRK EXIT", "ALLOC PK", "EXE");
	for (size_t i = 0; i < n && (!top || i < top); i++)
		print_image(out, &rep->images[v[i]], mt_mapped_image(rep->mapped, v[i]));
	if (top && n > top)
		fprintf(out, "  ... %zu more (--top 0 shows all)\n", n - top);
	free(v);
	return ferror(out) ? -EIO : 0;
}

void mt_output_mapped_summary(const struct mt_report *rep, FILE *out)
{
	const struct mt_mapped_counts *t = mt_mapped_tree(rep->mapped);
	char b[4][32];

	if (!mt_mapped_any(rep->mapped))
		return;
	fprintf(out,
		"memtrack: mapped: peak %s beyond the heap (mapped %s, brk %s at their peaks); the "
		"allocator's own peak %s, in the heap\n",
		human(b[0], sizeof(b[0]), t->peak_beyond),
		human(b[1], sizeof(b[1]), t->peak_mapped),
		human(b[2], sizeof(b[2]), t->peak[MT_MAPPED_BRK]),
		human(b[3], sizeof(b[3]),
		      t->peak[MT_MAPPED_ALLOC_MMAP] + t->peak[MT_MAPPED_ALLOC_BRK]));
}

static struct json_object *json_classes(const uint64_t *v)
{
	struct json_object *o = json_object_new_object();

	for (int k = 0; k < MT_MAPPED_CLASSES; k++)
		json_object_object_add(o, class_keys[k], json_object_new_uint64(v[k]));
	return o;
}

struct json_object *mt_output_json_mapped(const struct mt_report *rep,
					  const struct mt_mapped_counts *c)
{
	struct json_object *o, *calls;

	if (!mt_mapped_any(rep->mapped))
		return NULL;
	o = json_object_new_object();
	json_object_object_add(o, "mapped_at_end", json_object_new_uint64(c->mapped));
	json_object_object_add(o, "peak_mapped", json_object_new_uint64(c->peak_mapped));
	json_object_object_add(o, "beyond_heap_at_end", json_object_new_uint64(c->beyond));
	json_object_object_add(o, "peak_beyond_heap", json_object_new_uint64(c->peak_beyond));
	json_object_object_add(o, "all_at_end", json_object_new_uint64(c->all));
	json_object_object_add(o, "peak_all", json_object_new_uint64(c->peak_all));
	json_object_object_add(o, "at_end", json_classes(c->now));
	json_object_object_add(o, "peak", json_classes(c->peak));
	calls = json_object_new_object();
	json_object_object_add(calls, "mmap", json_object_new_uint64(c->calls[MT_MAP_MMAP]));
	json_object_object_add(calls, "munmap", json_object_new_uint64(c->calls[MT_MAP_MUNMAP]));
	json_object_object_add(calls, "mremap", json_object_new_uint64(c->calls[MT_MAP_MREMAP]));
	json_object_object_add(calls, "brk", json_object_new_uint64(c->calls[MT_MAP_BRK]));
	json_object_object_add(o, "calls", calls);
	return o;
}
