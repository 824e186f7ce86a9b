// SPDX-License-Identifier: GPL-2.0
/*
 * The event pipeline. The BPF side never wakes the consumer, which drains the ring every
 * POLL_MS, except when the ring is nearly full: then it wakes it and stops the producing thread
 * (back-pressure), which the supervisor holds until mt_events_has_room(). Events are batched into
 * the artifact writer, which buffers them into large writes, flushed at least every FLUSH_MS.
 *
 * The supervisor's process records go through here too (mt_events_write_process): a record is
 * written after every event the ring held when it was asked for, so that the artifact keeps the
 * one order of the stream (the fork, exec or exit event of a process, then its record).
 */
#include <errno.h>
#include <pthread.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sched.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/clock.h"
#include "writer/artifact.h"
#include "writer/events.h"

#define POLL_MS	 10
/*
 * What the consumer has drained reaches the file at least this often, so that a SIGKILL of
 * memtrack loses at most the last FLUSH_MS + POLL_MS of events (docs/FORMAT.md, Truncation).
 */
#define FLUSH_MS 100
#define BATCH	 4096
#define STACKS	 64 /* new stacks held until the events after them are written */

struct mt_events {
	struct ring_buffer *rb;
	struct mt_artifact_writer *w;
	/* The ring's consumer and producer pages, read-only: how much waits for the consumer. */
	void *positions;
	size_t page, ring_size;
	/*
	 * One consumer thread for the pipeline's life, idle between runs: exec-harness starts and
	 * stops a run per benchmark, and a thread made and joined for each cost it a clone.
	 */
	pthread_t thread;
	bool has_thread;
	pthread_mutex_t lock; /* active and quit, under cond */
	pthread_cond_t cond;
	bool active; /* a run is being consumed: set by start, cleared by the consumer */
	bool quit;   /* the pipeline closes: the consumer returns */
	/* The consumer waits on both: the ring's epoll fd, and wake, which ends its wait at stop.
	 */
	int epfd, wake;
	/* One drain at a time: the consumer's, or the supervisor's before a process record. */
	pthread_mutex_t drain;
	atomic_bool stop;
	atomic_bool done; /* the run's consumer ended (stopped or failed): it makes no more room */
	bool running;	  /* a consumer was started and not stopped */
	int err;	  /* the ring failed: memtrack's own failure */
	int write_err;	  /* the artifact failed: recording stopped */
	uint64_t count;
	uint64_t late; /* drains that gave up on a record still being filled (drain_reserved) */
	size_t n;
	struct mt_event batch[BATCH];
	size_t n_stacks;
	struct mt_artifact_stack stacks[STACKS];
	mt_events_tap_fn tap; /* sees every event batch, under drain (--leaks' live blocks) */
	void *tap_arg;
};

/*
 * A write error stops the recording, not the consumer: it keeps draining the ring into nothing,
 * so that producers never wait for room that would not come. The writer reports the error.
 */
static void flush_batch(struct mt_events *e)
{
	/* A stack comes before every event that carries its id: it was reserved before them. */
	for (size_t i = 0; i < e->n_stacks && !e->write_err; i++)
		e->write_err = mt_artifact_write_stack(e->w, &e->stacks[i]);
	e->n_stacks = 0;
	if (e->n && e->tap)
		e->tap(e->tap_arg, e->batch, e->n);
	if (e->n && !e->write_err)
		e->write_err = mt_artifact_write_events(e->w, e->batch, e->n);
	e->count += e->n;
	e->n = 0;
}

/* A stack the BPF side saw for the first time (--stacks). */
static void on_stack(struct mt_events *e, const struct mt_stack_record *rec)
{
	struct mt_artifact_stack *s;

	if (e->n_stacks == STACKS)
		flush_batch(e);
	s = &e->stacks[e->n_stacks++];
	s->id = rec->stack_id;
	s->stop = rec->stop;
	s->n = rec->n < MT_STACK_MAX_FRAMES ? rec->n : MT_STACK_MAX_FRAMES;
	memcpy(s->frames, rec->frames, s->n * sizeof(s->frames[0]));
}

/* A mapping system call: after every event reserved before it, before any later one. */
static void on_mapping(struct mt_events *e, const struct mt_map_record *rec)
{
	struct mt_artifact_mapping m = {
	    .ts_ns = rec->ts_ns,
	    .pid = rec->pid,
	    .tid = rec->tid,
	    .what = rec->what,
	    .origin = rec->origin,
	    .error = rec->err,
	    .prot = rec->prot,
	    .flags = rec->flags,
	    .addr = rec->addr,
	    .len = rec->len,
	    .old_addr = rec->old_addr,
	    .old_len = rec->old_len,
	    .offset = rec->offset,
	    .dev = rec->file.dev,
	    .ino = rec->file.ino,
	};

	memcpy(m.name, rec->name, sizeof(rec->name));
	m.name[sizeof(rec->name) - 1] = '\0';
	flush_batch(e);
	if (!e->write_err)
		e->write_err = mt_artifact_write_mapping(e->w, &m);
}

static int on_event(void *ctx, void *data, size_t size)
{
	struct mt_events *e = ctx;

	if (size == sizeof(struct mt_stack_record)) {
		on_stack(e, data);
		return 0;
	}
	if (size == sizeof(struct mt_map_record)) {
		on_mapping(e, data);
		return 0;
	}
	if (size < sizeof(struct mt_event))
		return 0;
	memcpy(&e->batch[e->n++], data, sizeof(struct mt_event));
	if (e->n == BATCH)
		flush_batch(e);
	return 0;
}

/* Consume what the ring holds into the artifact; the caller holds e->drain. */
static int drain_locked(struct mt_events *e)
{
	int n = ring_buffer__consume(e->rb);

	flush_batch(e);
	return n < 0 && n != -EINTR ? n : 0;
}

/* One run: drain the ring into the run's artifact until mt_events_stop() or a failure. */
static void consume(struct mt_events *e)
{
	uint64_t flushed = mt_clock_now_ns();
	struct epoll_event ev;
	int err;

	while (!atomic_load(&e->stop)) {
		/*
		 * Producers never wake us (a wakeup per event costs them), so the wait is timed and
		 * the drain follows it, whether or not anything woke us.
		 */
		if (epoll_wait(e->epfd, &ev, 1, POLL_MS) < 0 && errno != EINTR) {
			e->err = -errno;
			break;
		}
		pthread_mutex_lock(&e->drain);
		err = drain_locked(e);
		pthread_mutex_unlock(&e->drain);
		if (err) {
			e->err = err;
			break;
		}
		if (mt_clock_now_ns() - flushed >= FLUSH_MS * 1000000ull) {
			/* A write error is the writer's to report: the consumer drains on. */
			mt_artifact_flush(e->w);
			flushed = mt_clock_now_ns();
		}
	}
	atomic_store(&e->done, true);
}

static void *consumer_main(void *arg)
{
	struct mt_events *e = arg;

	pthread_mutex_lock(&e->lock);
	for (;;) {
		while (!e->active && !e->quit)
			pthread_cond_wait(&e->cond, &e->lock);
		if (e->quit)
			break;
		pthread_mutex_unlock(&e->lock);
		consume(e);
		pthread_mutex_lock(&e->lock);
		e->active = false;
		pthread_cond_broadcast(&e->cond);
	}
	pthread_mutex_unlock(&e->lock);
	return NULL;
}

static unsigned long ring_pos(const struct mt_events *e, size_t page_index)
{
	const unsigned long *pos =
	    (const void *)((const char *)e->positions + page_index * e->page);

	return __atomic_load_n(pos, __ATOMIC_ACQUIRE);
}

/*
 * How long a drain waits for a record reserved before it but still being filled. A BPF program
 * never sleeps, so the wait is short, but its thread may be preempted while it holds the record;
 * a wait with no bound would hold the supervisor (and the end of the run) as long as that lasts.
 */
#define LATE_RECORD_MS 300

#ifdef MT_FAULT_INJECTION
/*
 * Test builds only (build/tests/memtrack-faults): MT_RING_RECORD_HELD=1 makes the drains see one
 * more record reserved than the ring holds, one never committed, so that the tests drive the
 * bound of LATE_RECORD_MS.
 */
static unsigned long held_record(void)
{
	return getenv("MT_RING_RECORD_HELD") ? 8 : 0;
}
#else
static unsigned long held_record(void)
{
	return 0;
}
#endif

/*
 * Consume the ring until it has given every record reserved before the call; the caller holds
 * e->drain. A record reserved earlier but still being filled stops a consume short of it: wait
 * for it, at most LATE_RECORD_MS. Past that, what follows it is written later than its place in
 * the stream: the run counts it as a dropped event (e->late), and its artifact is incomplete.
 */
static int drain_reserved(struct mt_events *e)
{
	uint64_t deadline = mt_clock_now_ns() + LATE_RECORD_MS * 1000000ull;
	unsigned long target = ring_pos(e, 1) + held_record();
	int err = 0;

	while (!err && (long)(ring_pos(e, 0) - target) < 0) {
		err = drain_locked(e);
		if (err || (long)(ring_pos(e, 0) - target) >= 0)
			break;
		if (mt_clock_now_ns() >= deadline) {
			e->late++;
			break;
		}
		sched_yield();
	}
	return err;
}

/* Consume everything reserved before now, the event a record follows included. */
static int drain_to_now(struct mt_events *e)
{
	return atomic_load(&e->done) ? 0 : drain_reserved(e);
}

int mt_events_write_process(struct mt_events *e, const struct mt_artifact_process *rec)
{
	int err;

	pthread_mutex_lock(&e->drain);
	err = drain_to_now(e);
	if (!err && !e->write_err)
		err = mt_artifact_write_process(e->w, rec);
	pthread_mutex_unlock(&e->drain);
	return err;
}

int mt_events_at_now(struct mt_events *e, int (*fn)(void *arg, struct mt_artifact_writer *w),
		     void *arg)
{
	int err;

	pthread_mutex_lock(&e->drain);
	/* Between runs (another thread's call, memtrack bench's FIFO server) nothing is written. */
	err = e->running ? drain_to_now(e) : 0;
	if (!err)
		err = fn(arg, e->write_err || !e->running ? NULL : e->w);
	pthread_mutex_unlock(&e->drain);
	return err;
}

void mt_events_tap(struct mt_events *e, mt_events_tap_fn fn, void *arg)
{
	pthread_mutex_lock(&e->drain);
	e->tap = fn;
	e->tap_arg = arg;
	pthread_mutex_unlock(&e->drain);
}

int mt_events_write_handoff(struct mt_events *e, const struct mt_artifact_handoff *rec)
{
	int err;

	pthread_mutex_lock(&e->drain);
	err = drain_to_now(e);
	if (!err && !e->write_err)
		err = mt_artifact_write_handoff(e->w, rec);
	pthread_mutex_unlock(&e->drain);
	return err;
}

/* Map the ring's two position pages; the data pages are the consumer's. */
static int map_positions(struct mt_events *e, int ring_fd)
{
	struct bpf_map_info info = {0};
	__u32 len = sizeof(info);

	if (bpf_obj_get_info_by_fd(ring_fd, &info, &len))
		return -errno;
	e->ring_size = info.max_entries;
	e->page = sysconf(_SC_PAGESIZE);
	e->positions = mmap(NULL, 2 * e->page, PROT_READ, MAP_SHARED, ring_fd, 0);
	if (e->positions == MAP_FAILED) {
		e->positions = NULL;
		return -errno;
	}
	return 0;
}

bool mt_events_has_room(struct mt_events *e)
{
	const unsigned long *cons, *prod;

	if (!e || atomic_load(&e->done))
		return true;
	cons = e->positions;
	prod = (const void *)((const char *)e->positions + e->page);
	return __atomic_load_n(prod, __ATOMIC_ACQUIRE) - __atomic_load_n(cons, __ATOMIC_ACQUIRE) <=
	       e->ring_size / 4;
}

/* The consumer's epoll set: the ring's (itself an epoll fd) and the stop's eventfd. */
static int open_waits(struct mt_events *e)
{
	struct epoll_event ring = {.events = EPOLLIN}, wake = {.events = EPOLLIN};

	e->wake = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
	e->epfd = epoll_create1(EPOLL_CLOEXEC);
	if (e->wake < 0 || e->epfd < 0 ||
	    epoll_ctl(e->epfd, EPOLL_CTL_ADD, ring_buffer__epoll_fd(e->rb), &ring) ||
	    epoll_ctl(e->epfd, EPOLL_CTL_ADD, e->wake, &wake))
		return -errno;
	return 0;
}

static void close_waits(struct mt_events *e)
{
	if (e->wake >= 0)
		close(e->wake);
	if (e->epfd >= 0)
		close(e->epfd);
}

int mt_events_open(struct mt_events **out, int ring_fd)
{
	struct mt_events *e;
	int err;

	e = calloc(1, sizeof(*e));
	if (!e)
		return -ENOMEM;
	e->wake = e->epfd = -1;
	pthread_mutex_init(&e->drain, NULL);
	pthread_mutex_init(&e->lock, NULL);
	pthread_cond_init(&e->cond, NULL);
	err = map_positions(e, ring_fd);
	if (err)
		goto fail;
	e->rb = ring_buffer__new(ring_fd, on_event, e, NULL);
	if (!e->rb) {
		err = -errno;
		goto fail;
	}
	err = open_waits(e);
	if (err)
		goto fail;
	*out = e;
	return 0;
fail:
	mt_events_close(e);
	return err;
}

int mt_events_start(struct mt_events *e, struct mt_artifact_writer *w)
{
	eventfd_t stale;
	int err;

	if (!e->has_thread) {
		err = -pthread_create(&e->thread, NULL, consumer_main, e);
		if (err)
			return err;
		e->has_thread = true;
	}
	/*
	 * The consumer is idle: what it reads of the run is set before active, under the lock. A
	 * stop's wakeup of the run before, unread, would end the new run's every wait.
	 */
	eventfd_read(e->wake, &stale);
	e->w = w;
	e->err = e->write_err = 0;
	e->count = e->late = 0;
	e->n = e->n_stacks = 0;
	e->tap = NULL;
	atomic_store(&e->stop, false);
	atomic_store(&e->done, false);
	/* Under drain: mt_events_at_now() may be called from another thread at any time. */
	pthread_mutex_lock(&e->drain);
	e->running = true;
	pthread_mutex_unlock(&e->drain);
	pthread_mutex_lock(&e->lock);
	e->active = true;
	pthread_cond_broadcast(&e->cond);
	pthread_mutex_unlock(&e->lock);
	return 0;
}

int mt_events_stop(struct mt_events *e, uint64_t *count, uint64_t *late)
{
	int err, n;

	atomic_store(&e->stop, true);
	/* Now, not at the end of the consumer's timed wait (a failed write: that comes anyway). */
	eventfd_write(e->wake, 1);
	pthread_mutex_lock(&e->lock);
	while (e->active)
		pthread_cond_wait(&e->cond, &e->lock);
	pthread_mutex_unlock(&e->lock);
	err = e->err;
	/*
	 * The tracees are gone or detached: the drains take what is left, the last writes to w. A
	 * detached process may still be filling a record: it is waited for, with the same bound.
	 */
	pthread_mutex_lock(&e->drain);
	n = drain_reserved(e);
	if (n < 0 && !err)
		err = n;
	flush_batch(e);
	*count = e->count;
	*late = e->late;
	e->w = NULL;
	e->running = false;
	pthread_mutex_unlock(&e->drain);
	if (err)
		fprintf(stderr, "memtrack: the event pipeline failed: %s\n", strerror(-err));
	return err;
}

void mt_events_close(struct mt_events *e)
{
	uint64_t count, late;

	if (!e)
		return;
	if (e->running) /* a run that ended before its artifact was finished */
		mt_events_stop(e, &count, &late);
	if (e->has_thread) {
		pthread_mutex_lock(&e->lock);
		e->quit = true;
		pthread_cond_broadcast(&e->cond);
		pthread_mutex_unlock(&e->lock);
		pthread_join(e->thread, NULL);
	}
	close_waits(e);
	ring_buffer__free(e->rb);
	if (e->positions)
		munmap(e->positions, 2 * e->page);
	pthread_cond_destroy(&e->cond);
	pthread_mutex_destroy(&e->lock);
	pthread_mutex_destroy(&e->drain);
	free(e);
}
