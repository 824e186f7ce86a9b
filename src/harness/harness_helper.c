// SPDX-License-Identifier: GPL-2.0
/*
 * Memory mode's helper (harness.h): one thread beside the runs. The runs leave a CPU idle most of
 * the time (memtrack waits while the command runs, the command is stopped while memtrack works),
 * and what the helper does was on the plan's critical path: a file's creation costs 0.1 to 0.3 ms
 * on this ext4 (its inode allocation skips the recently deleted ones, one by one), and every
 * benchmark made two, its artifact at its exec stop and CodSpeed's after the last run.
 *
 * While run k goes, the helper makes run k + 1's artifact (never one the main thread took), then
 * converts the artifacts of the runs that ended. A made artifact that no run wrote (the plan
 * stopped first, or the command could not start) is removed: the plan leaves what it left before.
 *
 * It runs at nice 19, so that a wake-up of its does not delay the next spawn (a plan of 20 took
 * about 5% longer without, in 61 alternating rounds). Once the runs are over, nothing is left to
 * yield to, and a busy machine could starve it: it ends after the conversion under way, put back to
 * nice 0 where memtrack may do so, and mt_harness_write_codspeed converts the rest.
 */
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <unistd.h>

#include "harness/harness.h"

struct mt_harness_helper {
	pthread_t thread;
	pthread_mutex_t lock;
	pthread_cond_t work, made;
	const struct mt_harness *h;
	struct mt_bench_result *res;
	size_t n;
	size_t ran;	  /* res[0..ran) ran: to convert, in order */
	size_t taken;	  /* res[0..taken) are the runs': not made here */
	size_t next_make; /* the next artifact to make, once ran + 1 reaches it */
	bool making;	  /* res[next_make]'s, now */
	bool closing;	  /* the runs are over: end after the work under way */
	pid_t tid;	  /* the thread's, for its priority */
};

static void make_artifact(const struct mt_harness *h, struct mt_bench_result *r)
{
	char err[256];

	/*
	 * Only a new name: one that exists is the run's to replace, as ever, and one that cannot
	 * be made is the run's to fail on, with its sentence.
	 */
	r->made_ahead = r->artifact[0] && !mt_outfile_make(r->artifact, &h->base.identity, &r->made,
							   err, sizeof(err));
}

/* The artifact to make now, or c->n: the next run's, unless the main thread took it already. */
static size_t to_make(const struct mt_harness_helper *c)
{
	size_t k = c->next_make > c->taken ? c->next_make : c->taken;

	return !c->closing && k < c->n && k <= c->ran + 1 ? k : c->n;
}

static void *helper_main(void *arg)
{
	struct mt_harness_helper *c = arg;
	size_t converted = 0, k;

	pthread_mutex_lock(&c->lock);
	c->tid = gettid();
	/* The CPU the runs leave idle, not theirs (top of the file). */
	setpriority(PRIO_PROCESS, (id_t)c->tid, 19);
	for (;;) {
		k = to_make(c);
		if (k < c->n) {
			c->next_make = k;
			c->making = true;
			pthread_mutex_unlock(&c->lock);
			make_artifact(c->h, &c->res[k]);
			pthread_mutex_lock(&c->lock);
			c->making = false;
			c->next_make = k + 1;
			pthread_cond_broadcast(&c->made);
		} else if (c->closing) {
			break;
		} else if (converted < c->ran) {
			pthread_mutex_unlock(&c->lock);
			mt_harness_codspeed_convert(c->h, &c->res[converted++]);
			pthread_mutex_lock(&c->lock);
		} else {
			pthread_cond_wait(&c->work, &c->lock);
		}
	}
	pthread_mutex_unlock(&c->lock);
	return NULL;
}

void mt_harness_helper_start(struct mt_harness *h, struct mt_bench_result *res, size_t n)
{
	struct mt_harness_helper *c = calloc(1, sizeof(*c));
	sigset_t all, old;

	if (!c)
		return;
	*c = (struct mt_harness_helper){.lock = PTHREAD_MUTEX_INITIALIZER,
					.work = PTHREAD_COND_INITIALIZER,
					.made = PTHREAD_COND_INITIALIZER,
					.h = h,
					.res = res,
					.n = n,
					.next_make = 1};
	/* The supervisor waits for its signals with sigtimedwait: none may be taken here. */
	sigfillset(&all);
	pthread_sigmask(SIG_SETMASK, &all, &old);
	if (pthread_create(&c->thread, NULL, helper_main, c)) {
		free(c);
		c = NULL;
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	h->helper = c;
}

void mt_harness_helper_take(struct mt_harness *h, size_t k, struct mt_run_config *cfg)
{
	struct mt_harness_helper *c = h->helper;
	struct mt_bench_result *r;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	while (c->making && c->next_make == k)
		pthread_cond_wait(&c->made, &c->lock);
	if (c->taken < k + 1)
		c->taken = k + 1;
	pthread_mutex_unlock(&c->lock);
	r = &c->res[k];
	if (r->made_ahead) {
		cfg->artifact_made = true;
		cfg->artifact_fd = r->made.fd;
	}
}

/* An artifact the run did not write (its command never started) goes. */
static void give_back(struct mt_bench_result *r)
{
	struct stat st;

	if (!r->made_ahead)
		return;
	if (fstat(r->made.fd, &st) || st.st_size == 0)
		mt_outfile_unmake(&r->made);
	else
		mt_outfile_keep(&r->made);
	r->made_ahead = false;
}

void mt_harness_helper_ran(struct mt_harness *h, size_t k, bool ok)
{
	struct mt_harness_helper *c = h->helper;

	if (!c)
		return;
	give_back(&c->res[k]);
	if (!ok)
		return;
	pthread_mutex_lock(&c->lock);
	c->ran = k + 1;
	pthread_cond_signal(&c->work);
	pthread_mutex_unlock(&c->lock);
}

void mt_harness_helper_stop(struct mt_harness *h)
{
	struct mt_harness_helper *c = h->helper;

	if (!c)
		return;
	pthread_mutex_lock(&c->lock);
	c->closing = true;
	pthread_cond_signal(&c->work);
	/* Root may give it its priority back (CAP_SYS_NICE); else it ends at 19, the one item. */
	if (c->tid)
		setpriority(PRIO_PROCESS, (id_t)c->tid, 0);
	pthread_mutex_unlock(&c->lock);
	pthread_join(c->thread, NULL);
	/* Made for runs that never came: the plan stopped before them. */
	for (size_t k = c->taken; k < c->n; k++)
		if (c->res[k].made_ahead) {
			mt_outfile_unmake(&c->res[k].made);
			c->res[k].made_ahead = false;
		}
	free(c);
	h->helper = NULL;
}
