/* SPDX-License-Identifier: GPL-2.0 */
/*
 * The stop log behind --trace-stops: every stop the supervisor handled, named by positions in the
 * process tree instead of pids, written in tree order so that two runs of a deterministic program
 * give the same bytes even when its processes run concurrently.
 */
#ifndef MT_STOPLOG_H
#define MT_STOPLOG_H

#include <json-c/json.h>

struct mt_stoplog;

/*
 * The version of the log's format, in its first record: {"kind":"format","version":1}. It
 * changes when a record's meaning or a key's does (docs/STOPS.md); new kinds and new keys are
 * added without a change.
 */
#define MT_STOPLOG_VERSION 1

/* A thread as the log names it. proc is filled in when the thread's creator reports it. */
struct mt_log_thread {
	char *proc;	    /* "0", "0.1", "0.1.0": the root, its 2nd child, that child's 1st */
	unsigned int index; /* 0 for a process's first thread, then in creation order */
	unsigned int seq;   /* stops logged for this thread so far */
};

struct mt_stoplog *mt_stoplog_new(void);
void mt_stoplog_free(struct mt_stoplog *log);

/* A thread whose position is not known yet; owned by the log. NULL on ENOMEM. */
struct mt_log_thread *mt_stoplog_thread(struct mt_stoplog *log);
/* Give t its position: proc is copied. Returns 0 or -ENOMEM. */
int mt_stoplog_place(struct mt_log_thread *t, const char *proc, unsigned int index);

/* Log a stop of t; detail (may be NULL) is an object whose keys are added, and is consumed. */
int mt_stoplog_add(struct mt_stoplog *log, struct mt_log_thread *t, const char *kind,
		   struct json_object *detail);

/*
 * A file the run handled: file (consumed) is an object with a "path". Files are written once
 * each, after the stops, in path order: which stop of which process handled a file shared by
 * processes that run at the same time depends on timing.
 */
int mt_stoplog_add_file(struct mt_stoplog *log, struct json_object *file);

/* Every first mapping of a file by a process is in the log (--trace-maps): the first record says.
 */
void mt_stoplog_log_maps(struct mt_stoplog *log);

/* Write the log as JSON lines to fd, which it closes, the format record first. 0 or -errno. */
int mt_stoplog_write(struct mt_stoplog *log, int fd);

#endif
