// SPDX-License-Identifier: GPL-2.0
/* fixtures/attach_loop as the attach tests drive it (attachloop.h). */
#include <check.h>
#include <fcntl.h>
#include <inttypes.h>
#include <signal.h>
#include <stdio.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "lib/attachloop.h"
#include "lib/mtrun.h"

/* Start attach_loop SECONDS THREADS and wait for its "ready PID" line. */
void mt_loop_start(struct mt_loop *l, const char *seconds, const char *threads)
{
	const char *argv[] = {FIXTURE("attach_loop"), seconds, threads, "16", NULL};
	ssize_t n;

	l->len = 0;
	l->pid = mt_spawn_piped(argv, &l->fd);
	ck_assert_int_gt(l->pid, 0);
	while (!memchr(l->out, '\n', l->len) && (n = read(l->fd, l->out + l->len, 64)) > 0)
		l->len += (size_t)n;
	l->out[l->len] = '\0';
	ck_assert_msg(!strncmp(l->out, "ready ", 6), "attach_loop said: %s", l->out);
}

/* Read the rest of its output, to its end, and its exit status. */
int mt_loop_finish(struct mt_loop *l)
{
	ssize_t n;
	int status;

	while (l->len < sizeof(l->out) - 1 &&
	       (n = read(l->fd, l->out + l->len, sizeof(l->out) - 1 - l->len)) > 0)
		l->len += (size_t)n;
	l->out[l->len] = '\0';
	close(l->fd);
	ck_assert_int_eq(waitpid(l->pid, &status, 0), l->pid);
	return status;
}

/* The count of the last line it wrote so far ("ready" alone: 0). */
uint64_t mt_loop_count_now(struct mt_loop *l)
{
	const char *nl;
	uint64_t n = 0;
	int pid;

	fcntl(l->fd, F_SETFL, O_NONBLOCK);
	for (ssize_t k; (k = read(l->fd, l->out + l->len, sizeof(l->out) - 1 - l->len)) > 0;)
		l->len += (size_t)k;
	fcntl(l->fd, F_SETFL, 0);
	l->out[l->len] = '\0';
	nl = l->len > 1 ? memrchr(l->out, '\n', l->len - 1) : NULL;
	if (nl)
		sscanf(nl + 1, "%d %" SCNu64, &pid, &n);
	return n;
}

void mt_loop_kill(struct mt_loop *l)
{
	kill(l->pid, SIGKILL);
	mt_loop_finish(l);
}

/*
 * Every line of its output after "ready" has its format ("PID N NS", then "done N"), the counts
 * never go down and the times go up: what it wrote with memtrack is what it writes without.
 * Returns the count at the last line at or before ns (before: the first line's at or after ns).
 */
uint64_t mt_loop_count_at(const struct mt_loop *l, uint64_t ns, bool before)
{
	const char *p = strchr(l->out, '\n') + 1;
	uint64_t n, t, prev_n = 0, prev_t = 0, found = 0;
	bool done = false, have = false;
	int pid, k;

	while (*p && !done) {
		if (sscanf(p, "done %" SCNu64 "%n", &n, &k) == 1) {
			ck_assert_uint_ge(n, prev_n);
			done = true;
		} else {
			ck_assert_msg(sscanf(p, "%d %" SCNu64 " %" SCNu64 "%n", &pid, &n, &t, &k) ==
					  3,
				      "bad line: %.40s", p);
			ck_assert_int_eq(pid, l->pid);
			ck_assert_uint_ge(n, prev_n);
			ck_assert_uint_gt(t, prev_t);
			if (before && t <= ns)
				found = n, have = true;
			if (!before && t >= ns && !have)
				found = n, have = true;
			prev_n = n;
			prev_t = t;
		}
		p += k;
		ck_assert_msg(*p == '\n', "line not ended: %.40s", p);
		p++;
	}
	ck_assert(done);
	ck_assert(have);
	return found;
}
