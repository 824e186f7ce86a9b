// SPDX-License-Identifier: GPL-2.0
/*
 * The leak scans of a run (--leaks, docs/LEAKS.md), for people and for programs: a table of the
 * process images with bytes and blocks in each of memcheck's four classes, then the loss
 * records in memcheck's words ("N bytes in M blocks are definitely lost in loss record K of L")
 * with the allocation stack under each, biggest first.
 */

#include <errno.h>
#include <inttypes.h>
#include <stdio.h>

#include <json-c/json.h>

#include "base/printable.h"
#include "output/output.h"

/* v with a comma every three digits, as memcheck writes its counts. */
static const char *commas(char *buf, size_t n, uint64_t v)
{
	char digits[32];
	int len = snprintf(digits, sizeof(digits), "%" PRIu64, v);
	size_t k = 0;

	for (int i = 0; i < len && k + 2 < n; i++) {
		if (i && (len - i) % 3 == 0)
			buf[k++] = ',';
		buf[k++] = digits[i];
	}
	buf[k] = '\0';
	return buf;
}

static void print_counts(FILE *out, const char *pos, uint32_t pid, const struct mt_leak_counts *c,
			 const char *exe)
{
	char p[MT_PRINTABLE_MAX];

	fprintf(out, "  %-10s %8" PRIu32, pos, pid);
	for (unsigned int k = MT_LEAK_DEFINITE; k <= MT_LEAK_CLASSES; k++)
		fprintf(out, " %11" PRIu64 " %6" PRIu64, c->bytes[k], c->blocks[k]);
	fprintf(out, "  %s\n", mt_printable(p, sizeof(p), exe));
}

/* What a scan could not do, said under the table. */
static void print_caveats(FILE *out, const struct mt_report *rep)
{
	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_leak_counts *c = mt_leaks_of(rep->leaks, i);
		const struct mt_image *g = &rep->images[i];

		if (c->flags & MT_LEAKS_SHARED)
			fprintf(out,
				"  pid %" PRIu32 ": not scanned, it ran in its parent's memory\n",
				g->pid);
		if (c->flags & MT_LEAKS_INEXACT)
			fprintf(out,
				"  pid %" PRIu32 ": memtrack lost track of its blocks (out of "
				"memory): its classes are not exact\n",
				g->pid);
		if (c->unreadable_regions || c->unreadable_bytes)
			fprintf(out,
				"  pid %" PRIu32 ": %" PRIu64 " bytes could not be read (%" PRIu32
				" root regions): pointers there were not seen\n",
				g->pid, c->unreadable_bytes, c->unreadable_regions);
	}
}

/*
 * What the suppressions hid, as memcheck says it ("suppressed: N bytes in M blocks"), per image
 * and in the tree, then each suppression that matched, as memcheck -v lists them.
 */
static void print_suppressed(FILE *out, const struct mt_report *rep)
{
	const struct mt_suppressions *ss = mt_leaks_suppressions(rep->leaks);
	const struct mt_leak_counts *t = mt_leaks_total(rep->leaks);
	char b1[32], b2[32], p[MT_PRINTABLE_MAX], f[MT_PRINTABLE_MAX];

	if (!ss)
		return;
	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_leak_counts *c = mt_leaks_of(rep->leaks, i);

		if (c->suppressed_blocks)
			fprintf(out, "  pid %" PRIu32 ": suppressed: %s bytes in %s blocks\n",
				rep->images[i].pid, commas(b1, sizeof(b1), c->suppressed_bytes),
				commas(b2, sizeof(b2), c->suppressed_blocks));
	}
	fprintf(out, "  suppressed: %s bytes in %s blocks (%zu suppressions)\n",
		commas(b1, sizeof(b1), t->suppressed_bytes),
		commas(b2, sizeof(b2), t->suppressed_blocks), ss->n);
	for (size_t i = 0; i < ss->n; i++) {
		const struct mt_supp *sp = &ss->v[i];

		if (!sp->records)
			continue;
		fprintf(out,
			"  used_suppression: %6" PRIu64 " %s %s:%u suppressed: %s bytes in %s "
			"blocks\n",
			sp->records, mt_printable(p, sizeof(p), sp->name),
			mt_printable(f, sizeof(f), ss->files[sp->file]), sp->line,
			commas(b1, sizeof(b1), sp->bytes), commas(b2, sizeof(b2), sp->blocks));
	}
}

static void print_table(FILE *out, const struct mt_report *rep)
{
	const struct mt_leak_counts *t = mt_leaks_total(rep->leaks);

	fprintf(out, "\nLeaks at exit (memcheck's classes; docs/LEAKS.md)\n");
	fprintf(out, "  %-10s %8s %11s %6s %11s %6s %11s %6s %11s %6s  %s\n", "POS", "PID",
		"DEFINITELY", "BLOCKS", "INDIRECTLY", "BLOCKS", "POSSIBLY", "BLOCKS", "REACHABLE",
		"BLOCKS", "EXE");
	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_leak_counts *c = mt_leaks_of(rep->leaks, i);
		const struct mt_image *g = &rep->images[i];

		if (c->scanned)
			print_counts(out, g->position[0] ? g->position : "?", g->pid, c,
				     g->exe[0] ? g->exe : "?");
	}
	print_counts(out, "tree", 0, t, "");
	print_suppressed(out, rep);
	print_caveats(out, rep);
}

static void print_stack(FILE *out, const struct mt_report *rep, uint32_t stack)
{
	const struct mt_site *s = stack ? mt_sites_of(rep->sites, stack) : NULL;

	if (!s || !s->sym) {
		fprintf(out, "      (no stack: memtrack run --stacks records them)\n");
		return;
	}
	/* Frame 0 is the allocator itself, as memcheck's first "at" line is. */
	for (uint32_t k = 0; k < s->n_frames; k++) {
		fprintf(out, "      %s ", k ? "by" : "at");
		mt_output_frame(out, &s->sym[k]);
		fputc('\n', out);
	}
}

/* The loss records of one image (from index first of v), memcheck's lost kinds only. */
static size_t print_image_records(FILE *out, const struct mt_report *rep,
				  const struct mt_loss_record *v, size_t n, size_t first,
				  size_t top)
{
	size_t end = first, shown = 0, k = 0, lost = 0;
	char b1[32], b2[32];

	while (end < n && v[end].image == v[first].image)
		lost += v[end++].cls != MT_LEAK_REACHABLE;
	if (!lost)
		return end;
	fprintf(out, "\n  pid %" PRIu32 " (%s):\n", rep->images[v[first].image].pid,
		rep->images[v[first].image].exe);
	for (size_t i = first; i < end; i++) {
		if (v[i].cls == MT_LEAK_REACHABLE)
			continue;
		k++;
		if (top && shown == top)
			continue;
		shown++;
		fprintf(out, "  %s bytes in %s blocks are %s in loss record %zu of %zu\n",
			commas(b1, sizeof(b1), v[i].bytes), commas(b2, sizeof(b2), v[i].blocks),
			mt_leak_class_name(v[i].cls), k, lost);
		print_stack(out, rep, v[i].stack);
	}
	if (shown < lost)
		fprintf(out, "  ... %zu more (--top 0 shows all)\n", lost - shown);
	return end;
}

/* Whether any block of the tree is lost or possibly lost: it has loss records to print. */
static bool any_lost(const struct mt_report *rep)
{
	const struct mt_leak_counts *t = mt_leaks_total(rep->leaks);

	return t->blocks[MT_LEAK_DEFINITE] || t->blocks[MT_LEAK_INDIRECT] ||
	       t->blocks[MT_LEAK_POSSIBLE];
}

int mt_output_leaks(const struct mt_report *rep, FILE *out, size_t top)
{
	const struct mt_loss_record *v;
	size_t n;

	if (!mt_leaks_any(rep->leaks))
		return 0;
	print_table(out, rep);
	n = mt_leaks_records(rep->leaks, &v);
	if (any_lost(rep))
		fprintf(out, "\nLoss records (definitely, indirectly and possibly lost; biggest "
			     "first)\n");
	for (size_t i = 0; i < n;)
		i = print_image_records(out, rep, v, n, i, top);
	return ferror(out) ? -EIO : 0;
}

void mt_output_leaks_summary(const struct mt_report *rep, FILE *out)
{
	const struct mt_leak_counts *t = mt_leaks_total(rep->leaks);
	char b[MT_LEAK_CLASSES + 1][32];

	if (!mt_leaks_any(rep->leaks))
		return;
	for (unsigned int k = MT_LEAK_DEFINITE; k <= MT_LEAK_CLASSES; k++)
		commas(b[k], sizeof(b[k]), t->bytes[k]);
	fprintf(out,
		"memtrack: leaks at exit: %s bytes definitely lost, %s indirectly, %s possibly, %s "
		"still reachable (memtrack report FILE: the loss records)\n",
		b[MT_LEAK_DEFINITE], b[MT_LEAK_INDIRECT], b[MT_LEAK_POSSIBLE],
		b[MT_LEAK_REACHABLE]);
}

static const char *const json_names[] = {
    [MT_LEAK_DEFINITE] = "definitely_lost",
    [MT_LEAK_INDIRECT] = "indirectly_lost",
    [MT_LEAK_POSSIBLE] = "possibly_lost",
    [MT_LEAK_REACHABLE] = "still_reachable",
};

static void jset_u64(struct json_object *o, const char *key, uint64_t v)
{
	json_object_object_add(o, key, json_object_new_uint64(v));
}

struct json_object *mt_output_json_leak_counts(const struct mt_leak_counts *c)
{
	struct json_object *o, *sup;

	if (!c->scanned)
		return NULL;
	o = json_object_new_object();
	for (unsigned int k = MT_LEAK_DEFINITE; k <= MT_LEAK_CLASSES; k++) {
		struct json_object *v = json_object_new_object();

		jset_u64(v, "bytes", c->bytes[k]);
		jset_u64(v, "blocks", c->blocks[k]);
		json_object_object_add(o, json_names[k], v);
	}
	jset_u64(o, "threads", c->threads);
	jset_u64(o, "root_regions", c->regions);
	jset_u64(o, "unreadable_regions", c->unreadable_regions);
	jset_u64(o, "unreadable_bytes", c->unreadable_bytes);
	jset_u64(o, "scanned_bytes", c->scanned_bytes);
	jset_u64(o, "scan_ns", c->scan_ns);
	jset_u64(o, "scan_cpu_ns", c->scan_cpu_ns);
	sup = json_object_new_object();
	jset_u64(sup, "bytes", c->suppressed_bytes);
	jset_u64(sup, "blocks", c->suppressed_blocks);
	json_object_object_add(o, "suppressed", sup);
	json_object_object_add(o, "exact", json_object_new_boolean(!(c->flags & MT_LEAKS_INEXACT)));
	json_object_object_add(o, "shared_memory",
			       json_object_new_boolean(c->flags & MT_LEAKS_SHARED));
	return o;
}

struct json_object *mt_output_json_loss_records(const struct mt_report *rep)
{
	const struct mt_loss_record *v;
	size_t n = mt_leaks_records(rep->leaks, &v);
	struct json_object *a;

	if (!mt_leaks_any(rep->leaks))
		return NULL;
	a = json_object_new_array();
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_object_new_object();

		jset_u64(o, "image", v[i].image);
		jset_u64(o, "pid", rep->images[v[i].image].pid);
		json_object_object_add(o, "class", json_object_new_string(json_names[v[i].cls]));
		jset_u64(o, "bytes", v[i].bytes);
		jset_u64(o, "blocks", v[i].blocks);
		json_object_object_add(o, "stack_id",
				       v[i].stack ? json_object_new_uint64(v[i].stack) : NULL);
		json_object_array_add(a, o);
	}
	return a;
}
