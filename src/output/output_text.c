// SPDX-License-Identifier: GPL-2.0
/*
 * The text outputs of an aggregated run (output.h): the report that `memtrack report` prints and
 * the lines `memtrack run` prints when the command is done.
 */
#include <errno.h>
#include <inttypes.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>

#include "base/bytesize.h"
#include "base/kind.h"
#include "output/output.h"
#include "base/printable.h"

/* ---- the report --------------------------------------------------------------------------- */

/* Exact bytes, with the human form when it says more. */
static const char *bytes_str(char *buf, size_t n, uint64_t v)
{
	char h[32];

	if (v < 1024)
		snprintf(buf, n, "%" PRIu64 " bytes", v);
	else
		snprintf(buf, n, "%" PRIu64 " bytes (%s)", v, mt_bytesize_human(h, sizeof(h), v));
	return buf;
}

/* How an image ended: its exec, its process's exit status, "-" while running. */
static const char *status_str(char *buf, size_t n, const struct mt_image *p)
{
	const char *sig;

	if (p->end == MT_IMAGE_EXEC)
		snprintf(buf, n, "exec");
	else if (!p->exited)
		snprintf(buf, n, "-");
	else if (WIFEXITED(p->exit_status))
		snprintf(buf, n, "exit %d", WEXITSTATUS(p->exit_status));
	else if (WIFSIGNALED(p->exit_status) && (sig = sigabbrev_np(WTERMSIG(p->exit_status))))
		snprintf(buf, n, "SIG%s", sig);
	else if (WIFSIGNALED(p->exit_status))
		snprintf(buf, n, "signal %d", WTERMSIG(p->exit_status));
	else
		snprintf(buf, n, "0x%x", (unsigned int)p->exit_status);
	return buf;
}

/* One argument, shell-quoted when needed so that the line can be pasted back. */
static void put_arg(FILE *out, const char *arg)
{
	bool plain = *arg && !arg[strcspn(arg, " \t\n'\"\\$`;&|<>()*?[]#~")];
	size_t n = strlen(arg) + 1;
	char *safe = malloc(n);
	const char *a = safe ? mt_printable(safe, n, arg) : "?";

	if (!plain)
		fputc('\'', out);
	for (; *a; a++) {
		if (*a == '\'')
			fputs("'\\''", out);
		else
			fputc(*a, out);
	}
	if (!plain)
		fputc('\'', out);
	free(safe);
}

static void print_command(const struct mt_report *rep, FILE *out)
{
	int i;

	fprintf(out, "command:  ");
	for (i = 0; i < rep->argc; i++) {
		fputc(' ', out);
		put_arg(out, rep->argv[i]);
	}
	fputc('\n', out);
}

static void print_run(const struct mt_report *rep, FILE *out)
{
	time_t secs = (time_t)(rep->start_time_ns / 1000000000u);
	struct tm tm;
	char when[64] = "unknown", w[sizeof(rep->watcher)];

	if (gmtime_r(&secs, &tm))
		strftime(when, sizeof(when), "%Y-%m-%d %H:%M:%S UTC", &tm);
	print_command(rep, out);
	fprintf(out, "started:   %s\n", when);
	if (rep->attached)
		fprintf(out,
			"attached:  to the process running (memtrack attach), recorded until its "
			"detach: blocks allocated before are unknown\n");
	if (rep->has_footer && rep->footer.end_mono_ns >= rep->start_mono_ns)
		fprintf(out, "duration:  %.3f s\n",
			(double)(rep->footer.end_mono_ns - rep->start_mono_ns) / 1e9);
	fprintf(out, "watcher:   %s\n",
		rep->watcher[0] ? mt_printable(w, sizeof(w), rep->watcher) : "unknown");
	if (rep->truncated)
		fprintf(out, "TRUNCATED: the run was cut short (no footer); the figures cover what "
			     "was written before the cut\n");
	if (rep->in_progress)
		fprintf(out, "in progress: the run is still being recorded; the figures cover what "
			     "was written so far\n");
	if ((rep->truncated || rep->in_progress) && rep->events &&
	    rep->last_event_ns >= rep->start_mono_ns)
		fprintf(out, "recorded:  %" PRIu64 " events, the last %.3f s into the run\n",
			rep->events, (double)(rep->last_event_ns - rep->start_mono_ns) / 1e9);
}

static void print_dropped(const struct mt_report *rep, FILE *out)
{
	const struct mt_artifact_footer *f = &rep->footer;

	if (!rep->has_footer) {
		fprintf(out, "  dropped           unknown (%s)\n",
			rep->in_progress ? "known at the end of the run"
					 : "the artifact has no footer");
		return;
	}
	if (!rep->totals.dropped) {
		fprintf(out, "  dropped           none\n");
		return;
	}
	fprintf(out,
		"  dropped           %" PRIu64 " events, %" PRIu64
		" calls without arguments, %" PRIu64 " attach requests\n",
		f->events_dropped, f->args_lost, f->requests_dropped);
	if (f->events_dropped || f->args_lost)
		fprintf(out,
			"  WARNING: %" PRIu64 " allocator calls were lost: the figures above are "
			"incomplete\n",
			f->events_dropped + f->args_lost);
	if (f->requests_dropped)
		fprintf(out,
			"  note: dropped attach requests were recovered by rescanning mappings\n");
}

/*
 * The blocks never freed, told apart: those released with their process (its exit or exec: the
 * kernel took them back, which for a tree of a thousand short processes is most of them) and
 * those of processes still running when the recording ended. Summed over a tree, the first
 * reads as a leak when it is not said what it is.
 */
static void print_live(const struct mt_report *rep, FILE *out)
{
	struct mt_released ended = {0}, running = {0};
	char b[64];

	for (size_t i = 0; i < rep->n_images; i++) {
		const struct mt_image *g = &rep->images[i];

		ended.blocks += g->released.blocks;
		ended.bytes += g->released.bytes;
		running.blocks += g->c.live_blocks;
		running.bytes += g->c.live_bytes;
	}
	fprintf(out,
		"  live at exit      %" PRIu64 " blocks, %s (released with their process, at "
		"its exit or exec)\n",
		ended.blocks, bytes_str(b, sizeof(b), ended.bytes));
	if (rep->attached)
		fprintf(out,
			"  live at detach    %" PRIu64
			" blocks, %s (allocated after the attach, not "
			"freed by the detach)\n",
			running.blocks, bytes_str(b, sizeof(b), running.bytes));
	else if (running.blocks)
		fprintf(out,
			"  live at the end   %" PRIu64 " blocks, %s (their process was still "
			"running when the recording ended)\n",
			running.blocks, bytes_str(b, sizeof(b), running.bytes));
}

static void print_totals(const struct mt_report *rep, FILE *out)
{
	const struct mt_report_totals *t = &rep->totals;
	char b[64];

	fprintf(out, "\nTotals\n");
	fprintf(out, "  allocations       %" PRIu64 "\n", t->allocations);
	fprintf(out, "  zeroed            %" PRIu64 " (calloc and the like)\n",
		t->zeroed_allocations);
	fprintf(out, "  frees             %" PRIu64 "\n", t->frees);
	fprintf(out,
		"  reallocs          %" PRIu64 " (realloc(NULL, n) %" PRIu64
		", realloc(p, 0) %" PRIu64 ")\n",
		t->reallocs, t->realloc_null, t->realloc_zero);
	/* Attached: a block never seen allocated was allocated before the attach. */
	if (rep->attached)
		fprintf(out,
			"  freed, allocated before attach   %" PRIu64
			" (unmatched: counted nowhere else)\n",
			t->unmatched_frees);
	else
		fprintf(out, "  unmatched frees   %" PRIu64 "\n", t->unmatched_frees);
	fprintf(out, "  failed calls      %" PRIu64 "\n", t->failed);
	fprintf(out, "  bytes allocated   %s\n", bytes_str(b, sizeof(b), t->bytes_allocated));
	fprintf(out, "  temporary         %" PRIu64 " (freed right after their allocation)\n",
		t->temporary);
	fprintf(out, "  peak live heap    %s\n", bytes_str(b, sizeof(b), t->peak_bytes));
	print_live(rep, out);
	fprintf(out, "  events            %" PRIu64 "\n", rep->events);
	if (rep->unknown_events)
		fprintf(out, "  unknown kinds     %" PRIu64 " events passed over\n",
			rep->unknown_events);
	print_dropped(rep, out);
}

static int by_bytes_image(const void *a, const void *b)
{
	const struct mt_image *x = *(const struct mt_image *const *)a;
	const struct mt_image *y = *(const struct mt_image *const *)b;

	if (x->c.bytes_allocated != y->c.bytes_allocated)
		return x->c.bytes_allocated < y->c.bytes_allocated ? 1 : -1;
	return x < y ? -1 : x > y; /* in order of appearance */
}

static int by_allocs_file(const void *a, const void *b)
{
	const struct mt_report_file *x = *(const struct mt_report_file *const *)a;
	const struct mt_report_file *y = *(const struct mt_report_file *const *)b;
	uint64_t nx = x->t.allocations + x->t.reallocs, ny = y->t.allocations + y->t.reallocs;

	if (nx != ny)
		return nx < ny ? 1 : -1;
	return x->file_id < y->file_id ? -1 : x->file_id > y->file_id;
}

/* Pointers to n elements of size sz, sorted; NULL when out of memory. */
static const void **sorted(const void *base, size_t n, size_t sz,
			   int (*cmp)(const void *, const void *))
{
	const void **v = malloc((n ? n : 1) * sizeof(*v));
	size_t i;

	if (!v)
		return NULL;
	for (i = 0; i < n; i++)
		v[i] = (const char *)base + i * sz;
	qsort(v, n, sizeof(*v), cmp);
	return v;
}

static size_t shown(size_t n, size_t top)
{
	return top && top < n ? top : n;
}

static void print_image(const struct mt_report *rep, FILE *out, const struct mt_image *g)
{
	char s[32], pos[64], par[64], b1[32], b2[32], b3[32], sx[MT_PRINTABLE_MAX];
	/* An image the stream did not end (cut short, or an older artifact): what is still live. */
	struct mt_released r = g->end != MT_IMAGE_RUNNING
				   ? g->released
				   : (struct mt_released){g->c.live_blocks, g->c.live_bytes};

	fprintf(out,
		"  %-10s %8" PRIu32 " %-10s %-6s %-9s %9" PRIu64 " %9" PRIu64 " %8" PRIu64
		" %9" PRIu64 " %9s %9s %7" PRIu64 " %9s  %s\n",
		mt_output_image_pos(pos, sizeof(pos), g), g->pid,
		g->parent >= 0 ? mt_output_image_pos(par, sizeof(par), &rep->images[g->parent])
			       : "-",
		g->shared_memory ? "vfork" : "own", status_str(s, sizeof(s), g), g->c.allocations,
		g->c.frees, g->c.reallocs, g->c.unmatched_frees,
		mt_bytesize_human(b1, sizeof(b1), g->c.bytes_allocated),
		mt_bytesize_human(b2, sizeof(b2), g->c.peak_bytes), r.blocks,
		mt_bytesize_human(b3, sizeof(b3), r.bytes),
		g->exe[0] ? mt_printable(sx, sizeof(sx), g->exe) : "?");
}

static int print_images(const struct mt_report *rep, FILE *out, size_t top)
{
	const void **v = sorted(rep->images, rep->n_images, sizeof(*rep->images), by_bytes_image);
	size_t i, n = shown(rep->n_images, top);

	if (!v)
		return -ENOMEM;
	fprintf(
	    out,
	    "\nProcess images (%zu, by bytes allocated; LIVE: at exec or exit, or at the end)\n",
	    rep->n_images);
	fprintf(out, "  %-10s %8s %-10s %-6s %-9s %9s %9s %8s %9s %9s %9s %7s %9s  %s\n", "POS",
		"PID", "PARENT", "MEMORY", "END", "ALLOCS", "FREES", "REALLOCS", "UNMATCHED",
		"BYTES", "PEAK", "LIVE", "LIVE B", "EXE");
	for (i = 0; i < n; i++)
		print_image(rep, out, v[i]);
	if (n < rep->n_images)
		fprintf(out, "  ... %zu more (--top 0 shows all)\n", rep->n_images - n);
	free(v);
	return 0;
}

static int print_files(const struct mt_report *rep, FILE *out, size_t top)
{
	const void **v = sorted(rep->files, rep->n_files, sizeof(*rep->files), by_allocs_file);
	size_t i, n = shown(rep->n_files, top);
	char b[32], sx[MT_PRINTABLE_MAX];

	if (!v)
		return -ENOMEM;
	fprintf(out, "\nAttached files (%zu)\n", rep->n_files);
	fprintf(out, "  %5s %-9s %6s %10s %10s %9s %11s  %s\n", "ID", "FAMILY", "PROBES", "ALLOCS",
		"FREES", "REALLOCS", "BYTES", "PATH");
	for (i = 0; i < n; i++) {
		const struct mt_report_file *f = v[i];

		fprintf(out, "  %5u %-9s %6u %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %11s  %s\n",
			f->file_id, mt_report_family_name(f->family), f->probes, f->t.allocations,
			f->t.frees, f->t.reallocs,
			mt_bytesize_human(b, sizeof(b), f->t.bytes_allocated),
			f->recorded ? mt_printable(sx, sizeof(sx), f->path) : "(no file record)");
	}
	if (n < rep->n_files)
		fprintf(out, "  ... %zu more (--top 0 shows all)\n", rep->n_files - n);
	free(v);
	return 0;
}

/* Go's heap (family go): what its counts are, and are not. */
#define GO_HEAP_NOTE                                                                               \
	"Go's collected heap, counted at runtime.mallocgc (allocations, bytes); its frees are "    \
	"the collector's and not seen: peak and live bytes leave it out"

static void print_families(const struct mt_report *rep, FILE *out)
{
	unsigned int i, rows = 0;
	char b[32];

	fprintf(out, "\nAllocator families\n");
	fprintf(out, "  %-9s %10s %10s %9s %11s\n", "FAMILY", "ALLOCS", "FREES", "REALLOCS",
		"BYTES");
	for (i = 0; i <= MT_FAM_MAX; i++) {
		const struct mt_report_totals *t = &rep->families[i];

		if (!t->allocations && !t->frees && !t->reallocs && !t->failed)
			continue;
		rows++;
		fprintf(out, "  %-9s %10" PRIu64 " %10" PRIu64 " %9" PRIu64 " %11s\n",
			mt_report_family_name(i), t->allocations, t->frees, t->reallocs,
			mt_bytesize_human(b, sizeof(b), t->bytes_allocated));
	}
	if (!rows)
		fprintf(out, "  none\n");
	if (rep->families[MT_FAM_GO].allocations)
		fprintf(out, "  go: %s\n", GO_HEAP_NOTE);
}

static void print_histogram(const struct mt_report *rep, FILE *out)
{
	unsigned int b, lo = MT_REPORT_HIST_BUCKETS, hi = 0;
	uint64_t max = 0;
	char l1[32], l2[32];

	for (b = 0; b < MT_REPORT_HIST_BUCKETS; b++) {
		if (!rep->histogram[b])
			continue;
		lo = b < lo ? b : lo;
		hi = b;
		max = rep->histogram[b] > max ? rep->histogram[b] : max;
	}
	fprintf(out, "\nRequested sizes (allocations and reallocs)\n");
	if (!max) {
		fprintf(out, "  none\n");
		return;
	}
	for (b = lo; b <= hi; b++) {
		uint64_t c = rep->histogram[b];
		int bar = (int)((double)c * 40 / (double)max + 0.999);

		if (b == 0)
			fprintf(out, "  %20s", "0");
		else
			fprintf(out, "  [%8s, %8s)", mt_bytesize_pow2(l1, sizeof(l1), b - 1),
				mt_bytesize_pow2(l2, sizeof(l2), b));
		fprintf(out, " %12" PRIu64 " %.*s\n", c, bar,
			"########################################");
	}
}

/* One line per file or function not probed: "PATH: REASON" or "PATH: FUNCTION: REASON". */
static void put_unprobed(FILE *out, const char *prefix, const struct mt_report_unprobed *u)
{
	char p[MT_PRINTABLE_MAX], f[256], r[256];

	fprintf(out, "%s%s: ", prefix, mt_printable(p, sizeof(p), u->path));
	if (u->function[0])
		fprintf(out, "%s: ", mt_printable(f, sizeof(f), u->function));
	fprintf(out, "%s\n", mt_printable(r, sizeof(r), u->reason));
}

static void print_unprobed(const struct mt_report *rep, FILE *out)
{
	if (!rep->n_unprobed)
		return;
	fprintf(out, "\nNot probed (%zu): their allocations are missing from the figures\n",
		rep->n_unprobed);
	for (size_t i = 0; i < rep->n_unprobed; i++)
		put_unprobed(out, "  ", &rep->unprobed[i]);
}

const struct mt_report_file *mt_output_file_of(const struct mt_report *rep, uint16_t file_id)
{
	for (size_t i = 0; i < rep->n_files; i++)
		if (rep->files[i].file_id == file_id && rep->files[i].recorded)
			return &rep->files[i];
	return NULL;
}

void mt_output_not_recorded_reason(const struct mt_report *rep,
				   const struct mt_report_not_recorded *u, char *buf, size_t len)
{
	const struct mt_report_file *f = mt_output_file_of(rep, u->file_id);
	const char *name = mt_unrecorded_name(u->function);
	char p[MT_PRINTABLE_MAX], fn[64];

	if (name)
		snprintf(fn, sizeof(fn), "%s's %s",
			 f ? mt_report_family_name(f->family) : "an allocator", name);
	else
		snprintf(fn, sizeof(fn),
			 "an allocator function this memtrack does not know (%" PRIu64 ")",
			 u->function);
	snprintf(buf, len, "%s was called %" PRIu64 " time%s in %s: %s", fn, u->calls,
		 u->calls == 1 ? "" : "s",
		 f ? mt_printable(p, sizeof(p), f->path) : "a file the artifact does not describe",
		 mt_unrecorded_frees_heap(u->function)
		     ? "the blocks it freed are still counted live"
		     : "memtrack does not record its calls, so the blocks they handed out may be "
		       "missing from the figures");
}

static void print_not_recorded(const struct mt_report *rep, FILE *out)
{
	char r[MT_PRINTABLE_MAX + 256];

	if (!rep->n_not_recorded)
		return;
	fprintf(out, "\nCalls not recorded (%zu functions): the figures above are incomplete\n",
		rep->n_not_recorded);
	for (size_t i = 0; i < rep->n_not_recorded; i++) {
		mt_output_not_recorded_reason(rep, &rep->not_recorded[i], r, sizeof(r));
		fprintf(out, "  %s\n", r);
	}
}

int mt_output_text(const struct mt_report *rep, FILE *out, size_t top)
{
	print_run(rep, out);
	print_totals(rep, out);
	print_unprobed(rep, out);
	print_not_recorded(rep, out);
	if (print_images(rep, out, top) || mt_output_mapped(rep, out, top))
		return -ENOMEM;
	mt_output_handoffs(rep, out);
	if (mt_output_rss(rep, out, top))
		return -ENOMEM;
	if (print_files(rep, out, top))
		return -ENOMEM;
	print_families(rep, out);
	print_histogram(rep, out);
	return ferror(out) ? -EIO : 0;
}

/* ---- end-of-run summary --------------------------------------------------------------------- */

#define SUMMARY_FILES 6

static void summary_files(const struct mt_report *rep, FILE *out)
{
	size_t i, n = 0, more = 0;
	char sx[MT_PRINTABLE_MAX];

	fprintf(out, "memtrack: allocators:");
	for (i = 0; i < rep->n_files; i++) {
		const struct mt_report_file *f = &rep->files[i];

		if (!f->recorded || f->family == MT_FAM_NONE)
			continue;
		if (n++ >= SUMMARY_FILES) {
			more++;
			continue;
		}
		fprintf(out, "%s %s (%s, %u probes)", n > 1 ? "," : "",
			mt_printable(sx, sizeof(sx), f->path), mt_report_family_name(f->family),
			f->probes);
	}
	if (more)
		fprintf(out, ", and %zu more", more);
	fprintf(out, "%s\n", n ? "" : " none attached");
	if (rep->families[MT_FAM_GO].allocations)
		fprintf(out, "memtrack: go: %s\n", GO_HEAP_NOTE);
}

#define SUMMARY_UNPROBED 10

static void summary_unprobed(const struct mt_report *rep, FILE *out, const char *path)
{
	size_t i, n = rep->n_unprobed < SUMMARY_UNPROBED ? rep->n_unprobed : SUMMARY_UNPROBED;
	char p[MT_PRINTABLE_MAX];

	for (i = 0; i < n; i++)
		put_unprobed(out, "memtrack: not probed: ", &rep->unprobed[i]);
	if (n < rep->n_unprobed)
		fprintf(out, "memtrack: not probed: %zu more (memtrack report %s lists them)\n",
			rep->n_unprobed - n, mt_printable(p, sizeof(p), path));
	if (n)
		fprintf(out, "memtrack: WARNING: allocations through what was not probed are "
			     "missing from the figures above\n");
}

static void summary_not_recorded(const struct mt_report *rep, FILE *out)
{
	char r[MT_PRINTABLE_MAX + 256];

	for (size_t i = 0; i < rep->n_not_recorded; i++) {
		mt_output_not_recorded_reason(rep, &rep->not_recorded[i], r, sizeof(r));
		fprintf(out, "memtrack: WARNING: %s\n", r);
	}
}

static void summary_losses(const struct mt_report *rep, FILE *out)
{
	const struct mt_artifact_footer *f = &rep->footer;

	if (rep->truncated)
		fprintf(out,
			"memtrack: WARNING: the artifact is truncated (no footer): the figures "
			"cover what was written and drops are unknown\n");
	if (f->events_dropped && f->args_lost)
		fprintf(out,
			"memtrack: WARNING: %" PRIu64 " allocator events dropped and %" PRIu64
			" calls lost their arguments: the figures above are incomplete\n",
			f->events_dropped, f->args_lost);
	else if (f->events_dropped || f->args_lost)
		fprintf(
		    out, "memtrack: WARNING: %" PRIu64 " %s: the figures above are incomplete\n",
		    f->events_dropped + f->args_lost,
		    f->events_dropped ? "allocator events dropped" : "calls lost their arguments");
	if (f->requests_dropped)
		fprintf(out,
			"memtrack: %" PRIu64 " attach requests dropped (recovered by rescanning "
			"mappings)\n",
			f->requests_dropped);
	if (f->stacks_lost)
		fprintf(out,
			"memtrack: WARNING: %" PRIu64 " allocations recorded without their stack "
			"(the stacks map or the events ring was full)\n",
			f->stacks_lost);
}

int mt_output_summary(const char *artifact_path, FILE *out)
{
	const struct mt_report_totals *t;
	char err[MT_ARTIFACT_ERRLEN], b1[64], b2[64], b3[64];
	struct mt_report *rep;
	int ret = mt_report_load(artifact_path, &rep, err, sizeof(err));

	if (ret) {
		char p[MT_PRINTABLE_MAX];

		fprintf(stderr, "memtrack: %s: %s\n", mt_printable(p, sizeof(p), artifact_path),
			err);
		return ret;
	}
	t = &rep->totals;
	fprintf(out,
		"memtrack: %" PRIu64 " allocations, %" PRIu64 " frees, %" PRIu64
		" reallocs, %s allocated\n",
		t->allocations, t->frees, t->reallocs,
		bytes_str(b1, sizeof(b1), t->bytes_allocated));
	fprintf(out, "memtrack: peak heap %s; live at %s: %" PRIu64 " blocks, %s\n",
		bytes_str(b2, sizeof(b2), t->peak_bytes), rep->attached ? "detach" : "exit",
		t->live_blocks, bytes_str(b3, sizeof(b3), t->live_bytes));
	if (rep->attached)
		fprintf(out, "memtrack: freed, allocated before attach: %" PRIu64 " blocks\n",
			t->unmatched_frees);
	summary_files(rep, out);
	if (mt_sites_count(rep->sites))
		fprintf(out, "memtrack: stacks: %zu distinct (memtrack report [--folded] FILE)\n",
			mt_sites_count(rep->sites));
	else if (t->allocations + t->reallocs)
		fputs("memtrack: where: no call stacks recorded (run with --stacks to see the "
		      "allocating sites)\n",
		      out);
	mt_output_leaks_summary(rep, out);
	mt_output_mapped_summary(rep, out);
	mt_output_rss_summary(rep, out);
	if (!rep->has_footer)
		snprintf(b1, sizeof(b1), "unknown");
	else if (t->dropped)
		snprintf(b1, sizeof(b1), "%" PRIu64 " (see below)", t->dropped);
	else
		snprintf(b1, sizeof(b1), "none");
	fprintf(out, "memtrack: dropped: %s\n", b1);
	summary_unprobed(rep, out, artifact_path);
	summary_not_recorded(rep, out);
	mt_output_handoffs_summary(rep, out);
	summary_losses(rep, out);
	mt_report_free(rep);
	return ferror(out) ? -EIO : 0;
}
