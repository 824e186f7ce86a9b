// SPDX-License-Identifier: GPL-2.0
/*
 * memtrack run's status line: on a terminal, refreshed every second while the command runs, the
 * time, the tree's processes, its allocations, its heap live now and its peak, and the calls
 * dropped. The supervisor counts processes and drops (supervisor_progress.c, which calls
 * status_progress from its event loop); the heap is the artifact's, read on from where the
 * last second left it (mt_report_follow_*), as memtrack report would count it.
 *
 * The line has the terminal's bottom row to itself: the rows above it are made the scrolling
 * region (DECSTBM), as apt's progress bar does, so that the command's output, which goes to the
 * same terminal at any moment and which memtrack never sees, scrolls above the line and never
 * mixes with it. Each redraw is one write(2): the cursor saved, moved to the bottom row, the row
 * cleared and written, the cursor restored; the command's output lands where it was. At the end
 * the row is cleared and the whole screen given back, before the summary. A terminal of unknown
 * size (0 rows) gets no line. A SIGKILL of memtrack leaves the region set (`reset` restores it).
 *
 * The line is drawn only while the terminal is memtrack's to write to: its process group in the
 * foreground (else a write could stop it with SIGTTOU, and the whole tree with it) and the
 * terminal in canonical mode. A full-screen or line-editing program (an editor, a pager, a
 * shell's prompt) turns canonical mode off and draws the screen itself; the line waits, and the
 * region is set again when the terminal comes back, as such a program resets it.
 */
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include "aggregate/report.h"
#include "base/bytesize.h"
#include "cmd/cmd.h"
#include "supervisor/supervisor.h"

#define STATUS_PERIOD_NS 1000000000ull /* the line's refresh */

/* How long a second's reading of the artifact may hold up the supervisor's loop, at most. */
#define READ_BUDGET_NS (50 * 1000000ull)

struct mt_status {
	int fd;
	unsigned short rows; /* the scrolling region is rows - 1 rows; 0: not set */
	bool region_lost;    /* another program had the terminal: the region is set again */
	const char *artifact;
	struct mt_report_follow *follow;
	bool no_follow; /* the artifact cannot be read as it is written (a pipe, a device) */
	unsigned long draws;
};

static void status_progress(void *arg, const struct mt_run_progress *p);

static void put(int fd, const char *s, size_t n)
{
	while (n) {
		ssize_t k = write(fd, s, n);

		if (k < 0 && errno == EINTR)
			continue;
		if (k <= 0)
			return; /* a terminal gone: the line is lost, not the run */
		s += k;
		n -= (size_t)k;
	}
}

struct mt_status *mt_status_start(struct mt_run_config *cfg)
{
	struct mt_status *st;

	if (!isatty(STDERR_FILENO))
		return NULL;
	st = calloc(1, sizeof(*st));
	if (!st)
		return NULL;
	st->fd = STDERR_FILENO;
	st->artifact = cfg->artifact_path;
	cfg->progress = status_progress;
	cfg->progress_arg = st;
	cfg->progress_ns = STATUS_PERIOD_NS;
	return st;
}

/* The artifact's figures so far, NULL when it cannot be read (yet). */
static const struct mt_report *heap_so_far(struct mt_status *st)
{
	char err[MT_ARTIFACT_ERRLEN];

	if (!st->artifact || st->no_follow)
		return NULL;
	if (!st->follow && mt_report_follow_open(st->artifact, 0, &st->follow, err, sizeof(err))) {
		st->no_follow = true;
		return NULL;
	}
	/*
	 * Opened by name, by memtrack with its privileges: read only while a writer holds it, as
	 * the run's does, not whatever the name was made to point to meanwhile.
	 */
	if (!mt_report_follow_writing(st->follow)) {
		st->no_follow = true;
		return NULL;
	}
	if (mt_report_follow_read(st->follow, READ_BUDGET_NS, err, sizeof(err)) < 0) {
		st->no_follow = true;
		return NULL;
	}
	return mt_report_follow_now(st->follow);
}

/* The line's text, at most cols - 1 characters (the last column would wrap on some terminals). */
static size_t status_text(struct mt_status *st, const struct mt_run_progress *p, char *buf,
			  size_t len)
{
	const struct mt_report *rep = heap_so_far(st);
	char live[32], peak[32];
	uint64_t blocks;
	int n;

	n = snprintf(buf, len, "memtrack: %" PRIu64 " s; %u process%s, %u running",
		     (uint64_t)(p->elapsed_ns / 1000000000u), p->processes,
		     p->processes == 1 ? "" : "es", p->running);
	if (rep && n >= 0 && (size_t)n < len)
		n += snprintf(
		    buf + n, len - (size_t)n, "; %" PRIu64 " allocations; heap %s live, peak %s",
		    rep->totals.allocations,
		    mt_bytesize_human(live, sizeof(live), mt_report_live_now(rep, &blocks)),
		    mt_bytesize_human(peak, sizeof(peak), rep->totals.peak_bytes));
	if (p->dropped_known && p->dropped && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "; dropped: %" PRIu64, p->dropped);
	else if (p->dropped_known && n >= 0 && (size_t)n < len)
		n += snprintf(buf + n, len - (size_t)n, "; dropped: none");
	return n < 0 ? 0 : (size_t)n < len ? (size_t)n : len - 1;
}

/* Whether the terminal is memtrack's to draw on now: in the foreground, in canonical mode. */
static bool terminal_ours(int fd)
{
	struct termios tio;
	pid_t fg = tcgetpgrp(fd);

	if (fg < 0 || fg != getpgrp())
		return false;
	return !tcgetattr(fd, &tio) && (tio.c_lflag & ICANON);
}

static void status_progress(void *arg, const struct mt_run_progress *p)
{
	struct mt_status *st = arg;
	char text[256], out[512];
	struct winsize ws = {0};
	size_t n, cols;
	int k = 0;

	if (!terminal_ours(st->fd)) {
		st->region_lost = true;
		return;
	}
	if (ioctl(st->fd, TIOCGWINSZ, &ws) || ws.ws_row < 3 || ws.ws_col < 2)
		return;
	n = status_text(st, p, text, sizeof(text));
	cols = ws.ws_col - 1u;
	if (n > cols)
		n = cols;
	/* The first time, a row is made at the bottom: what was on it scrolls up by one. */
	if (!st->rows)
		k = snprintf(out, sizeof(out), "\n\0337\033[1;%ur\0338\033[1A", ws.ws_row - 1u);
	else if (st->rows != ws.ws_row || st->region_lost)
		k = snprintf(out, sizeof(out), "\0337\033[1;%ur\0338", ws.ws_row - 1u);
	st->rows = ws.ws_row;
	st->region_lost = false;
	k += snprintf(out + k, sizeof(out) - (size_t)k, "\0337\033[%u;1H\033[2K%.*s\0338",
		      (unsigned)ws.ws_row, (int)n, text);
	put(st->fd, out, (size_t)k);
	st->draws++;
}

void mt_status_end(struct mt_status *st)
{
	char out[64];
	int k;

	if (!st)
		return;
	if (st->rows && terminal_ours(st->fd)) {
		k = snprintf(out, sizeof(out), "\0337\033[%u;1H\033[2K\033[r\0338",
			     (unsigned)st->rows);
		put(st->fd, out, (size_t)k);
	}
	mt_report_follow_free(st->follow);
	free(st);
}
