// SPDX-License-Identifier: GPL-2.0
/*
 * The tracker's side of CodSpeed's runner IPC (src/codspeed/codspeed_ipc.c) against a runner of
 * the test's own: one that sends commands and never reads the answers.
 */
#include <check.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include "lib/mtrun.h"
#include "lib/suite.h"
#include "codspeed/codspeed_ipc.h"

#define PINGS 100

/* The runner's one-shot server at path: a listening SOCK_SEQPACKET socket. */
static int serve_at(const char *path)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);

	ck_assert_int_ge(fd, 0);
	ck_assert_uint_lt(strlen(path), sizeof(sa.sun_path));
	memcpy(sa.sun_path, path, strlen(path));
	ck_assert_int_eq(bind(fd, (struct sockaddr *)&sa, sizeof(sa)), 0);
	ck_assert_int_eq(listen(fd, 1), 0);
	return fd;
}

/* The descriptor a packet carries (the channel the tracker sends), or -1. */
static int received_fd(int fd)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	uint8_t payload[64];
	struct iovec iov = {payload, sizeof(payload)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl)};
	struct cmsghdr *c;
	int got = -1;

	if (recvmsg(fd, &msg, MSG_CMSG_CLOEXEC) <= 0)
		return -1;
	c = CMSG_FIRSTHDR(&msg);
	if (c && c->cmsg_type == SCM_RIGHTS)
		memcpy(&got, CMSG_DATA(c), sizeof(got));
	return got;
}

/* A Ping (IpcMessage {command 2, response channel 0}) with resp as its channel. */
static void send_ping(int fd, int resp)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int))];
	} ctl;
	uint8_t packet[8 + 12] = {12, 0, 0, 0, 0, 0, 0, 0, 2};
	struct iovec iov = {packet, sizeof(packet)};
	struct msghdr msg = {.msg_iov = &iov,
			     .msg_iovlen = 1,
			     .msg_control = ctl.buf,
			     .msg_controllen = sizeof(ctl)};

	memset(&ctl, 0, sizeof(ctl));
	ctl.h.cmsg_level = SOL_SOCKET;
	ctl.h.cmsg_type = SCM_RIGHTS;
	ctl.h.cmsg_len = CMSG_LEN(sizeof(int));
	memcpy(CMSG_DATA(&ctl.h), &resp, sizeof(resp));
	ck_assert_int_eq(sendmsg(fd, &msg, 0), (ssize_t)sizeof(packet));
}

static void *stop_ipc(void *ipc)
{
	size_t n;

	mt_codspeed_ipc_stop(ipc, 0, &n);
	return NULL;
}

/*
 * A runner that sends Pings and never reads the answers, whose channel for them has little room:
 * the answers that do not fit are dropped, and the end of the run (the serving thread joined)
 * comes at once. Before, the serving thread waited for room for ever, and so did the join.
 */
START_TEST(unread_answers_do_not_hold_the_end)
{
	const struct timespec bound = {.tv_sec = time(NULL) + 10};
	struct mt_codspeed_ipc *ipc;
	char dir[64], path[128];
	int server, conn, channel, resp[2], small = 1;
	pthread_t stopper;

	mt_tmpdir(dir);
	snprintf(path, sizeof(path), "%s/runner", dir);
	server = serve_at(path);
	ck_assert_int_eq(mt_codspeed_ipc_connect(&ipc, path), 0);
	conn = accept(server, NULL, NULL);
	ck_assert_int_ge(conn, 0);
	channel = received_fd(conn);
	ck_assert_int_ge(channel, 0);
	ck_assert_int_eq(mt_codspeed_ipc_start(ipc), 0);
	ck_assert_int_eq(socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, resp), 0);
	/* The smallest send buffer the kernel allows: a few answers fill it. */
	ck_assert_int_eq(setsockopt(resp[0], SOL_SOCKET, SO_SNDBUF, &small, sizeof(small)), 0);
	for (int i = 0; i < PINGS; i++)
		send_ping(channel, resp[0]);
	close(channel);
	ck_assert_int_eq(pthread_create(&stopper, NULL, stop_ipc, ipc), 0);
	ck_assert_msg(pthread_timedjoin_np(stopper, NULL, &bound) == 0,
		      "the IPC's serving thread waits for the runner to read its answers");
	mt_codspeed_ipc_free(ipc);
	close(resp[0]);
	close(resp[1]);
	close(conn);
	close(server);
	unlink(path);
	rmdir(dir);
}
END_TEST

int main(void)
{
	Suite *s = suite_create("codspeed_ipc");
	TCase *tc = tcase_create("ipc");

	tcase_set_timeout(tc, 30);
	tcase_add_test(tc, unread_answers_do_not_hold_the_end);
	suite_add_tcase(s, tc);
	return mt_run_suite(s);
}
