/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The event pipeline: a consumer thread drains the events ring buffer into the artifact, and a
 * final drain after the last tracee is gone.
 */
#ifndef MT_EVENTS_H
#define MT_EVENTS_H

#include <stdbool.h>
#include <stdint.h>

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
 * Stop the consumer after a last full drain; *count receives the events drained. Returns 0 or the
 * ring's error; an artifact write error is not one (the writer reported it, recording stopped).
 */
int mt_events_stop(struct mt_events *e, uint64_t *count);

#endif
