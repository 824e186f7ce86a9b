/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The tracker's side of CodSpeed's runner IPC (`codspeed-memtrack track --ipc-server NAME`):
 * ipc-channel 0.20's Linux transport, spoken from the facts of its source (docs/HARNESS.md,
 * "The tracker role"). The runner serves a one-shot server, a SOCK_SEQPACKET Unix socket whose
 * path is NAME; the tracker connects, sends it the sending end of a channel of its own (a
 * socketpair, passed with SCM_RIGHTS), and then receives the runner's IpcMessage
 * {command: Enable | Disable | Ping, response_channel} on it, answering each with Ack or Err on
 * the channel the message carries. Every packet is a usize byte count and a bincode-1 payload.
 *
 * Recording is gated here in user space: Enable opens a window of CLOCK_MONOTONIC time and
 * Disable closes it; the artifact keeps only the events inside one (codspeed_write.h).
 */
#ifndef MT_CODSPEED_IPC_H
#define MT_CODSPEED_IPC_H

#include <stddef.h>

#include "codspeed/codspeed_write.h"

struct mt_codspeed_ipc;

/*
 * Connect to the runner's one-shot server name and hand it the channel it will send commands
 * on. Returns 0, or a negative errno after one sentence on stderr.
 */
int mt_codspeed_ipc_connect(struct mt_codspeed_ipc **ipc, const char *name);
/* Answer the runner's commands in a thread of their own, until mt_codspeed_ipc_stop(). */
int mt_codspeed_ipc_start(struct mt_codspeed_ipc *ipc);
/*
 * Stop answering (the run is over), and return the windows recorded: a window still open ends at
 * end_ns. Valid until mt_codspeed_ipc_free().
 */
const struct mt_codspeed_window *mt_codspeed_ipc_stop(struct mt_codspeed_ipc *ipc, uint64_t end_ns,
						      size_t *n);
void mt_codspeed_ipc_free(struct mt_codspeed_ipc *ipc);

#endif
