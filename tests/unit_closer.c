// SPDX-License-Identifier: GPL-2.0
/*
 * The closer process (src/tracker/tracker_closer.c): it must hold what it is sent until memtrack
 * has let go of its own copies, so that its close, never memtrack's, is the last reference (the
 * one that waits for a link's grace periods). A pipe's write end stands for a link: its reader
 * sees the end of the pipe exactly when the last copy is closed.
 */
#include <check.h>
#include <errno.h>
#include <fcntl.h>
#include <linux/perf_event.h>
#include <linux/sockios.h>
#include <netinet/in.h>
#include <poll.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>

#include <bpf/bpf.h>

#include "base/clock.h"
#include "lib/suite.h"
#include "tracker/tracker_int.h"

/* Whether fd's pipe has ended (every write end closed) within ms milliseconds. */
static bool pipe_ends_within(int fd, int ms)
{
	struct pollfd p = {.fd = fd, .events = POLLIN};

	return poll(&p, 1, ms) == 1 && (p.revents & POLLHUP);
}

/* The closer, forked twice, is this process's child as the subreaper: reap it. */
static void reap_closer(void)
{
	int status;

	ck_assert_int_gt(waitpid(-1, &status, 0), 0);
	ck_assert(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

static void start(struct mt_tracker *t)
{
	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	t->closer_fd = -1;
	ck_assert_int_eq(tracker_closer_start(t), 0);
	ck_assert_int_ge(t->closer_fd, 0);
	tracker_closer_reap(t);
}

/*
 * The closer's forking process exits at once but is reaped later, by tracker_closer_reap: then
 * the only child left is the closer, which ends once memtrack's end is closed.
 */
START_TEST(forking_process_reaped)
{
	struct mt_tracker t = {0};
	int status;
	pid_t mid;

	ck_assert_int_eq(prctl(PR_SET_CHILD_SUBREAPER, 1), 0);
	t.closer_fd = -1;
	ck_assert_int_eq(tracker_closer_start(&t), 0);
	mid = t.closer_mid;
	ck_assert_int_gt(mid, 0);
	tracker_closer_reap(&t);
	ck_assert_int_eq(t.closer_mid, 0);
	ck_assert_int_eq(waitpid(mid, &status, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
	tracker_closer_stop(&t);
	reap_closer();
	ck_assert_int_eq(waitpid(-1, &status, WNOHANG), -1);
	ck_assert_int_eq(errno, ECHILD);
}
END_TEST

/* Sent and dropped here, the end stays open until the release, then the closer closes it. */
START_TEST(held_until_released)
{
	struct mt_tracker t = {0};
	int p[2];

	start(&t);
	ck_assert_int_eq(pipe(p), 0);
	tracker_closer_send(&t, &(struct detach){.fd = p[1]}, 1);
	/* Our copy is gone (a second close fails): the closer's is the only one left. */
	ck_assert_int_eq(close(p[1]), -1);
	ck_assert_msg(!pipe_ends_within(p[0], 300),
		      "the closer closed what it was sent before memtrack released it");
	tracker_closer_release(&t);
	ck_assert_msg(pipe_ends_within(p[0], 10000), "the closer kept what was released");
	tracker_closer_stop(&t);
	reap_closer();
	close(p[0]);
}
END_TEST

/* What was sent after the last release waits for the next one, or for the socket's end. */
START_TEST(unreleased_closed_at_the_end)
{
	struct mt_tracker t = {0};
	int a[2], b[2];

	start(&t);
	ck_assert_int_eq(pipe(a), 0);
	ck_assert_int_eq(pipe(b), 0);
	tracker_close_links(&t, &(struct detach){.fd = a[1]}, 1);
	tracker_closer_send(&t, &(struct detach){.fd = b[1]}, 1);
	ck_assert(pipe_ends_within(a[0], 10000));
	ck_assert(!pipe_ends_within(b[0], 300));
	tracker_closer_stop(&t);
	ck_assert_msg(pipe_ends_within(b[0], 10000), "the closer kept a file after memtrack's end");
	reap_closer();
	close(a[0]);
	close(b[0]);
}
END_TEST

/* A link of a program that does nothing to the perf event of the tracepoint sys_enter_getppid. */
static int perf_link(void)
{
	const struct bpf_insn ret0[] = {
	    {.code = BPF_ALU64 | BPF_MOV | BPF_K, .dst_reg = BPF_REG_0},
	    {.code = BPF_JMP | BPF_EXIT},
	};
	struct perf_event_attr attr = {.type = PERF_TYPE_TRACEPOINT, .size = sizeof(attr)};
	char id[32] = "";
	int prog, perf, link;
	FILE *f = fopen("/sys/kernel/tracing/events/syscalls/sys_enter_getppid/id", "r");

	if (!f)
		f = fopen("/sys/kernel/debug/tracing/events/syscalls/sys_enter_getppid/id", "r");
	ck_assert_ptr_nonnull(f);
	ck_assert_ptr_nonnull(fgets(id, sizeof(id), f));
	fclose(f);
	attr.config = strtoull(id, NULL, 10);
	attr.sample_period = 1;
	prog = bpf_prog_load(BPF_PROG_TYPE_TRACEPOINT, NULL, "GPL", ret0, 2, NULL);
	ck_assert_int_ge(prog, 0);
	perf = (int)syscall(__NR_perf_event_open, &attr, -1, 0, -1, PERF_FLAG_FD_CLOEXEC);
	ck_assert_int_ge(perf, 0);
	link = bpf_link_create(prog, perf, BPF_PERF_EVENT, NULL);
	ck_assert_int_ge(link, 0);
	close(perf);
	close(prog);
	return link;
}

/* Whether the link of that id is still attached (our probe's reference is dropped at once). */
static bool link_alive(__u32 id)
{
	int fd = bpf_link_get_fd_by_id(id);

	if (fd >= 0)
		close(fd);
	return fd >= 0;
}

/*
 * At memtrack's end the closer detaches a perf event link a moment after the rest: the last
 * perf event of a tracepoint is released holding the kernel's event_mutex across grace periods,
 * which the next memtrack's perf_event_open would wait for.
 */
START_TEST(perf_links_detached_last)
{
	struct mt_tracker t = {0};
	struct bpf_link_info info = {0};
	__u32 len = sizeof(info);
	int p[2], link = perf_link(), i;

	ck_assert_int_eq(bpf_obj_get_info_by_fd(link, &info, &len), 0);
	ck_assert_int_eq(pipe(p), 0);
	start(&t);
	tracker_closer_send(&t, (struct detach[]){{.fd = link}, {.fd = p[1]}}, 2);
	tracker_closer_stop(&t);
	ck_assert_msg(pipe_ends_within(p[0], 10000), "the closer kept a file after memtrack's end");
	ck_assert_msg(link_alive(info.id), "the perf link was detached with the other files");
	for (i = 0; i < 1000 && link_alive(info.id); i++)
		usleep(10000);
	ck_assert_msg(i < 1000, "the closer never detached the perf link");
	reap_closer();
	close(p[0]);
}
END_TEST

/*
 * A TCP connection's end whose close blocks for about 2 s, as a detach waits for grace periods:
 * SO_LINGER, with data the peer (never accepted, never read) cannot take. *listener: the
 * listening socket, to be closed after.
 */
static int slow_to_close(int *listener)
{
	struct sockaddr_in a = {.sin_family = AF_INET, .sin_addr.s_addr = htonl(INADDR_LOOPBACK)};
	struct linger l = {.l_onoff = 1, .l_linger = 2};
	socklen_t len = sizeof(a);
	char block[4096] = {0};
	int c;

	*listener = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_ge(*listener, 0);
	ck_assert_int_eq(bind(*listener, (struct sockaddr *)&a, sizeof(a)), 0);
	ck_assert_int_eq(listen(*listener, 1), 0);
	ck_assert_int_eq(getsockname(*listener, (struct sockaddr *)&a, &len), 0);
	c = socket(AF_INET, SOCK_STREAM | SOCK_CLOEXEC, 0);
	ck_assert_int_eq(connect(c, (struct sockaddr *)&a, sizeof(a)), 0);
	fcntl(c, F_SETFL, O_NONBLOCK);
	while (write(c, block, sizeof(block)) > 0)
		;
	ck_assert_int_eq(setsockopt(c, SOL_SOCKET, SO_LINGER, &l, sizeof(l)), 0);
	return c;
}

static int local_port(int sock)
{
	struct sockaddr_in a;
	socklen_t len = sizeof(a);

	ck_assert_int_eq(getsockname(sock, (struct sockaddr *)&a, &len), 0);
	return ntohs(a.sin_port);
}

/*
 * Whether the connection from local port `port` is being closed within ms milliseconds: its
 * last close began, so it is in FIN_WAIT1 (state 04 in /proc/net/tcp) while the lingering close
 * waits for the peer.
 */
static bool closing_within(int port, int ms)
{
	char want[32], line[256];

	snprintf(want, sizeof(want), "0100007F:%04X", port);
	for (int i = 0; i <= ms; i++) {
		FILE *f = fopen("/proc/net/tcp", "r");
		bool closing = false;

		while (f && !closing && fgets(line, sizeof(line), f)) {
			char local[32], remote[32];
			unsigned st;

			closing = sscanf(line, " %*d: %31s %31s %x", local, remote, &st) == 3 &&
				  !strcmp(local, want) && st == 0x04;
		}
		if (f)
			fclose(f);
		if (closing)
			return true;
		usleep(1000);
	}
	return false;
}

/* Whether everything sent on sock was read within ms milliseconds (its queue empty). */
static bool queue_drained_within(int sock, int ms)
{
	int queued = -1;

	for (int i = 0; i <= ms; i++) {
		if (ioctl(sock, SIOCOUTQ, &queued) == 0 && queued == 0)
			return true;
		usleep(1000);
	}
	return false;
}

/*
 * The closer reads on while it detaches: runs that end every millisecond or so (an exec-harness
 * plan) must not fill its socket while a batch waits, or memtrack detaches on its stop path.
 * Whatever the socket's buffer holds, what is sent behind a slow detach is read before it ends.
 */
START_TEST(reads_while_it_detaches)
{
	struct mt_tracker t = {0};
	int listener, slow, p[2], port;
	uint64_t released;
	size_t here = 0;

	start(&t);
	slow = slow_to_close(&listener);
	port = local_port(slow);
	tracker_close_links(&t, &(struct detach){.fd = slow}, 1);
	released = mt_clock_now_ns();
	ck_assert_msg(closing_within(port, 10000), "the closer never began the slow close");
	for (int i = 0; i < 2000; i++) {
		here +=
		    tracker_closer_send(&t, &(struct detach){.fd = open("/dev/null", O_RDONLY)}, 1);
		tracker_closer_release(&t);
	}
	ck_assert_int_eq(pipe(p), 0);
	here += tracker_closer_send(&t, &(struct detach){.fd = p[1]}, 1);
	tracker_closer_release(&t);
	ck_assert_msg(here == 0, "%zu of 2001 detached by memtrack: the closer stopped reading",
		      here);
	ck_assert_msg(queue_drained_within(t.closer_fd, 500),
		      "the closer left its socket unread while it detached");
	ck_assert_msg(mt_clock_now_ns() - released < 1500000000u,
		      "the slow close ended too soon to tell: the host is too slow for this test");
	ck_assert_msg(pipe_ends_within(p[0], 10000), "the closer kept what was released");
	tracker_closer_stop(&t);
	reap_closer();
	close(p[0]);
	close(listener);
}
END_TEST

/* Without a closer, sending detaches at once, here. */
START_TEST(no_closer_detaches_here)
{
	struct mt_tracker t = {.closer_fd = -1};
	int p[2];

	ck_assert_int_eq(pipe(p), 0);
	tracker_close_links(&t, &(struct detach){.fd = p[1]}, 1);
	ck_assert(pipe_ends_within(p[0], 0));
	close(p[0]);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("closer");
	TCase *tc = tcase_create("closer");

	tcase_set_timeout(tc, 60);
	tcase_add_test(tc, forking_process_reaped);
	tcase_add_test(tc, held_until_released);
	tcase_add_test(tc, unreleased_closed_at_the_end);
	tcase_add_test(tc, no_closer_detaches_here);
	tcase_add_test(tc, perf_links_detached_last);
	tcase_add_test(tc, reads_while_it_detaches);
	suite_add_tcase(s, tc);
	return mt_run_suite(s);
}
