// SPDX-License-Identifier: GPL-2.0
/*
 * The runner FIFO's client (harness_fifo.h). bincode 1 with its default options, which the
 * runner's bincode::serialize and instrument-hooks' serializer both use: an enum is its variant
 * index as a u32, a String a u64 length and its bytes, integers fixed-width, all little-endian.
 *
 * Where instrument-hooks opens both FIFOs read-write (a client that never sees its runner go
 * away, only a one-second silence), the control FIFO is opened here write-only and the answer
 * FIFO read-only: a FIFO with no reader is then told from a runner (ENXIO at the open), a runner
 * that exits or closes its FIFO is a write error or a hang-up at once, and every wait still has
 * a deadline. The frames on the wire are the same.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <stdbool.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/utf8.h"
#include "harness/harness_fifo.h"
#include "harness/harness_prog.h"

/* An answer is Ack, Err or a mode: a few bytes. Anything longer is not a runner's answer. */
#define MAX_ANSWER 64

static const char *const cmd_names[MT_FIFO_N_CMDS] = {
    [MT_FIFO_CURRENT_BENCHMARK] = "CurrentBenchmark",
    [MT_FIFO_START_PROFILER] = "StartProfiler",
    [MT_FIFO_STOP_PROFILER] = "StopProfiler",
    [MT_FIFO_ACK] = "Ack",
    [MT_FIFO_PING_PROFILER] = "PingProfiler",
    [MT_FIFO_SET_INTEGRATION] = "SetIntegration",
    [MT_FIFO_ERR] = "Err",
    [MT_FIFO_ADD_MARKER] = "AddMarker",
    [MT_FIFO_SET_VERSION] = "SetVersion",
    [MT_FIFO_GET_INTEGRATION_MODE] = "GetIntegrationMode",
    [MT_FIFO_INTEGRATION_MODE_RESPONSE] = "IntegrationModeResponse",
};

static const char *const mode_names[MT_FIFO_N_MODES] = {
    [MT_FIFO_MODE_WALLTIME] = "Walltime",
    [MT_FIFO_MODE_SIMULATION] = "Simulation",
    [MT_FIFO_MODE_ANALYSIS] = "Analysis",
};

const char *mt_fifo_mode_name(enum mt_fifo_mode mode)
{
	return (unsigned int)mode < MT_FIFO_N_MODES ? mode_names[mode] : "?";
}

/* ---- bincode ------------------------------------------------------------------------------ */

struct enc {
	uint8_t *buf;
	size_t cap, len;
	bool overflow;
};

static void put_le(struct enc *e, uint64_t v, size_t width)
{
	size_t i;

	if (e->len + width > e->cap) {
		e->overflow = true;
		return;
	}
	for (i = 0; i < width; i++)
		e->buf[e->len++] = (uint8_t)(v >> (8 * i));
}

static void put_str(struct enc *e, const char *s)
{
	size_t n = strlen(s);

	put_le(e, n, 8);
	if (e->len + n > e->cap) {
		e->overflow = true;
		return;
	}
	memcpy(e->buf + e->len, s, n);
	e->len += n;
}

ssize_t mt_fifo_encode(const struct mt_fifo_msg *m, uint8_t *buf, size_t cap)
{
	struct enc e = {.buf = buf, .cap = cap, .len = 4};
	size_t payload;

	if (cap < 4)
		return -ENOSPC;
	put_le(&e, m->cmd, 4);
	switch (m->cmd) {
	case MT_FIFO_CURRENT_BENCHMARK:
		put_le(&e, (uint32_t)m->pid, 4);
		put_str(&e, m->str);
		break;
	case MT_FIFO_SET_INTEGRATION:
		put_str(&e, m->str);
		put_str(&e, m->str2);
		break;
	case MT_FIFO_ADD_MARKER:
		put_le(&e, (uint32_t)m->pid, 4);
		put_le(&e, m->marker, 4);
		put_le(&e, m->value, 8);
		break;
	case MT_FIFO_SET_VERSION:
		put_le(&e, m->value, 8);
		break;
	case MT_FIFO_INTEGRATION_MODE_RESPONSE:
		put_le(&e, m->mode, 4);
		break;
	case MT_FIFO_START_PROFILER:
	case MT_FIFO_STOP_PROFILER:
	case MT_FIFO_GET_INTEGRATION_MODE:
	case MT_FIFO_ACK:
	case MT_FIFO_ERR:
		break;
	default:
		return -EINVAL;
	}
	if (e.overflow)
		return -ENOSPC;
	payload = e.len - 4;
	e.len = 0;
	put_le(&e, payload, 4);
	return (ssize_t)(payload + 4);
}

static uint64_t get_le(const uint8_t *p, size_t width)
{
	uint64_t v = 0;
	size_t i;

	for (i = 0; i < width; i++)
		v |= (uint64_t)p[i] << (8 * i);
	return v;
}

int mt_fifo_decode_answer(const uint8_t *payload, size_t len, struct mt_fifo_msg *m)
{
	uint64_t v;

	memset(m, 0, sizeof(*m));
	if (len < 4)
		return -EPROTO;
	v = get_le(payload, 4);
	if ((v == MT_FIFO_ACK || v == MT_FIFO_ERR) && len == 4) {
		m->cmd = (enum mt_fifo_cmd)v;
		return 0;
	}
	if (v != MT_FIFO_INTEGRATION_MODE_RESPONSE || len != 8)
		return -EPROTO;
	m->cmd = MT_FIFO_INTEGRATION_MODE_RESPONSE;
	v = get_le(payload + 4, 4);
	if (v >= MT_FIFO_N_MODES)
		return -EPROTO;
	m->mode = (enum mt_fifo_mode)v;
	return 0;
}

/* A bincode reader over one payload: every read checks what is left. */
struct dec {
	const uint8_t *p;
	size_t left;
	char *strs; /* where the strings go, each NUL-terminated */
	size_t cap;
};

static bool take_le(struct dec *d, size_t width, uint64_t *v)
{
	if (d->left < width)
		return false;
	*v = get_le(d->p, width);
	d->p += width;
	d->left -= width;
	return true;
}

/* A bincode String: valid UTF-8 (serde's String) without a NUL (C's strings end there). */
static bool take_str(struct dec *d, const char **out)
{
	uint64_t n;

	if (!take_le(d, 8, &n) || n > d->left || n + 1 > d->cap || memchr(d->p, 0, n) ||
	    !mt_utf8_valid((const char *)d->p, n))
		return false;
	memcpy(d->strs, d->p, n);
	d->strs[n] = '\0';
	*out = d->strs;
	d->strs += n + 1;
	d->cap -= n + 1;
	d->p += n;
	d->left -= n;
	return true;
}

static bool decode_fields(struct dec *d, struct mt_fifo_msg *m)
{
	uint64_t v;

	switch (m->cmd) {
	case MT_FIFO_CURRENT_BENCHMARK:
		if (!take_le(d, 4, &v))
			return false;
		m->pid = (int32_t)(uint32_t)v;
		return take_str(d, &m->str);
	case MT_FIFO_SET_INTEGRATION:
		return take_str(d, &m->str) && take_str(d, &m->str2);
	case MT_FIFO_ADD_MARKER:
		if (!take_le(d, 4, &v))
			return false;
		m->pid = (int32_t)(uint32_t)v;
		if (!take_le(d, 4, &v) || v > MT_MARKER_ROUND_END)
			return false;
		m->marker = (enum mt_fifo_marker)v;
		return take_le(d, 8, &m->value);
	case MT_FIFO_SET_VERSION:
		return take_le(d, 8, &m->value);
	case MT_FIFO_INTEGRATION_MODE_RESPONSE:
		if (!take_le(d, 4, &v) || v >= MT_FIFO_N_MODES)
			return false;
		m->mode = (enum mt_fifo_mode)v;
		return true;
	default:
		return true;
	}
}

int mt_fifo_decode(const uint8_t *payload, size_t len, struct mt_fifo_msg *m, char *strs,
		   size_t cap)
{
	struct dec d = {.p = payload, .left = len, .strs = strs, .cap = cap};
	uint64_t v;

	memset(m, 0, sizeof(*m));
	m->cmd = MT_FIFO_N_CMDS;
	if (!take_le(&d, 4, &v) || v >= MT_FIFO_N_CMDS)
		return -EPROTO;
	m->cmd = (enum mt_fifo_cmd)v;
	/* bincode's deserialize refuses bytes left over, as the runner's does. */
	if (!decode_fields(&d, m) || d.left)
		return -EPROTO;
	return 0;
}

const char *mt_fifo_cmd_name(enum mt_fifo_cmd cmd)
{
	return (unsigned int)cmd < MT_FIFO_N_CMDS ? cmd_names[cmd] : "?";
}

/* ---- The connection ----------------------------------------------------------------------- */

/*
 * A runner's FIFO: its FIFOs are in /tmp, where any user can make them, and exec-harness may run as
 * root. Only a FIFO of root's, memtrack's own user's or the user it serves is the runner's: another
 * user's would read the benchmarks' names and pids and answer for the runner.
 */
static bool runners_fifo(const struct stat *st, uid_t serves)
{
	return S_ISFIFO(st->st_mode) && (st->st_uid == 0 || st->st_uid == getuid() ||
					 st->st_uid == geteuid() || st->st_uid == serves);
}

/* 1: path is the runner's FIFO, 0: there is none, -EPERM: one of another user's, said. */
static int find_fifo(const char *path, uid_t serves)
{
	struct stat st;

	if (lstat(path, &st) || !S_ISFIFO(st.st_mode))
		return 0;
	if (runners_fifo(&st, serves))
		return 1;
	fprintf(stderr,
		MT_HARNESS_PROG
		": %s is a FIFO of uid %u, not the runner's: not opened, no runner\n",
		path, (unsigned)st.st_uid);
	return -EPERM;
}

/* Open the FIFO found, without following a link, and check that what is open is still it. */
static int open_fifo(const char *path, int flags, uid_t serves)
{
	int fd = open(path, flags | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC), e;
	struct stat st;

	if (fd < 0)
		return -errno;
	if (fstat(fd, &st) < 0)
		e = -errno;
	else if (!runners_fifo(&st, serves))
		e = -EPERM; /* replaced since it was looked at */
	else
		return fd;
	close(fd);
	return e;
}

int mt_fifo_connect(struct mt_fifo *f, const char *ctl_path, const char *ack_path, int timeout_ms,
		    uid_t serves)
{
	int e, found;

	f->ctl = f->ack = -1;
	f->timeout_ms = timeout_ms;
	f->mode = MT_FIFO_MODE_WALLTIME;
	/* instrument-hooks too looks for both FIFOs and goes on without a runner when one lacks. */
	found = find_fifo(ctl_path, serves);
	if (found == 1)
		found = find_fifo(ack_path, serves);
	if (found != 1)
		return 0;
	/* A read-only open does not wait for a writer; a write-only one fails with ENXIO when no
	 * process reads: the runner opened both before it started the benchmark command. */
	f->ack = open_fifo(ack_path, O_RDONLY, serves);
	if (f->ack < 0) {
		e = -f->ack;
		f->ack = -1;
		fprintf(stderr, MT_HARNESS_PROG ": cannot open the runner's FIFO %s: %s\n",
			ack_path, strerror(e));
		return -e;
	}
	f->ctl = open_fifo(ctl_path, O_WRONLY, serves);
	if (f->ctl >= 0)
		return 1;
	e = -f->ctl;
	f->ctl = -1;
	mt_fifo_close(f);
	if (e == ENXIO)
		return 0;
	fprintf(stderr, MT_HARNESS_PROG ": cannot open the runner's FIFO %s: %s\n", ctl_path,
		strerror(e));
	return -e;
}

void mt_fifo_close(struct mt_fifo *f)
{
	if (f->ctl >= 0)
		close(f->ctl);
	if (f->ack >= 0)
		close(f->ack);
	f->ctl = f->ack = -1;
}

/* Wait until fd is ready for events before the deadline: 0, -ETIMEDOUT, or -EPIPE (hang-up). */
static int wait_fd(int fd, short events, uint64_t deadline)
{
	struct pollfd p = {.fd = fd, .events = events};
	uint64_t now;
	int n;

	for (;;) {
		now = mt_clock_now_ns();
		if (now >= deadline)
			return -ETIMEDOUT;
		n = poll(&p, 1, (int)((deadline - now + 999999) / 1000000));
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0)
			return -errno;
		if (n == 0)
			continue;
		/* Data still readable after a hang-up is read first. */
		if (p.revents & events)
			return 0;
		return -EPIPE;
	}
}

static int write_all(struct mt_fifo *f, const uint8_t *buf, size_t len, uint64_t deadline)
{
	ssize_t n;
	int ret;

	while (len) {
		n = write(f->ctl, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0 && errno != EAGAIN)
			return -errno;
		/* A full FIFO: the runner reads it or the deadline passes. */
		ret = wait_fd(f->ctl, POLLOUT, deadline);
		if (ret)
			return ret;
	}
	return 0;
}

static int read_all(struct mt_fifo *f, uint8_t *buf, size_t len, uint64_t deadline)
{
	ssize_t n;
	int ret;

	while (len) {
		ret = wait_fd(f->ack, POLLIN, deadline);
		if (ret)
			return ret;
		n = read(f->ack, buf, len);
		if (n > 0) {
			buf += n;
			len -= (size_t)n;
		} else if (n == 0) {
			return -EPIPE; /* every writer closed: the runner is gone */
		} else if (errno != EINTR && errno != EAGAIN) {
			return -errno;
		}
	}
	return 0;
}

static int read_answer(struct mt_fifo *f, struct mt_fifo_msg *answer, uint64_t deadline)
{
	uint8_t buf[MAX_ANSWER];
	uint64_t len;
	int ret;

	ret = read_all(f, buf, 4, deadline);
	if (ret)
		return ret;
	len = get_le(buf, 4);
	if (len > sizeof(buf))
		return -EPROTO;
	ret = read_all(f, buf, (size_t)len, deadline);
	if (ret)
		return ret;
	return mt_fifo_decode_answer(buf, (size_t)len, answer);
}

/* Whether the answer is the one m expects; the mode of GetIntegrationMode is kept. */
static bool answer_fits(struct mt_fifo *f, const struct mt_fifo_msg *m,
			const struct mt_fifo_msg *answer)
{
	if (m->cmd == MT_FIFO_GET_INTEGRATION_MODE) {
		if (answer->cmd != MT_FIFO_INTEGRATION_MODE_RESPONSE)
			return false;
		f->mode = answer->mode;
		return true;
	}
	return answer->cmd == MT_FIFO_ACK;
}

static void say_failure(const struct mt_fifo *f, const struct mt_fifo_msg *m,
			const struct mt_fifo_msg *answer, int err)
{
	const char *what = mt_fifo_cmd_name(m->cmd);

	if (err == -ETIMEDOUT)
		fprintf(stderr, MT_HARNESS_PROG ": the runner did not answer %s within %d ms\n",
			what, f->timeout_ms);
	else if (err == -EPIPE)
		fprintf(stderr,
			MT_HARNESS_PROG ": the runner closed its FIFO before answering %s\n", what);
	else if (err == -EPROTO && answer->cmd == MT_FIFO_ERR)
		fprintf(stderr, MT_HARNESS_PROG ": the runner answered Err to %s\n", what);
	else if (err == -EPROTO)
		fprintf(stderr,
			MT_HARNESS_PROG ": the runner answered %s with a message that is not %s\n",
			what, m->cmd == MT_FIFO_GET_INTEGRATION_MODE ? "a mode" : "Ack or Err");
	else
		fprintf(stderr, MT_HARNESS_PROG ": cannot talk to the runner (%s): %s\n", what,
			strerror(-err));
}

int mt_fifo_call(struct mt_fifo *f, const struct mt_fifo_msg *m)
{
	uint64_t deadline = mt_clock_now_ns() + (uint64_t)f->timeout_ms * 1000000;
	struct mt_fifo_msg answer = {.cmd = MT_FIFO_N_CMDS};
	/* The fixed fields, two u64 lengths, the strings (a URI is the whole benchmark name). */
	size_t cap = 64 + (m->str ? strlen(m->str) : 0) + (m->str2 ? strlen(m->str2) : 0);
	/*
	 * StopProfiler is sent inside the benchmark's window: a malloc there, freed after the
	 * runner read the frame, would be the benchmark's (memtrack bench counts the window).
	 */
	uint8_t small[256], *buf = cap <= sizeof(small) ? small : malloc(cap);
	ssize_t n;
	int ret;

	n = buf ? mt_fifo_encode(m, buf, cap) : -ENOMEM;
	ret = n < 0 ? (int)n : write_all(f, buf, (size_t)n, deadline);
	if (buf != small)
		free(buf);
	if (!ret)
		ret = read_answer(f, &answer, deadline);
	if (!ret && !answer_fits(f, m, &answer))
		ret = -EPROTO;
	if (ret)
		say_failure(f, m, &answer, ret);
	return ret;
}
