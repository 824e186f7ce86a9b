/* SPDX-License-Identifier: GPL-2.0 */
/* The clock of rounds, events and deadlines: CLOCK_MONOTONIC, the clock BPF's ktime uses. */
#ifndef MT_CLOCK_H
#define MT_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t mt_clock_now_ns(void);

#endif
