// SPDX-License-Identifier: GPL-2.0
/*
 * The run's progress, told to the caller every cfg->progress_ns from the event loop (memtrack
 * run's status line, src/cmd/cmd_status.c): the loop's wait is bounded by the next tick, as RSS
 * sampling's is, so the caller's function runs on the supervisor's thread, between two stops,
 * and never races the loop. What the supervisor counts itself goes with it: the time since the
 * command started, the tree's processes and threads, and the allocator calls the BPF side
 * dropped.
 */
#include <stdint.h>

#include "base/clock.h"
#include "tracker/tracker.h"
#include "supervisor/supervisor_int.h"

uint64_t sup_progress_wait_ns(const struct sup *s)
{
	uint64_t now;

	if (!s->cfg->progress || !s->cfg->progress_ns)
		return UINT64_MAX;
	now = mt_clock_now_ns();
	return s->progress_next_ns > now ? s->progress_next_ns - now : 0;
}

/* Processes of the tree running now: their leaders among the live threads. */
static unsigned int running_processes(const struct sup *s)
{
	unsigned int n = 0;

	for (size_t i = 0; i < s->live.n; i++) {
		const struct tracee *t = s->live.v[i];

		n += t->proc >= 0 && s->procs[t->proc].pid == t->tid;
	}
	return n;
}

void sup_progress_tick(struct sup *s)
{
	struct mt_run_progress p = {0};
	struct mt_drop_counts c = {0};
	uint64_t now;

	if (!s->cfg->progress || !s->cfg->progress_ns)
		return;
	now = mt_clock_now_ns();
	if (!s->progress_next_ns) {
		s->progress_start_ns = now;
		s->progress_next_ns = now + s->cfg->progress_ns;
		return;
	}
	if (now < s->progress_next_ns)
		return;
	/* A loop held up (a long stop) tells once when it comes back, not to catch up. */
	s->progress_next_ns = now + s->cfg->progress_ns;
	p.elapsed_ns = now - (s->res->resume_ns ? s->res->resume_ns : s->progress_start_ns);
	p.processes = (unsigned int)s->n_procs;
	p.running = running_processes(s);
	p.threads = (unsigned int)s->live.n;
	if (s->tracker && !mt_tracker_counters(s->tracker, &c)) {
		p.dropped = c.requests_dropped + c.events_dropped + c.args_lost;
		p.dropped_known = true;
	}
	s->cfg->progress(s->cfg->progress_arg, &p);
}
