/* SPDX-License-Identifier: GPL-2.0 */
/* Timed runs of a command, shared by the benchmark helpers. */
#ifndef BENCH_SPAWN_H
#define BENCH_SPAWN_H

#include <stdint.h>

/*
 * Fork, exec (PATH search) and reap argv once, with its stdout on /dev/null so that only the
 * helper's own numbers reach its stdout. *wall_ns: CLOCK_MONOTONIC from just before fork to just
 * after the reap. Returns 0, or -1 when the command could not run or did not exit 0 (reported on
 * stderr with prog as the prefix): a failed run is never a time.
 */
int bench_spawn(const char *prog, char **argv, uint64_t *wall_ns);

#endif
