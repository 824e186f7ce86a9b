// SPDX-License-Identifier: GPL-2.0
/*
 * The registration warmer: keeps the kernel's uprobe registration fast while memtrack makes links.
 *
 * Every uprobe registration (creating a link, or releasing one) takes the write side of the
 * kernel's dup_mmap_sem (kernel/events/uprobes.c, register_for_each_vma), a per-CPU rw-semaphore.
 * Its first writer after a quiet moment waits for an RCU grace period (rcu_sync_enter): 5 to 30 ms
 * on this machine. A writer within about a grace period of the last one passes at once (50 us).
 * memtrack paid that wait on the stop path: for libc's link at the start of every run, and for
 * each benchmark's link in exec-harness (docs/PERFORMANCE.md, section 4).
 *
 * The warmer is a thread that registers a probe nothing ever runs whenever no registration has
 * happened for WARM_PERIOD_NS: offset 0 of a one-page memory file that no process maps, with a
 * two-instruction program. It starts with the tracker, so that its own first wait overlaps the BPF
 * load, and goes on for WARM_FIRST_NS, or for WARM_AFTER_NS after the last link memtrack made
 * (a burst of forks, the next benchmark); then it sleeps until the next link. Its links go to the
 * closer, which detaches them off every path. Where the kernel refuses them (no uprobe_multi
 * before 6.6), or there is no closer to take them, there is no warmer.
 *
 * Nothing here depends on when the thread first runs: memtrack waits at most WARM_BEGIN_NS for
 * it to begin (it usually has within 5 ms), and it warms for WARM_FIRST_NS from its own start.
 * A thread that runs late (a loaded machine, a niced memtrack) costs speed, never a hang.
 */

#include <errno.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/mman.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/clock.h"
#include "tracker/tracker_int.h"

#define WARM_PERIOD_NS (3 * 1000 * 1000ull)
#define WARM_FIRST_NS  (250 * 1000 * 1000ull)
#define WARM_AFTER_NS  (100 * 1000 * 1000ull)
#define WARM_BEGIN_NS  (50 * 1000 * 1000ull)

struct tracker_warmer {
	struct mt_tracker *t;
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t wake;
	pthread_cond_t began; /* the thread runs: its first registration is under way */
	bool stop, begun;
	uint64_t until;	   /* warm until then (CLOCK_MONOTONIC) */
	uint64_t last;	   /* the last registration memtrack knows of */
	int prog_fd, file; /* the program and the memory file of the probe nothing runs */
	char path[32];	   /* /proc/self/fd/FILE */
	unsigned made;	   /* probes registered (-v) */
};

static void deadline_at(struct timespec *ts, uint64_t ns)
{
	ts->tv_sec = (time_t)(ns / 1000000000u);
	ts->tv_nsec = (long)(ns % 1000000000u);
}

/* One registration of the probe nothing runs; its link goes to the closer. */
static int register_idle_probe(struct tracker_warmer *w)
{
	const uint64_t offset = 0, cookie = 0;
	int fd = tracker_uprobe_multi_link(w->prog_fd, w->path, &offset, &cookie, 1, false, -1);

	if (fd < 0)
		return fd;
	tracker_close_links(w->t, &(struct detach){.fd = fd}, 1);
	w->made++;
	return 0;
}

#ifdef MT_FAULT_INJECTION
/*
 * Test builds only (build/tests/memtrack-faults): MT_WARM_DELAY_MS=N makes the thread first run
 * N ms late, as the scheduler of a loaded machine may.
 */
static void delay_start(void)
{
	const char *ms = getenv("MT_WARM_DELAY_MS");
	long n = ms ? atol(ms) : 0;
	struct timespec ts = {n / 1000, n % 1000 * 1000000L};

	if (n > 0)
		nanosleep(&ts, NULL);
}
#else
static void delay_start(void)
{
}
#endif

static void *warmer_main(void *arg)
{
	struct tracker_warmer *w = arg;
	struct timespec ts;
	uint64_t start;
	int err;

	delay_start();
	pthread_mutex_lock(&w->lock);
	/* Warm from now, however late the scheduler let this thread run. */
	start = mt_clock_now_ns();
	if (w->until < start + WARM_FIRST_NS)
		w->until = start + WARM_FIRST_NS;
	w->begun = true;
	pthread_cond_signal(&w->began);
	while (!w->stop) {
		uint64_t now = mt_clock_now_ns();

		if (now >= w->until) {
			pthread_cond_wait(&w->wake, &w->lock);
			continue;
		}
		if (now < w->last + WARM_PERIOD_NS) {
			deadline_at(&ts, w->last + WARM_PERIOD_NS);
			pthread_cond_timedwait(&w->wake, &w->lock, &ts);
			continue;
		}
		pthread_mutex_unlock(&w->lock);
		err = register_idle_probe(w);
		pthread_mutex_lock(&w->lock);
		if (err)
			break; /* refused: this kernel's registrations stay as they are */
		w->last = mt_clock_now_ns();
	}
	pthread_mutex_unlock(&w->lock);
	return NULL;
}

/* A program of the uprobe_multi type that does nothing, and a page of memory no one maps. */
static int prepare(struct tracker_warmer *w)
{
	const struct bpf_insn ret0[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0, .imm = 0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	LIBBPF_OPTS(bpf_prog_load_opts, opts, .expected_attach_type = MT_BPF_TRACE_UPROBE_MULTI);

	w->prog_fd = bpf_prog_load(BPF_PROG_TYPE_KPROBE, "mt_warm", "GPL", ret0, 2, &opts);
	if (w->prog_fd < 0)
		return w->prog_fd;
	w->file = memfd_create("memtrack-warm", MFD_CLOEXEC);
	if (w->file < 0 || ftruncate(w->file, 4096))
		return -errno;
	snprintf(w->path, sizeof(w->path), "/proc/self/fd/%d", w->file);
	return 0;
}

static void warmer_free(struct tracker_warmer *w)
{
	if (w->prog_fd >= 0)
		close(w->prog_fd);
	if (w->file >= 0)
		close(w->file);
	pthread_cond_destroy(&w->began);
	pthread_cond_destroy(&w->wake);
	pthread_mutex_destroy(&w->lock);
	free(w);
}

void tracker_warm_start(struct mt_tracker *t)
{
	struct tracker_warmer *w;
	pthread_condattr_t attr;
	struct timespec ts;
	sigset_t all, old;
	int err;

	if (t->closer_fd < 0 || t->cfg.no_uprobe_multi)
		return;
	w = calloc(1, sizeof(*w));
	if (!w)
		return;
	w->t = t;
	w->prog_fd = w->file = -1;
	pthread_mutex_init(&w->lock, NULL);
	pthread_condattr_init(&attr);
	pthread_condattr_setclock(&attr, CLOCK_MONOTONIC);
	pthread_cond_init(&w->wake, &attr);
	pthread_cond_init(&w->began, &attr);
	pthread_condattr_destroy(&attr);
	if (prepare(w)) {
		warmer_free(w);
		return;
	}
	/* Signals are memtrack's main thread's to take (rt_sigtimedwait), never this thread's. */
	sigfillset(&all);
	pthread_sigmask(SIG_BLOCK, &all, &old);
	err = pthread_create(&w->thread, NULL, warmer_main, w);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	if (err) {
		warmer_free(w);
		return;
	}
	/*
	 * Its first wait for a grace period should begin now: left to the scheduler, the thread
	 * began it up to 5 ms later, behind the load's threads on both CPUs, and libc's first
	 * link waited for the rest of it. Waited for WARM_BEGIN_NS at most: a thread the
	 * scheduler keeps from running for longer warms later, it does not hold memtrack.
	 */
	deadline_at(&ts, mt_clock_now_ns() + WARM_BEGIN_NS);
	pthread_mutex_lock(&w->lock);
	while (!w->begun && pthread_cond_timedwait(&w->began, &w->lock, &ts) != ETIMEDOUT)
		;
	pthread_mutex_unlock(&w->lock);
	t->warmer = w;
}

/* memtrack made a link (a registration): keep warm for WARM_AFTER_NS from now. */
void tracker_warm_linked(struct mt_tracker *t)
{
	struct tracker_warmer *w = t->warmer;
	uint64_t now = mt_clock_now_ns();

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->last = now;
	if (w->until < now + WARM_AFTER_NS) {
		if (w->until <= now)
			pthread_cond_signal(&w->wake);
		w->until = now + WARM_AFTER_NS;
	}
	pthread_mutex_unlock(&w->lock);
}

void tracker_warm_stop(struct mt_tracker *t)
{
	struct tracker_warmer *w = t->warmer;

	if (!w)
		return;
	pthread_mutex_lock(&w->lock);
	w->stop = true;
	pthread_cond_signal(&w->wake);
	pthread_mutex_unlock(&w->lock);
	pthread_join(w->thread, NULL);
	if (t->cfg.verbose && w->made)
		fprintf(stderr, "memtrack: %u idle probes registered to keep registration fast\n",
			w->made);
	warmer_free(w);
	t->warmer = NULL;
}
