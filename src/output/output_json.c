// SPDX-License-Identifier: GPL-2.0
/* The JSON output of an aggregated run (output.h): one document, the shape README describes. */
#include <errno.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>

#include <json.h>

#include "output/output.h"
#include "base/kind.h"
#include "base/printable.h"

static void jset(struct json_object *o, const char *key, struct json_object *v)
{
	json_object_object_add(o, key, v);
}

static void jset_u64(struct json_object *o, const char *key, uint64_t v)
{
	jset(o, key, json_object_new_uint64(v));
}

/* Strings come from the traced program and may be any bytes: JSON needs UTF-8. */
struct json_object *mt_output_json_string(const char *s)
{
	char *u = mt_utf8_dup(s);
	struct json_object *o = u ? json_object_new_string(u) : NULL;

	free(u);
	return o;
}

static struct json_object *jstr(const char *s)
{
	return mt_output_json_string(s);
}

static void jset_str(struct json_object *o, const char *key, const char *s)
{
	jset(o, key, jstr(s));
}

/* How a process ended: null fields while it had not. */
static void jset_exit(struct json_object *o, bool exited, int st)
{
	jset(o, "exit_status", exited ? json_object_new_int(st) : NULL);
	/* The shell convention, which is what people compare against. */
	jset(o, "exit_code",
	     !exited	       ? NULL
	     : WIFEXITED(st)   ? json_object_new_int(WEXITSTATUS(st))
	     : WIFSIGNALED(st) ? json_object_new_int(128 + WTERMSIG(st))
			       : NULL);
	jset(o, "signal", exited && WIFSIGNALED(st) ? json_object_new_int(WTERMSIG(st)) : NULL);
}

/* The counts every level has; peak and live where they are kept. */
static void jset_totals(struct json_object *o, const struct mt_report_totals *t, bool live)
{
	jset_u64(o, "allocations", t->allocations);
	jset_u64(o, "frees", t->frees);
	jset_u64(o, "reallocs", t->reallocs);
	jset_u64(o, "realloc_null", t->realloc_null);
	jset_u64(o, "realloc_zero", t->realloc_zero);
	jset_u64(o, "unmatched_frees", t->unmatched_frees);
	jset_u64(o, "failed", t->failed);
	jset_u64(o, "bytes_allocated", t->bytes_allocated);
	if (!live)
		return;
	jset_u64(o, "temporary", t->temporary);
	jset_u64(o, "peak_bytes", t->peak_bytes);
	jset_u64(o, "live_blocks", t->live_blocks);
	jset_u64(o, "live_bytes", t->live_bytes);
}

static struct json_object *json_totals(const struct mt_report *rep)
{
	struct json_object *o = json_object_new_object();

	jset_totals(o, &rep->totals, true);
	jset_u64(o, "zeroed_allocations", rep->totals.zeroed_allocations);
	/* Without a footer nobody knows what was dropped: null, not a reassuring 0. */
	jset(o, "dropped", rep->has_footer ? json_object_new_uint64(rep->totals.dropped) : NULL);
	return o;
}

static struct json_object *json_dropped(const struct mt_report *rep)
{
	struct json_object *o;

	if (!rep->has_footer)
		return NULL;
	o = json_object_new_object();
	jset_u64(o, "events", rep->footer.events_dropped);
	jset_u64(o, "args_lost", rep->footer.args_lost);
	jset_u64(o, "stacks_lost", rep->footer.stacks_lost);
	jset_u64(o, "attach_requests", rep->footer.requests_dropped);
	return o;
}

/* A process: the sums of its images; live: its blocks never freed. */
static struct json_object *json_process(const struct mt_report_process *p)
{
	struct json_object *o = json_object_new_object();

	jset_u64(o, "pid", p->pid);
	jset(o, "position", p->position[0] ? jstr(p->position) : NULL);
	jset_u64(o, "parent", p->parent);
	jset_str(o, "exe", p->exe);
	jset_exit(o, p->exited, p->exit_status);
	jset_totals(o, &p->t, true);
	return o;
}

static struct json_object *json_released(bool ended, const struct mt_released *r)
{
	struct json_object *o;

	if (!ended)
		return NULL;
	o = json_object_new_object();
	jset_u64(o, "blocks", r->blocks);
	jset_u64(o, "bytes", r->bytes);
	return o;
}

/* Handed to a debugger: where, when in the stream, its counts before, files that may miss calls. */
static struct json_object *json_handoff(const struct mt_image_handoff *h)
{
	struct json_object *o, *b, *a;

	if (!h)
		return NULL;
	o = json_object_new_object();
	b = json_object_new_object();
	a = json_object_new_array();
	jset_str(o, "at", h->at);
	jset_str(o, "to", h->to_tracer ? "tracer" : "debugger");
	jset_u64(o, "event", h->event);
	jset_u64(b, "allocations", h->before.allocations);
	jset_u64(b, "frees", h->before.frees);
	jset_u64(b, "reallocs", h->before.reallocs);
	jset_u64(b, "bytes_allocated", h->before.bytes_allocated);
	jset(o, "before", b);
	for (size_t i = 0; i < h->n_late; i++)
		json_object_array_add(a, jstr(h->late[i]));
	jset(o, "mapped_after", a);
	return o;
}

static struct json_object *json_image(const struct mt_report *rep, const struct mt_image *p)
{
	struct json_object *o = json_object_new_object();
	int st = p->exit_status;
	const struct mt_heap_counts *c = &p->c;

	jset_u64(o, "pid", p->pid);
	jset(o, "position", p->position[0] ? jstr(p->position) : NULL);
	jset_u64(o, "exec", p->exec_seq);
	jset_str(o, "exe", p->exe);
	jset(o, "parent",
	     p->parent >= 0 && rep->images[p->parent].position[0]
		 ? jstr(rep->images[p->parent].position)
		 : NULL);
	jset(o, "shared_memory", json_object_new_boolean(p->shared_memory));
	jset(o, "exit",
	     p->end != MT_IMAGE_EXIT || !p->exited ? NULL
	     : WIFEXITED(st)			   ? json_object_new_int(WEXITSTATUS(st))
	     : WIFSIGNALED(st)			   ? json_object_new_int(128 + WTERMSIG(st))
						   : NULL);
	jset_u64(o, "allocations", c->allocations);
	jset_u64(o, "frees", c->frees);
	jset_u64(o, "reallocs", c->reallocs);
	jset_u64(o, "realloc_null", c->realloc_null);
	jset_u64(o, "realloc_zero", c->realloc_zero);
	jset_u64(o, "unmatched_frees", c->unmatched_frees);
	jset_u64(o, "failed", c->failed);
	jset_u64(o, "bytes_allocated", c->bytes_allocated);
	jset_u64(o, "temporary", c->temporary);
	jset_u64(o, "peak_bytes", c->peak_bytes);
	jset(o, "live_at_exec", json_released(p->end == MT_IMAGE_EXEC, &p->released));
	jset(o, "live_at_exit", json_released(p->end == MT_IMAGE_EXIT, &p->released));
	/* Blocks it allocated that nothing released: the artifact ended first, or is older. */
	jset_u64(o, "live_blocks", c->live_blocks);
	jset_u64(o, "live_bytes", c->live_bytes);
	jset_exit(o, p->exited, p->exit_status);
	jset(o, "handoff", json_handoff(p->handoff));
	/* Created after a handoff: its counts are not its truth. */
	jset(o, "allocations_recorded", json_object_new_boolean(!p->unrecorded));
	/* --leaks: its scan at exit, null when it had none. */
	jset(o, "leaks", mt_output_json_leak_counts(mt_leaks_of(rep->leaks, p - rep->images)));
	/* --mappings: what it mapped itself, null without mapping records. */
	jset(o, "mapped",
	     mt_output_json_mapped(rep, mt_mapped_image(rep->mapped, (size_t)(p - rep->images))));
	/* Its resident memory (RSS samples), null when it had none. */
	jset(o, "rss", mt_output_json_rss_image(rep, (size_t)(p - rep->images)));
	return o;
}

static struct json_object *json_file(const struct mt_report_file *f)
{
	struct json_object *o = json_object_new_object();

	jset_u64(o, "file_id", f->file_id);
	jset(o, "path", f->recorded ? jstr(f->path) : NULL);
	jset_str(o, "build_id", f->build_id);
	jset_str(o, "family", mt_report_family_name(f->family));
	jset_u64(o, "probes", f->probes);
	jset_totals(o, &f->t, false);
	return o;
}

static struct json_object *json_families(const struct mt_report *rep)
{
	struct json_object *a = json_object_new_array();
	unsigned int i;

	for (i = 0; i <= MT_FAM_MAX; i++) {
		const struct mt_report_totals *t = &rep->families[i];
		struct json_object *o;

		if (!t->allocations && !t->frees && !t->reallocs && !t->failed)
			continue;
		o = json_object_new_object();
		jset_str(o, "family", mt_report_family_name(i));
		jset_totals(o, t, false);
		/* A collected heap (Go's): its frees are not seen, its bytes never live. */
		json_object_object_add(o, "frees_seen", json_object_new_boolean(i != MT_FAM_GO));
		json_object_array_add(a, o);
	}
	return a;
}

static struct json_object *json_histogram(const struct mt_report *rep)
{
	struct json_object *a = json_object_new_array();
	unsigned int b;

	for (b = 0; b < MT_REPORT_HIST_BUCKETS; b++) {
		struct json_object *o;

		if (!rep->histogram[b])
			continue;
		o = json_object_new_object();
		jset_u64(o, "min", mt_report_bucket_min(b));
		jset_u64(o, "max", b < 64 ? mt_report_bucket_min(b + 1) - 1 : UINT64_MAX);
		jset_u64(o, "count", rep->histogram[b]);
		json_object_array_add(a, o);
	}
	return a;
}

static struct json_object *json_unprobed(const struct mt_report *rep)
{
	struct json_object *a = json_object_new_array();

	for (size_t i = 0; i < rep->n_unprobed; i++) {
		const struct mt_report_unprobed *u = &rep->unprobed[i];
		struct json_object *o = json_object_new_object();

		jset_str(o, "path", u->path);
		jset(o, "function", u->function[0] ? jstr(u->function) : NULL);
		jset_str(o, "reason", u->reason);
		jset(o, "errno", u->error ? json_object_new_int(u->error) : NULL);
		json_object_array_add(a, o);
	}
	return a;
}

/* The functions whose calls the run counted but did not record, per file. */
static struct json_object *json_not_recorded(const struct mt_report *rep)
{
	struct json_object *a = json_object_new_array();
	char r[MT_PRINTABLE_MAX + 256];

	for (size_t i = 0; i < rep->n_not_recorded; i++) {
		const struct mt_report_not_recorded *u = &rep->not_recorded[i];
		const struct mt_report_file *f = mt_output_file_of(rep, u->file_id);
		const char *name = mt_unrecorded_name(u->function);
		struct json_object *o = json_object_new_object();

		jset_u64(o, "file_id", u->file_id);
		jset(o, "path", f ? jstr(f->path) : NULL);
		jset(o, "function", name ? jstr(name) : NULL);
		jset_u64(o, "calls", u->calls);
		jset(o, "frees_heap",
		     json_object_new_boolean(mt_unrecorded_frees_heap(u->function)));
		mt_output_not_recorded_reason(rep, u, r, sizeof(r));
		jset_str(o, "reason", r);
		json_object_array_add(a, o);
	}
	return a;
}

/* Why the recording is incomplete, as stable words a script can test (README: report --json). */
static struct json_object *json_incomplete(const struct mt_report *rep)
{
	struct json_object *a = json_object_new_array();

	if (rep->in_progress)
		json_object_array_add(a, json_object_new_string("in_progress"));
	else if (rep->truncated || !rep->has_footer)
		json_object_array_add(a, json_object_new_string("truncated"));
	if (rep->footer.events_dropped)
		json_object_array_add(a, json_object_new_string("events_dropped"));
	if (rep->footer.args_lost)
		json_object_array_add(a, json_object_new_string("args_lost"));
	if (rep->n_unprobed)
		json_object_array_add(a, json_object_new_string("not_probed"));
	if (rep->n_not_recorded)
		json_object_array_add(a, json_object_new_string("not_recorded"));
	if (mt_report_mapped_after_handoff(rep))
		json_object_array_add(a, json_object_new_string("mapped_after_handoff"));
	if (mt_report_unrecorded_images(rep))
		json_object_array_add(a, json_object_new_string("created_after_handoff"));
	return a;
}

static const char *stop_name(uint32_t stop)
{
	return stop == 0 ? "complete" : stop == 1 ? "truncated" : "cut";
}

/* A site (--stacks): its counts and frames, innermost first; frames[0] is the allocator. */
static struct json_object *json_site(const struct mt_site *s)
{
	struct json_object *o = json_object_new_object(), *frames = json_object_new_array();

	jset_u64(o, "stack_id", s->stack_id);
	jset_u64(o, "allocations", s->allocations);
	jset_u64(o, "bytes", s->bytes);
	jset_u64(o, "temporary", s->temporary);
	jset_u64(o, "live_blocks", s->live_blocks);
	jset_u64(o, "live_bytes", s->live_bytes);
	jset_u64(o, "peak_blocks", s->peak_blocks);
	jset_u64(o, "peak_bytes", s->peak_bytes);
	jset_str(o, "stack", stop_name(s->stop));
	for (uint32_t k = 0; k < s->n_frames; k++) {
		struct json_object *f = json_object_new_object();
		const struct mt_frame_info *fi = s->sym ? &s->sym[k] : NULL;

		jset(f, "function", fi && fi->function ? jstr(fi->function) : NULL);
		jset(f, "file", fi && fi->path ? jstr(fi->path) : NULL);
		jset_u64(f, "offset", fi ? fi->offset : s->frames[k]);
		jset(f, "source", fi && fi->source ? jstr(fi->source) : NULL);
		jset(f, "line", fi && fi->line ? json_object_new_int64(fi->line) : NULL);
		/* Inlined into the next frame's function: the same return address (offset). */
		if (fi && fi->inlined)
			jset(f, "inlined", json_object_new_boolean(1));
		json_object_array_add(frames, f);
	}
	jset(o, "frames", frames);
	return o;
}

/*
 * memtrack attach: the frees of blocks allocated before it (the unmatched ones) and the blocks
 * allocated after it still live at the detach, in processes not ended; null for a launched run.
 */
static struct json_object *json_attach(const struct mt_report *rep)
{
	struct mt_released live = {0};
	struct json_object *o, *l;

	if (!rep->attached)
		return NULL;
	for (size_t i = 0; i < rep->n_images; i++) {
		live.blocks += rep->images[i].c.live_blocks;
		live.bytes += rep->images[i].c.live_bytes;
	}
	o = json_object_new_object();
	l = json_object_new_object();
	jset_u64(o, "freed_allocated_before", rep->totals.unmatched_frees);
	jset_u64(l, "blocks", live.blocks);
	jset_u64(l, "bytes", live.bytes);
	jset(o, "live_at_detach", l);
	return o;
}

/* The document but its sites: small, a few objects per process, image and file. */
/* The suppressions applied (report --suppressions), what each hid; NULL: none given. */
static struct json_object *json_suppressions(const struct mt_report *rep)
{
	const struct mt_suppressions *ss = mt_leaks_suppressions(rep->leaks);
	struct json_object *a;

	if (!ss)
		return NULL;
	a = json_object_new_array();
	for (size_t i = 0; i < ss->n; i++) {
		const struct mt_supp *sp = &ss->v[i];
		struct json_object *o = json_object_new_object();

		json_object_object_add(o, "name", mt_output_json_string(sp->name));
		json_object_object_add(o, "file", mt_output_json_string(ss->files[sp->file]));
		json_object_object_add(o, "line", json_object_new_uint64(sp->line));
		json_object_object_add(o, "loss_records", json_object_new_uint64(sp->records));
		json_object_object_add(o, "bytes", json_object_new_uint64(sp->bytes));
		json_object_object_add(o, "blocks", json_object_new_uint64(sp->blocks));
		json_object_array_add(a, o);
	}
	return a;
}

/* A line of the heap (or RSS) over time: its first bucket and each bucket's largest value. */
static struct json_object *json_series(const struct mt_timeline_series *sr)
{
	struct json_object *o = json_object_new_object(), *a = json_object_new_array();

	jset_u64(o, "first", sr->first);
	for (size_t b = 0; b < sr->n; b++)
		json_object_array_add(a, json_object_new_uint64(sr->max[b]));
	jset(o, "max", a);
	return o;
}

/* The lines of the images drawn (output_svg.c's choice: the largest peaks), by image. */
static struct json_object *json_image_lines(const struct mt_report *rep,
					    const struct mt_timeline_series *by_image,
					    const size_t *img, int n)
{
	struct json_object *a = json_object_new_array();

	for (int k = 0; k < n; k++) {
		const struct mt_image *g = &rep->images[img[k]];
		struct json_object *o = json_series(&by_image[img[k]]);

		jset_u64(o, "image", img[k]);
		jset_u64(o, "pid", g->pid);
		jset_str(o, "exe", g->exe);
		json_object_array_add(a, o);
	}
	return a;
}

/*
 * The heap and RSS over time, as the pictures draw them (timeline.h): buckets of bucket_ns from
 * the run's start, at most a few thousand, each point the largest value in its bucket, for the
 * tree and the images with the largest peaks (images_hidden: those left out). NULL: no memory.
 */
static struct json_object *json_over_time(const struct mt_report *rep)
{
	const struct mt_timeline *tl = rep->timeline;
	struct json_object *o = json_object_new_object(), *heap, *rss = NULL;
	size_t *img = NULL, hidden = 0;
	int n = mt_output_svg_lines(rep, &img, &hidden);

	if (n < 0) {
		json_object_put(o);
		return NULL;
	}
	jset_u64(o, "bucket_ns", tl->width_ns);
	jset_u64(o, "buckets", tl->n_buckets);
	jset_u64(o, "peak_bytes", tl->peak_bytes);
	jset_u64(o, "peak_ns", tl->peak_ns);
	heap = json_object_new_object();
	jset(heap, "tree", json_series(&tl->tree));
	jset(heap, "images", json_image_lines(rep, tl->images, img, n));
	jset_u64(heap, "images_hidden", hidden);
	jset(o, "heap", heap);
	free(img);
	img = NULL;
	if (tl->rss_tree.n) {
		n = mt_output_svg_rss_lines(rep, &img, &hidden);
		if (n < 0) {
			json_object_put(o);
			return NULL;
		}
		rss = json_object_new_object();
		jset(rss, "tree", json_series(&tl->rss_tree));
		jset(rss, "images", json_image_lines(rep, tl->rss_images, img, n));
		jset_u64(rss, "images_hidden", hidden);
		free(img);
	}
	jset(o, "rss", rss);
	return o;
}

static struct json_object *json_report(const struct mt_report *rep)
{
	struct json_object *o = json_object_new_object(), *a;
	size_t i;

	if (!o)
		return NULL;
	jset_u64(o, "format_version", rep->version);
	a = json_object_new_array();
	for (i = 0; i < (size_t)rep->argc; i++)
		json_object_array_add(a, jstr(rep->argv[i]));
	jset(o, "command", a);
	jset_str(o, "watcher", rep->watcher);
	jset_u64(o, "start_time_ns", rep->start_time_ns);
	jset_u64(o, "start_mono_ns", rep->start_mono_ns);
	jset(o, "duration_ns",
	     rep->has_footer && rep->footer.end_mono_ns >= rep->start_mono_ns
		 ? json_object_new_uint64(rep->footer.end_mono_ns - rep->start_mono_ns)
		 : NULL);
	/* How far into the run the events go: what a truncated artifact holds. */
	jset(o, "recorded_ns",
	     rep->last_event_ns >= rep->start_mono_ns && rep->events
		 ? json_object_new_uint64(rep->last_event_ns - rep->start_mono_ns)
		 : NULL);
	jset(o, "truncated", json_object_new_boolean(rep->truncated));
	jset(o, "in_progress", json_object_new_boolean(rep->in_progress));
	jset(o, "attach", json_attach(rep));
	jset(o, "complete", json_object_new_boolean(mt_report_complete(rep)));
	jset(o, "incomplete", json_incomplete(rep));
	jset_u64(o, "events", rep->events);
	jset_u64(o, "unknown_events", rep->unknown_events);
	jset(o, "totals", json_totals(rep));
	jset(o, "dropped", json_dropped(rep));
	a = json_object_new_array();
	for (i = 0; i < rep->n_images; i++)
		json_object_array_add(a, json_image(rep, &rep->images[i]));
	jset(o, "images", a);
	a = json_object_new_array();
	for (i = 0; i < rep->n_processes; i++)
		json_object_array_add(a, json_process(&rep->processes[i]));
	jset(o, "processes", a);
	a = json_object_new_array();
	for (i = 0; i < rep->n_files; i++)
		json_object_array_add(a, json_file(&rep->files[i]));
	jset(o, "files", a);
	jset(o, "not_probed", json_unprobed(rep));
	jset(o, "not_recorded", json_not_recorded(rep));
	jset(o, "families", json_families(rep));
	jset(o, "histogram", json_histogram(rep));
	jset(o, "leaks",
	     mt_leaks_any(rep->leaks) ? mt_output_json_leak_counts(mt_leaks_total(rep->leaks))
				      : NULL);
	jset(o, "loss_records", mt_output_json_loss_records(rep));
	jset(o, "suppressions", json_suppressions(rep));
	jset(o, "mapped", mt_output_json_mapped(rep, mt_mapped_tree(rep->mapped)));
	jset(o, "rss", mt_output_json_rss(rep));
	jset(o, "over_time", json_over_time(rep));
	return o;
}

/*
 * The document is json-c's throughout, pretty (two spaces a level, no space after a colon, no
 * "\/"), but it is not one tree: with --stacks the sites are nearly all of it (an object per
 * frame; gigabytes for a big program's), so each site is a tree of its own, serialised, written
 * and freed in turn. Not written by hand: every string of the document keeps json-c's escaping of
 * odd bytes, one escaper, and the bytes are those the single tree printed.
 */
#define JSON_FLAGS (JSON_C_TO_STRING_PRETTY | JSON_C_TO_STRING_NOSLASHESCAPE)

/* A site's indentation: two levels, an element of the top level's "sites" array. */
static const char site_indent[] = "    ";

/*
 * A site s, serialised as a top level, written at its depth: each line break followed by its
 * indentation. A line break of s is always one of the layout's, never in a string: json-c writes
 * every control byte of a string as an escape.
 */
static void write_site_text(FILE *out, const char *s, size_t len)
{
	const char *end = s + len, *nl;

	fputs(site_indent, out);
	while ((nl = memchr(s, '\n', (size_t)(end - s)))) {
		fwrite(s, 1, (size_t)(nl + 1 - s), out);
		fputs(site_indent, out);
		s = nl + 1;
	}
	fwrite(s, 1, (size_t)(end - s), out);
}

/* Right after a write to out failed (ferror): its errno, a full disk or a closed pipe. */
static int write_error(void)
{
	return errno ? -errno : -EIO;
}

/*
 * The "sites" array, the document's last member: each site built, written and freed in turn. 0,
 * -ENOMEM, or the errno of the write that failed: the sites after it are not built.
 */
static int write_sites(const struct mt_report *rep, FILE *out)
{
	size_t n = mt_sites_count(rep->sites);
	int ret;

	fputs(",\n  \"sites\":[\n", out);
	for (size_t i = 0; i < n; i++) {
		struct json_object *o = json_site(mt_sites_get(rep->sites, i));
		const char *s;
		size_t len;

		s = o ? json_object_to_json_string_length(o, JSON_FLAGS, &len) : NULL;
		if (!s) {
			json_object_put(o);
			return -ENOMEM;
		}
		if (i)
			fputs(",\n", out);
		write_site_text(out, s, len);
		ret = ferror(out) ? write_error() : 0;
		json_object_put(o);
		if (ret)
			return ret;
	}
	fputs(n ? "\n  ]" : "  ]", out);
	return 0;
}

int mt_output_json(const struct mt_report *rep, FILE *out)
{
	struct json_object *o = json_report(rep);
	const char *s;
	size_t len;
	int ret = 0;

	if (!o)
		return -ENOMEM;
	/* The top level ends "\n}": the sites go in before that. */
	s = json_object_to_json_string_length(o, JSON_FLAGS, &len);
	if (!s || len < 2) {
		ret = -ENOMEM;
		goto out;
	}
	fwrite(s, 1, len - 2, out);
	ret = ferror(out) ? write_error() : write_sites(rep, out);
	if (!ret && (fputs("\n}\n", out) < 0 || ferror(out)))
		ret = write_error();
out:
	json_object_put(o);
	return ret;
}
