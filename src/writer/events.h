/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event pipeline: a consumer thread drains the events ring buffer into the artifact, and a
 * final drain after the last tracee is gone.
 */
#ifndef MT_EVENTS_H
#define MT_EVENTS_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct mt_artifact_handoff;
struct mt_artifact_process;
struct mt_artifact_writer;
struct mt_event;
struct mt_events;

/*
 * The pipeline of the events ring ring_fd: its mappings and waits, kept from run to run (a
 * tracker's, tracker.c); each run starts the consumer into its artifact and stops it. The
 * consumer's thread is made at the first start and ends at the close.
 */
int mt_events_open(struct mt_events **e, int ring_fd);
void mt_events_close(struct mt_events *e);
/* A consumer thread drains the ring into w until mt_events_stop(). 0 or a negative errno. */
int mt_events_start(struct mt_events *e, struct mt_artifact_writer *w);
/*
 * Whether threads stopped by back-pressure may go on: at most a quarter of the ring waits for
 * the consumer, or the consumer ended (it makes no more room: what cannot fit is dropped and
 * counted). Thread-safe; true for no pipeline (e NULL).
 */
bool mt_events_has_room(struct mt_events *e);
/*
 * Write a process record after every event reserved in the ring before the call (the fork, exec
 * or exit it describes), before any later one; a record still being filled is waited for at most
 * a bounded time (mt_events_stop's late). Thread-safe. Returns 0 or a negative errno.
 */
int mt_events_write_process(struct mt_events *e, const struct mt_artifact_process *rec);
/*
 * Call fn once every event reserved in the ring before the call has been drained (and seen by the
 * tap), with the consumer held: what fn writes to w comes after those events and before any later
 * one; w is NULL once recording stopped. Returns fn's result or the ring's error.
 */
int mt_events_at_now(struct mt_events *e, int (*fn)(void *arg, struct mt_artifact_writer *w),
		     void *arg);
/*
 * A function that sees every batch of events in the stream's order, on the consumer's thread,
 * before they are written (the supervisor's live blocks, --leaks). One tap; NULL removes it.
 */
typedef void (*mt_events_tap_fn)(void *arg, const struct mt_event *ev, size_t n);
void mt_events_tap(struct mt_events *e, mt_events_tap_fn fn, void *arg);
/* The same for a handoff record: after the events its process made while memtrack had it. */
int mt_events_write_handoff(struct mt_events *e, const struct mt_artifact_handoff *rec);
/*
 * Stop the consumer after a last full drain; *count receives the events drained, *late the
 * drains of the run that gave up waiting for a record still being filled (a bounded wait: what
 * came after it may be out of its place, or lost; the run counts each as a dropped event).
 * Returns 0 or the ring's error; an artifact write error is not one (the writer reported it,
 * recording stopped). The pipeline stays open for another start.
 */
int mt_events_stop(struct mt_events *e, uint64_t *count, uint64_t *late);

#endif
