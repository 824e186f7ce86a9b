// SPDX-License-Identifier: GPL-2.0
/*
 * An artifact counted as its writer appends to it (report --follow, run's status line): the
 * reading of report.c in steps, each bounded in time, with the figures summed after each.
 */
#include <errno.h>
#include <stdlib.h>

#include "base/clock.h"
#include "aggregate/report_int.h"

struct mt_report_follow {
	struct mt_artifact_reader *r;
	struct mt_report *rep;
	bool writer_gone; /* the reader reads to the end, as a plain reading does */
	bool ended;	  /* report_end ran: rep is whole */
};

int mt_report_follow_open(const char *path, unsigned int flags, struct mt_report_follow **out,
			  char *err, size_t errlen)
{
	struct mt_report_follow *f = calloc(1, sizeof(*f));
	int ret;

	*out = NULL;
	if (!f) {
		report_fail(err, errlen, "out of memory");
		return -ENOMEM;
	}
	ret = mt_artifact_open(&f->r, path, err, errlen);
	if (!ret && mt_artifact_follow(f->r, true)) {
		report_fail(err, errlen, "not a regular file: only a file can be followed");
		ret = -ENOTSUP;
	}
	if (!ret && report_begin(f->r, flags, &f->rep)) {
		report_fail(err, errlen, "out of memory");
		ret = -ENOMEM;
	}
	if (ret) {
		mt_report_follow_free(f);
		return ret;
	}
	*out = f;
	return 0;
}

int mt_report_follow_read(struct mt_report_follow *f, uint64_t budget_ns, char *err, size_t errlen)
{
	uint64_t deadline = budget_ns ? mt_clock_now_ns() + budget_ns : 0;
	int ret;

	if (f->ended)
		return 0;
	ret = report_feed(f->rep, f->r, deadline);
	/*
	 * Nothing more yet: a writer still holding the file will write more; one gone (ended, or
	 * killed) wrote all it will, which a plain reading takes to its footer or its cut. Its lock
	 * is looked at after the reading: whatever it wrote before letting go is in the file.
	 */
	if (ret == -EAGAIN && !mt_artifact_writer_alive(f->r)) {
		f->writer_gone = true;
		mt_artifact_follow(f->r, false);
		ret = report_feed(f->rep, f->r, 0);
	}
	if (ret == -EAGAIN || ret == 1) {
		f->rep->in_progress = true;
		return report_sum(f->rep) ? -ENOMEM : 1;
	}
	if (!ret)
		ret = report_end(f->rep, f->r);
	if (ret)
		report_fail(err, errlen, report_why_not(f->r));
	f->ended = !ret;
	return ret;
}

struct mt_report *mt_report_follow_now(const struct mt_report_follow *f)
{
	return f->rep;
}

bool mt_report_follow_writing(const struct mt_report_follow *f)
{
	return mt_artifact_writer_alive(f->r);
}

bool mt_report_follow_ended(const struct mt_report_follow *f)
{
	return f->ended;
}

struct mt_report *mt_report_follow_take(struct mt_report_follow *f)
{
	struct mt_report *rep = f->ended ? f->rep : NULL;

	if (rep)
		f->rep = NULL;
	return rep;
}

void mt_report_follow_free(struct mt_report_follow *f)
{
	if (!f)
		return;
	mt_report_free(f->rep);
	mt_artifact_close(f->r);
	free(f);
}
