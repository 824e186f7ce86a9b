// SPDX-License-Identifier: GPL-2.0
/*
 * What the text outputs (output.h) say of the processes handed to a debugger or a tracer: what was
 * recorded before and after each handoff, the files mapped after it whose first calls may be
 * missing, and the processes created after it, which are not recorded. The report's section and
 * the end-of-run summary's lines.
 */
#include <inttypes.h>
#include <stdio.h>

#include "base/printable.h"
#include "output/output.h"

/* The files an image mapped after its handoff, whose calls before their probes may be missing. */
static void put_late(FILE *out, const struct mt_image_handoff *h)
{
	char p[MT_PRINTABLE_MAX];

	for (size_t i = 0; i < h->n_late; i++)
		fprintf(out, "%s%s", i ? ", " : "", mt_printable(p, sizeof(p), h->late[i]));
	fputc('\n', out);
}

/*
 * A process's counts while it was the debugger's (or its tracer's): the ones of its image after
 * the handoff record, and of the images its later execs made.
 */
static void handoff_counts(const struct mt_report *rep, size_t i, char *buf, size_t n)
{
	const struct mt_image *g = &rep->images[i];
	const struct mt_heap_counts *b = &g->handoff->before;
	uint64_t allocs = g->c.allocations - b->allocations, frees = g->c.frees - b->frees;

	for (size_t j = i + 1; j < rep->n_images; j++) {
		if (rep->images[j].first != g->first || rep->images[j].pid != g->pid)
			continue;
		allocs += rep->images[j].c.allocations;
		frees += rep->images[j].c.frees;
	}
	snprintf(buf, n,
		 "%" PRIu64 " allocations, %" PRIu64 " frees recorded before, %" PRIu64
		 " allocations, %" PRIu64 " frees after",
		 b->allocations, b->frees, allocs, frees);
}

/* The pids of the images created after a handoff, whose allocations were not recorded. */
static void put_unrecorded(FILE *out, const struct mt_report *rep)
{
	size_t shown = 0;

	for (size_t i = 0; i < rep->n_images && shown < 8; i++) {
		if (!rep->images[i].unrecorded || (i && rep->images[i].first != i))
			continue;
		fprintf(out, " %" PRIu32, rep->images[i].pid);
		shown++;
	}
	fprintf(out, "%s\n", shown == 8 ? " ..." : "");
}

void mt_output_handoffs(const struct mt_report *rep, FILE *out)
{
	char pos[64], at[MT_PRINTABLE_MAX], counts[160];
	size_t n = 0;

	for (size_t i = 0; i < rep->n_images; i++)
		n += rep->images[i].handoff != NULL;
	if (!n)
		return;
	fprintf(out, "\nHanded to a debugger (%zu)\n", n);
	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_image *g = &rep->images[i];

		if (!g->handoff)
			continue;
		handoff_counts(rep, i, counts, sizeof(counts));
		fprintf(out, "  %s (pid %" PRIu32 ") %s, after event %" PRIu64 ": %s\n",
			mt_output_image_pos(pos, sizeof(pos), g), g->pid,
			mt_printable(at, sizeof(at), g->handoff->at), g->handoff->event, counts);
		if (!g->handoff->n_late)
			continue;
		fprintf(out, "    mapped after the handoff, probed without stopping it (calls into "
			     "them before that may be missing): ");
		put_late(out, g->handoff);
	}
	if (!mt_report_unrecorded_images(rep))
		return;
	fprintf(out,
		"  created after a handoff, not recorded (their counts are 0, not their truth), "
		"pids:");
	put_unrecorded(out, rep);
}

/* A tracer's handoff says whose it is (its "at"); --stop-at's is a debugger's. */
static const char *handed_to(const struct mt_image_handoff *h)
{
	return h->to_tracer ? "" : "to a debugger ";
}

/* Each image handed to a debugger: what was recorded before and after, what may be missing. */
void mt_output_handoffs_summary(const struct mt_report *rep, FILE *out)
{
	char pos[64], at[MT_PRINTABLE_MAX], counts[160];

	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_image *g = &rep->images[i];

		if (!g->handoff)
			continue;
		handoff_counts(rep, i, counts, sizeof(counts));
		fprintf(out, "memtrack: process %s (pid %" PRIu32 ") was handed %s%s: %s\n",
			mt_output_image_pos(pos, sizeof(pos), g), g->pid, handed_to(g->handoff),
			mt_printable(at, sizeof(at), g->handoff->at), counts);
		if (!g->handoff->n_late)
			continue;
		fprintf(out,
			"memtrack: WARNING: process %s mapped files with allocators after its "
			"handoff, probed without stopping it: its calls into them before that may "
			"be missing: ",
			pos);
		put_late(out, g->handoff);
	}
	if (!mt_report_unrecorded_images(rep))
		return;
	fprintf(out,
		"memtrack: WARNING: processes created after the handoff are not recorded (memtrack "
		"is not their tracer): %zu image(s), pids:",
		mt_report_unrecorded_images(rep));
	put_unrecorded(out, rep);
}
