// SPDX-License-Identifier: GPL-2.0
/*
 * The closer: a process of its own that detaches the links memtrack is done with.
 *
 * Detaching a uprobe waits for RCU grace periods (about 0.1 s here), and a process cannot exit
 * while one of its threads waits so: a run whose command has ended would keep its user waiting
 * for them, and so would a process of the tree whose links are dropped at its exit. memtrack
 * passes each link's fd to the closer (SCM_RIGHTS) and closes its own copy at once, which costs
 * nothing as long as the closer's copy is the last: the closer closes them, in parallel threads
 * that share their grace periods, only once memtrack has said it let go of them (a message
 * without fds, or the end of the socket). Before, a closer that received and closed first left
 * memtrack's close the last reference, and memtrack waited out the grace periods it meant to
 * hand off (a close of 42 ms at the end of a python run).
 *
 * The closer's main thread only reads the socket; a detacher thread closes what was released,
 * everything released meanwhile in its next batch. A closer that read nothing while it detached
 * (30 to 150 ms a batch) let the socket fill when runs ended every millisecond or two (an
 * exec-harness plan), and memtrack, refused, detached on its stop path: 15 waits of 50 to 150 ms
 * in a plan of 400 `true`s.
 *
 * The closer is forked by a process that exits at once (a double fork) when the tracker opens,
 * before anything is loaded: it is no child of memtrack's, to wait for or to reap, and holds none
 * of memtrack's files but its end of the socket. It reads until memtrack's end closes, closes
 * what it was given and exits: a moment after memtrack, which never waits for it. Links whose
 * tree is gone cost nothing meanwhile (their breakpoints are in no live process's memory, or, with
 * --probe-scope=system, in processes the programs no longer track).
 */

#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/bpf.h>
#include <bpf/libbpf.h>

#include "base/clock.h"
#include "base/grow.h"
#include "tracker/tracker_int.h"

/* File descriptors per message: the kernel's SCM_MAX_FD is 253. */
#define CLOSER_BATCH 250

/* What one message was: fds to hold, or memtrack's word that everything sent so far is ours. */
enum closer_msg { CLOSER_END, CLOSER_FDS, CLOSER_RELEASE };

/* One message's fds appended to d (grown as needed): its kind, or a negative errno. */
static int receive_fds(int sock, int flags, struct detach **d, size_t *n, size_t *cap)
{
	char byte, ctl[CMSG_SPACE(CLOSER_BATCH * sizeof(int))];
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *c;
	ssize_t r = recvmsg(sock, &msg, flags | MSG_CMSG_CLOEXEC);
	size_t got;

	if (r <= 0)
		return r < 0 ? -errno : CLOSER_END;
	c = CMSG_FIRSTHDR(&msg);
	if (!c || c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS)
		return CLOSER_RELEASE;
	got = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
	if (MT_GROW(*d, *cap, *n + got, CLOSER_BATCH))
		return -ENOMEM;
	for (size_t i = 0; i < got; i++)
		(*d)[(*n)++] = (struct detach){.fd = ((int *)CMSG_DATA(c))[i]};
	return CLOSER_FDS;
}

/* What was released and is not detached yet: the detacher thread's work. */
struct released {
	pthread_mutex_t lock;
	pthread_cond_t more;
	struct detach *d;
	size_t n, cap;
	bool ending;
};

/* Detach batch after batch, each holding everything released while the one before went. */
static void *detacher_main(void *arg)
{
	struct released *r = arg;

	pthread_mutex_lock(&r->lock);
	for (;;) {
		struct detach *d;
		size_t n;

		while (!r->n && !r->ending)
			pthread_cond_wait(&r->more, &r->lock);
		if (!r->n)
			break;
		d = r->d, n = r->n;
		r->d = NULL, r->n = r->cap = 0;
		pthread_mutex_unlock(&r->lock);
		tracker_detach_in_parallel(d, n);
		free(d);
		pthread_mutex_lock(&r->lock);
	}
	pthread_mutex_unlock(&r->lock);
	return NULL;
}

/*
 * Hand d's n (all released by memtrack: a release covers everything sent before it) to the
 * detacher; without a detacher (none could start, or no memory), detach them here.
 */
static void hand_released(struct released *r, bool detacher, const struct detach *d, size_t n)
{
	bool handed = false;

	if (detacher) {
		pthread_mutex_lock(&r->lock);
		handed = !MT_GROW(r->d, r->cap, r->n + n, CLOSER_BATCH);
		if (handed) {
			memcpy(r->d + r->n, d, n * sizeof(*d));
			r->n += n;
			pthread_cond_signal(&r->more);
		}
		pthread_mutex_unlock(&r->lock);
	}
	if (!handed)
		tracker_detach_in_parallel(d, n);
}

/*
 * Releasing the last perf event of a tracepoint (the watcher's syscall tracepoints; every uprobe
 * link on kernels before uprobe_multi) waits for grace periods while it holds the kernel's global
 * event_mutex (perf_trace_event_unreg, kernel/trace/trace_event_perf.c), and every
 * perf_event_open of a tracepoint on the machine waits for it: the next memtrack started right
 * after this one waited 40 to 140 ms in its first perf_event_open. A perf event that is not the
 * last of its tracepoint is released at once. So the closer keeps memtrack's perf events a moment
 * longer than the rest, for a memtrack started meanwhile to open its own first: their programs
 * find nothing of theirs in the processes that run meanwhile, and the last of a series of runs
 * pays the waits after everyone.
 */
#define CLOSER_LINGER_NS (300 * 1000 * 1000ull)

static bool is_perf_link(int fd)
{
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);

	return !bpf_obj_get_info_by_fd(fd, &info, &len) && info.type == BPF_LINK_TYPE_PERF_EVENT;
}

/* Move d's perf event links to its end: the count of the others, which come first. */
static size_t perf_links_last(struct detach *d, size_t n)
{
	struct detach other;
	size_t others = 0;

	for (size_t i = 0; i < n; i++) {
		if (is_perf_link(d[i].fd))
			continue;
		other = d[i];
		d[i] = d[others];
		d[others++] = other;
	}
	return others;
}

/* Detach what memtrack left at its end: the perf event links CLOSER_LINGER_NS after it. */
static void detach_at_the_end(struct detach *d, size_t n)
{
	uint64_t until = mt_clock_now_ns() + CLOSER_LINGER_NS, now;
	size_t others = perf_links_last(d, n);

	tracker_detach_in_parallel(d, others);
	now = mt_clock_now_ns();
	if (others < n && now < until) {
		uint64_t left = until - now;
		struct timespec ts = {.tv_sec = (time_t)(left / 1000000000u),
				      .tv_nsec = (long)(left % 1000000000u)};

		while (nanosleep(&ts, &ts) && errno == EINTR)
			;
	}
	tracker_detach_in_parallel(d + others, n - others);
}

/*
 * At memtrack's end, what the detacher has not begun comes back here, to go with the rest: the
 * perf event links among it linger like the others.
 */
static size_t end_detacher(struct released *r, pthread_t detacher, struct detach **d, size_t n,
			   size_t *cap)
{
	pthread_mutex_lock(&r->lock);
	if (r->n && !MT_GROW(*d, *cap, n + r->n, CLOSER_BATCH)) {
		memcpy(*d + n, r->d, r->n * sizeof(**d));
		n += r->n;
		r->n = 0;
	}
	r->ending = true;
	pthread_cond_signal(&r->more);
	pthread_mutex_unlock(&r->lock);
	pthread_join(detacher, NULL);
	free(r->d);
	return n;
}

static void closer_main(int sock)
{
	struct released r = {.lock = PTHREAD_MUTEX_INITIALIZER, .more = PTHREAD_COND_INITIALIZER};
	struct detach *d = NULL;
	size_t n = 0, cap = 0;
	pthread_t detacher;
	bool threaded;
	sigset_t none;
	int m;

	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	/* Out of the terminal's process group: a ^C meant for the command does not reach it. */
	setsid();
	prctl(PR_SET_NAME, "memtrack-closer");
	if (sock > 0)
		close_range(0, sock - 1, 0);
	close_range(sock + 1, ~0u, 0);
	threaded = !pthread_create(&detacher, NULL, detacher_main, &r);
	while ((m = receive_fds(sock, 0, &d, &n, &cap)) > 0) {
		if (m == CLOSER_RELEASE) {
			hand_released(&r, threaded, d, n);
			n = 0;
		}
	}
	/* memtrack's end is closed (or broken): all it sent is ours */
	if (threaded)
		n = end_detacher(&r, detacher, &d, n, &cap);
	detach_at_the_end(d, n);
	_exit(0);
}

/*
 * A unix socket charges what is queued to its sender, up to the sender's buffer (212 KiB by
 * default: 139 links' messages and their releases): the 800 processes of a tree that end
 * together send 1,600, faster than the closer reads, and memtrack waited for room (29 ms). A buffer
 * of CLOSER_SNDBUF holds such a burst; it costs memory only while messages wait. Root may exceed
 * the system's maximum (SO_SNDBUFFORCE), others get what it allows.
 */
#define CLOSER_SNDBUF (8 << 20)

static void room_for_bursts(int sock)
{
	int size = CLOSER_SNDBUF;

	if (setsockopt(sock, SOL_SOCKET, SO_SNDBUFFORCE, &size, sizeof(size)))
		setsockopt(sock, SOL_SOCKET, SO_SNDBUF, &size, sizeof(size));
}

/* The closer started before memtrack's first thread (mt_tracker_closer_prestart), or -1. */
static int prestarted = -1;

/*
 * Fork the closer by way of mid, which exits at once; *mid_out: mid, for the caller to reap, or
 * NULL to reap it here.
 */
static int fork_closer(int *fd, pid_t *mid_out)
{
	int sv[2], status;
	pid_t mid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	room_for_bursts(sv[0]);
	mid = fork();
	if (mid == 0) {
		if (fork() == 0)
			closer_main(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	if (mid > 0 && mid_out) {
		*mid_out = mid;
	} else if (mid < 0 || waitpid(mid, &status, 0) != mid) {
		close(sv[0]);
		return -ECHILD;
	}
	*fd = sv[0];
	return 0;
}

/*
 * A fork copies the other threads' locks as they are at that moment, held ones too: glibc's
 * malloc takes care of its own, ASan's allocator does not, and a closer forked while memtrack's
 * IPC thread (track) allocated was found stuck for good in its first calloc, holding the links of
 * a run long over. Where threads come before the tracker, the closer is forked before them.
 */
int mt_tracker_closer_prestart(void)
{
	return prestarted >= 0 ? 0 : fork_closer(&prestarted, NULL);
}

/*
 * The forking process is reaped later (tracker_closer_reap), once the BPF load is done: its fork
 * and exit (0.9 ms here) go on beside the tracker's start instead of before it.
 */
int tracker_closer_start(struct mt_tracker *t)
{
	if (prestarted < 0)
		return fork_closer(&t->closer_fd, &t->closer_mid);
	/* A tracker's own end, which closing ends nothing: the closer lives until memtrack exits.
	 */
	t->closer_fd = fcntl(prestarted, F_DUPFD_CLOEXEC, 3);
	return t->closer_fd < 0 ? -errno : 0;
}

/* The fd that holds what d names: the link's own for a libbpf link. */
static int detach_fd(const struct detach *d)
{
	return d->link ? bpf_link__fd(d->link) : d->fd;
}

/*
 * A full socket (a closer descheduled, or slow to start) is waited for, a moment: the closer
 * reads all the time, and detaching here instead waits for grace periods on the stop path.
 */
#define CLOSER_ROOM_MS 50

/* One message, never blocking for longer than CLOSER_ROOM_MS; 0 or a negative errno. */
static int send_waiting(int sock, const struct msghdr *msg)
{
	struct pollfd p = {.fd = sock, .events = POLLOUT};
	int err = sendmsg(sock, msg, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 ? 0 : -errno;

	if (err != -EAGAIN || poll(&p, 1, CLOSER_ROOM_MS) != 1 || !(p.revents & POLLOUT))
		return err;
	return sendmsg(sock, msg, MSG_DONTWAIT | MSG_NOSIGNAL) == 1 ? 0 : -errno;
}

static int send_fds(int sock, const struct detach *d, size_t n)
{
	char byte = 0, ctl[CMSG_SPACE(CLOSER_BATCH * sizeof(int))] = {0};
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl,
			     .msg_controllen = CMSG_SPACE(n * sizeof(int))};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	for (size_t i = 0; i < n; i++)
		((int *)CMSG_DATA(c))[i] = detach_fd(&d[i]);
	return send_waiting(sock, &msg);
}

/* Forget what d names here; what the closer holds stays attached until it lets go. */
static void drop_here(const struct detach *d, size_t n)
{
	for (size_t i = 0; i < n; i++) {
		if (d[i].link)
			bpf_link__destroy(d[i].link);
		else
			close(d[i].fd);
	}
}

/*
 * Everything sent so far is the closer's alone: it may close it now. Without this message (a full
 * socket) it waits for the end of the socket, when memtrack exits.
 */
void tracker_closer_release(struct mt_tracker *t)
{
	char byte = 0;
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov, .msg_iovlen = 1};

	if (t->closer_fd >= 0)
		send_waiting(t->closer_fd, &msg);
}

/*
 * Hand d's n links to the closer, forgotten here; what cannot be sent is detached here. How many
 * were.
 */
size_t tracker_closer_send(struct mt_tracker *t, const struct detach *d, size_t n)
{
	size_t sent = 0;

	while (t->closer_fd >= 0 && sent < n) {
		size_t k = n - sent < CLOSER_BATCH ? n - sent : CLOSER_BATCH;

		if (send_fds(t->closer_fd, d + sent, k))
			break;
		drop_here(d + sent, k);
		sent += k;
	}
	if (sent < n)
		tracker_detach_in_parallel(d + sent, n - sent);
	return n - sent;
}

/* The stop path and the warmer (tracker_warm.c) both send: a release covers its sender's fds. */
static pthread_mutex_t sending = PTHREAD_MUTEX_INITIALIZER;

void tracker_close_links(struct mt_tracker *t, const struct detach *d, size_t n)
{
	pthread_mutex_lock(&sending);
	tracker_closer_send(t, d, n);
	tracker_closer_release(t);
	pthread_mutex_unlock(&sending);
}

void tracker_closer_reap(struct mt_tracker *t)
{
	int status;

	while (t->closer_mid > 0 && waitpid(t->closer_mid, &status, 0) < 0 && errno == EINTR)
		;
	t->closer_mid = 0;
}

void tracker_closer_stop(struct mt_tracker *t)
{
	if (t->closer_fd >= 0)
		close(t->closer_fd);
	t->closer_fd = -1;
}
