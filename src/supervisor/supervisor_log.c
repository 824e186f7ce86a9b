// SPDX-License-Identifier: GPL-2.0
/*
 * What the supervisor writes down, below every stop handler: the stop log's records
 * (--trace-stops, docs/STOPS.md), a signal's with where it struck, and the artifact's process
 * records.
 */

#include <signal.h>
#include <stdio.h>

#include <json-c/json.h>

#include "base/family.h"
#include "writer/artifact.h"
#include "writer/events.h"
#include "inspect/backtrace.h"
#include "inspect/stoplog.h"
#include "tracker/tracker.h"

#include "supervisor/supervisor_int.h"

struct json_object *sup_detail_new(void)
{
	return json_object_new_object();
}

void sup_detail_str(struct json_object *d, const char *key, const char *val)
{
	json_object_object_add(d, key, json_object_new_string(val));
}

void sup_detail_int(struct json_object *d, const char *key, int64_t val)
{
	json_object_object_add(d, key, json_object_new_int64(val));
}

/*
 * Log the files the tracker handled since the last look, one record each (written after the
 * stops, in path order): the stop that handled a file shared by concurrent processes is
 * whichever drained its request first, so naming it there would make the log vary.
 */
void sup_log_files(struct sup *s)
{
	size_t n;

	if (!s->tracker)
		return;
	n = mt_tracker_file_count(s->tracker);
	for (; s->files_logged < n; s->files_logged++) {
		const struct mt_tracked_file *f = mt_tracker_file(s->tracker, s->files_logged);
		struct json_object *o;

		if (!s->cfg->trace_stops_path)
			continue;
		o = json_object_new_object();
		sup_detail_str(o, "kind", "file");
		sup_detail_str(o, "path", f->path);
		sup_detail_str(o, "family", mt_family_name(f->family));
		sup_detail_int(o, "probes", f->probes);
		if (f->no_symbols)
			json_object_object_add(o, "no_symbols", json_object_new_boolean(1));
		mt_stoplog_add_file(s->log, o);
	}
}

int sup_log_stop(struct sup *s, struct tracee *t, const char *kind, struct json_object *d)
{
	/* What a thread reports before a handoff detaches it depends on timing: not logged. */
	if (!s->cfg->trace_stops_path || sup_handoff_owns(s, t)) {
		json_object_put(d);
		return 0;
	}
	return mt_stoplog_add(s->log, t->log, kind, d);
}

/* The process record of p, to the artifact: its position, parent, executable and end. */
void sup_record_process(struct sup *s, const struct proc *p, int status, bool exited)
{
	struct mt_artifact_process rec = {
	    .pid = p->pid,
	    .parent = p->parent_pid,
	    .exit_status = status,
	    .exited = exited,
	};

	if (!s->artifact)
		return;
	snprintf(rec.exe, sizeof(rec.exe), "%s", p->exe ? p->exe : "?");
	snprintf(rec.position, sizeof(rec.position), "%s", p->pos ? p->pos : "");
	/* After the fork, exec or exit event it follows in the stream, before any later event. */
	if (s->events)
		mt_events_write_process(s->events, &rec);
	else
		mt_artifact_write_process(s->artifact, &rec);
}

/* The stack of stopped thread t, names only (src/inspect/backtrace.h); NULL when it cannot be
 * read. */
struct json_object *sup_stack_of(struct sup *s, struct tracee *t)
{
	if (!s->backtracer)
		s->backtracer = mt_backtracer_new();
	return s->backtracer ? mt_backtrace(s->backtracer, t->tid, MT_BACKTRACE_MAX) : NULL;
}

/*
 * A signal about to kill a process: say where it struck, while the thread can still be read.
 * On stderr too, but for SIGINT (Ctrl-C) and SIGPIPE (the reader of `| head` left): the end of
 * any pipeline, of which shells say nothing either.
 */
static void record_backtrace(struct sup *s, struct tracee *t, int sig, struct json_object *d)
{
	struct json_object *frames = sup_stack_of(s, t);
	char buf[16];
	size_t n;

	if (!frames)
		return;
	json_object_object_add(d, "backtrace", frames);
	if (sig == SIGINT || sig == SIGPIPE)
		return;
	n = json_object_array_length(frames);
	fprintf(stderr, "memtrack: process %d (%s) got %s at", s->procs[t->proc].pid,
		s->procs[t->proc].exe, sup_signame(sig, buf, sizeof(buf)));
	for (size_t i = 0; i < n && i < 8; i++)
		fprintf(stderr, "%s %s", i ? " <-" : "",
			json_object_get_string(json_object_array_get_idx(frames, i)));
	fputc('\n', stderr);
}

/* A signal delivered to a thread: logged, and where it kills, where it struck said. */
void sup_log_signal(struct sup *s, struct tracee *t, int sig)
{
	struct json_object *d;
	char buf[16];

	/* SIGCHLDs coalesce when children end together: logging them would make the log vary. */
	if (sig == SIGCHLD)
		return;
	d = sup_detail_new();
	sup_detail_str(d, "signal", sup_signame(sig, buf, sizeof(buf)));
	if (mt_signal_is_fatal(s->procs[t->proc].pid, sig))
		record_backtrace(s, t, sig, d);
	sup_log_stop(s, t, "signal", d);
}
