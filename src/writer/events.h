/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event pipeline: a consumer thread drains the events ring buffer into the artifact, and a
 * final drain after the last tracee is gone.
 */
#ifndef MT_EVENTS_H
#define MT_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

struct mt_artifact_handoff;
struct mt_artifact_process;
struct mt_artifact_writer;
struct mt_events;

int mt_events_start(struct mt_events **e, int ring_fd, struct mt_artifact_writer *w);
/*
 * Whether threads stopped by back-pressure may go on: at most a quarter of the ring waits for
 * the consumer, or the consumer ended (it makes no more room: what cannot fit is dropped and
 * counted). Thread-safe; true for no pipeline (e NULL).
 */
bool mt_events_has_room(struct mt_events *e);
/*
 * Write a process record after every event reserved in the ring before the call (the fork, exec
 * or exit it describes), before any later one. Thread-safe. Returns 0 or a negative errno.
 */
int mt_events_write_process(struct mt_events *e, const struct mt_artifact_process *rec);
/* The same for a handoff record: after the events its process made while memtrack had it. */
int mt_events_write_handoff(struct mt_events *e, const struct mt_artifact_handoff *rec);
/*
 * Stop the consumer after a last full drain; *count receives the events drained. Returns 0 or the
 * ring's error; an artifact write error is not one (the writer reported it, recording stopped).
 */
int mt_events_stop(struct mt_events *e, uint64_t *count);

#endif
