// SPDX-License-Identifier: GPL-2.0
/*
 * procfloor MODE LIB -- CMD [ARGS...]: run CMD under a ptrace tracer that does one share of what
 * memtrack's supervisor must do for each process of a tree, and nothing else: the floor of the
 * cost per process (docs/PERFORMANCE.md, section 22). MODE is one of
 *
 *   stops         the ptrace stops alone: the tree seized with fork, vfork, clone, exec and exit
 *                 events, each stop resumed as it comes
 *   maps          the stops, and /proc/PID/maps read whole at each exec stop
 *   status        the stops, and /proc/PID/status read whole at each exit stop
 *   links         the stops, and LIB's allocator points (classified as memtrack classifies them)
 *                 linked for each process as one uprobe_multi link of entries and one of returns
 *                 to empty programs: the root's at its exec, a child's at its creator's report,
 *                 before its first instruction (it is held at its start stop until then); handed
 *                 at the process's reap to a closer process that detaches them in parallel
 *                 threads, as memtrack's closer does
 *   links-inline  the same, detached on the stop path at the reap (each waits for grace periods)
 *   links-held    the same, every link kept until the tree has ended, then handed to the closer:
 *                 the links' making without detaches running beside it
 *   all           maps, status and links in one tracer
 *
 * -v: how long the links took to make, and how many took over 1 ms (as `memtrack run -v` says).
 * Each is timed from outside (tools/bench runs it under bench/forkexec) against the same tree
 * bare: the difference, less the same mode's run of `sh -c :`, is what that share adds a process.
 * Exits with CMD's exit status (128 + the signal that killed it), 1 when tracing failed.
 */
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/ptrace.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include <bpf/libbpf.h>

#include "classify/classify.h"
#include "floor.skel.h"
#include "tracker/tracker.h"

#define PART_MAPS   1u
#define PART_STATUS 2u
#define PART_LINKS  4u
#define PART_INLINE 8u
#define PART_HOLD   16u

/* A link slower than this is counted apart, as memtrack's -v counts them. */
#define LINK_SLOW_NS 1000000u

static const struct {
	const char *name;
	unsigned int parts;
} modes[] = {
    {"stops", 0},
    {"maps", PART_MAPS},
    {"status", PART_STATUS},
    {"links", PART_LINKS},
    {"links-inline", PART_LINKS | PART_INLINE},
    {"links-held", PART_LINKS | PART_HOLD},
    {"all", PART_MAPS | PART_STATUS | PART_LINKS},
};

#define TRACE_OPTIONS                                                                              \
	(PTRACE_O_TRACEFORK | PTRACE_O_TRACEVFORK | PTRACE_O_TRACECLONE | PTRACE_O_TRACEEXEC |     \
	 PTRACE_O_TRACEEXIT | PTRACE_O_EXITKILL)

/* memtrack's closer detaches in up to 32 threads: the grace periods they wait for are shared. */
#define CLOSER_THREADS 32

struct tracee {
	pid_t pid;
	bool announced; /* its creator's fork, vfork or clone event was handled */
	bool held;	/* at its start stop, waiting for that event */
	bool started;	/* its start stop came */
	bool process;	/* a process of its own (fork, vfork), not a thread */
	int fds[2];	/* its links; 0: none */
};

struct tracer {
	unsigned int parts;
	const char *lib;
	pid_t root;
	int root_status;
	bool root_gone;
	struct tracee *t;
	size_t n, cap;
	struct floor_bpf *skel;
	struct mt_classification c;
	int closer; /* socket to the closer process; -1: none */
	int *held;  /* links-held: the links of the processes gone so far */
	size_t n_held, cap_held;
	uint64_t link_ns, slow_ns; /* time in making links, and in those over LINK_SLOW_NS */
	size_t links, slow;
};

/* ---- the closer: a process of its own that detaches what it is given ---------------------- */

struct closer_queue {
	pthread_mutex_t lock;
	pthread_cond_t more;
	int *fds;
	size_t n, cap;
	size_t next;	 /* the first not taken by a thread */
	size_t released; /* those before it are the tracer's no more: they may be closed */
	bool ending;
};

static void *closer_thread(void *arg)
{
	struct closer_queue *q = arg;
	int fd;

	pthread_mutex_lock(&q->lock);
	for (;;) {
		while (q->next == q->released && !q->ending)
			pthread_cond_wait(&q->more, &q->lock);
		if (q->next == q->released)
			break;
		fd = q->fds[q->next++];
		pthread_mutex_unlock(&q->lock);
		close(fd);
		pthread_mutex_lock(&q->lock);
	}
	pthread_mutex_unlock(&q->lock);
	return NULL;
}

/*
 * One message's fds queued. The tracer closes its copies after each message: when the next one
 * comes, those of the messages before it are the closer's alone, and closing them detaches (a
 * closer that closed at once could leave the tracer's close the last one, and the waits in it).
 */
static int closer_receive(int sock, struct closer_queue *q)
{
	char byte, ctl[CMSG_SPACE(2 * sizeof(int))];
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {
	    .msg_iov = &iov, .msg_iovlen = 1, .msg_control = ctl, .msg_controllen = sizeof(ctl)};
	struct cmsghdr *c;
	ssize_t r = recvmsg(sock, &msg, MSG_CMSG_CLOEXEC);
	size_t got;

	if (r <= 0)
		return r < 0 && errno == EINTR ? 1 : 0;
	c = CMSG_FIRSTHDR(&msg);
	got = c && c->cmsg_type == SCM_RIGHTS ? (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) : 0;
	pthread_mutex_lock(&q->lock);
	q->released = q->n;
	if (q->n + got > q->cap) {
		int *grown = realloc(q->fds, (q->cap + 256) * sizeof(*grown));

		if (grown) {
			q->fds = grown;
			q->cap += 256;
		}
	}
	/* No room: those fds stay open until the closer's exit. */
	for (size_t i = 0; i < got && q->n < q->cap; i++)
		q->fds[q->n++] = ((int *)CMSG_DATA(c))[i];
	pthread_cond_broadcast(&q->more);
	pthread_mutex_unlock(&q->lock);
	return 1;
}

static void closer_main(int sock)
{
	struct closer_queue q = {.lock = PTHREAD_MUTEX_INITIALIZER,
				 .more = PTHREAD_COND_INITIALIZER};
	pthread_t threads[CLOSER_THREADS];
	pthread_attr_t attr;
	size_t n = 0;

	setsid();
	prctl(PR_SET_NAME, "procfloor-close");
	close_range(0, sock - 1, 0);
	close_range(sock + 1, ~0u, 0);
	pthread_attr_init(&attr);
	pthread_attr_setstacksize(&attr, 64 << 10);
	while (n < CLOSER_THREADS && !pthread_create(&threads[n], &attr, closer_thread, &q))
		n++;
	while (closer_receive(sock, &q))
		;
	/* The tracer's end is closed: all it sent is the closer's. */
	pthread_mutex_lock(&q.lock);
	q.released = q.n;
	q.ending = true;
	pthread_cond_broadcast(&q.more);
	pthread_mutex_unlock(&q.lock);
	while (n)
		pthread_join(threads[--n], NULL);
	for (size_t i = q.next; i < q.n; i++) /* no thread could start */
		close(q.fds[i]);
	_exit(0);
}

/*
 * The closer, forked twice: no child of the tracer's, which never waits for it (memtrack's
 * closer outlives memtrack the same way). Returns the tracer's end of its socket.
 */
static int closer_start(void)
{
	int sv[2], status;
	pid_t mid;

	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv))
		return -errno;
	mid = fork();
	if (mid < 0) {
		close(sv[0]);
		close(sv[1]);
		return -errno;
	}
	if (mid == 0) {
		if (fork() == 0)
			closer_main(sv[1]);
		_exit(0);
	}
	close(sv[1]);
	while (waitpid(mid, &status, 0) < 0 && errno == EINTR)
		;
	return sv[0];
}

/* Hand fds to the closer, then close the tracer's copies: never the last, they cost nothing. */
static int closer_hand(int sock, const int *fds, size_t n)
{
	char byte = 0, ctl[CMSG_SPACE(2 * sizeof(int))] = {0};
	struct iovec iov = {.iov_base = &byte, .iov_len = 1};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl,
			     .msg_controllen = CMSG_SPACE(n * sizeof(int))};
	struct cmsghdr *c = CMSG_FIRSTHDR(&msg);
	int err = 0;

	c->cmsg_level = SOL_SOCKET;
	c->cmsg_type = SCM_RIGHTS;
	c->cmsg_len = CMSG_LEN(n * sizeof(int));
	memcpy(CMSG_DATA(c), fds, n * sizeof(int));
	if (sendmsg(sock, &msg, MSG_NOSIGNAL) < 0)
		err = -errno;
	for (size_t i = 0; i < n; i++)
		close(fds[i]);
	return err;
}

/* ---- the links ------------------------------------------------------------------------------ */

static int links_open(struct tracer *tr)
{
	int err = mt_classify_path(tr->lib, MT_PLACE_SMART, &tr->c);

	if (err || !tr->c.n_points) {
		fprintf(stderr, "procfloor: %s: %s\n", tr->lib,
			err ? strerror(-err) : "no allocator to link");
		return err ? err : -ENOENT;
	}
	tr->skel = floor_bpf__open();
	if (!tr->skel)
		return -errno;
	/* The multi programs only, with the attach type uprobe_multi links need. */
	bpf_program__set_autoload(tr->skel->progs.floor_enter, false);
	bpf_program__set_autoload(tr->skel->progs.floor_exit, false);
	bpf_program__set_expected_attach_type(tr->skel->progs.floor_enter_multi,
					      MT_BPF_TRACE_UPROBE_MULTI);
	bpf_program__set_expected_attach_type(tr->skel->progs.floor_exit_multi,
					      MT_BPF_TRACE_UPROBE_MULTI);
	err = floor_bpf__load(tr->skel);
	if (err) {
		fprintf(stderr, "procfloor: loading the floor programs: %s\n", strerror(-err));
		return err;
	}
	if (!(tr->parts & PART_INLINE)) {
		tr->closer = closer_start();
		if (tr->closer < 0) {
			fprintf(stderr, "procfloor: no closer: %s\n", strerror(-tr->closer));
			return tr->closer;
		}
	}
	return 0;
}

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

static int link_process(struct tracer *tr, struct tracee *t)
{
	uint64_t took;
	int err;

	if (!(tr->parts & PART_LINKS) || !t->process || t->fds[0])
		return 0;
	took = now_ns();
	err = mt_uprobe_multi_attach_points(tr->skel->progs.floor_enter_multi,
					    tr->skel->progs.floor_exit_multi, tr->lib, &tr->c, 0,
					    t->pid, t->fds);
	took = now_ns() - took;
	tr->link_ns += took;
	tr->links++;
	if (took > LINK_SLOW_NS) {
		tr->slow++;
		tr->slow_ns += took;
	}
	if (err)
		fprintf(stderr, "procfloor: linking %s in process %d: %s\n", tr->lib, t->pid,
			strerror(-err));
	return err;
}

static int unlink_process(struct tracer *tr, struct tracee *t)
{
	size_t n = t->fds[1] > 0 ? 2 : 1;
	int err = 0;

	if (t->fds[0] <= 0)
		return 0;
	if (tr->parts & PART_HOLD) {
		if (tr->n_held + 2 > tr->cap_held) {
			int *grown = realloc(tr->held, (tr->cap_held + 256) * sizeof(*grown));

			if (!grown)
				return -ENOMEM;
			tr->held = grown;
			tr->cap_held += 256;
		}
		for (size_t i = 0; i < n; i++)
			tr->held[tr->n_held++] = t->fds[i];
	} else if (tr->closer >= 0) {
		err = closer_hand(tr->closer, t->fds, n);
	} else {
		for (size_t i = 0; i < n; i++)
			close(t->fds[i]);
	}
	t->fds[0] = t->fds[1] = 0;
	return err;
}

/* ---- the stops ------------------------------------------------------------------------------ */

static struct tracee *tracee_find(struct tracer *tr, pid_t pid)
{
	for (size_t i = 0; i < tr->n; i++)
		if (tr->t[i].pid == pid)
			return &tr->t[i];
	return NULL;
}

static struct tracee *tracee_get(struct tracer *tr, pid_t pid)
{
	struct tracee *t = tracee_find(tr, pid);

	if (t)
		return t;
	if (tr->n == tr->cap) {
		struct tracee *grown = realloc(tr->t, (tr->cap + 64) * sizeof(*grown));

		if (!grown)
			return NULL;
		tr->t = grown;
		tr->cap += 64;
	}
	t = &tr->t[tr->n++];
	*t = (struct tracee){.pid = pid};
	return t;
}

static int resume(pid_t pid, int sig)
{
	/* ESRCH: killed meanwhile (its exit is reported next), nothing to resume. */
	if (ptrace(PTRACE_CONT, pid, 0, (void *)(long)sig) < 0 && errno != ESRCH)
		return -errno;
	return 0;
}

/* Read /proc/PID/NAME to its end, as a stop reads it; a process gone meanwhile is no error. */
static int read_proc(pid_t pid, const char *name)
{
	char path[64], buf[16384];
	ssize_t r;
	int fd;

	snprintf(path, sizeof(path), "/proc/%d/%s", pid, name);
	fd = open(path, O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ESRCH ? 0 : -errno;
	do
		r = read(fd, buf, sizeof(buf));
	while (r > 0 || (r < 0 && errno == EINTR));
	r = r < 0 && errno != ESRCH ? -errno : 0;
	close(fd);
	return (int)r;
}

/* A fork, vfork or clone of pid: the child's links, then the child may run. */
static int on_new(struct tracer *tr, pid_t pid, bool process)
{
	unsigned long msg;
	struct tracee *t;
	int err;

	if (ptrace(PTRACE_GETEVENTMSG, pid, 0, &msg) < 0)
		return errno == ESRCH ? 0 : -errno;
	t = tracee_get(tr, (pid_t)msg);
	if (!t)
		return -ENOMEM;
	t->announced = true;
	t->process = process;
	err = link_process(tr, t);
	if (err || !t->held)
		return err;
	t->held = false;
	return resume(t->pid, 0);
}

/* A start stop (held until its creator's report) or a group-stop (the tree has none). */
static int on_event_stop(struct tracer *tr, pid_t pid)
{
	struct tracee *t = tracee_get(tr, pid);

	if (!t)
		return -ENOMEM;
	if (!t->started) {
		t->started = true;
		if (!t->announced) {
			t->held = true;
			return 0;
		}
	}
	return resume(pid, 0);
}

static int on_stop(struct tracer *tr, pid_t pid, int status)
{
	struct tracee *t;
	int err = 0;

	switch (status >> 16) {
	case PTRACE_EVENT_FORK:
	case PTRACE_EVENT_VFORK:
		err = on_new(tr, pid, true);
		break;
	case PTRACE_EVENT_CLONE: /* taken for a thread: the tree has none */
		err = on_new(tr, pid, false);
		break;
	case PTRACE_EVENT_EXEC:
		if (tr->parts & PART_MAPS)
			err = read_proc(pid, "maps");
		t = tracee_find(tr, pid);
		if (!err && t && pid == tr->root)
			err = link_process(tr, t);
		break;
	case PTRACE_EVENT_EXIT:
		if (tr->parts & PART_STATUS)
			err = read_proc(pid, "status");
		break;
	case PTRACE_EVENT_STOP:
		return on_event_stop(tr, pid);
	default: /* a signal, delivered as it would be untraced */
		return resume(pid, WSTOPSIG(status));
	}
	return err ? err : resume(pid, 0);
}

static int on_gone(struct tracer *tr, pid_t pid, int status)
{
	struct tracee *t = tracee_find(tr, pid);
	int err;

	if (pid == tr->root) {
		tr->root_gone = true;
		tr->root_status = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
	}
	if (!t)
		return 0;
	err = unlink_process(tr, t);
	*t = tr->t[--tr->n];
	return err;
}

/*
 * Children held for a creator's report that will never come (the creator was killed at its
 * fork): when nothing else is left to report, they go on without links, or the wait would hang.
 */
static int release_orphans(struct tracer *tr)
{
	size_t held = 0;
	int err = 0;

	for (size_t i = 0; i < tr->n; i++)
		held += tr->t[i].held;
	if (!held || held < tr->n)
		return 0;
	for (size_t i = 0; !err && i < tr->n; i++) {
		tr->t[i].announced = true;
		tr->t[i].held = false;
		err = resume(tr->t[i].pid, 0);
	}
	return err;
}

static int trace(struct tracer *tr)
{
	int status, err = 0;
	pid_t pid;

	while (!err && !(tr->root_gone && tr->n == 0)) {
		err = release_orphans(tr);
		if (err)
			break;
		pid = waitpid(-1, &status, __WALL);
		if (pid < 0) {
			err = errno == EINTR ? 0 : -errno;
			continue;
		}
		if (WIFSTOPPED(status))
			err = on_stop(tr, pid, status);
		else
			err = on_gone(tr, pid, status);
	}
	/* links-held: the tree has ended, its links go to the closer now. */
	for (size_t i = 0; !err && i < tr->n_held; i += 2)
		err = closer_hand(tr->closer, tr->held + i, tr->n_held - i < 2 ? 1 : 2);
	if (err)
		fprintf(stderr, "procfloor: tracing: %s\n", strerror(-err));
	return err;
}

/* The command, seized before its exec: its exec is its first stop. */
static int spawn(struct tracer *tr, char **argv)
{
	int go[2];
	pid_t pid;
	char byte;

	if (pipe2(go, O_CLOEXEC))
		return -errno;
	pid = fork();
	if (pid < 0)
		return -errno;
	if (pid == 0) {
		close(go[1]);
		while (read(go[0], &byte, 1) < 0 && errno == EINTR)
			;
		execvp(argv[0], argv);
		fprintf(stderr, "procfloor: cannot run %s: %s\n", argv[0], strerror(errno));
		_exit(127);
	}
	close(go[0]);
	if (ptrace(PTRACE_SEIZE, pid, 0, (void *)(long)TRACE_OPTIONS) < 0) {
		int err = -errno;

		kill(pid, SIGKILL);
		waitpid(pid, NULL, 0);
		close(go[1]);
		fprintf(stderr, "procfloor: cannot seize %s: %s\n", argv[0], strerror(-err));
		return err;
	}
	tr->root = pid;
	close(go[1]);
	if (!tracee_get(tr, pid))
		return -ENOMEM;
	tr->t[0].announced = tr->t[0].started = tr->t[0].process = true;
	return 0;
}

static int usage(void)
{
	fprintf(stderr, "usage: procfloor [-v] stops|maps|status|links|links-inline|links-held|all "
			"LIB -- CMD [ARGS...]\n");
	return 2;
}

int main(int argc, char **argv)
{
	struct tracer tr = {.closer = -1};
	bool verbose = argc > 1 && !strcmp(argv[1], "-v");
	size_t m;
	int err = 0;

	argc -= verbose;
	argv += verbose;
	if (argc < 5 || strcmp(argv[3], "--"))
		return usage();
	for (m = 0; m < sizeof(modes) / sizeof(modes[0]) && strcmp(modes[m].name, argv[1]); m++)
		;
	if (m == sizeof(modes) / sizeof(modes[0]))
		return usage();
	tr.parts = modes[m].parts;
	tr.lib = argv[2];
	if (tr.parts & PART_LINKS)
		err = links_open(&tr);
	if (!err)
		err = spawn(&tr, argv + 4);
	if (!err)
		err = trace(&tr);
	if (!err && verbose && (tr.parts & PART_LINKS))
		fprintf(
		    stderr,
		    "procfloor: %zu links made in %.1f ms; %zu of them took over 1 ms, %.1f ms in "
		    "all\n",
		    tr.links, tr.link_ns / 1e6, tr.slow, tr.slow_ns / 1e6);
	/* What is left open goes with this process's exit; the closer's end sees EOF. */
	return err ? 1 : tr.root_status;
}
