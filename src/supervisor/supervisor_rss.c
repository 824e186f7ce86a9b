// SPDX-License-Identifier: GPL-2.0
/*
 * RSS over time: every process of the tree's resident memory, anonymous, file and
 * shared, from the kernel's own counters as /proc/PID/status shows them (RssAnon, RssFile,
 * RssShmem, VmHWM), read by the supervisor every RSS_PERIOD_NS and at each process's last
 * thread's exit stop, where its memory is still mapped (the exit stop comes before the kernel
 * releases the address space). docs/FORMAT.md (type 11) and docs/PERFORMANCE.md (section 19)
 * say why this source and this period, and what the samples can and cannot see.
 *
 * Reading a process's status takes none of the locks its faults take: a sample never stops it.
 * The samples of one tick are written after every event the ring held (mt_events_at_now), so a
 * sample follows the exec that started the image it measured.
 */

#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "base/clock.h"
#include "base/grow.h"
#include "inspect/procstatus.h"
#include "writer/artifact.h"
#include "writer/events.h"
#include "supervisor/supervisor_int.h"

struct batch {
	const struct mt_artifact_rss *v;
	size_t n;
};

static int write_batch(void *arg, struct mt_artifact_writer *w)
{
	const struct batch *b = arg;

	/* A write error is the writer's to report (recording stopped): the run goes on. */
	for (size_t i = 0; w && i < b->n; i++)
		if (mt_artifact_write_rss(w, &b->v[i]))
			break;
	return 0;
}

/* One sample of pid into *out; false when its status has no memory to read (gone, a zombie). */
static bool sample(pid_t pid, uint8_t why, struct mt_artifact_rss *out)
{
	struct mt_proc_rss r;

	if (mt_proc_rss_read(pid, &r))
		return false;
	*out = (struct mt_artifact_rss){.ts_ns = mt_clock_now_ns(),
					.pid = (uint32_t)pid,
					.why = why,
					.anon = r.anon,
					.file = r.file,
					.shmem = r.shmem,
					.hwm = r.hwm};
	return true;
}

/* MT_NO_RSS=1: no sampling, to measure what it costs (docs/PERFORMANCE.md, section 19). */
static bool rss_off(const struct sup *s)
{
	return !s->events || getenv("MT_NO_RSS");
}

/*
 * Write b after every event the ring holds now, timed for -v. Degrade, never die: a failed ring
 * is the pipeline's to report at its end; only -ENOMEM ends the run.
 */
static int write_timed(struct sup *s, struct batch *b)
{
	uint64_t t0 = mt_clock_now_ns();
	int err = mt_events_at_now(s->events, write_batch, b);

	s->rss_samples += b->n;
	s->rss_write_ns += mt_clock_now_ns() - t0;
	return err == -ENOMEM ? err : 0;
}

uint64_t sup_rss_wait_ns(const struct sup *s)
{
	uint64_t now;

	if (!s->events || s->rss_next_ns == UINT64_MAX)
		return UINT64_MAX;
	now = mt_clock_now_ns();
	return s->rss_next_ns > now ? s->rss_next_ns - now : 0;
}

int sup_rss_tick(struct sup *s)
{
	uint64_t now, cpu0;
	struct batch b;
	size_t n = 0;

	if (s->rss_next_ns == UINT64_MAX || !s->events)
		return 0;
	if (!s->rss_next_ns && rss_off(s)) {
		s->rss_next_ns = UINT64_MAX;
		return 0;
	}
	now = mt_clock_now_ns();
	if (now < s->rss_next_ns)
		return 0;
	/* A loop held up (a long stop) samples once when it comes back, not to catch up. */
	s->rss_next_ns = now + RSS_PERIOD_NS;
	s->rss_tick++;
	s->rss_ticks++;
	cpu0 = mt_clock_thread_cpu_ns();
	for (size_t i = 0; i < s->live.n; i++) {
		const struct tracee *t = s->live.v[i];
		struct proc *p = t->proc >= 0 ? &s->procs[t->proc] : NULL;

		/* Once per process, by its leader, until its exit stop's sample. */
		if (!p || p->pid != t->tid || t->exiting || p->rss_tick == s->rss_tick)
			continue;
		p->rss_tick = s->rss_tick;
		if (MT_GROW(s->rss_v, s->rss_cap, n + 1, 16))
			return -ENOMEM;
		n += sample(p->pid, MT_RSS_TICK, &s->rss_v[n]);
	}
	s->rss_cpu_ns += mt_clock_thread_cpu_ns() - cpu0;
	b = (struct batch){s->rss_v, n};
	return n ? write_timed(s, &b) : 0;
}

int sup_rss_exit_stop(struct sup *s, struct tracee *t)
{
	struct mt_artifact_rss one;
	struct batch b = {&one, 1};
	uint64_t cpu0;
	bool ok;

	if (rss_off(s) || t->proc < 0 || sup_threads_running(s, t->proc, t->tid))
		return 0;
	cpu0 = mt_clock_thread_cpu_ns();
	ok = sample(s->procs[t->proc].pid, MT_RSS_EXIT, &one);
	s->rss_cpu_ns += mt_clock_thread_cpu_ns() - cpu0;
	return ok ? write_timed(s, &b) : 0;
}

/* -v: what the sampling cost memtrack (docs/PERFORMANCE.md, section 19). */
void sup_rss_report(const struct sup *s)
{
	if (!s->cfg->verbose || !s->rss_samples)
		return;
	fprintf(stderr,
		"memtrack: RSS: %llu samples in %llu ticks; reading them took %.3f ms of "
		"memtrack's CPU time, writing them (after a drain of the ring) %.3f ms\n",
		(unsigned long long)s->rss_samples, (unsigned long long)s->rss_ticks,
		(double)s->rss_cpu_ns / 1e6, (double)s->rss_write_ns / 1e6);
}

void sup_rss_free(struct sup *s)
{
	free(s->rss_v);
	s->rss_v = NULL;
	s->rss_cap = 0;
}
