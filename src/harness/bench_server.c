// SPDX-License-Identifier: GPL-2.0
/*
 * The runner's side of the FIFO (bench_server.h). What CodSpeed's runner 5.0.2 does, in its
 * shared FIFO handler and its memory executor, message by message:
 *
 * - SetVersion(v): Ack for 2; the memory executor refuses v < 2, the shared handler v > 2;
 * - GetIntegrationMode: IntegrationModeResponse(Analysis), memory mode's;
 * - SetIntegration {name, version}: Ack for codspeed-rust >= 4.2.0, codspeed-cpp >= 2.1.0,
 *   pytest-codspeed >= 4.3.0, codspeed-node >= 5.2.0, exec-harness >= 1.0.0; the runner panics
 *   on any other, memtrack answers Err and says why;
 * - StartProfiler, StopProfiler, CurrentBenchmark {pid, uri}, AddMarker {pid, marker}: Ack, and
 *   a mark recorded (a StartProfiler while a window is open, or a StopProfiler with none, is
 *   ignored by the runner with a warning: the mark is recorded all the same and the split says
 *   so, bench.h; an AddMarker's marker the runner adds to ExecutionTimestamps as it came);
 * - anything else (PingProfiler, Ack, Err, a mode): Err.
 *
 * A message the runner cannot decode is only logged by it, and its integration waits for an
 * answer that never comes; memtrack answers Err, so that nothing waits. A frame longer than any
 * message cannot be skipped reliably: it and everything after it are discarded, with one Err.
 *
 * Where the runner opens both FIFOs read-write, so does memtrack: the integration can open them
 * in any order, and a writer that goes away is no end of the stream (the next one may come).
 */
#include <errno.h>
#include <fcntl.h>
#include <libgen.h>
#include <poll.h>
#include <pthread.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/eventfd.h>
#include <sys/stat.h>
#include <unistd.h>

#include "base/clock.h"
#include "base/printable.h"
#include "harness/bench_server.h"
#include "harness/harness_fifo.h"

#define PROG	       "memtrack bench"
/* Sentences about unreadable messages: the first few, then only their count in the summary. */
#define MAX_TOLD       5
/* An answer that cannot be written this long (the integration reads nothing) is dropped. */
#define ANSWER_WAIT_MS 1000

struct fifo_path {
	int dirfd; /* its directory, or -1 */
	char *name;
	int fd;
	dev_t dev;
	ino_t ino;
};

struct mt_bench_server {
	struct fifo_path ctl, ack;
	int stop_fd;
	pthread_t thread;
	bool has_thread;
	mt_bench_mark_fn mark;
	void *mark_arg;
	uint8_t *in; /* 4 + MT_BENCH_FRAME_MAX: what came and is not a whole frame yet */
	size_t have;
	char strs[MT_BENCH_FRAME_MAX + 2];
	bool window_open; /* as the runner's benchmark_started: for its warnings */
	unsigned int told;
	struct mt_bench_server_stats st;
	/* Answers of one feed, for the detached use and the thread alike. */
	uint8_t *out;
	size_t out_cap, out_len;
};

/* ---- the protocol ------------------------------------------------------------------------ */

struct integration_min {
	const char *name;
	unsigned int major, minor, patch;
};

/* The memory executor's table (src/executor/memory/executor.rs). */
static const struct integration_min integration_mins[] = {
    {"codspeed-rust", 4, 2, 0}, {"codspeed-cpp", 2, 1, 0}, {"pytest-codspeed", 4, 3, 0},
    {"codspeed-node", 5, 2, 0}, {"exec-harness", 1, 0, 0},
};

static void answer(struct mt_bench_server *s, enum mt_fifo_cmd cmd)
{
	struct mt_fifo_msg m = {.cmd = cmd, .mode = MT_FIFO_MODE_ANALYSIS};
	uint8_t buf[16];
	ssize_t n = mt_fifo_encode(&m, buf, sizeof(buf));

	if (n < 0 || s->out_len + (size_t)n > s->out_cap)
		return;
	memcpy(s->out + s->out_len, buf, (size_t)n);
	s->out_len += (size_t)n;
}

/*
 * One sentence on stderr, the first MAX_TOLD of a run (then only counted): what the integration
 * sends is the caller's to make printable (mt_printable).
 */
__attribute__((format(printf, 2, 3))) static void say(struct mt_bench_server *s, const char *fmt,
						      ...)
{
	va_list ap;

	if (s->told++ >= MAX_TOLD)
		return;
	fputs(PROG ": ", stderr);
	va_start(ap, fmt);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
}

/* "MAJOR.MINOR.PATCH" with an optional pre-release or build suffix: 0, or -EINVAL. */
static int parse_version(const char *v, unsigned int out[3])
{
	const char *p = v;
	char *end;

	for (int i = 0; i < 3; i++) {
		unsigned long x;

		if (*p < '0' || *p > '9')
			return -EINVAL;
		x = strtoul(p, &end, 10);
		if (x > 1000000)
			return -EINVAL;
		out[i] = (unsigned int)x;
		p = end;
		if (i < 2 && *p++ != '.')
			return -EINVAL;
	}
	return *p == '\0' || *p == '-' || *p == '+' ? 0 : -EINVAL;
}

static bool integration_accepted(struct mt_bench_server *s, const char *name, const char *version)
{
	char pn[MT_PRINTABLE_MAX], pv[MT_PRINTABLE_MAX];
	unsigned int v[3];

	snprintf(s->st.integration, sizeof(s->st.integration), "%s %s", name, version);
	for (size_t i = 0; i < sizeof(integration_mins) / sizeof(integration_mins[0]); i++) {
		const struct integration_min *m = &integration_mins[i];

		if (strcmp(name, m->name))
			continue;
		if (parse_version(version, v)) {
			say(s, "the integration's version '%s' is no version (%s)",
			    mt_printable(pv, sizeof(pv), version),
			    mt_printable(pn, sizeof(pn), name));
			return false;
		}
		if (v[0] != m->major   ? v[0] > m->major
		    : v[1] != m->minor ? v[1] > m->minor
				       : v[2] >= m->patch)
			return true;
		say(s,
		    "%s %s is older than the %u.%u.%u CodSpeed's runner needs for memory mode: "
		    "answered Err",
		    name, mt_printable(pv, sizeof(pv), version), m->major, m->minor, m->patch);
		return false;
	}
	say(s,
	    "'%s' is no integration CodSpeed's runner profiles memory of (codspeed-rust, "
	    "codspeed-cpp, pytest-codspeed, codspeed-node, exec-harness): answered Err",
	    mt_printable(pn, sizeof(pn), name));
	return false;
}

/* An AddMarker's marker as the artifact records it (the codec reads no other variant). */
static const uint8_t recorded_markers[] = {
    [MT_MARKER_SAMPLE_START] = MT_BENCH_SAMPLE_START,
    [MT_MARKER_SAMPLE_END] = MT_BENCH_SAMPLE_END,
    [MT_MARKER_ROUND_START] = MT_BENCH_ROUND_START,
    [MT_MARKER_ROUND_END] = MT_BENCH_ROUND_END,
};

static void record_mark(struct mt_bench_server *s, const struct mt_fifo_msg *m)
{
	struct mt_artifact_bench b = {.ts_ns = mt_clock_now_ns()};

	switch (m->cmd) {
	case MT_FIFO_START_PROFILER:
		b.what = MT_BENCH_START;
		break;
	case MT_FIFO_STOP_PROFILER:
		b.what = MT_BENCH_STOP;
		break;
	case MT_FIFO_ADD_MARKER:
		b.what = MT_BENCH_MARKER;
		b.pid = m->pid;
		b.marker = recorded_markers[m->marker];
		b.marker_ts_ns = m->value;
		break;
	default:
		b.what = MT_BENCH_URI;
		b.pid = m->pid;
		if (strlen(m->str) > MT_ARTIFACT_BENCH_URI_MAX)
			say(s, "a benchmark URI longer than %d bytes is cut there",
			    MT_ARTIFACT_BENCH_URI_MAX);
		snprintf(b.uri, sizeof(b.uri), "%s", m->str);
		break;
	}
	s->st.marks++;
	if (s->mark && s->mark(s->mark_arg, &b))
		s->st.marks_lost++;
}

static void refuse_version(struct mt_bench_server *s, uint64_t v)
{
	s->st.protocol_errors++;
	fprintf(stderr,
		PROG ": the integration speaks protocol version %llu; CodSpeed's runner 5.0.2 "
		     "and memtrack bench speak version %d, which memory mode needs: answered Err\n",
		(unsigned long long)v, MT_FIFO_PROTOCOL_VERSION);
}

static void handle(struct mt_bench_server *s, const struct mt_fifo_msg *m)
{
	switch (m->cmd) {
	case MT_FIFO_SET_VERSION:
		if (m->value != MT_FIFO_PROTOCOL_VERSION) {
			refuse_version(s, m->value);
			answer(s, MT_FIFO_ERR);
			return;
		}
		break;
	case MT_FIFO_GET_INTEGRATION_MODE:
		answer(s, MT_FIFO_INTEGRATION_MODE_RESPONSE);
		return;
	case MT_FIFO_SET_INTEGRATION:
		if (!integration_accepted(s, m->str, m->str2)) {
			s->st.refused++;
			answer(s, MT_FIFO_ERR);
			return;
		}
		break;
	case MT_FIFO_START_PROFILER:
	case MT_FIFO_STOP_PROFILER:
		if (s->window_open == (m->cmd == MT_FIFO_START_PROFILER))
			say(s, "%s while %s: recorded, and the benchmark says so",
			    mt_fifo_cmd_name(m->cmd),
			    s->window_open ? "a benchmark window is open" : "none is open");
		s->window_open = m->cmd == MT_FIFO_START_PROFILER;
		record_mark(s, m);
		break;
	case MT_FIFO_CURRENT_BENCHMARK:
	case MT_FIFO_ADD_MARKER:
		record_mark(s, m);
		break;
	default:
		/* PingProfiler (deprecated), and the runner's own answers sent back to it. */
		s->st.protocol_errors++;
		say(s, "%s is no message an integration sends: answered Err",
		    mt_fifo_cmd_name(m->cmd));
		answer(s, MT_FIFO_ERR);
		return;
	}
	answer(s, MT_FIFO_ACK);
}

static uint32_t le32(const uint8_t *p)
{
	return (uint32_t)p[0] | (uint32_t)p[1] << 8 | (uint32_t)p[2] << 16 | (uint32_t)p[3] << 24;
}

/* Every whole frame of s->in, handled in order; a partial one stays for the next read. */
static void handle_frames(struct mt_bench_server *s)
{
	size_t at = 0;

	while (!s->st.garbage && s->have - at >= 4) {
		uint32_t len = le32(s->in + at);
		struct mt_fifo_msg m;

		if (len > MT_BENCH_FRAME_MAX) {
			s->st.garbage = true;
			s->st.protocol_errors++;
			fprintf(stderr,
				PROG
				": a frame of %u bytes on the runner FIFO is no message of "
				"CodSpeed's (at most %u): answered Err, and what follows it is "
				"discarded\n",
				len, MT_BENCH_FRAME_MAX);
			answer(s, MT_FIFO_ERR);
			break;
		}
		if (s->have - at - 4 < len)
			break;
		s->st.frames++;
		if (mt_fifo_decode(s->in + at + 4, len, &m, s->strs, sizeof(s->strs))) {
			s->st.protocol_errors++;
			say(s,
			    "a message of %u bytes on the runner FIFO is not one of CodSpeed's "
			    "protocol (%s): answered Err",
			    len, m.cmd < MT_FIFO_N_CMDS ? mt_fifo_cmd_name(m.cmd) : "no variant");
			answer(s, MT_FIFO_ERR);
		} else {
			handle(s, &m);
		}
		at += 4 + (size_t)len;
	}
	if (s->st.garbage)
		at = s->have;
	memmove(s->in, s->in + at, s->have - at);
	s->have -= at;
}

int mt_bench_server_feed(struct mt_bench_server *s, const uint8_t *buf, size_t n, uint8_t *out,
			 size_t cap, size_t *len)
{
	s->out = out;
	s->out_cap = cap;
	s->out_len = 0;
	while (n) {
		size_t room = 4 + MT_BENCH_FRAME_MAX - s->have;
		size_t k = n < room ? n : room;

		if (s->st.garbage) {
			k = n;
		} else {
			memcpy(s->in + s->have, buf, k);
			s->have += k;
			handle_frames(s);
		}
		buf += k;
		n -= k;
	}
	*len = s->out_len;
	s->out = NULL;
	return 0;
}

static struct mt_bench_server *server_new(mt_bench_mark_fn mark, void *arg)
{
	struct mt_bench_server *s = calloc(1, sizeof(*s));

	if (!s)
		return NULL;
	s->in = malloc(4 + MT_BENCH_FRAME_MAX);
	if (!s->in) {
		free(s);
		return NULL;
	}
	s->mark = mark;
	s->mark_arg = arg;
	s->ctl = s->ack = (struct fifo_path){.dirfd = -1, .fd = -1};
	s->stop_fd = -1;
	return s;
}

struct mt_bench_server *mt_bench_server_new_detached(mt_bench_mark_fn mark, void *arg)
{
	return server_new(mark, arg);
}

/* ---- the FIFOs --------------------------------------------------------------------------- */

static int make_fifo(struct fifo_path *f, const char *path, uid_t uid, gid_t gid)
{
	char p[MT_PRINTABLE_MAX], *dcopy = strdup(path), *bcopy = strdup(path);
	struct stat st;
	int err = 0;

	if (dcopy && bcopy) {
		f->dirfd = open(dirname(dcopy), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
		if (f->dirfd < 0)
			err = -errno;
		f->name = strdup(basename(bcopy));
	}
	free(dcopy);
	free(bcopy);
	if (!f->name)
		return -ENOMEM;
	if (!err && mkfifoat(f->dirfd, f->name, 0600) < 0)
		err = -errno;
	if (err == -EEXIST) {
		fprintf(stderr,
			PROG ": %s exists: another runner (CodSpeed's, or memtrack bench) may be "
			     "serving it; it is not taken over (remove it if no runner runs)\n",
			mt_printable(p, sizeof(p), path));
		return err;
	}
	if (err)
		goto fail;
	/* Made by this call: removed at the stop whatever happens next. */
	f->fd = openat(f->dirfd, f->name, O_RDWR | O_NONBLOCK | O_NOFOLLOW | O_CLOEXEC);
	if (f->fd < 0) {
		err = -errno;
		/* Not opened, so not removed at the stop: the name is still memtrack's, made just
		 * now in a directory where only its owner may take it (/tmp's sticky bit). */
		unlinkat(f->dirfd, f->name, 0);
		goto fail;
	}
	if (fstat(f->fd, &st) < 0) {
		err = -errno;
		goto fail;
	}
	f->dev = st.st_dev;
	f->ino = st.st_ino;
	/* In a directory others may write (no sticky bit), the name may have been swapped. */
	if (!S_ISFIFO(st.st_mode) || st.st_uid != geteuid()) {
		err = -EPERM;
		goto fail;
	}
	if (fchmod(f->fd, 0600) < 0 ||
	    ((st.st_uid != uid || st.st_gid != gid) && fchown(f->fd, uid, gid) < 0)) {
		err = -errno;
		goto fail;
	}
	return 0;
fail:
	fprintf(stderr, PROG ": cannot make the runner's FIFO %s: %s\n",
		mt_printable(p, sizeof(p), path), strerror(-err));
	return err;
}

/* Remove the FIFO made, only if the name is still that FIFO. */
static void remove_fifo(struct fifo_path *f)
{
	struct stat st;

	if (f->fd >= 0) {
		if (!fstatat(f->dirfd, f->name, &st, AT_SYMLINK_NOFOLLOW) && st.st_dev == f->dev &&
		    st.st_ino == f->ino)
			unlinkat(f->dirfd, f->name, 0);
		close(f->fd);
	}
	if (f->dirfd >= 0)
		close(f->dirfd);
	free(f->name);
	*f = (struct fifo_path){.dirfd = -1, .fd = -1};
}

int mt_bench_server_open(struct mt_bench_server **out, const struct mt_bench_server_config *c)
{
	struct mt_bench_server *s = server_new(c->mark, c->mark_arg);
	int err;

	if (!s)
		return -ENOMEM;
	err = make_fifo(&s->ctl, c->ctl_path, c->uid, c->gid);
	if (!err)
		err = make_fifo(&s->ack, c->ack_path, c->uid, c->gid);
	if (!err) {
		s->stop_fd = eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
		if (s->stop_fd < 0)
			err = -errno;
	}
	if (err) {
		/* Only what was made here is removed: a name that existed is another's. */
		mt_bench_server_free(s);
		return err;
	}
	*out = s;
	return 0;
}

/* The answers of one read, written within ANSWER_WAIT_MS or dropped. */
static void send_answers(struct mt_bench_server *s, const uint8_t *buf, size_t len)
{
	uint64_t deadline = mt_clock_now_ns() + ANSWER_WAIT_MS * 1000000ull;
	struct pollfd p = {.fd = s->ack.fd, .events = POLLOUT};

	while (len) {
		ssize_t n = write(s->ack.fd, buf, len);

		if (n > 0) {
			buf += n;
			len -= (size_t)n;
			continue;
		}
		if (n < 0 && errno != EAGAIN && errno != EINTR)
			break;
		if (mt_clock_now_ns() >= deadline)
			break;
		poll(&p, 1, 10);
	}
	if (len)
		fprintf(stderr, PROG ": the integration reads no answers: %zu bytes dropped\n",
			len);
}

/* Read what is there and answer it; false once nothing more is to be read. */
static bool serve_once(struct mt_bench_server *s, uint8_t *buf, size_t cap, uint8_t *ans,
		       size_t ans_cap)
{
	ssize_t n = read(s->ctl.fd, buf, cap);
	size_t len;

	if (n <= 0)
		return n < 0 && errno == EINTR;
	mt_bench_server_feed(s, buf, (size_t)n, ans, ans_cap, &len);
	send_answers(s, ans, len);
	return true;
}

static void *serve(void *arg)
{
	struct mt_bench_server *s = arg;
	/* A read of 4 KiB holds at most 1024 frames of 4 bytes: an answer of at most 8 each. */
	uint8_t buf[4096], ans[8 * 1024 + 64];
	struct pollfd p[2] = {{.fd = s->ctl.fd, .events = POLLIN},
			      {.fd = s->stop_fd, .events = POLLIN}};

	for (;;) {
		if (poll(p, 2, -1) < 0 && errno != EINTR)
			break;
		if (p[0].revents & POLLIN) {
			while (serve_once(s, buf, sizeof(buf), ans, sizeof(ans)))
				;
			continue;
		}
		if (p[1].revents & POLLIN)
			break;
	}
	/* Written before the stop: served too (the tree has ended, nobody waits for them). */
	while (serve_once(s, buf, sizeof(buf), ans, sizeof(ans)))
		;
	return NULL;
}

int mt_bench_server_start(struct mt_bench_server *s)
{
	int err = -pthread_create(&s->thread, NULL, serve, s);

	if (!err)
		s->has_thread = true;
	return err;
}

void mt_bench_server_stop(struct mt_bench_server *s)
{
	if (s->has_thread) {
		eventfd_write(s->stop_fd, 1);
		pthread_join(s->thread, NULL);
		s->has_thread = false;
	}
	remove_fifo(&s->ctl);
	remove_fifo(&s->ack);
}

const struct mt_bench_server_stats *mt_bench_server_stats(const struct mt_bench_server *s)
{
	return &s->st;
}

void mt_bench_server_free(struct mt_bench_server *s)
{
	if (!s)
		return;
	mt_bench_server_stop(s);
	if (s->stop_fd >= 0)
		close(s->stop_fd);
	free(s->in);
	free(s);
}
