/* SPDX-License-Identifier: GPL-2.0 */
/*
 * fixtures/attach_loop as the attach tests drive it: started with its output on a pipe, its
 * lines read and checked, its own counts at given instants.
 */
#ifndef MT_TEST_ATTACHLOOP_H
#define MT_TEST_ATTACHLOOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

struct mt_loop {
	pid_t pid;
	int fd;
	char out[1 << 20]; /* what it wrote */
	size_t len;
};

/* Start attach_loop SECONDS THREADS (rings of 16 blocks) and wait for its "ready PID" line. */
void mt_loop_start(struct mt_loop *l, const char *seconds, const char *threads);
/* Read the rest of its output, to its end; its wait status. */
int mt_loop_finish(struct mt_loop *l);
/* The count of the last line it wrote so far (0 before the first). */
uint64_t mt_loop_count_now(struct mt_loop *l);
void mt_loop_kill(struct mt_loop *l);
/*
 * Check every line of its output after "ready" ("PID N NS", then "done N": counts never go
 * down, times go up) and return the count of the last line at or before ns (before), or of the
 * first at or after ns (!before).
 */
uint64_t mt_loop_count_at(const struct mt_loop *l, uint64_t ns, bool before);

#endif
