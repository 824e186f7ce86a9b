// SPDX-License-Identifier: GPL-2.0
/*
 * Detaching, the lowest of the tracker's files: links collected into one list, and the list
 * detached from several threads at once, whose RCU waits are shared (memtrack's, or the closer
 * process's: tracker_closer.c).
 */

#include <pthread.h>
#include <stdlib.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "tracker/tracker_int.h"

struct closer {
	pthread_t thread;
	const struct detach *d;
	size_t n, stride;
};

static void *detach_some(void *arg)
{
	struct closer *c = arg;

	for (size_t i = 0; i < c->n; i += c->stride) {
		if (c->d[i].link)
			bpf_link__destroy(c->d[i].link);
		else
			close(c->d[i].fd);
	}
	return NULL;
}

/*
 * Detaching a uprobe or a tracepoint waits for RCU grace periods (about 0.1 s here) before it
 * returns, and detaches from one thread wait one after the other: 48 files took 4.7 s. Waits of
 * concurrent detachers share grace periods, so everything is detached from several threads.
 */
void tracker_detach_in_parallel(const struct detach *d, size_t n)
{
	struct closer c[MAX_CLOSERS];
	size_t threads = n < MAX_CLOSERS ? n : MAX_CLOSERS, started = 0;

	for (size_t i = 0; i < threads; i++) {
		c[i] = (struct closer){.d = d + i, .n = n - i, .stride = threads};
		if (pthread_create(&c[i].thread, NULL, detach_some, &c[i]))
			break;
		started++;
	}
	for (size_t i = 0; i < started; i++)
		pthread_join(c[i].thread, NULL);
	for (size_t i = started; i < threads; i++)
		detach_some(&c[i]);
}

/* Move l's links into d (k counts them), or detach them at once without d. */
void tracker_collect_links(struct mt_links *l, struct detach *d, size_t *k)
{
	for (size_t j = 0; j < l->n_links; j++) {
		if (d)
			d[(*k)++].link = l->links[j];
		else
			bpf_link__destroy(l->links[j]);
	}
	l->n_links = 0;
	free(l->links);
	l->links = NULL;
	for (int j = 0; j < 2; j++) {
		if (l->multi_fd[j] > 0 && d)
			d[(*k)++].fd = l->multi_fd[j];
		else if (l->multi_fd[j] > 0)
			close(l->multi_fd[j]);
		l->multi_fd[j] = 0;
	}
}
