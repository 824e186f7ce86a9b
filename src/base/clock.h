/* SPDX-License-Identifier: GPL-2.0 */
/* The clock of rounds, events and deadlines: CLOCK_MONOTONIC, the clock BPF's ktime uses. */
#ifndef MT_CLOCK_H
#define MT_CLOCK_H

#include <stdint.h>

/* CLOCK_MONOTONIC in nanoseconds. */
uint64_t mt_clock_now_ns(void);
/* The CPU time of the calling thread (CLOCK_THREAD_CPUTIME_ID), ns: what memtrack's work cost. */
uint64_t mt_clock_thread_cpu_ns(void);

#endif
