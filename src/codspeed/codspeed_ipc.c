// SPDX-License-Identifier: GPL-2.0
/*
 * ipc-channel 0.20's Linux transport (src/platform/unix/mod.rs and src/ipc.rs of servo/ipc-channel
 * at v0.20.2, read for its wire format), the tracker's side, and CodSpeed's commands over it
 * (crates/memtrack/src/ipc.rs of CodSpeedHQ/codspeed 5.0.2):
 *
 * - a channel is a socketpair(AF_UNIX, SOCK_SEQPACKET); a one-shot server is a SOCK_SEQPACKET
 *   socket bound to a path (its name) that accepts one connection and reads one message;
 * - a message is one packet: a native usize (8 bytes, little-endian here) giving the payload's
 *   length, then the bincode-1 payload (fixed-width little-endian integers, an enum's variant as
 *   a u32); channels inside it are serialized as a u64 index into the descriptors the packet
 *   carries as SCM_RIGHTS. A payload larger than a packet is fragmented over a further channel:
 *   CodSpeed's messages (at most 12 bytes) never are;
 * - the runner serves IpcOneShotServer<IpcSender<IpcMessage>>: the tracker sends one
 *   IpcSender<IpcMessage> (payload: index 0, descriptor: the sending end of its channel), then
 *   reads IpcMessage {command: IpcCommand (Enable 0, Disable 1, Ping 2), response_channel:
 *   IpcSender<IpcResponse>} (payload: u32 variant, u64 index 0; descriptor: the response channel)
 *   and answers IpcResponse (Ack 0, Err 1) on that channel. The runner closes its sender when the
 *   run is over; the tracker's receiving end then reads end of file.
 */
#include <errno.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include "base/clock.h"
#include "codspeed/codspeed_ipc.h"

#define MAX_FDS	     64 /* MAX_FDS_IN_CMSG: what a receiver makes room for */
#define MAX_PAYLOAD  4096
#define MAX_WINDOWS  4096
#define CMD_ENABLE   0u
#define CMD_DISABLE  1u
#define CMD_PING     2u
#define RESPONSE_ACK 0u
#define RESPONSE_ERR 1u

struct mt_codspeed_ipc {
	int rx; /* the receiving end of the channel whose sending end the runner holds */
	pthread_t thread;
	bool started;
	pthread_mutex_t lock; /* windows: the serving thread records, the run's end reads */
	bool open;
	size_t n;
	struct mt_codspeed_window windows[MAX_WINDOWS];
};

/* One packet: the usize length, the payload, and the descriptors it carries. */
static int send_packet(int fd, const void *payload, uint64_t len, const int *fds, size_t n_fds)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
	} ctl;
	struct iovec iov[2] = {{&len, sizeof(len)}, {(void *)payload, len}};
	struct msghdr msg = {.msg_iov = iov, .msg_iovlen = 2};

	memset(&ctl, 0, sizeof(ctl));
	if (n_fds) {
		msg.msg_control = ctl.buf;
		msg.msg_controllen = CMSG_SPACE(sizeof(int) * n_fds);
		ctl.h.cmsg_level = SOL_SOCKET;
		ctl.h.cmsg_type = SCM_RIGHTS;
		ctl.h.cmsg_len = CMSG_LEN(sizeof(int) * n_fds);
		memcpy(CMSG_DATA(&ctl.h), fds, sizeof(int) * n_fds);
	}
	/*
	 * Never a wait for room: a runner that reads no more would hold the serving thread, and
	 * with it the end of the run (mt_codspeed_ipc_stop joins it), for ever.
	 */
	return sendmsg(fd, &msg, MSG_NOSIGNAL | MSG_DONTWAIT) < 0 ? -errno : 0;
}

static void put_le(uint8_t *p, uint64_t v, size_t n)
{
	for (size_t i = 0; i < n; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static uint64_t get_le(const uint8_t *p, size_t n)
{
	uint64_t v = 0;

	for (size_t i = 0; i < n; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

static int connect_server(const char *name)
{
	struct sockaddr_un sa = {.sun_family = AF_UNIX};
	int fd;

	if (strlen(name) >= sizeof(sa.sun_path))
		return -ENAMETOOLONG;
	memcpy(sa.sun_path, name, strlen(name));
	/* Non-blocking: a server whose backlog is full (it accepts no one) fails the connect. */
	fd = socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC | SOCK_NONBLOCK, 0);
	if (fd < 0)
		return -errno;
	if (connect(fd, (struct sockaddr *)&sa, sizeof(sa)) < 0) {
		int err = -errno;

		close(fd);
		return err;
	}
	return fd;
}

int mt_codspeed_ipc_connect(struct mt_codspeed_ipc **out, const char *name)
{
	struct mt_codspeed_ipc *ipc;
	uint8_t index[8];
	int sv[2], conn, err;

	conn = connect_server(name);
	if (conn < 0) {
		fprintf(stderr, "memtrack: cannot connect to the runner's IPC server '%s': %s\n",
			name, strerror(-conn));
		return conn;
	}
	if (socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, sv) < 0) {
		err = -errno;
		close(conn);
		fprintf(stderr, "memtrack: cannot make the IPC channel: %s\n", strerror(-err));
		return err;
	}
	/* IpcSender<IpcMessage>: channel index 0, the sending end as its descriptor. */
	put_le(index, 0, sizeof(index));
	err = send_packet(conn, index, sizeof(index), &sv[0], 1);
	close(sv[0]);
	close(conn);
	ipc = err ? NULL : calloc(1, sizeof(*ipc));
	if (!ipc) {
		err = err ? err : -ENOMEM;
		close(sv[1]);
		fprintf(stderr, "memtrack: cannot send the IPC channel to '%s': %s\n", name,
			strerror(-err));
		return err;
	}
	ipc->rx = sv[1];
	pthread_mutex_init(&ipc->lock, NULL);
	*out = ipc;
	return 0;
}

/* Enable opens a window (once: enabling twice changes nothing), Disable closes it. */
static void gate(struct mt_codspeed_ipc *ipc, uint32_t cmd)
{
	uint64_t now = mt_clock_now_ns();

	pthread_mutex_lock(&ipc->lock);
	if (cmd == CMD_ENABLE && !ipc->open && ipc->n < MAX_WINDOWS) {
		ipc->windows[ipc->n++] = (struct mt_codspeed_window){now, UINT64_MAX};
		ipc->open = true;
	} else if (cmd == CMD_DISABLE && ipc->open) {
		ipc->windows[ipc->n - 1].end_ns = now;
		ipc->open = false;
	}
	pthread_mutex_unlock(&ipc->lock);
}

/* The response channel of an IpcMessage (payload: u32 command, u64 channel index), or -1. */
static int response_channel(const uint8_t *p, size_t len, const int *fds, size_t n_fds,
			    uint32_t *cmd)
{
	uint64_t index;

	if (len < 12)
		return -1;
	*cmd = (uint32_t)get_le(p, 4);
	index = get_le(p + 4, 8);
	return index < n_fds ? fds[index] : -1;
}

/* One message: 1 when answered (or passed over), 0 at the runner's end, a negative errno. */
static int serve_one(struct mt_codspeed_ipc *ipc)
{
	union {
		struct cmsghdr h;
		char buf[CMSG_SPACE(sizeof(int) * MAX_FDS)];
	} ctl;
	uint8_t payload[MAX_PAYLOAD], answer[4];
	uint64_t len = 0;
	struct iovec iov[2] = {{&len, sizeof(len)}, {payload, sizeof(payload)}};
	struct msghdr msg = {
	    .msg_iov = iov, .msg_iovlen = 2, .msg_control = ctl.buf, .msg_controllen = sizeof(ctl)};
	int fds[MAX_FDS], resp = -1;
	size_t n_fds = 0;
	uint32_t cmd = UINT32_MAX;
	ssize_t n;

	n = recvmsg(ipc->rx, &msg, MSG_CMSG_CLOEXEC);
	if (n < 0)
		return errno == EINTR ? 1 : -errno;
	if (n == 0)
		return 0;
	for (struct cmsghdr *c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
		if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS)
			for (size_t i = 0;
			     i < (c->cmsg_len - CMSG_LEN(0)) / sizeof(int) && n_fds < MAX_FDS; i++)
				memcpy(&fds[n_fds++], CMSG_DATA(c) + i * sizeof(int), sizeof(int));
	/* A fragmented or cut message is no command of CodSpeed's: passed over. */
	if ((size_t)n >= sizeof(len) && len == (uint64_t)n - sizeof(len))
		resp = response_channel(payload, len, fds, n_fds, &cmd);
	if (resp >= 0) {
		if (cmd <= CMD_PING)
			gate(ipc, cmd);
		put_le(answer, cmd <= CMD_PING ? RESPONSE_ACK : RESPONSE_ERR, sizeof(answer));
		/* A runner that stopped listening for the answer is not the tracker's failure. */
		send_packet(resp, answer, sizeof(answer), NULL, 0);
	}
	for (size_t i = 0; i < n_fds; i++)
		close(fds[i]);
	return 1;
}

static void *serve(void *arg)
{
	struct mt_codspeed_ipc *ipc = arg;
	int ret;

	while ((ret = serve_one(ipc)) > 0)
		;
	if (ret < 0)
		fprintf(stderr, "memtrack: the runner's IPC channel failed: %s\n", strerror(-ret));
	return NULL;
}

int mt_codspeed_ipc_start(struct mt_codspeed_ipc *ipc)
{
	int err = -pthread_create(&ipc->thread, NULL, serve, ipc);

	ipc->started = !err;
	if (err)
		fprintf(stderr, "memtrack: cannot serve the runner's IPC: %s\n", strerror(-err));
	return err;
}

const struct mt_codspeed_window *mt_codspeed_ipc_stop(struct mt_codspeed_ipc *ipc, uint64_t end_ns,
						      size_t *n)
{
	/* The serving thread reads end of file, as at the runner's end. */
	shutdown(ipc->rx, SHUT_RDWR);
	if (ipc->started)
		pthread_join(ipc->thread, NULL);
	ipc->started = false;
	if (ipc->open)
		ipc->windows[ipc->n - 1].end_ns = end_ns;
	ipc->open = false;
	*n = ipc->n;
	return ipc->windows;
}

void mt_codspeed_ipc_free(struct mt_codspeed_ipc *ipc)
{
	if (!ipc)
		return;
	close(ipc->rx);
	pthread_mutex_destroy(&ipc->lock);
	free(ipc);
}
